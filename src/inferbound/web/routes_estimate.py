"""POST endpoints on one deployment: estimate (static batch, max throughput or serving), roofline, memory.

Each returns what the matching CLI command prints with ``--json``: the same library calls and the same
report layer (report.py), made JSON-safe. No route imports a CLI module.
"""
from __future__ import annotations

from fastapi import APIRouter

from ..faces import report
from ..workloads.static import estimate as run_estimate
from ..workloads import max_throughput
from ..workloads.serving import serving
from ..workloads.steady_state import as_mix
from ..workloads.images import with_images
from .compute import check_scenario, computing, deployment, lengths_of
from .errors import jsonable
from ..workloads.scenario_view import max_throughput_view, serving_view
from .schemas import EstimateIn, WorkloadIn

router = APIRouter(prefix="/api", tags=["deployment"])


@router.post("/estimate", summary="Static batch, max-throughput or serving estimate")
def estimate(req: EstimateIn) -> dict:
    """``static``: TTFT, TPOT, latency, throughput, memory per GPU, energy, cost, the compute / memory /
    communication split of prefill and decode, error bands (with a calibration). ``max-throughput``:
    the offline continuous-batching operating point. ``serving``: the analytic steady state at ``rate``
    or ``concurrency`` (workloads/serving.py). The steady states add ``view``: memory per GPU and the
    time split of their own operating point (scenario_view.py). Every scenario's ``error_bands`` (by figure;
    max-throughput's ``error_band`` is its throughput entry) are the CLI's (deploy/bands.py). Times in ms in the
    keys that say so, else SI."""
    check_scenario(req.scenario, req.rate, req.concurrency, req)
    dep = deployment(req)
    with computing(req):
        mix = lengths_of(req)
        if req.scenario == "max-throughput":
            r = max_throughput(dep, input_len=req.input_len, output_len=req.output_len, num_requests=req.requests,
                               lengths=mix, concurrency=req.concurrency, images=req.images)
            view = max_throughput_view(dep, r, with_images(dep.model, mix or as_mix(req.input_len, req.output_len),
                                                           req.images))
            out = {**r.to_dict(), "warnings": dep.warnings, "view": view}
        elif req.scenario == "serving":
            given = "requests" in req.model_fields_set or req.num_requests is not None  # else closed_loop.yaml's
            s = serving(dep, rate=req.rate, concurrency=req.concurrency, think_time=req.think_time,
                        input_len=req.input_len, output_len=req.output_len, lengths=mix,
                        requests=req.requests if given else None, images=req.images)
            view = serving_view(dep, s, with_images(dep.model, mix or as_mix(req.input_len, req.output_len),
                                                    req.images))
            out = {**s.to_dict(), "warnings": dep.warnings, "view": view}
        else:
            out = run_estimate(dep, batch=req.batch, input_len=req.input_len, output_len=req.output_len,
                               images=req.images).to_dict()
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
