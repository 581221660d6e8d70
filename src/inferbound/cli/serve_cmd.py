"""``inferbound serve``: the web app and JSON API (inferbound.web) on uvicorn, loopback by default.

Before uvicorn starts, the arguments are checked (one ``error:`` line, exit code 2): the log level is
one of uvicorn's, the host is an IP address or a host name that resolves on this machine, and the
address can be bound (a free port, an address of this machine, a port the user may open).
"""
from __future__ import annotations

import ipaddress
import re
import socket

from ..faces.options import LOG_LEVELS, SERVE, by_name
from . import app
from .common import err_console, fail, warn
from .params import annotation, declared

S = by_name(SERVE)  # the declared options of serve (faces/options.py)
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]
HOST_NAME = re.compile(r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}"
                       r"[A-Za-z0-9])?)*\.?")  # RFC 1123 labels
ALLOWED_HOSTS = "an IP address of this machine (127.0.0.1, ::1), 0.0.0.0 / :: (every interface) or a host name"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str) -> str:
    """``host`` without IPv6 brackets, or a one-line ValueError: not an address, not a name, not resolvable."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.]+", name):
        raise ValueError(f"host={host!r} is not an IPv4 address (four numbers 0-255); allowed: {ALLOWED_HOSTS}")
    if ":" in name:
        raise ValueError(f"host={host!r} is not an IPv6 address; allowed: {ALLOWED_HOSTS}")
    if not HOST_NAME.fullmatch(name):
        raise ValueError(f"host={host!r} is not an IP address or a host name; allowed: {ALLOWED_HOSTS}")
    try:
        socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise ValueError(f"host={host!r} does not resolve on this machine ({getattr(e, 'strerror', e)}); "
                         f"allowed: {ALLOWED_HOSTS}") from None
    return name


def check_bind(name: str, host: str, port: int) -> None:
    """Bind ``name:port`` once and let go, as uvicorn will bind it (IPv6 when the host has a colon, else
    IPv4; SO_REUSEADDR): a port in use, an address that is not this machine's or a privileged port is a
    one-line ValueError before the server starts."""
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((name, port))
        except OSError as e:
            raise ValueError(f"host={host!r} port={port}: cannot bind ({e.strerror}); allowed: a free port "
                             f"(1024-65535 without privileges, 0 for any) on {ALLOWED_HOSTS}") from None


@app.command("serve")
@declared
def serve(host: annotation(S["host"]), port: annotation(S["port"]), work_seconds: annotation(S["work_seconds"]),
          log_level: annotation(S["log_level"])) -> None:
    """Start the web page and JSON API (estimate, roofline, memory, search, simulate, validate, catalogs;
    OpenAPI schema at /openapi.json). Every asset is local; the machine may be offline."""
    if log_level.lower() not in LOG_LEVELS:
        fail(f"log_level={log_level!r} unknown; allowed: {', '.join(LOG_LEVELS)}")
    if not work_seconds < float("inf"):
        fail(f"work_seconds={work_seconds!r} must be a finite number of seconds >= 0.1")
    try:
        name = check_host(host)
        check_bind(name, host, port)
    except ValueError as e:
        fail(str(e))
    import uvicorn

    from ..web import create_app

    local = is_loopback(host)
    if not local:
        warn(f"binding {host}: the API is reachable from the network (it reads no files a client names, and "
             f"caps the work per request)", to=err_console)
    web = create_app(work_seconds=work_seconds, allowed_hosts=[*LOOPBACK_NAMES, host] if local else None)
    shown = f"[{name}]" if ":" in name else host
    err_console.print(f"inferbound: open http://{shown}:{port}/  (API schema: /openapi.json)", highlight=False,
                      markup=False)
    uvicorn.run(web, host=host, port=port, log_level=log_level.lower())
