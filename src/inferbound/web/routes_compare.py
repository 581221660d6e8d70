"""POST /api/compare: deployments side by side under one workload (compare.py, ``inferbound compare``).

The body is the comparison file as JSON, ``{"workload": {...}, "deployments": [{...}, ...]}``, with the
API's field names (the request models check types, ranges and unknown keys). Each deployment's model is
resolved as every other endpoint resolves it (modelsource.py: a catalog name or a pasted config, never a
file) and passed to ``compare.parse`` and ``compare.compare`` as a ModelSpec, so the rows are exactly the
CLI's. Caps: MAX_COMPARE_DEPLOYMENTS deployments, the work budget of budget.py (checked before each
deployment is priced) and a heavy-work slot. A deployment that does not fit is a row with ``fits: false``,
its reason among its ``warnings`` (compare.py), not an error; rows are labelled by what differs between
them (``compare.labels``). Errors are 422 at ``["body", "deployments", i, field]`` or
``["body", "workload", field]``.
"""
from __future__ import annotations

from fastapi import APIRouter, Request

from ..faces import compare as cmp
from ..faces.options import DEPLOYMENT, ENGINE
from .budget import Deadline, OverBudget, heavy_slot, seconds_for
from .compute import check_scenario
from .errors import FIELD_RE, ApiError, jsonable, log
from .modelsource import context_checked, model_spec
from .schemas import CompareIn

router = APIRouter(prefix="/api", tags=["deployment"])

_DEPLOYMENT_FIELDS = {o.name for o in DEPLOYMENT + ENGINE if o.api}


def _values(d, workload) -> dict:
    """compare.py's option values of one validated deployment, its model as a resolved ModelSpec."""
    spec = context_checked(model_spec(d), workload)
    vals = {o.name: getattr(d, o.name) for o in DEPLOYMENT + ENGINE
            if o.api and o.name not in ("model", "model_overrides", "calibration") and getattr(d, o.name) is not None}
    if "pp_split" in vals:
        vals["pp_split"] = tuple(vals["pp_split"])
    return {**vals, "model": spec, "calibration": d.calibration_arg, "label": d.label}


def _paced(deployments: list, deadline: Deadline):
    """The deployments one by one, the work budget checked before each is priced."""
    for i, d in enumerate(deployments):
        deadline(i, len(deployments))
        yield d


def _where(msg: str, workload_fields) -> tuple:
    """The field path of compare's 'deployments[i]: field=...' message."""
    head, sep, rest = msg.partition(": ")
    if not (sep and head.startswith("deployments[") and head.endswith("]") and head[12:-1].isdigit()):
        return ()
    i = int(head[12:-1])
    m = FIELD_RE.match(rest)
    name = m.group(1) if m else None
    if name in _DEPLOYMENT_FIELDS:
        return ("deployments", i, name)
    if name in workload_fields:
        return ("workload", name)
    return ("deployments", i)


@router.post("/compare", summary="Deployments side by side under one workload")
def compare(req: CompareIn, request: Request) -> dict:
    """One row per deployment: TTFT, TPOT, tok/s per GPU and per user, J per output token, $ per million
    output tokens, whether it fits, the decode bound, and each figure's ratio to the first deployment's;
    ``csv`` is the rows as ``inferbound compare --csv`` writes them."""
    w = req.workload
    check_scenario(w.scenario, w.rate, w.concurrency, w, ("workload",))
    values = []
    for i, d in enumerate(req.deployments):
        try:
            values.append(_values(d, w))
        except ApiError as e:
            field = ("workload", "input_len") if e.field == "input_len" else \
                ("deployments", i, e.field) if e.field else ("deployments", i)
            raise ApiError(field, f"deployments[{i}]: {e.msg}") from None
    workload = w.model_dump(exclude_none=True)
    with heavy_slot(request):
        try:
            parsed, deps = cmp.parse({"workload": workload, "deployments": values}, "compare")
            rows = cmp.compare(parsed, _paced(deps, Deadline(seconds_for(request))))
        except OverBudget as e:
            raise e.api_error("deployments", "comparison", "deployments priced", "compare fewer deployments") from None
        except (ValueError, ArithmeticError) as e:
            msg = str(e.args[0]) if e.args else type(e).__name__
            log.info("422 for compare: %s: %s", type(e).__name__, msg)
            raise ApiError(_where(msg, type(w).model_fields), msg) from None
    return jsonable({"workload": workload, "metrics": list(cmp.METRICS), "rows": [r.to_dict() for r in rows],
                     "csv": cmp.to_csv(rows)})
