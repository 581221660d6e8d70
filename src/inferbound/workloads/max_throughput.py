"""Offline max throughput: thousands of requests at once, in-flight batching, chunked prefill.

The steady state of continuous batching (workloads/steady_state.py) at every feasible decode batch
D = 1..D_max: a step of D decodes at the mean context plus D/(O − 1) prompts lasts t(D) (the step
contract, tabulated: stepmodel.py); output throughput is D / t(D) and each user sees one token per
step, 1/t(D) tok/s. D_max is the smallest cap (KV cache, token budget, requests, max_num_seqs).
The operating point is the D that maximizes D / t(D) over every feasible D (all evaluated at once); where
the running-sequence cap C binds, its own mean D = C/(1 + p) is one of them (``decode_batches``: a full engine
keeps all C slots busy, prefilling 1/(1 + p) of the time, so D need not be whole).

Output tokens/s counts every token: the D decodes of a step and the D·p first tokens its prefills
yield, D·(1 + p)/t(D) = D·Ō/((Ō − 1)·t), so requests/s = that / Ō = D/((Ō − 1)·t).

A benchmark of N requests also fills and drains (``finite_run``; trtllm-bench, vLLM's benchmark_throughput
report tokens over the whole run). Per replica, N_r = N/replicas and C = D(1 + p) in flight:
- N_r ≤ C: one wave. Every prompt is prefilled in steps of the token budget, then the batch decodes
  together and shrinks as length classes finish: T = Σ prefill steps + Σ_c (O_c − O_{c−1})·t_dec(alive_c).
- N_r > C: the steady state runs N_r lives at X = D/((Ō − 1)·t) requests/s, except that its last C
  requests, spread evenly over their lives, finish with no new prompts beside them and a decode batch
  falling linearly from D to 0 over Ō − 1 steps: T = N_r/X + T_drain − C/(2X_d), T_drain =
  Σ_k t_dec(D·(1 − k/(Ō − 1))) (16-point midpoint rule), X_d = D/((Ō − 1)·t_dec(D)) the decode-only rate
  at which the steady state would have run those half lives.
``run_output_tok_s`` = N·Ō/T, the figure such a benchmark prints; ``output_tok_s`` is the steady state.

A stated concurrency C (``trtllm-bench throughput --concurrency``, a benchmark's max concurrency) caps the
requests in flight: the engine's running-sequence limit becomes ⌊C/(replicas·attention groups)⌋ where that is
below its own (``with_concurrency``), and at least C requests are issued (fewer could never fill C slots; a
note says when ``num_requests`` was raised), so the default request count never caps a stated C.

Engine features (steady_state.py, features.py; docs/features/): with speculative decoding t(D) is the
time per output token (the step over τ) and C = D(1 + τp); prefix hits prefill N = I − P tokens per
prompt; a host KV tier (kv_offload=host) holds evicted prefixes: it raises the hit share of prefix
groups and adds their loads to the steps (features.py), not the KV cap (``HostTier.capacity_bytes`` is
0, so ``kv_host_capacity_bytes_per_gpu`` and ``host_read_ms_per_step`` stay 0).

Images (``images`` per request on a multimodal checkpoint, workloads/images.py): their tokens join every
prompt (``input_len`` of the result is text + image tokens), and the steps that carry prompt chunks the
towers' pass (steady_state.steps); a one-wave run's prefill steps carry the pass for their n·N/steps images.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..deploy.deployment import Deployment, make_deployment
from ..pricing.energy import dollars_per_second, per_million, power_w
from ..deploy.bands import error_bands
from ..step.explain import phase
from ..deploy.engine_rules import trtllm_bench_limits
from ..deploy.runtime import offline_runtime, profile_of
from ..step.table import StepModel
from . import steady_state
from .lengths import Mix, describe
from ..deploy.prefix import cached_tokens
from ..step.contract import uniform
from ..deploy.offload import tier_of
from .images import images_notes, with_images, with_towers

#: step-time table points for the sweep (interpolated; < 0.5% from the exact table, see tests)
MAX_THROUGHPUT_GRID = 192


@dataclass
class MaxThroughput:
    model: str
    gpu: str
    num_gpus: int
    input_len: float  # mean prompt tokens
    output_len: float  # mean output tokens
    concurrency: float  # sequences in flight per replica (decoding + prefilling)
    decode_batch: float  # D at the operating point: whole, or the max_num_seqs cap's mean (module docstring)
    prefill_tokens_per_step: float
    step_time_s: float
    output_tok_s: float  # all replicas
    output_tok_s_per_gpu: float
    tok_s_per_user: float
    requests_per_s: float
    total_tok_s: float
    kv_capacity_bytes_per_gpu: float
    kv_limit_concurrency: float
    token_budget: int
    kv_reservation: str
    limited_by: str  # what stops a larger batch: kv-cache, token budget, requests, or throughput peak
    bound: str  # what binds the decode step at the operating point: compute, memory or communication
    power_per_gpu_w: float
    joules_per_output_token: float
    output_tokens_per_joule: float
    usd_per_million_output_tokens: float | None
    memory_fraction: float | None = None  # the engine's KV memory fraction (None: automatic, SGLang)
    engine_settings: str = ""  # the engine and its settings (runtime.Runtime.describe)
    max_num_seqs: int | None = None  # per attention group
    block_size: int = 16
    error_band: float | None = None  # expected relative error of the throughput: error_bands["throughput"]
    error_bands: dict = field(default_factory=dict)  # by figure (throughput, tpot): deploy/bands.py
    run_output_tok_s: float = 0.0  # over a run of num_requests: fill and drain included (finite_run)
    run_s: float = 0.0
    num_requests: int = 0
    lengths: str = ""  # the request lengths (fixed, or the mix of a distribution, trace or dataset)
    notes: list = field(default_factory=list)
    tokens_per_step: float = 1.0  # τ: tokens per decoding sequence per step (speculative decoding)
    kv_host_capacity_bytes_per_gpu: float = 0.0  # the host KV tier (kv_offload=host)
    kv_limit_concurrency_device: float = 0.0  # the KV cap on requests in flight without the host tier
    host_read_ms_per_step: float = 0.0  # step time the host-tier reads add at the operating point
    stated_concurrency: int | None = None  # the benchmark's cap on requests in flight (all replicas), if stated

    def to_dict(self) -> dict:
        return asdict(self)


def bench_limits(dep, rt, mix: Mix):
    """The engine's offline benchmark limits where its harness derives them from the workload
    (TensorRT-LLM's trtllm-bench: max_batch_size and max_num_tokens from the KV-bound request count at
    its heuristic KV fraction, engine_rules.trtllm_bench_limits, and chunked context on, its default); else
    the runtime as it is."""
    p = profile_of(rt.engine)
    b = p.trtllm_bench
    if b is None:
        return rt
    chunking = {} if "chunked_prefill" in rt.overridden else {"chunked_prefill": bool(b.chunked_context.value)}
    if {"max_num_seqs", "token_budget"} & set(rt.overridden):
        return replace(rt, **chunking)
    probe = replace(rt, memory_fraction=b.heuristic_kv_fraction.value, reservation="max")
    requests, _, _ = steady_state.kv_sequences(dep, mix, None, probe)
    seqs, tokens = trtllm_bench_limits(p, requests / dep.par.attention_groups, mix.mean_input, mix.mean_output,
                                       dep.par.pp)
    return replace(rt, max_num_seqs=int(seqs), token_budget=int(tokens), **chunking)


def with_concurrency(dep: Deployment, concurrency: int | None) -> Deployment:
    """``dep`` with a benchmark's cap of ``concurrency`` requests in flight (all replicas) as the engine's
    running-sequence limit per replica and attention group, ⌊C/(replicas·groups)⌋ (at least 1), where that is
    below the engine's own; unchanged without a concurrency."""
    if concurrency is None:
        return dep
    if concurrency < 1:
        raise ValueError(f"concurrency={concurrency} must be >= 1")
    seqs = max(1, int(concurrency / (dep.par.replicas * dep.par.attention_groups)))
    if dep.runtime.max_num_seqs <= seqs:
        return dep
    return replace(dep, engine_options=tuple(sorted({**dict(dep.engine_options), "max_num_seqs": seqs}.items())))


