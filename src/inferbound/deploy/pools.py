"""Disaggregated serving's two pools, each with its own layout: the prefill pool's and the decode pool's
deployments, derived from one deployment (model, GPU, formats, engine) with another parallel layout.

A layout is given as ``"tp=1,dp=32,ep=32,attention_dp=1,nodes=4,redundant_experts=32"`` (the CLI's
``--prefill-layout`` / ``--decode-layout``) or a mapping of the same :class:`Parallelism` fields; fields
left out keep the base deployment's. The pool is ``dataclasses.replace(dep, par=...)`` after the same
layout rules as any deployment (layout.check_layout), so its weights, engine runtime and KV capacity are
derived anew for that layout. SGLang runs the pools as two servers, ``--disaggregation-mode prefill`` and
``--disaggregation-mode decode``, each with its own ``--tp-size --dp-size --ep-size --nnodes``
(LMSYS blog 2025-05-05: prefill EP32 on 4 nodes, decode EP72 on 9 nodes).
"""
from __future__ import annotations

from dataclasses import replace

from .config import Parallelism
from .layout import check_layout

#: the layout fields a pool may set, and how their values read
POOL_FIELDS: dict[str, type] = {"tp": int, "pp": int, "ep": int, "dp": int, "nodes": int, "attention_dp": bool,
                                "redundant_experts": int, "sequence_parallel": bool, "comm_overlap": float,
                                "collective_algo": str, "microbatches": int, "ep_a2a": str}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def parse_layout(spec, field: str = "layout") -> dict:
    """{field: value} of ``"tp=8,ep=8"`` or a mapping; one-line errors naming the option, the key and what is
    allowed."""
    if spec is None or spec == "" or spec == {}:
        return {}
    if isinstance(spec, dict):
        items = [(str(k), v) for k, v in spec.items()]
    else:
        items = []
        for part in (p.strip() for p in str(spec).split(",") if p.strip()):
            if "=" not in part:
                raise ValueError(f"{field}={spec!r}: {part!r} must look like KEY=VALUE; allowed keys: "
                                 f"{', '.join(POOL_FIELDS)}")
            k, v = part.split("=", 1)
            items.append((k.strip(), v.strip()))
    out: dict = {}
    for k, v in items:
        kind = POOL_FIELDS.get(k)
        if kind is None:
            raise ValueError(f"{field} key {k!r} unknown; allowed: {', '.join(POOL_FIELDS)}")
        try:
            if kind is bool:
                s = str(v).lower()
                if s not in _TRUE + _FALSE:
                    raise ValueError
                out[k] = s in _TRUE
            elif kind is int:
                f = float(v)
                if f != int(f):
                    raise ValueError
                out[k] = int(f)
            else:
                out[k] = kind(v)
        except (TypeError, ValueError):
            allowed = "1/0, true/false" if kind is bool else ("an integer" if kind is int else kind.__name__)
            raise ValueError(f"{field} {k}={v!r} is not valid; allowed: {allowed}") from None
    return out


def pool_deployment(dep, spec, field: str = "layout"):
    """``dep`` with the layout ``spec`` (the rest of its layout kept); the same checks as make_deployment."""
    given = parse_layout(spec, field)
    if not given:
        return dep
    fields = {**dep.par.model_dump(), **given}
    if "tp" in given or "pp" in given or "dp" in given:
        fields["pp_split"] = fields["pp_split"] if fields["pp"] == dep.par.pp else None
    try:
        par = Parallelism(**fields)
    except ValueError as e:  # pydantic's ValidationError is a ValueError: one line, naming the option
        err = getattr(e, "errors", lambda: [{}])()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", e)).removeprefix("Value error, ")
        raise ValueError(f"{field} {loc}={err.get('input')!r}: {msg}" if loc else f"{field}: {msg}") from None
    try:
        check_layout(dep.model, dep.gpu, par)
    except ValueError as e:
        raise ValueError(f"{field}: {e}") from None
    return replace(dep, par=par)
