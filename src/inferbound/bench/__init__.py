"""``inferbound bench``: the benchmark people run, predicted.

The deployment is its launch command (serve.py: ``vllm serve``, ``python -m sglang.launch_server``,
``trtllm-serve``), the load the benchmark's own command line (load.py: ``vllm bench serve``, the older
``benchmark_serving.py``, ``python -m sglang.bench_serving``, ``genai-perf profile``; trtllm.py: ``trtllm-bench``,
which launches its own engine from its flags; guidellm.py: ``guidellm benchmark``), each read with the
tool's flag names and defaults (data/bench.yaml, with the source version of each parser). The protocol
(lengths sampled with the tool's semantics, send schedule, concurrency limit, warm-ups) is replayed in the
simulator (replay.py) and reported in the tool's own schema (report.py).

    >>> from inferbound.bench import run_bench
    >>> r = run_bench("vllm serve meta-llama/Llama-3.1-8B", "vllm bench serve --random-input-len 128 "
    ...               "--random-output-len 16 --num-prompts 8 --max-concurrency 4", gpu="h100_sxm")
    >>> r.result["completed"]
    8
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..deploy.deployment import Deployment, make_deployment
from ..deploy.sampling import engines_read
from ..model import load_model
from .guidellm import guidellm_result, guidellm_text
from .load import Protocol
from .replay import Outcome, replay
from .report import (NO_PEAK, NO_TTST, genai_result, genai_text, sglang_result, sglang_text, vllm_result,
                     vllm_text)
from .serve import ServeSpec, parse_serve
from .tools import TRTLLM_TOOLS, parse_load
from .trtllm import runtime_for, serve_words, trtllm_result, trtllm_text

__all__ = ["run_bench", "BenchResult", "parse_serve", "parse_load", "deployment_of"]


@dataclass
class BenchResult:
    """``result``: the tool's own result dict; ``text``: its printed block; ``notes``: what was assumed;
    ``warnings``: flags not read and the deployment's warnings."""

    tool: str
    result: dict
    text: str
    deployment: Deployment
    protocol: Protocol
    outcome: Outcome
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def deployment_of(spec: ServeSpec, gpu: str = "h100_sxm", engine: str | None = None,
                  sampling: dict | None = None) -> Deployment:
    """The deployment a ServeSpec launches on ``gpu``; ``engine`` (NAME@VERSION) must name the serve
    command's engine (default: its profile in data/engines.yaml); ``sampling``: the engine options the load's
    requests imply (Protocol.sampling: top_p, repetition_penalty)."""
    if engine is not None and engine.split("@")[0] != spec.engine:
        raise ValueError(f"engine={engine!r} does not match the serve command's engine {spec.engine!r}; allowed: "
                         f"{spec.engine} or {spec.engine}@VERSION")
    kw = dict(spec.deployment)
    model = load_model(spec.model)
    if spec.expert_parallel and model.is_moe:  # vLLM: experts span TP x DP; the DP ranks run attention DP
        kw["ep"] = kw["tp"] * kw.get("dp", 1)
        kw["attention_dp"] = kw.get("dp", 1) > 1
    return make_deployment(model=model, gpu=gpu, engine=engine or spec.engine,
                           engine_options={**dict(spec.engine_options), **(sampling or {})}, **kw)


def _priced_sampling(spec: ServeSpec, proto: Protocol) -> tuple[dict, list[str]]:
    """(the load's sampling options the deployment prices, a warning when the serve command's engine has no
    sampler read from its sources: the requests then run, unpriced, instead of the benchmark failing)."""
    if not proto.sampling or spec.engine in engines_read():
        return dict(proto.sampling), []
    said = ", ".join(f"{k} {v:g}" for k, v in proto.sampling.items())
    return {}, [f"{proto.label}: the requests' sampling ({said}) is not priced: {spec.engine}'s sampler is not read "
                f"from its sources (data/features.yaml sampling covers {', '.join(engines_read())})"]


def _check_context(spec: ServeSpec, proto: Protocol) -> None:
    if spec.max_model_len is None:
        return
    longest = int((proto.inputs + proto.outputs).max())
    if longest > spec.max_model_len:
        raise ValueError(f"max_model_len={spec.max_model_len} of the serve command is below the longest request "
                         f"({longest} tokens, input + output); the engine would refuse it; allowed: a "
                         f"--max-model-len >= {longest} or shorter requests")


def run_bench(serve: str | list[str] | None, load: str | list[str], gpu: str = "h100_sxm",
              engine: str | None = None, progress=None) -> BenchResult:
    """Parse both command lines, build the deployment, replay the protocol, report in the tool's schema.
    ``trtllm-bench`` launches its own engine from its flags: ``serve`` may be None (given: a warning).
    ``progress``: the simulator's progress callback (replay)."""
    proto = parse_load(load)
    own = proto.tool in TRTLLM_TOOLS
    if not own and not serve:
        raise ValueError(f"serve_command={serve!r}: {proto.label} needs the server it loads; allowed: vllm serve "
                         f"MODEL ..., python -m sglang.launch_server ..., trtllm-serve MODEL ...")
    spec = parse_serve(serve_words(proto) if own else serve)
    _check_context(spec, proto)
    sampled, sample_warning = _priced_sampling(spec, proto)
    dep = deployment_of(spec, gpu, engine, sampled)
    rt = runtime_for(dep, proto) if own else None
    out = replay(dep, proto, rt, progress)
    notes = list(proto.notes)
    if own:
        res = trtllm_result(proto, out, dep, rt)
        text = trtllm_text(res)
    elif proto.tool == "guidellm":
        res = guidellm_result(proto, out)
        text = guidellm_text(res)
    elif proto.tool in ("vllm", "vllm-legacy"):
        res = vllm_result(proto, out)
        text = vllm_text(proto, res)
        if "max_output_tokens_per_s" in res:
            notes.append(NO_PEAK)
    elif proto.tool == "sglang":
        res = sglang_result(proto, out)
        text = sglang_text(res, out)
    else:
        res = genai_result(proto, out)
        text = genai_text(proto, res)
        if proto.report["streaming"]:
            notes.append(NO_TTST)
    if out.warmups:
        notes.append(f"{out.warmups} warm-up request(s) simulated first ({out.warmup_s:.2f} s) and excluded, as "
                     f"{proto.label} excludes them")
    notes.append(f"replayed {proto.label} as {proto.source}; engine: {out.engine}")
    warnings = list(spec.warnings) + list(proto.warnings) + sample_warning + list(dep.warnings)
    if own and serve:
        warnings.append(f"{proto.label} launches its own engine from its flags; the --serve command is not used")
    asked = proto.args.get("model")
    if asked and asked != spec.model and asked not in spec.served_names:
        warnings.append(f"the load tool asks for model {asked!r}, the serve command serves {spec.model!r}: "
                        f"{spec.model!r} is predicted")
    return BenchResult(proto.tool, _plain(res), text, dep, proto, out, notes, warnings)


def _plain(d):
    """JSON-able values (numpy scalars to Python)."""
    if isinstance(d, dict):
        return {k: _plain(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [_plain(v) for v in d]
    if isinstance(d, np.generic):
        return d.item()
    return d
