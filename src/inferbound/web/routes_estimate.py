"""POST endpoints on one deployment: estimate (static batch or max throughput), roofline, memory.

Each returns what the matching CLI command prints with ``--json``: the same library calls and the same
report layer (report.py), made JSON-safe. No route imports a CLI module.
"""
from __future__ import annotations

from fastapi import APIRouter

from .. import report
from ..estimate import estimate as run_estimate
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
            r = max_throughput(dep, input_len=req.input_len, output_len=req.output_len, num_requests=req.num_requests)
            out = {**r.to_dict(), "error_bands": bands_for(dep, "max_throughput"), "warnings": dep.warnings}
        else:
            out = run_estimate(dep, batch=req.batch, input_len=req.input_len, output_len=req.output_len).to_dict()
    return jsonable({"scenario": req.scenario, "deployment": dep.label(), **out, "engine": report.engine(dep)})


@router.post("/roofline", summary="Per-operator roofline of prefill and a mid-generation decode step")
def roofline(req: WorkloadIn) -> dict:
    """Per operator (all instances): FLOPs, bytes by kind, intensity (FLOP/B), time, bound; the roofs:
    effective peak FLOP/s at the compute dtype and effective HBM bytes/s, and their ridge point."""
    dep = deployment(req)
    with computing(req):
        out = report.roofline(dep, req.batch, req.input_len, req.output_len)
    return jsonable({**out, "warnings": out.get("warnings", dep.warnings)})


@router.post("/memory", summary="Memory per GPU, fit, max batch and max context")
def memory(req: WorkloadIn) -> dict:
    """Bytes per GPU (weights, KV cache, peak activations, runtime reserve, the engine's KV allocation
    and what it leaves unused) for ``batch`` sequences of input_len + output_len tokens; whether it fits;
    the largest batch at that context and the longest context at that batch."""
    dep = deployment(req)
    with computing(req):
        return jsonable(report.memory(dep, req.batch, req.input_len, req.output_len))
