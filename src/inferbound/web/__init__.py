"""Web app and JSON API (``inferbound serve``): FastAPI routes over the Python API, one offline page.

- ``app``: :func:`create_app` (middleware, routers, the page and its local assets);
- ``schemas``: request bodies with the work caps; ``modelsource``: catalog names or pasted configs
  only, never a file the client names; ``errors``: 422 with field errors, body-size cap, JSON safety;
- ``routes_*``: catalogs, estimate/roofline/memory, simulate, validate;
- ``static/``: index.html, app.js, charts.js, style.css (no CDN).

See docs/web.md.
"""
from .app import create_app

__all__ = ["create_app"]
