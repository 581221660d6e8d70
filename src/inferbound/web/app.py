"""The FastAPI application: JSON API under /api, the page at /, its assets under /static.

- OpenAPI schema at /openapi.json; the interactive /docs and /redoc pages are off (they load their
  scripts from a CDN, and the server must work offline).
- Bad input: 422 with field errors (errors.py); request bodies over ``max_body_bytes``: 422.
- ``allowed_hosts``: when given, other Host headers get 400 (guards a loopback server against DNS
  rebinding); ``inferbound serve`` passes the loopback names when it binds 127.0.0.1.
- The page's Content-Security-Policy allows only this origin: a stray CDN reference would fail.
- /api/simulate, /api/bench, /api/fleet and /api/search are registered when ``inferbound.sim`` /
  ``inferbound.fleet`` / ``inferbound.search`` exist;
  /api/compare always.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.trustedhost import TrustedHostMiddleware

from .. import __version__
from . import routes_catalog, routes_compare, routes_estimate, routes_validate
from .budget import make_slots
from .errors import ApiError, BodyLimit, api_error_handler, validation_error_handler
from .routes_catalog import available

MAX_BODY_BYTES = 1_000_000
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")


class SecurityHeaders:
    """ASGI middleware (pure, so request-body errors are not wrapped in task groups): nosniff on every
    response, the Content-Security-Policy on HTML."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-content-type-options"]
                headers.append((b"x-content-type-options", b"nosniff"))
                if any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers):
                    headers.append((b"content-security-policy", CSP.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def static_dir() -> Path:
    return Path(str(resources.files("inferbound") / "web" / "static"))


def create_app(max_body_bytes: int = MAX_BODY_BYTES, work_seconds: float | None = None,
               allowed_hosts: list[str] | None = None, heavy_slots: int | None = None) -> FastAPI:
    """Build the app. ``work_seconds``: wall-clock budget of one simulation or search (default 20 s);
    ``heavy_slots``: simulations/searches/validations at once (default half the CPUs, >= 2)."""
    app = FastAPI(title="inferbound", version=__version__, docs_url=None, redoc_url=None,
                  description="Inference arithmetic for LLM deployments: fit, TTFT, TPOT, throughput, energy, "
                              "cost and what binds them. Bad input gives 422 with field errors.")
    if work_seconds is not None:
        app.state.work_seconds = float(work_seconds)
    app.state.heavy_slots = make_slots(heavy_slots)
    app.add_exception_handler(ApiError, api_error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    for module in (routes_catalog, routes_estimate, routes_compare, routes_validate):
        app.include_router(module.router)
    if available("inferbound.sim"):
        from . import routes_bench, routes_serving
        app.include_router(routes_serving.router)
        app.include_router(routes_bench.router)
    if available("inferbound.fleet"):
        from . import routes_fleet
        app.include_router(routes_fleet.router)
    if available("inferbound.search"):
        from . import routes_search
        app.include_router(routes_search.router)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(static_dir() / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=static_dir()), name="static")
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if allowed_hosts:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    return app
