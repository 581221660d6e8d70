"""Typed option groups: each group of declared options (options.py) as a frozen pydantic model.

One declaration, three faces. An :class:`~.opt.Opt` states a name, a kind, a default, a help text, bounds
(``ge``/``gt``/``le``/``lt``) and allowed values (``choices``); :func:`field_of` turns it into a pydantic
field (the Python type, the default, the bounds, a ``Literal`` of the choices, the help as the field's
description), and the same function builds the JSON API's request fields (web/schemas.py, with the
API's work caps ``api_le``). Nothing here states a default or a range of its own (but that a list option
given holds at least one item, and the JSON API's caps on list and mapping sizes).

The groups of the Python API (``inferbound.search(model, query)``, ``inferbound.simulate(dep, load)``,
faces/api.py):

- :class:`DeploymentOptions` — options.DEPLOYMENT: model, GPU, layout, dtypes (make_deployment);
- :class:`EngineSettings` — options.ENGINE: the serving engine and its overrides (runtime.resolve);
- :class:`Lengths` — options.LENGTHS: request lengths beyond fixed input/output (workloads/lengths.py);
- :class:`ServingLoad` — options.SERVING: a simulated workload (arrivals, lengths, replicas, SLOs);
- :class:`SearchQuery` — options.SEARCH + LENGTHS + ENGINE and the searched GPUs' overrides and files.

Each is frozen (assignment raises) and forbids unknown fields; its class docstring lists every field
with its help (the attribute docstrings, generated from the declarations). Constructing one with a bad
value raises :class:`OptionError` (a ValueError) in one line naming the field, the value and what is
allowed: the declaration's own check (``Opt.check``, the CLI's message) first, then pydantic's type
check. Options a group leaves out are the faces' own (what to print, caps of one face): ``SKIPPED``.
The models are built on first use (module ``__getattr__``), so a command pays only for the groups it takes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..deploy.contextlen import context_note
from ..deploy.prefix import check_shared_prefix
from ..workloads.lengths import from_options
from . import options as opts
from .opt import REQUIRED, Opt

Scalar = float | int | bool | str | None


class OptionError(ValueError):
    """A bad option value: one line naming the field, the value and what is allowed."""


@dataclass(frozen=True)
class Face:
    """How one face types its fields. The Python API (``PYTHON``) takes Python values, checked strictly
    (no "8" for 8), bounded by the declarations' ``le``; the JSON API (web/schemas.py) takes JSON values,
    bounded by the work caps ``api_le`` as well, with its item caps (``max_items`` entries of a mapping,
    ``max_list`` entries of a layer list)."""

    api: bool = False
    max_items: int | None = None
    max_list: int | None = None


PYTHON = Face()


def field_of(o: Opt, face: Face = PYTHON):
    """(annotation, Field) of one declared option: its type, default, bounds, allowed values and help."""
    le = o.api_le if face.api and o.api_le is not None else o.le
    bounds = {k: v for k, v in (("ge", o.ge), ("gt", o.gt), ("le", le), ("lt", o.lt)) if v is not None}
    seq = _list if face.api else _tuple  # JSON arrays; frozen Python values hold tuples
    if o.choices is not None and o.kind == "list_str":  # a list of allowed values (search dtypes)
        t = seq(Literal[o.choices])  # type: ignore[valid-type]
        bounds = {} if face.api else {"min_length": 1}
    elif o.choices is not None:
        t = Literal[o.choices]  # type: ignore[valid-type]
    elif o.kind == "rate":  # requests/s, or infinity (every request at t=0)
        if face.api:  # 'inf' spelled as JSON can; the range is the API schema's own check (schemas._SimulateBase)
            t, bounds = float | Literal["inf"], {}
        else:
            t = Annotated[float, Field(strict=True)]
    elif o.kind == "list_int":  # the JSON API bounds each entry (a layer count); the library checks them itself
        t = list[Annotated[int, Field(ge=1, le=face.max_list)]] if face.api else \
            _tuple(Annotated[int, Field(strict=True)])
        bounds = {"min_length": 1, "max_length": face.max_list}
    elif o.kind == "kv":
        t = dict[str, Scalar] if face.api else dict[str, Any]
        bounds = {"max_length": face.max_items}
    elif o.kind == "list_str":
        t = seq(str)
        bounds = {} if face.api else {"min_length": 1}
    elif o.kind == "price":  # {gpu_id: USD per GPU-hour}; ids are checked where the GPU resolves
        t = dict[str, Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)]]
        bounds = {"max_length": face.max_items}
    elif o.kind == "path":
        t = _tuple(Path)
    elif o.kind == "path1":
        t = Path
    else:
        t = {"int": int, "float": float, "bool": bool, "str": str}[o.kind]
        if not face.api:
            t = Annotated[t, Field(strict=True, **({"allow_inf_nan": False} if o.kind == "float" else {}))]
    bounds = {k: v for k, v in bounds.items() if v is not None}
    if o.default is None:
        t = t | None
    default = ... if o.default is REQUIRED else o.default
    return t, Field(default, description=o.help, **bounds)


def _tuple(item):
    return tuple[item, ...]  # type: ignore[valid-type]


def _list(item):
    return list[item]  # type: ignore[valid-type]


class Group(BaseModel):
    """A typed option group: frozen, unknown fields refused, a bad value one line naming the field."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=(), defer_build=True)

    #: the declaration of each field (name -> Opt), set by :func:`group`
    declared: ClassVar[dict[str, Opt]] = {}

    def __init__(self, **values):
        for name, v in values.items():  # the declaration's own check first: the CLI's one-line message
            o = self.declared.get(name)
            if o is not None and (o.kind in ("int", "float", "str") or
                                  (o.kind == "list_str" and isinstance(v, (list, tuple)))):
                try:
                    o.check(v)
                except ValueError as e:
                    raise OptionError(str(e)) from None
        try:
            super().__init__(**values)
        except ValidationError as e:
            raise OptionError(one_line(e, type(self))) from None

    @classmethod
    def of(cls, value=None, **changes):
        """This group from an instance, a mapping or None (the defaults), with ``changes`` applied, validated."""
        if isinstance(value, cls):
            return value if not changes else cls(**{**dict(value), **changes})
        if value is None:
            return cls(**changes)
        if isinstance(value, dict):
            return cls(**{**value, **changes})
        raise OptionError(f"{cls.__name__}: got {type(value).__name__}; allowed: a {cls.__name__}, a dict of its "
                          f"fields, or None")

    @classmethod
    def pick(cls, values: dict):
        """This group from the parsed options of a command (``values`` holds more than the group's fields)."""
        return cls(**{k: values[k] for k in cls.model_fields if k in values})

    def values(self) -> dict:
        """The fields as a plain dict (the library's parsed-options form)."""
        return dict(self)


