"""Web app and JSON API (``inferbound serve``): FastAPI routes over the Python API, one offline page.

- ``app``: :func:`create_app` (middleware, routers, the page and its local assets);
- ``schemas``: request bodies, whose field limits are the work caps;
- ``modelsource``: a model from the catalog or a pasted config only, never a file the client names;
- ``errors``: 422 with field errors, the body-size cap, JSON safety; ``compute``: deployment building
  and the translation of the library's input errors; ``budget``: wall-clock budget, heavy-call slots;
- ``routes_catalog`` (models, gpus, meta), ``routes_estimate`` (estimate: static, max-throughput,
  serving; roofline, memory), ``routes_compare`` (compare), ``routes_serving`` (simulate),
  ``routes_search`` (search, with CSV and launch commands), ``routes_validate`` (validate);
- ``static/``: index.html, app.js (form, URL, panels), planner.js (frontier, exports, comparison),
  charts.js (SVG), common.js (formats, API, downloads), style.css (no CDN, no web fonts).

See docs/web.md.
"""
from .app import create_app

__all__ = ["create_app"]
