"""POST /api/bench: a benchmark's own command lines predicted (``inferbound bench``, inferbound.bench).

The body is ``{"gpu": ..., "serve": "vllm serve MODEL ...", "load": "vllm bench serve ...", "engine": null}``
(``serve`` may be null for ``trtllm-bench``, which launches its own engine). The reply is
``{"tool", "result", "text", "notes", "warnings"}``: ``result`` is exactly what ``inferbound bench --json``
prints for the same commands, ``text`` the tool's own printed block. Both command lines are read by the
same parsers as the CLI; a bad value is 422 at ``["body", "serve"]`` or ``["body", "load"]`` (the parser's
one-line message), a bad ``gpu``/``engine`` at that field. Work caps: the requests replayed (measured and
warm-up) at most MAX_SIM_REQUESTS and their output tokens at most MAX_SIM_OUTPUT_TOKENS (422 at ``load``),
one heavy-work slot per call, and the wall-clock budget of budget.py (422 at ``load`` past it).
"""
from __future__ import annotations

from fastapi import APIRouter, Request

from ..bench import parse_load, parse_serve, run_bench
from .budget import Deadline, OverBudget, heavy_slot, seconds_for
from .errors import ApiError, jsonable, log
from .schemas import MAX_SIM_OUTPUT_TOKENS, MAX_SIM_REQUESTS, BenchIn

router = APIRouter(prefix="/api", tags=["serving"])


def _field_of(msg: str, req: BenchIn) -> str:
    """The request field a run_bench message is about (gpu, engine; the rest is the deployment: serve)."""
    if msg.startswith(("gpu=", "gpu ")) or f"{req.gpu!r}" in msg:
        return "gpu"
    if msg.startswith("engine=") or (req.engine and req.engine in msg):
        return "engine"
    return "serve" if req.serve else "load"


@router.post("/bench", summary="A benchmark's own command lines, predicted")
def bench(req: BenchIn, request: Request) -> dict:
    """Replays the load tool's protocol (vllm bench serve, benchmark_serving.py, sglang.bench_serving, genai-perf,
    trtllm-bench, guidellm) on the serve command's deployment and answers in the tool's own schema."""
    try:
        proto = parse_load(req.load)
    except (ValueError, ArithmeticError) as e:
        raise ApiError("load", str(e)) from None
    if req.serve:
        try:
            parse_serve(req.serve)
        except (ValueError, ArithmeticError) as e:
            raise ApiError("serve", str(e)) from None
    n = int(proto.inputs.size + proto.warmup_inputs.size)
    if n > MAX_SIM_REQUESTS:
        raise ApiError("load", f"{n:,} requests to replay (measured and warm-up); the cap is {MAX_SIM_REQUESTS:,} "
                               f"per call")
    tokens = int(proto.outputs.sum() + proto.warmup_outputs.sum())
    if tokens > MAX_SIM_OUTPUT_TOKENS:
        raise ApiError("load", f"{tokens:,} output tokens to replay; the cap is {MAX_SIM_OUTPUT_TOKENS:,} per call "
                               f"(fewer requests or shorter outputs)")
    with heavy_slot(request):
        try:
            r = run_bench(req.serve, req.load, gpu=req.gpu, engine=req.engine,
                          progress=Deadline(seconds_for(request)))
        except OverBudget as e:
            raise e.api_error("load", "replay", "requests done", "ask for fewer requests or shorter outputs") from None
        except (ValueError, ArithmeticError) as e:
            log.info("422 for BenchIn: %s: %s", type(e).__name__, e)
            raise ApiError(_field_of(str(e), req), str(e)) from None
    return jsonable({"tool": r.tool, "result": r.result, "text": r.text, "notes": r.notes, "warnings": r.warnings})