def one_line(e: ValidationError, model: type[Group]) -> str:
    """The first error of ``e`` as one line: field=value, what is wrong, what is allowed."""
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or model.__name__
    name = str(err["loc"][0]) if err["loc"] else ""
    value = err.get("input")
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    if err["type"] == "extra_forbidden":
        return f"{name}={value!r} is not an option of {model.__name__}; allowed: {', '.join(model.model_fields)}{more}"
    if err["type"] == "missing":
        return f"{loc} is required by {model.__name__}{more}"
    o = model.declared.get(name)
    allowed = f"; allowed: {', '.join(o.choices)}" if o is not None and o.choices else ""
    msg = err["msg"][0].lower() + err["msg"][1:]
    return f"{loc}={value!r}: {msg}{allowed}{more}"


def _doc(doc: str, declared: dict[str, Opt]) -> str:
    """The class docstring: ``doc`` and one line per field (its help, default, bounds, allowed values)."""
    lines = [doc.strip(), "", "Attributes:"]
    for name, o in declared.items():
        facts = [] if o.default is REQUIRED else [f"default {o.default!r}"]
        facts += [f"{w} {v:g}" for w, v in ((">=", o.ge), (">", o.gt), ("<=", o.le), ("<", o.lt)) if v is not None]
        if o.choices:
            facts.append("one of " + ", ".join(o.choices))
        lines.append(f"    {name}: {o.help} ({'; '.join(facts)})" if facts else f"    {name}: {o.help}")
    return "\n".join(lines)


def group(name: str, doc: str, members: tuple[Opt, ...], base: type[Group] = Group) -> type[Group]:
    """A frozen model whose fields are ``members``' declarations, in order."""
    declared = {o.name: o for o in members}
    model = create_model(name, __base__=base, __doc__=_doc(doc, declared), __module__=__name__,
                         **{n: field_of(o) for n, o in declared.items()})
    model.declared = declared
    return model


def _without(members: tuple[Opt, ...], *names: str) -> tuple[Opt, ...]:
    return tuple(o for o in members if o.name not in names)


#: options of a declared group a typed group leaves out: the faces' own (what to print or return, one face's
#: cap) or given beside the group (search's model argument)
SKIPPED = {
    "ServingLoad": {"timeline": "the JSON reply's form (SimResult.to_dict(timeline=True))"},
    "SearchQuery": {"model": "search(model, query): the first argument",
                    "no_cap": "the CLI's cap (cli/search_cmd.py); the library has none",
                    "emit": "what the faces print after the search; they search engine = engine or emit",
                    "emit_rank": "what the faces print after the search",
                    "frontier_x": "the JSON reply's form", "frontier_y": "the JSON reply's form",
                    "max_points": "the JSON reply's form"},
}

