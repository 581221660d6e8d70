"""``inferbound serve``: the web app and JSON API (inferbound.web) on uvicorn, loopback by default."""
from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from . import app
from .common import err_console

LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@app.command("serve")
def serve(host: Annotated[str, typer.Option("--host", help="address to bind (default loopback only; "
                                                          "0.0.0.0 exposes it to the network)")] = "127.0.0.1",
          port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port")] = 8000,
          work_seconds: Annotated[float, typer.Option("--work-seconds", min=0.1,
                                                      help="wall-clock cap of one simulation or search")] = 20.0,
          log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level")] = "info") -> None:
    """Start the web page and JSON API (estimate, roofline, memory, search, simulate, validate, catalogs;
    OpenAPI schema at /openapi.json). Every asset is local; the machine may be offline."""
    import uvicorn

    from ..web import create_app

    local = is_loopback(host)
    if not local:
        err_console.print(f"[yellow]warning:[/yellow] binding {host}: the API is reachable from the network "
                          f"(it reads no files a client names, and caps the work per request)", highlight=False)
    web = create_app(work_seconds=work_seconds, allowed_hosts=[*LOOPBACK_NAMES, host] if local else None)
    shown = f"[{host}]" if ":" in host else host
    err_console.print(f"inferbound: open http://{shown}:{port}/  (API schema: /openapi.json)", highlight=False)
    uvicorn.run(web, host=host, port=port, log_level=log_level)
