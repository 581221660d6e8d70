"""typer parameters built from the declared options (options.py), and their parsing.

``command(name, doc, *groups)`` registers a command whose options are the groups' declarations
(typer reads them from a generated signature); the body receives the parsed values as a dict, every
declared range and choice already checked (one-line errors). ``deployment_from(values)`` builds the
deployment from the DEPLOYMENT and ENGINE values.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Callable

import typer

from ..faces.options import DEPLOYMENT, ENGINE, Opt, engine_options
from . import app
from .common import parse_sets, run

_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list_int": str, "kv": list[str], "path": list[Path],
          "path1": Path, "rate": str, "list_str": str, "price": list[str]}
_METAVARS = {"int": "INTEGER", "float": "FLOAT", "str": "TEXT", "list_int": "N,N,...", "kv": "KEY=VALUE", "path": "FILE",
             "path1": "FILE", "rate": "REQ/S", "list_str": "A,B,...",
             "price": "GPU=USD"}


def annotation(o: Opt):
    """The typer annotation of one declared option."""
    t = _TYPES[o.kind]
    help_text = o.help + (f" [{', '.join(o.choices)}]" if o.choices else "")
    if o.argument:
        return Annotated[t, typer.Argument(help=help_text, show_default=True, metavar=o.name.upper())]
    nullable = o.default is None
    meta = None if o.kind == "bool" else (_METAVARS[o.kind] if o.choices is None else "|".join(o.choices))
    return Annotated[t | None if nullable else t, typer.Option(*o.cli_flags, help=help_text, metavar=meta)]


def parse(o: Opt, value):
    """A parsed CLI value in the library's terms, checked against the declaration."""
    if value is None:
        return None
    if o.kind == "list_int":
        try:
            value = tuple(int(x) for x in str(value).split(","))
        except ValueError:
            raise ValueError(f"{o.cli_flags[0].lstrip('-')}={value!r} must be comma-separated integers, "
                             f"e.g. 20,20,20,20") from None
        return value
    if o.kind == "kv":
        return parse_sets(value, o.cli_flags[0])
    if o.kind == "price":
        from ..hardware.prices import parse_price_items  # GPU=USD pairs; ids are checked where the GPU resolves
        return parse_price_items(value, o.cli_flags[0])
    if o.kind == "list_str":
        items = [x.strip() for x in str(value).split(",") if x.strip()]
        if not items:
            raise ValueError(f"{o.cli_flags[0].lstrip('-')}={value!r} is empty; allowed: a comma-separated list")
        return items
    if o.kind == "rate":
        try:
            rate = float(value)
        except ValueError:
            raise ValueError(f"rate={value!r} must be a number of requests/s > 0, or inf") from None
        if not rate > 0:
            raise ValueError(f"rate={value!r} must be a number of requests/s > 0, or inf")
        return rate
    return o.check(value)


def command(name: str, doc: str, *groups: tuple[Opt, ...], extra: list[tuple[str, object, object]] | None = None):
    """Register ``name`` with the options of ``groups`` (and ``extra`` (name, annotation, default) triples);
    the decorated body gets one dict of parsed values."""
    opts = [o for g in groups for o in g if o.cli]
    params = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=annotation(o))
              for o in opts]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a) for n, a, d in extra or []]

    def register(body: Callable[[dict], None]):
        def cmd(**values) -> None:
            def go():
                parsed = dict(values)
                for o in opts:
                    parsed[o.name] = parse(o, values[o.name])
                body(parsed)
            run(go)
        cmd.__signature__ = inspect.Signature(params)
        cmd.__doc__ = doc
        cmd.__name__ = name.replace("-", "_")
        app.command(name)(cmd)
        return body
    return register


def deployment_kwargs(v: dict) -> dict:
    """make_deployment keyword arguments from parsed DEPLOYMENT and ENGINE values."""
    kw = {o.name: v.get(o.name) for o in DEPLOYMENT if o.name not in ("gpu_file",)}
    kw["gpu_files"] = v.get("gpu_file")
    kw["engine"] = v.get("engine")
    kw["engine_options"] = engine_options(v)
    for k in ("pp", "ep", "dp", "nodes"):
        kw[k] = 1 if kw[k] is None else kw[k]
    return kw


def deployment_from(v: dict):
    """The deployment of parsed option values (DEPLOYMENT + ENGINE groups), its request lengths checked
    against the model's context (contextlen.py: refused, or a warning in its notes with
    --allow-long-context)."""
    from ..deploy.deployment import make_deployment
    return context_checked(make_deployment(**deployment_kwargs(v)), v)


def context_checked(dep, v: dict):
    """``dep`` when ``input_len + output_len`` of the values fits the model's context; with the warning
    added to its notes when it does not and ``allow_long_context``; else a one-line ValueError. Lengths
    from a trace, a dataset profile or a distribution vary, and are not checked here."""
    if "input_len" not in v or v.get("trace") is not None or v.get("dataset") is not None or \
            any(v.get(k) not in (None, "fixed") for k in ("input_dist", "output_dist")):
        return dep
    from dataclasses import replace

    from ..deploy.contextlen import context_note
    note = context_note(dep.model, v.get("input_len"), v.get("output_len"), bool(v.get("allow_long_context")))
    return dep if note is None else replace(dep, notes=(*dep.notes, note))


DEPLOYMENT_AND_ENGINE = DEPLOYMENT + ENGINE
