"""POST /api/fleet: a day of traffic over pools of replicas (``inferbound fleet FILE.yaml``, inferbound.fleet).

The body is ``{"fleet": {...}}`` (the fleet file's content as a JSON mapping) or ``{"yaml": "..."}`` (its
text); the reply is ``{"result", "notes"}``, ``result`` exactly what ``inferbound fleet FILE.yaml --json``
prints. The file is read by the fleet's own schema (fleet/spec.py): a bad key or value is 422 at its path
under ``fleet`` (``["body", "fleet", "traffic", "rate", "mean"]``), ``yaml`` for YAML that does not parse.

Work caps, checked before anything runs: a server-side ``traffic.trace`` is refused (the API reads no files
of the server); the requests the traffic can bring, at most peak rate x duration = mean · peak_to_mean ·
duration, at most MAX_SIM_REQUESTS (422 at ``traffic.duration``); the replicas the pools can hold (each
pool's replicas, or autoscale.max) at most MAX_SIM_REPLICAS (422 at ``pools``). The run takes one heavy-work
slot and runs in this process, its replicas in it as ``--workers 1`` (the same figures bit for bit as any
backend, fleet/backends.py), under the work budget of budget.py as the other routes: a Deadline passed as the
fleet's ``progress`` callback (fleet/run.py) stops it past the budget, 422 at ``fleet`` in their words.
"""
from __future__ import annotations

import re

from fastapi import APIRouter, Request

from ..base.datafiles import load_yaml
from .budget import Deadline, OverBudget, heavy_slot, seconds_for
from .errors import ApiError, jsonable, log
from .schemas import MAX_SIM_REPLICAS, MAX_SIM_REQUESTS, FleetIn

router = APIRouter(prefix="/api", tags=["serving"])

_PATH = re.compile(r"^([A-Za-z_]\w*(?:\.\w+|\[[^\]]*\])*)(?==| unknown| is | must|:| given)")


def _loc(msg: str, pools: list[str] = ()) -> tuple:
    """("fleet", key, ...) of the key a fleet message starts with: "traffic.rate.mean=-1: ..." -> traffic, rate,
    mean; "pools[h100]: tp=3 ..." -> pools, 0, tp (a pool named by its index in the file)."""
    m = _PATH.match(msg)
    if not m:
        return ("fleet",)
    parts = [p for p in re.split(r"[.\[\]]", m.group(1)) if p]
    if len(parts) > 1 and parts[0] == "pools" and parts[1] in pools:
        parts[1] = str(list(pools).index(parts[1]))
    more = re.match(r"^: ([a-z_]\w*)=", msg[m.end():])
    if more and parts[0] == "pools":
        parts.append(more.group(1))
    return ("fleet", *(int(p) if p.isdigit() else p for p in parts))


def _spec(req: FleetIn):
    from ..fleet.spec import parse
    data = req.fleet
    if req.yaml is not None:
        try:
            data = load_yaml(req.yaml)
        except Exception as e:  # the YAML parser's own message, first line  # noqa: BLE001
            raise ApiError("yaml", f"not YAML: {str(e).splitlines()[0]}") from None
        if not isinstance(data, dict):
            raise ApiError("yaml", "must be a mapping with traffic: and pools:")
    try:
        return data, parse(data, "fleet")
    except ValueError as e:
        msg = str(e).removeprefix("fleet: ")
        raise ApiError(_loc(msg), msg) from None


def _caps(spec) -> None:
    t = spec.traffic
    if t.trace is not None:
        raise ApiError(("fleet", "traffic", "trace"), f"traffic.trace={str(t.trace)!r}: the API reads no files of "
                                                      f"the server; allowed: traffic.rate (the CLI reads traces)")
    most = t.rate.mean * t.rate.peak_to_mean * t.duration
    if most > MAX_SIM_REQUESTS:
        raise ApiError(("fleet", "traffic", "duration"),
                       f"up to {most:,.0f} requests (peak rate {t.rate.mean * t.rate.peak_to_mean:g}/s x "
                       f"{t.duration:g} s); the cap is {MAX_SIM_REQUESTS:,} per call (a shorter duration or a lower rate)")
    reps = sum(max(p.replicas, spec.autoscale.max if spec.autoscale is not None else 0) for p in spec.pools)
    if reps > MAX_SIM_REPLICAS:
        raise ApiError(("fleet", "pools"), f"up to {reps} replicas (each pool's replicas or autoscale.max); the cap "
                                           f"is {MAX_SIM_REPLICAS} per call")


def _run(spec, seconds: float, pools: list[str]) -> dict:
    """The fleet's --json dict, stopped past ``seconds`` of work (module docstring)."""
    from ..fleet import build, run_fleet
    try:
        return build(run_fleet(spec, workers=1, progress=Deadline(seconds)))
    except OverBudget as e:
        raise e.api_error("fleet", "the fleet run", "requests simulated",
                          "ask for a shorter traffic.duration, a lower rate or fewer replicas") from None
    except (ValueError, ArithmeticError) as e:
        msg = str(e)
        log.info("422 for FleetIn: %s", msg)
        raise ApiError(_loc(msg.removeprefix("fleet: "), pools), msg) from None


@router.post("/fleet", summary="A day of traffic over pools of replicas")
def fleet(req: FleetIn, request: Request) -> dict:
    """Routes a day of traffic (diurnal Poisson, sessions) over pools of replicas with the router and autoscaler
    of the fleet file; answers the --json figures: SLO attainment, TTFT/TPOT/E2E percentiles, GPU-hours, cost,
    energy, per pool, and a per-minute series."""
    _, spec = _spec(req)
    _caps(spec)
    with heavy_slot(request):
        result = _run(spec, seconds_for(request), [p.name for p in spec.pools])
    return jsonable({"result": result, "notes": result.get("notes", [])})
