"""POST endpoints on one deployment: estimate (static batch or max throughput), roofline, memory.

Each returns what the matching CLI command prints with ``--json`` (same library calls), made JSON-safe.
"""
from __future__ import annotations

from fastapi import APIRouter

from .. import step
from ..cli.estimate_cmds import operator_rows
from ..estimate import decode_contexts, estimate as run_estimate
from ..memory import max_batch, max_context, memory_report
from ..roofline import compute_eff, ridge_point
from ..workloads import max_throughput
from .compute import bands_for, computing, deployment
from .errors import jsonable
from .schemas import EstimateIn, WorkloadIn

router = APIRouter(prefix="/api", tags=["deployment"])


@router.post("/estimate", summary="Static batch or max-throughput estimate")
def estimate(req: EstimateIn) -> dict:
    """``static``: TTFT, TPOT, latency, throughput, memory per GPU, energy, cost, the compute / memory /
    communication split of prefill and decode, error bands (with a calibration). ``max-throughput``:
    the offline continuous-batching operating point. Times in ms in the keys that say so, else SI."""
    dep = deployment(req)
    with computing(req):
        if req.scenario == "max-throughput":
            r = max_throughput(dep, input_len=req.input_len, output_len=req.output_len,
                               num_requests=req.num_requests, token_budget=req.token_budget,
                               kv_reservation=req.kv_reservation)
            out = {**r.to_dict(), "error_bands": bands_for(dep, "max_throughput")}
        else:
            out = run_estimate(dep, batch=req.batch, input_len=req.input_len, output_len=req.output_len).to_dict()
    return jsonable({"scenario": req.scenario, "deployment": dep.label(), **out})


@router.post("/roofline", summary="Per-operator roofline of prefill and a mid-generation decode step")
def roofline(req: WorkloadIn) -> dict:
    """Per operator (all instances): FLOPs, bytes by kind, intensity (FLOP/B), time, bound; the roofs:
    effective peak FLOP/s at the compute dtype and effective HBM bytes/s, and their ridge point."""
    dep = deployment(req)
    with computing(req):
        ctxs = decode_contexts(req.input_len, req.output_len)
        ctx = float(ctxs[len(ctxs) // 2])
        m, g, dt, par, cdt = dep.model, dep.gpu, dep.dtypes, dep.par, dep.compute_dtype
        phases = {"prefill": step.prefill(dep, req.batch, max(req.input_len, 1)),
                  "decode": step.decode(dep, req.batch, ctx)}
        out = {"deployment": dep.label(), "compute_dtype": cdt, "decode_context": ctx,
               "ridge_flop_per_byte": ridge_point(g, cdt),
               "peak_flop_s": g.peak_flops[cdt] * compute_eff(g, cdt),
               "hbm_bytes_s": g.hbm_bw * g.efficiency.memory,
               "datasheet": {"peak_flop_s": g.peak_flops[cdt], "hbm_bytes_s": g.hbm_bw},
               "phases": {k: operator_rows(c) for k, c in phases.items()}}
        for rows in out["phases"].values():
            for r in rows:
                r["achieved_flop_s"] = r["flops"] / r["time_s"] if r["time_s"] > 0 else 0.0
    return jsonable(out)


@router.post("/memory", summary="Memory per GPU, fit, max batch and max context")
def memory(req: WorkloadIn) -> dict:
    """Bytes per GPU (weights, KV cache, peak activations, runtime reserve) for ``batch`` sequences of
    input_len + output_len tokens; whether it fits; the largest batch at that context and the longest
    context at that batch."""
    dep = deployment(req)
    with computing(req):
        ctx = req.input_len + req.output_len
        m, g, dt, par = dep.model, dep.gpu, dep.dtypes, dep.par
        rep = memory_report(m, g, dt, par, req.batch, ctx, step_tokens=req.batch * req.input_len)
        out = {**rep.to_dict(), "deployment": dep.label(), "batch": req.batch, "context": ctx,
               "max_batch_at_context": int(max_batch(m, g, dt, par, ctx)),
               "max_context_at_batch": int(max_context(m, g, dt, par, req.batch))}
    return jsonable(out)
