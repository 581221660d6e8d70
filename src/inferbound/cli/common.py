"""The one-line error path and output helpers of the commands (their options: faces/options.py, built
into typer parameters by params.py)."""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import typer
from rich.console import Console

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def parse_sets(items: list[str] | None, field: str) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values parsed as JSON when they are (numbers, true/false, null, lists)."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"{field}={item!r} must look like KEY=VALUE")
        key, value = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ValueError(f"{field}={item!r} has no KEY; allowed: KEY=VALUE")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        if (isinstance(parsed, float) and not math.isfinite(parsed)) or \
                value.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
            raise ValueError(f"{field} {key}={value!r} is not a finite number; allowed: a finite number")
        out[key] = parsed
    return out


def labelled(label: str, style: str, text: str):
    """A styled label followed by plain text: user text (model names, config values) is never read
    as terminal markup."""
    from rich.text import Text
    return Text.assemble((label, style), " ", str(text))


def warn(text: str, to=None) -> None:
    (to or console).print(labelled("warning:", "yellow", text), highlight=False, soft_wrap=True)


def error_line(e: BaseException) -> str:
    """The one-line message of an input error: its text, or for an operating-system error (a file that
    cannot be read or written) the file and the system's reason, never a bare errno."""
    if isinstance(e, OSError) and e.strerror:
        where = f"file={str(e.filename)!r}: " if e.filename is not None else ""
        msg = f"{where}{e.strerror}"
    else:
        msg = str(e.args[0]) if e.args else type(e).__name__
    return " ".join(msg.split())


def fail(msg: str) -> None:
    """Print one ``error:`` line on stderr and exit with code 2."""
    err_console.print(labelled("error:", "red", " ".join(str(msg).split())), highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def run(fn: Callable[[], None]) -> None:
    """Run a command body: a ValueError (or a file that cannot be read or written) becomes one line on
    stderr and exit code 2 (no traceback)."""
    try:
        fn()
    except (ValueError, KeyError, OSError) as e:
        fail(error_line(e))


def to_jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")


def gb(x: float) -> str:
    return f"{x / 1e9:,.2f} GB"


def ms(x: float) -> str:
    return f"{x * 1e3:,.2f} ms"