def decode_batches(dep: Deployment, mix: Mix, rt, caps: dict) -> np.ndarray:
    """The decode batches the sweep prices: D = 1..⌊D_max⌋, and the running-sequence cap's own mean
    D = max_num_seqs·groups/(1 + p) where that is the binding cap and not whole. Every slot of a full engine
    holds a request for its prefill and its O − 1 decode steps, so C slots decode C/(1 + p) on average
    (C = 16 at 128/128: 15.875, where the whole grid stops at 15 and leaves 5.5 % of the slots idle)."""
    d_max = min(caps.values())
    dec = np.arange(1, d_max + 1, dtype=float)
    frac, _, _ = steady_state.caps(dep, mix, None, rt, whole=False)
    top = min([float(frac["max_num_seqs"])] + [float(v) for k, v in caps.items() if k != "max_num_seqs"])
    return np.append(dec, top) if top > d_max + 1e-9 else dec


_DRAIN_POINTS = 16


def finite_run(sm, rt, mix: Mix, d: float, t: float, n: float) -> float:
    """Seconds one replica takes for ``n`` requests at the operating point (D = ``d``, step ``t``; module
    docstring)."""
    m = sm.dep.model
    c = float(steady_state.concurrency(d, mix, rt))
    if n <= c:
        budget = rt.token_budget * sm.dep.par.attention_groups
        new = mix.mean_input - float(np.dot(mix.weights, cached_tokens(rt, np.asarray(mix.inputs, dtype=float))))
        tokens = n * new
        steps = np.ceil(tokens / budget)
        pre = with_towers(sm.dep, sm.price(uniform_prompts(m, mix, tokens / steps, rt)), mix, n * mix.images / steps)
        prefill = steps * float(pre.time)
        order = np.argsort(mix.outputs)
        outs = np.asarray(mix.outputs)[order]
        alive = n * (1 - np.concatenate([[0.0], np.cumsum(np.asarray(mix.weights)[order])[:-1]]))
        spans = np.diff(np.concatenate([[1.0], outs]))  # decode steps after the first token
        dec = _decode_token_s(sm, rt, alive, mix)
        return float(prefill + np.dot(spans, dec))
    steps = mix.mean_output - 1
    u = (np.arange(_DRAIN_POINTS) + 0.5) / _DRAIN_POINTS
    drain = _decode_token_s(sm, rt, np.append(d * (1 - u), d), mix)
    t_drain, t_dec = steps * float(np.mean(drain[:-1])), float(drain[-1])
    return float(n * steps * t / d + max(t_drain - c / 2 * steps * t_dec / d, 0.0))


