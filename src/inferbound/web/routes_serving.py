"""POST /api/simulate: the serving simulator (``inferbound.sim``), with its work capped.

Caps: the request count and lengths (schemas.py); the drawn workload itself (a length distribution
can reach past its parameters): no request over MAX_SIM_OUTPUT output tokens, at most
MAX_SIM_OUTPUT_TOKENS output tokens in all; and a wall-clock budget per run (budget.py) checked as
requests complete, so a sparse workload of many long requests cannot hold a worker long.
Past any cap: 422 naming the field to reduce. The workload is drawn exactly as ``simulate`` draws it
(``poisson`` with the same seed) and passed as a trace, so results equal a direct ``simulate`` call.
"""
from __future__ import annotations

import math

from fastapi import APIRouter, Request

from .budget import Deadline, OverBudget, heavy_slot, seconds_for
from .compute import computing, deployment
from .errors import ApiError, jsonable
from .schemas import MAX_SIM_OUTPUT, MAX_SIM_OUTPUT_TOKENS, MAX_TOKENS, SimulateIn

router = APIRouter(prefix="/api", tags=["serving"])


def _check_workload(reqs, req: SimulateIn) -> None:
    outs = [r.output_len for r in reqs]
    ins = [r.input_len for r in reqs]
    out_field = "output_dist" if req.output_dist else "output_len"
    if max(outs) > MAX_SIM_OUTPUT:
        raise ApiError(out_field, f"a drawn request asks for {max(outs):,} output tokens; "
                                  f"the cap is {MAX_SIM_OUTPUT:,}")
    if max(ins) > MAX_TOKENS:
        raise ApiError("input_dist" if req.input_dist else "input_len",
                       f"a drawn request has {max(ins):,} prompt tokens; the cap is {MAX_TOKENS:,}")
    if sum(outs) > MAX_SIM_OUTPUT_TOKENS:
        raise ApiError("requests", f"requests x output tokens = {sum(outs):,}; the cap is {MAX_SIM_OUTPUT_TOKENS:,} "
                                   f"simulated output tokens per call (ask for fewer requests or shorter outputs)")


@router.post("/simulate", summary="Serving simulation at a request rate")
def simulate(req: SimulateIn, request: Request) -> dict:
    """Poisson arrivals at ``rate`` req/s through a vLLM-style continuous-batching scheduler: TTFT, ITL,
    TPOT, end-to-end and queue percentiles, throughput, goodput under SLOs, KV use, energy and cost."""
    from ..sim import poisson_noted, simulate as run_simulation  # optional subpackage, imported on use

    dep = deployment(req)
    rate = math.inf if req.rate == "inf" or req.concurrency is not None else float(req.rate)
    i, o, dist_in, dist_out, notes = req.input_len, req.output_len, req.input_dist, req.output_dist, []
    if getattr(req, "dataset", None):
        from ..sim import _dataset_lengths
        if req.input_dist or req.output_dist:
            raise ApiError("dataset", "dataset and input_dist/output_dist given together; allowed: one of them")
        try:
            i, o, dist_in, dist_out, notes = _dataset_lengths(req.dataset)
        except ValueError as e:
            raise ApiError("dataset", str(e)) from None
    with heavy_slot(request), computing(req):
        reqs, raised = poisson_noted(rate, req.requests, i, o, req.seed, dist_in, dist_out)
        notes = [*notes, *raised]  # lengths drawn below 1 and set to 1, counted
        _check_workload(reqs, req)
        try:
            res = run_simulation(dep, trace=reqs, replicas=req.replicas, prefill_replicas=req.prefill_replicas,
                                 decode_replicas=req.decode_replicas, num_blocks=req.num_blocks,
                                 concurrency=req.concurrency, think_time=req.think_time,
                                 slo_ttft_ms=req.slo_ttft_ms, slo_tpot_ms=req.slo_tpot_ms, slo_e2e_ms=req.slo_e2e_ms,
                                 progress=Deadline(seconds_for(request)))
        except OverBudget as e:
            raise e.api_error("requests", "simulation", "requests done",
                              "ask for fewer requests, shorter outputs or a higher rate") from None
    out = res.to_dict(timeline=req.timeline, max_points=500)
    return jsonable({**out, "warnings": [*dep.warnings, *notes]})