_SEARCH_GPU = tuple(o for o in opts.SEARCH_OUTPUT if o.name in ("gpu_overrides", "gpu_file"))


class _Engine(Group):
    def engine_options(self) -> dict:
        """The runtime.resolve overrides these settings state (options.engine_options)."""
        return opts.engine_options(dict(self))


class _Lengths(Group):
    def mix(self, input_len: int, output_len: int):
        """The length Mix of these options around ``input_len``/``output_len`` (workloads/lengths.py
        from_options), or None for fixed lengths."""
        return from_options({**dict(self), "input_len": input_len, "output_len": output_len})


class _Search(_Engine):
    def mix(self):
        """The length Mix of the query (its LENGTHS around its input_len/output_len), or None for fixed lengths."""
        return from_options(dict(self))


#: each group: (docstring, the declared tuples it is built from, its base class)
SPECS = {
    "DeploymentOptions": ("A deployment: model, GPU, parallel layout, dtypes, overrides (the keyword arguments of "
                          "make_deployment but the engine's).", (opts.DEPLOYMENT,), Group),
    "EngineSettings": ("The serving engine (data/engines.yaml) and the overrides of its defaults and features.",
                       (opts.ENGINE,), _Engine),
    "Lengths": ("Request lengths beyond fixed input_len/output_len: distributions, a trace, a dataset profile "
                "(one source at a time).", (opts.LENGTHS,), _Lengths),
    "ServingLoad": ("A simulated serving workload: arrivals (a rate, a trace or closed-loop clients), request "
                    "lengths, replicas, goodput SLOs.", (opts.SERVING,), Group),
    "SearchQuery": ("What a search sweeps and how it ranks: GPUs, sizes, layouts, dtypes, the objective, SLOs and "
                    "budgets, the workload's lengths, the serving engine, the searched GPUs' overrides.",
                    (opts.SEARCH, opts.LENGTHS, opts.ENGINE, _SEARCH_GPU), _Search),
}
__all__ = ["Face", "Group", "OptionError", "SKIPPED", "SPECS", "context_checked", "deployment_kwargs", "field_of",
           "fixed_lengths", *SPECS]


def __getattr__(name: str):
    """Each group's model, built on first use (about 10 ms each: a CLI command builds only the groups it takes)."""
    if name not in SPECS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    doc, sources, base = SPECS[name]
    model = globals()[name] = group(name, doc, _without(sum(sources, ()), *SKIPPED.get(name, {})), base)
    return model


# ---- what option values mean for a deployment (the CLI's parsed values and the groups' alike) ----

_VARYING = ("trace", "dataset", "input_dist", "output_dist")  # lengths that vary: not checked against the context


def deployment_kwargs(values) -> dict:
    """make_deployment's keyword arguments of DEPLOYMENT and ENGINE option values (a dict of parsed options,
    or the groups' ``values()`` merged): the DEPLOYMENT names, ``gpu_file`` as ``gpu_files``, the engine and
    its overrides (options.engine_options)."""
    kw = {o.name: values.get(o.name) for o in opts.DEPLOYMENT if o.name != "gpu_file"}
    files = values.get("gpu_file")
    kw["gpu_files"] = list(files) if files is not None else None
    kw["engine"] = values.get("engine")
    kw["engine_options"] = opts.engine_options(values)
    for k in ("pp", "ep", "dp", "nodes"):
        kw[k] = 1 if kw[k] is None else kw[k]
    return kw


def fixed_lengths(values) -> bool:
    """Whether option ``values`` (a dict or a group) describe fixed input/output lengths (no trace, dataset or
    distribution but 'fixed'): only those are checked against the model's context."""
    get = values.get if isinstance(values, dict) else lambda k: getattr(values, k, None)
    return all(get(k) in (None, "fixed") if k.endswith("_dist") else get(k) is None for k in _VARYING)


def context_checked(dep, values, flag: str):
    """``dep``, or with the long-context warning among its notes when ``input_len + output_len`` of option
    ``values`` exceeds the model's context and ``allow_long_context`` (deploy/contextlen.py: a one-line
    ValueError without it; ``flag``: how the caller's face names the allowance). Lengths from a trace, a
    dataset profile or a distribution vary and are not checked, here nor for a --shared-prefix-len longer than a
    fixed prompt (refused: deploy/prefix.check_shared_prefix)."""
    get = values.get if isinstance(values, dict) else lambda k: getattr(values, k, None)
    if get("input_len") is None or not fixed_lengths(values):
        return dep
    check_shared_prefix(dep.runtime, get("input_len"))  # a system prompt longer than the prompt (deploy/prefix.py)
    note = context_note(dep.model, get("input_len"), get("output_len"), bool(get("allow_long_context")), flag=flag)
    return dep if note is None or note in dep.notes else replace(dep, notes=(*dep.notes, note))