def _decode_token_s(sm, rt, decode, mix: Mix):
    """Seconds per output token of decode-only steps at ``decode`` sequences (arrays; the runtime's features,
    steady_state.steps)."""
    return np.asarray(steady_state.steps(sm, rt, decode, mix, decode_only=True).per_token("time"), dtype=float)


def uniform_prompts(m, mix: Mix, tokens: float, rt=None):
    """A step that prefills ``tokens`` new prompt tokens in the mix's shares (after each class's cached
    prefix under ``rt``, prefix.py)."""
    cached = [float(cached_tokens(rt, i)) if rt is not None else 0.0 for i in mix.inputs]
    new = [i - c for i, c in zip(mix.inputs, cached)]
    mean_new = float(np.dot(mix.weights, new))
    total = None
    for w, n, c in zip(mix.weights, new, cached):
        part = uniform(m, prompts=tokens / mean_new * w, new=n, past=c)
        total = part if total is None else total + part
    return total


def max_throughput(deployment: Deployment | None = None, input_len: int = 1024, output_len: int = 256,
                   num_requests: int = 10_000, lengths: Mix | None = None, concurrency: int | None = None,
                   images: int = 0, **deployment_kwargs) -> MaxThroughput:
    """Find the decode batch that maximizes output tokens/s (see module docstring) under the
    deployment's engine as it runs an offline benchmark (``Deployment.offline_runtime``: its KV rule,
    block size, reservation, token budget and running-sequence cap, and the limits its benchmark
    harness sets, ``bench_limits``). Pass a Deployment or the keyword arguments of make_deployment
    (``engine=``, ``engine_options=`` included). ``lengths``: a length mix (workloads/lengths.py: a
    distribution, trace or dataset profile) in place of fixed ``input_len``/``output_len``. ``concurrency``: the
    benchmark's cap on requests in flight (module docstring: it wins over the engine's cap and the request
    count). ``images``: images per request of a multimodal checkpoint (module docstring)."""
    dep = deployment or make_deployment(**deployment_kwargs)
    for name, v, low in (("input_len", input_len, 1), ("output_len", output_len, 2), ("num_requests", num_requests, 1)):
        if v < low:
            raise ValueError(f"{name}={v} must be >= {low}")
    dep = with_concurrency(dep, concurrency)
    notes = []
    if concurrency is not None and num_requests < concurrency:
        notes.append(f"num_requests={num_requests:,} is below the stated concurrency {concurrency:,}: "
                     f"{concurrency:,} requests issued, one per slot")
        num_requests = concurrency
    mix = lengths if lengths is not None else steady_state.as_mix(input_len, output_len)
    text_input, mix = mix.mean_input, with_images(dep.model, mix, images)
    notes += images_notes(dep, mix, text_input)
    input_len, output_len = mix.mean_input, mix.mean_output
    rt = bench_limits(dep, offline_runtime(dep), mix)
    m, par = dep.model, dep.par
    groups = par.attention_groups
    caps, capacity, kv_seq = steady_state.caps(dep, mix, None, rt)
    tier = tier_of(dep, rt)
    host = tier.capacity_bytes if tier is not None else 0.0
    seqs_kv = groups * (capacity + host) / kv_seq if kv_seq > 0 else np.inf
    held = max(steady_state.held_tokens(i, o, rt.reservation, rt.block_size) for i, o in zip(mix.inputs, mix.outputs))
    caps["requests"] = num_requests
    d_max = min(caps.values())
    if d_max < 1 and caps["kv-cache"] >= 1:  # the KV cache holds a decode: the token budget or max_num_seqs binds
        frac, _, _ = steady_state.caps(dep, mix, None, rt, whole=False)
        binding = min(frac, key=frac.get)
        shown = {k: round(float(v), 3) for k, v in frac.items()}
        raise ValueError(f"no whole decode batch fits {dep.label()} ({rt.label}): the {binding} cap allows "
                         f"D = {frac[binding]:.3g} decodes per step beside their prompts (caps {shown}), and "
                         f"max-throughput prices decode batches D >= 1; allowed: a larger --token-budget or "
                         f"--max-num-seqs, a longer --output, or --scenario serving (a mean D below 1)")
    if d_max < 1:
        raise ValueError(f"no request fits: KV capacity {capacity / 1e9:.2f} GB per GPU holds {seqs_kv:.2f} "
                         f"sequences of {held:.0f} tokens ({dep.label()}, {rt.label}); allowed: more GPUs "
                         f"(--num-gpus, --tp), a smaller --weight-dtype or --kv-dtype, or shorter requests")
    sm = StepModel(dep, rt.token_budget * groups + groups, grid_points=MAX_THROUGHPUT_GRID)
    dec = decode_batches(dep, mix, rt, caps)
    t, flops, moved, cost = steady_state.step_cost(sm, rt, dec, mix)
    t = np.asarray(t, dtype=float)
    watts = power_w(dep.gpu, dep.compute_dtype, flops, moved, t)
    tput = dec * (1 + steady_state.prompts_per_decode(mix)) / t  # decodes and first tokens
    fx = steady_state.Features(dep, rt, mix)
    i = int(np.argmax(tput))
    best = dec[i]
    limited = "throughput peak" if i < dec.size - 1 else \
        ("max_num_seqs" if best > d_max else min(caps, key=caps.get))
    reps = par.replicas
    out_tok_s = float(tput[i]) * reps
    power = float(watts[i])
    dps = dollars_per_second(dep.gpu, dep.num_gpus)
    bound = phase(cost, "", i).bound
    run_s = finite_run(sm, rt, mix, best, float(t[i]), num_requests / reps)
    bands = error_bands(dep, "max_throughput", None, bound)
    return MaxThroughput(
        model=m.name, gpu=dep.gpu.id, num_gpus=dep.num_gpus, input_len=input_len, output_len=output_len,
        concurrency=float(steady_state.concurrency(best, mix, rt)), decode_batch=float(best),
        prefill_tokens_per_step=float(best * fx.mean_new * steady_state.prompts_per_decode(mix) * fx.tau),
        step_time_s=float(t[i]), output_tok_s=out_tok_s,
        output_tok_s_per_gpu=out_tok_s / dep.num_gpus, tok_s_per_user=float(1 / t[i]),
        requests_per_s=out_tok_s / output_len, total_tok_s=out_tok_s * (input_len + output_len) / output_len,
        kv_capacity_bytes_per_gpu=capacity, kv_limit_concurrency=float(seqs_kv), token_budget=rt.token_budget,
        kv_reservation=rt.reservation, limited_by=limited, bound=bound, power_per_gpu_w=power,
        joules_per_output_token=power * dep.num_gpus / out_tok_s, output_tokens_per_joule=out_tok_s / (power * dep.num_gpus),
        usd_per_million_output_tokens=per_million(dps, out_tok_s), memory_fraction=rt.memory_fraction,
        engine_settings=rt.describe(), max_num_seqs=rt.max_num_seqs, block_size=rt.block_size,
        error_band=bands.get("throughput"), error_bands=bands, lengths=describe(mix), notes=list(mix.notes) + notes,
        run_output_tok_s=num_requests * output_len / run_s, run_s=run_s, num_requests=num_requests,
        tokens_per_step=fx.tau, kv_host_capacity_bytes_per_gpu=host,
        kv_limit_concurrency_device=float(groups * capacity / kv_seq) if kv_seq > 0 else float("inf"),
        host_read_ms_per_step=float(np.asarray(cost.comm_kinds.get("host_kv", 0.0)).reshape(-1)[i]) * 1e3
        if "host_kv" in cost.comm_kinds else 0.0, stated_concurrency=concurrency)
