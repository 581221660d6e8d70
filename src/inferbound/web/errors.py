"""Bad input becomes 422 with field errors, in FastAPI's own shape, never a 500.

``{"detail": [{"loc": ["body", "<field>"], "msg": "...", "type": "value_error"}]}``

- :class:`ApiError`: raised by the web layer for a named field (unknown model name, cap exceeded).
- ``ValueError`` (incl. ``ConfigError`` and pydantic's ``ValidationError``) and ``ArithmeticError``
  raised by inferbound while computing: the input is at fault (the library validates at its edge and
  names the field as ``field=value: ...``); the field is taken from the message when it is a request
  field. They are logged at INFO. Any other exception is a bug and stays a 500 (logged by the server).
- :class:`BodyLimit`: ASGI middleware capping the request body (Content-Length or streamed bytes).
- :func:`jsonable`: numpy scalars/arrays to Python, non-finite floats to ``null`` (JSON has no inf).
"""
from __future__ import annotations

import json
import logging
import math
import re

import numpy as np
from fastapi import HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

log = logging.getLogger("inferbound.web")

FIELD_RE = re.compile(r"^([a-z_][a-z0-9_]*)=")


class ApiError(Exception):
    """A bad value of request field ``field`` (a name or a path of names and indices; None: the body)."""

    def __init__(self, field, msg: str, kind: str = "value_error"):
        super().__init__(msg)
        self.field, self.msg, self.kind = field, msg, kind


def unprocessable(field, msg: str, kind: str = "value_error") -> JSONResponse:
    """422 at ``field``: a name, a path (a tuple of names and indices, e.g. ("deployments", 1, "tp")) or None."""
    loc = ["body"] + (list(field) if isinstance(field, (list, tuple)) else [field] if field else [])
    return JSONResponse(status_code=422, content={"detail": [{"loc": loc, "msg": msg, "type": kind}]})


def field_of(msg: str, fields) -> str | None:
    """'tp=3 must divide ...' -> 'tp' when tp is a request field ('gpu=...' -> 'gpus' for a list field)."""
    m = FIELD_RE.match(msg)
    if not m:
        return None
    name = m.group(1)
    return name if name in fields else f"{name}s" if f"{name}s" in fields else None


def to_api_error(e: Exception, fields) -> ApiError:
    """Turn a computation's ValueError/ArithmeticError into an ApiError naming the field if it can."""
    msg = str(e.args[0]) if e.args else type(e).__name__
    if isinstance(e, ArithmeticError):
        msg = f"the input gives an arithmetic error ({type(e).__name__}: {msg})"
    return ApiError(field_of(msg, fields), msg)


async def api_error_handler(request: Request, exc: ApiError) -> JSONResponse:
    return unprocessable(exc.field, exc.msg, exc.kind)


async def validation_error_handler(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's 422, made JSON-safe: the offending input may be NaN or infinity (Python's JSON parser
    accepts them), which the default handler cannot encode (it would answer 500). A validator's own
    message loses pydantic's "Value error, " prefix and the exception object in ``ctx``."""
    errors = []
    for err in exc.errors():
        err = dict(err)
        err["msg"] = str(err.get("msg", "")).removeprefix("Value error, ")
        ctx = err.get("ctx")
        if isinstance(ctx, dict) and isinstance(ctx.get("error"), BaseException):
            ctx = {k: v for k, v in ctx.items() if k != "error"}
            if ctx:
                err["ctx"] = ctx
            else:
                err.pop("ctx")
        errors.append(err)
    return JSONResponse(status_code=422, content={"detail": jsonable(jsonable_encoder(errors))})


def jsonable(obj):
    """JSON-safe copy: numpy to Python, NaN/inf to None, tuples to lists."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


class BodyTooLarge(HTTPException):
    """Raised while the body streams in; FastAPI passes HTTPExceptions through its body parsing."""

    def __init__(self, max_bytes: int):
        super().__init__(422, [{"loc": ["body"], "type": "value_error.body_too_large",
                                "msg": f"request body is more than {max_bytes:,} bytes; the limit is {max_bytes:,}"}])


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` gets 422 before the app parses it."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def _send_422(self, send, size: str) -> None:
        msg = f"request body is {size} bytes; the limit is {self.max_bytes:,}"
        body = json.dumps({"detail": [{"loc": ["body"], "type": "value_error.body_too_large", "msg": msg}]}).encode()
        await send({"type": "http.response.start", "status": 422,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                n = int(declared)
            except ValueError:
                n = -1
            if n > self.max_bytes:
                return await self._send_422(send, f"{n:,}")
        seen = 0
        started = False

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await self._send_422(send, f"more than {self.max_bytes:,}")
