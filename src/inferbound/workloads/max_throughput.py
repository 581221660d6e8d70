"""Offline max throughput: thousands of requests at once, in-flight batching, chunked prefill.

The steady state of continuous batching (workloads/steady_state.py) at every feasible decode batch
D = 1..D_max: a step of D decodes at the mean context plus D/(O − 1) prompts lasts t(D) (the step
contract, tabulated: stepmodel.py); output throughput is D / t(D) and each user sees one token per
step, 1/t(D) tok/s. D_max is the smallest cap (KV cache, token budget, requests, max_num_seqs).
The operating point is the D that maximizes D / t(D) over every feasible D (all evaluated at once).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..deployment import Deployment, make_deployment
from ..energy import dollars_per_second, per_million, power_w
from ..explain import band, phase
from ..memory import runtime_defaults
from ..stepmodel import StepModel
from . import steady_state

#: step-time table points for the sweep (interpolated; < 0.5% from the exact table, see tests)
MAX_THROUGHPUT_GRID = 192


@dataclass
class MaxThroughput:
    model: str
    gpu: str
    num_gpus: int
    input_len: int
    output_len: int
    concurrency: float  # sequences in flight per replica (decoding + prefilling)
    decode_batch: int
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
    kv_fraction: float = 0.9
    error_band: float | None = None  # expected relative error of the throughput (calibration residuals)

    def to_dict(self) -> dict:
        return asdict(self)


def max_throughput(deployment: Deployment | None = None, input_len: int = 1024, output_len: int = 256,
                   num_requests: int = 10_000, token_budget: int | None = None,
                   kv_reservation: str | None = None, block_size: int | None = None,
                   max_num_seqs: int | None = None, kv_fraction: float | None = None,
                   **deployment_kwargs) -> MaxThroughput:
    """Find the decode batch that maximizes output tokens/s (see module docstring).

    ``kv_fraction``: share of the memory left after weights, activations and reserve given to the KV
    cache (default data/runtime.yaml ``kv_free_fraction``); ``block_size``: paged-KV block tokens.
    """
    dep = deployment or make_deployment(**deployment_kwargs)
    d = runtime_defaults()
    budget = int(d["memory"]["default_token_budget"] if token_budget is None else token_budget)
    policy = d["max_throughput"]["kv_reservation"] if kv_reservation is None else kv_reservation
    block = int(d["max_throughput"]["kv_block_size"] if block_size is None else block_size)
    for name, v, low in (("input_len", input_len, 1), ("output_len", output_len, 2), ("num_requests", num_requests, 1),
                         ("token_budget", budget, 1), ("block_size", block, 1)):
        if v < low:
            raise ValueError(f"{name}={v} must be >= {low}")
    if policy not in ("max", "average"):
        raise ValueError(f"kv_reservation={policy!r} unknown; allowed: max, average")
    frac = float(d["memory"]["kv_free_fraction"] if kv_fraction is None else kv_fraction)
    if not 0 < frac <= 1:
        raise ValueError(f"kv_fraction={frac} must be in (0, 1]")
    m, par = dep.model, dep.par
    groups = par.attention_groups
    caps, capacity, kv_seq = steady_state.caps(dep, input_len, output_len, budget, policy, block, kv_fraction=frac)
    seqs_kv = groups * capacity / kv_seq if kv_seq > 0 else np.inf
    held = steady_state.held_tokens(input_len, output_len, policy, block)
    caps["requests"] = num_requests
    if max_num_seqs is not None:
        if max_num_seqs < 1:
            raise ValueError(f"max_num_seqs={max_num_seqs} must be >= 1")
        caps["max_num_seqs"] = int(max_num_seqs)
    d_max = min(caps.values())
    if d_max < 1:
        raise ValueError(f"no request fits: KV capacity {capacity / 1e9:.2f} GB per GPU holds {seqs_kv:.2f} "
                         f"sequences of {held:.0f} tokens ({dep.label()})")
    sm = StepModel(dep, budget * groups + groups, grid_points=MAX_THROUGHPUT_GRID)
    dec = np.arange(1, d_max + 1, dtype=float)
    cost = sm.price(steady_state.load(m, dec, input_len, output_len))
    t = np.asarray(cost.time, dtype=float)
    watts = power_w(dep.gpu, dep.compute_dtype, cost.flops, cost.bytes, t)
    tput = dec / t
    i = int(np.argmax(tput))
    best = dec[i]
    limited = "throughput peak" if i < d_max - 1 else min(caps, key=caps.get)
    reps = par.replicas
    out_tok_s = float(tput[i]) * reps
    power = float(watts[i])
    dps = dollars_per_second(dep.gpu, dep.num_gpus)
    bound = phase(cost, "", i).bound
    return MaxThroughput(
        model=m.name, gpu=dep.gpu.id, num_gpus=dep.num_gpus, input_len=input_len, output_len=output_len,
        concurrency=float(steady_state.concurrency(best, output_len)), decode_batch=int(best),
        prefill_tokens_per_step=float(best * input_len * steady_state.prompts_per_decode(output_len)),
        step_time_s=float(t[i]), output_tok_s=out_tok_s,
        output_tok_s_per_gpu=out_tok_s / dep.num_gpus, tok_s_per_user=float(1 / t[i]),
        requests_per_s=out_tok_s / output_len, total_tok_s=out_tok_s * (input_len + output_len) / output_len,
        kv_capacity_bytes_per_gpu=capacity, kv_limit_concurrency=float(seqs_kv), token_budget=budget,
        kv_reservation=policy, limited_by=limited, bound=bound, power_per_gpu_w=power,
        joules_per_output_token=power * dep.num_gpus / out_tok_s, output_tokens_per_joule=out_tok_s / (power * dep.num_gpus),
        usd_per_million_output_tokens=per_million(dps, out_tok_s), kv_fraction=frac,
        error_band=band(dep, "max_throughput", "throughput", bound))
