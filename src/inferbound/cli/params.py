"""typer parameters built from the declared options (options.py), and their parsing.

Every command's options come from options.py, in one of two forms:

- ``command(name, doc, *groups)`` registers a command whose options are the groups' declarations
  (typer reads them from a generated signature); the body receives the parsed values as a dict, every
  declared range and choice already checked (one-line errors);
- ``@declared`` over a plain function whose parameters are annotated ``annotation(OPT)`` (no defaults
  in the source: each comes from its declaration), the declared ranges and choices checked before the
  body runs (one ``error:`` line, exit code 2).

Either way each parameter's annotation carries its :class:`Opt` (tests read it back).
``deployment_from(values)`` builds the deployment from the DEPLOYMENT and ENGINE values (the mapping of
faces/groups.py that the typed groups use too).
"""
from __future__ import annotations

import functools
import inspect
import typing
from pathlib import Path
from typing import Annotated, Callable

import typer

from ..faces.options import DEPLOYMENT, ENGINE, REQUIRED, Opt
from . import app
from .common import error_line, fail, parse_sets, run

_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list_int": str, "kv": list[str], "path": list[Path],
          "path1": Path, "rate": str, "list_str": str, "price": list[str]}
_METAVARS = {"int": "INTEGER", "float": "FLOAT", "str": "TEXT", "list_int": "N,N,...", "kv": "KEY=VALUE", "path": "FILE",
             "path1": "FILE", "rate": "REQ/S", "list_str": "A,B,...",
             "price": "GPU=USD"}


def annotation(o: Opt):
    """The typer annotation of one declared option; its metadata carries the declaration ``o``."""
    t = _TYPES[o.kind]
    help_text = o.help + (f" [{', '.join(o.choices)}]" if o.choices else "")
    nullable = o.default is None
    if o.argument:
        return Annotated[t | None if nullable else t,
                         typer.Argument(help=help_text, show_default=o.default is not REQUIRED,
                                        metavar=o.name.upper()), o]
    meta = None if o.kind == "bool" else o.extra.get("metavar") or (
        _METAVARS[o.kind] if o.choices is None else "|".join(o.choices))
    return Annotated[t | None if nullable else t, typer.Option(*o.cli_flags, help=help_text, metavar=meta), o]


#: annotation(o) per declaration object (id -> (o, its annotation)): the commands of one module share most
#: declarations (estimate, roofline and memory: 186 parameters, 62 declarations), and building the typing
#: objects was most of importing that module (issue 18); typer copies an annotation's OptionInfo before it
#: changes it (typer/utils.py get_params_from_function), so commands can share one
_ANNOTATED: dict[int, tuple[Opt, object]] = {}


def _annotation_of(o: Opt):
    hit = _ANNOTATED.get(id(o))
    if hit is None or hit[0] is not o:
        hit = _ANNOTATED[id(o)] = (o, annotation(o))
    return hit[1]


def declaration_of(annotated) -> Opt | None:
    """The :class:`Opt` an ``annotation(o)`` carries (None for any other annotation)."""
    return next((m for m in getattr(annotated, "__metadata__", ()) if isinstance(m, Opt)), None)


def declared(fn: Callable) -> Callable:
    """A command written as a plain function over ``annotation(OPT)`` parameters: each parameter's default
    is its declaration's (the source states none), and the declared ranges and choices are checked before
    the body runs, a bad value one ``error:`` line (exit code 2). The body gets the values as typed
    (``--set`` pairs, paths): parsing them stays the body's."""
    hints = typing.get_type_hints(fn, include_extras=True)
    params, opts = [], {}
    for p in inspect.signature(fn).parameters.values():
        o = declaration_of(hints.get(p.name))
        if o is None:
            raise TypeError(f"{fn.__name__}({p.name}): every parameter of a command is annotation(OPT) of a "
                            f"declared option (faces/options.py)")
        if p.default is not inspect.Parameter.empty:
            raise TypeError(f"{fn.__name__}({p.name}): the default is the declaration's (faces/options.py); "
                            f"state it there")
        opts[p.name] = o
        params.append(p.replace(annotation=hints[p.name], default=o.default))

    @functools.wraps(fn)
    def cmd(**values):
        try:
            for name, o in opts.items():
                if o.kind in ("int", "float", "str") and values.get(name) is not None:
                    o.check(values[name])
        except ValueError as e:
            fail(error_line(e))
        return fn(**values)
    cmd.__signature__ = inspect.Signature(params)
    return cmd


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
        return o.check(items)
    if o.kind == "rate":
        try:
            rate = float(value)
        except ValueError:
            raise ValueError(f"rate={value!r} must be a number of requests/s > 0, or inf") from None
        if not rate > 0:
            raise ValueError(f"rate={value!r} must be a number of requests/s > 0, or inf")
        return rate
    return o.check(value)


def command(name: str, doc: str, *groups, extra: list[tuple[str, object, object]] | None = None):
    """Register ``name`` with the options of ``groups`` (and ``extra`` (name, annotation, default) triples);
    the decorated body gets one dict of parsed values. A group is a tuple of declarations (options.py) or a
    typed option group (faces/groups.py: its fields' declarations, ``declared``)."""
    opts = [o for g in groups for o in (g.declared.values() if isinstance(g, type) else g) if o.cli]
    params = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default,
                                annotation=_annotation_of(o)) for o in opts]
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


def deployment_from(v: dict):
    """The deployment of parsed option values (DEPLOYMENT and ENGINE, checked as they were parsed):
    make_deployment(**faces.groups.deployment_kwargs(v)), the mapping the typed groups use; its request lengths
    checked against the model's context (faces.groups.context_checked, contextlen.py: refused, or a warning in
    its notes with --allow-long-context)."""
    from ..deploy.deployment import make_deployment
    from ..faces.groups import context_checked, deployment_kwargs
    return context_checked(make_deployment(**deployment_kwargs(v)), v, LONG_CONTEXT_FLAG)


#: how the CLI names the allowance in the long-context error and warning
LONG_CONTEXT_FLAG = "--allow-long-context"


DEPLOYMENT_AND_ENGINE = DEPLOYMENT + ENGINE
