"""One layout, every concurrency at once: steady-state serving figures as numpy arrays.

Prompts of I tokens, outputs of O tokens, token budget B per step (per attention group), step time
t(·) and power from :class:`StepModel` (the step contract tabulated per deployment, as
``max_throughput``).

Aggregated (continuous batching with chunked prefill: workloads/steady_state.py): D = 1..D_max
sequences decode at the mean context c̄ while each step prefills D/(O − 1) prompts; D_max is the
smaller of the KV-cache and token-budget caps (``steady_state.caps``). For every D:

    TPOT = ITL = t(D)                        tok/s per replica = D / t(D)      per user = 1 / t(D)
    TTFT = t(D) + Σ_k t_k(D)                 one step in flight when the request arrives, then its
                                             prompt as chunks of min(B − D/g, remaining) tokens after
                                             k·chunk cached ones, mixed with the D decodes (queueing
                                             for a free slot is not modelled)
    e2e  = TTFT + (O − 1)·TPOT               requests/s = (D/t) / O  (as max_throughput)
    watts = GPUs · P(D)                      P: energy.power_w of the step's FLOPs and bytes

Disaggregated (DistServe/Splitwise style; both pools use the same layout): a decode replica runs
decode-only steps t_d(D) at D = 1..D_max (KV cap C_kv, token cap B·g); a prefill replica runs steps
of k = max(1, ⌊B·g/I⌋) prompts (chunks of B for longer prompts), t_p, so it prefills R_p = k/t_p
prompts/s. A decode replica completes R_d = D/((O − 1)·t_d) requests/s. A group of x prefill and y
decode replicas (y = 1..Y, data/search.yaml) needs x = ⌈y·R_d/R_p⌉; the y with the fewest GPUs per
decode replica, (x + y)/y, is kept. Then

    TPOT = t_d(D)    TTFT = t_p + t_p + KV transfer    (a prefill step in flight, the prompt's own step,
                                                        then kv_bytes_per_gpu(I) over the link of
                                                        sim/engine.py: NIC, else PCIe)
    tok/s = y·D/t_d  GPUs = (x + y)·G   watts = G·(y·P_d + x·(u·P_p + (1 − u)·P_idle)),
                                        u = y·R_d/(x·R_p) the prefill pool's busy share.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..deployment import Deployment
from ..energy import power_w
from ..memory import kv_bytes_per_gpu
from ..sim.engine import kv_link, transfer_seconds
from ..step import uniform
from ..stepmodel import StepModel
from ..workloads import steady_state
from ..workloads.max_throughput import MAX_THROUGHPUT_GRID


@dataclass(frozen=True)
class Workload:
    """What every layout is evaluated on; the engine's limits come from each deployment's runtime."""

    input_len: int
    output_len: int
    disaggregated: bool = False
    max_decode_replicas: int = 4


@dataclass
class LayoutPoints:
    """Figures of one layout at concurrency D = 1..len (arrays), for its serving unit: one replica
    (aggregated) or one prefill+decode group (disaggregated)."""

    step_s: np.ndarray
    ttft_s: np.ndarray
    tok_s: np.ndarray
    watts: np.ndarray
    gpus: np.ndarray  # GPUs of the unit (int)
    prefill_replicas: np.ndarray  # 0 when aggregated
    decode_replicas: np.ndarray  # 1 replica when aggregated
    cap: str  # what ends the concurrency range: kv-cache or token budget
    kv_capacity_bytes: float  # per GPU
    concurrent_seqs: np.ndarray  # sequences held per replica (engine max-num-seqs)

    def __len__(self) -> int:
        return int(self.step_s.size)


_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 2048


def step_model(dep: Deployment, max_tokens: int) -> StepModel:
    """StepModel of ``dep`` (grid of max_throughput), memoized across searches by its full inputs."""
    key = (dep.model, dep.par, dep.dtypes, dep.compute_dtype, dep.gpu.model_dump_json(), int(max_tokens))
    sm = _CACHE.get(key)
    if sm is None:
        sm = StepModel(dep, max_tokens, grid_points=MAX_THROUGHPUT_GRID)
        _CACHE[key] = sm
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return sm


def clear_cache() -> None:
    _CACHE.clear()


def concurrency_caps(dep: Deployment, w: Workload, decode_only: bool = False) -> tuple[dict, float, float]:
    """The steady-state caps (workloads.steady_state.caps) for this workload under the engine."""
    return steady_state.caps(dep, w.input_len, w.output_len, dep.runtime, decode_only)


def _priced(sm: StepModel, load):
    """(seconds, watts per GPU) of a load through the tabulated step contract."""
    cost = sm.price(load)
    return cost.time, power_w(sm.dep.gpu, sm.dep.compute_dtype, cost.flops, cost.bytes, cost.time)


def _steady(sm: StepModel, dec, w: Workload, decode_only: bool = False):
    """(seconds, watts per GPU) of the steady-state step at decode batches ``dec`` (steady_state.step_cost)."""
    t, flops, moved, _ = steady_state.step_cost(sm, sm.dep.runtime, dec, w.input_len, w.output_len, decode_only)
    return t, power_w(sm.dep.gpu, sm.dep.compute_dtype, flops, moved, t)


def evaluate_layout(dep: Deployment, w: Workload) -> LayoutPoints | None:
    """All concurrency values of ``dep`` (module docstring); None when not one request fits."""
    return _disaggregated(dep, w) if w.disaggregated else _aggregated(dep, w)


def _table(dep: Deployment, w: Workload) -> StepModel:
    g = dep.par.attention_groups
    return step_model(dep, dep.runtime.token_budget * g + g)


def _prompt_steps(sm: StepModel, dec, ctx: float, chunk, prompt: int):
    """Seconds and joules/GPU of the steps that carry one prompt in chunks of ``chunk`` beside ``dec``
    decodes (arrays over D): Σ_k t(dec, 1 prompt of min(chunk, rest) after k·chunk cached)."""
    dec = np.asarray(dec, dtype=float)
    rest = np.full(np.broadcast(dec, chunk).shape, float(prompt))
    past = np.zeros_like(rest)
    secs, joules = np.zeros_like(rest), np.zeros_like(rest)
    while np.any(rest > 0):
        c = np.minimum(chunk, rest)
        on = c > 0
        t, watts = _priced(sm, uniform(sm.dep.model, decode=dec, context=ctx, prompts=on.astype(float), new=c,
                                       past=past))
        secs += np.where(on, t, 0.0)
        joules += np.where(on, t * watts, 0.0)
        past, rest = past + c, rest - c
    return secs, joules


def _aggregated(dep: Deployment, w: Workload) -> LayoutPoints | None:
    caps, capacity, _ = concurrency_caps(dep, w)
    d_max = min(caps.values())
    if d_max < 1:
        return None
    i, o = w.input_len, w.output_len
    groups = dep.par.attention_groups
    sm = _table(dep, w)
    dec = np.arange(1, d_max + 1, dtype=float)
    ctx = steady_state.mean_context(i, o)
    t, watts = _steady(sm, dec, w)
    chunk = np.maximum(dep.runtime.token_budget - dec / groups, 1.0)
    prefill_s, _ = _prompt_steps(sm, dec, ctx, chunk, i)
    g = dep.par.replica_gpus
    ones = np.ones(d_max, dtype=np.int64)
    return LayoutPoints(step_s=t, ttft_s=t + prefill_s, tok_s=dec / t, watts=watts * g, gpus=ones * g,
                        prefill_replicas=ones * 0, decode_replicas=ones, cap=min(caps, key=caps.get),
                        kv_capacity_bytes=capacity,
                        concurrent_seqs=np.ceil(steady_state.concurrency(dec, o)).astype(np.int64))


def _disaggregated(dep: Deployment, w: Workload) -> LayoutPoints | None:
    caps, capacity, _ = concurrency_caps(dep, w, decode_only=True)
    d_max = min(caps.values())
    i, o, budget = w.input_len, w.output_len, dep.runtime.token_budget
    groups = dep.par.attention_groups
    prompt_kv = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, i)) * groups
    k = max(1, (budget * groups) // i) if i <= budget else 1
    k = int(min(k, capacity // prompt_kv)) if prompt_kv > 0 else k
    if d_max < 1 or k < 1:
        return None
    sm = _table(dep, w)
    dec = np.arange(1, d_max + 1, dtype=float)
    t_d, p_d = _steady(sm, dec, w, decode_only=True)
    if i <= budget:
        t_p, p_p = (float(x) for x in _priced(sm, uniform(dep.model, prompts=float(k), new=float(i))))
    else:
        secs, joules = _prompt_steps(sm, 0.0, 0.0, float(budget), i)
        t_p, p_p = float(secs), float(joules / secs)
    r_p = k / t_p
    r_d = dec / ((o - 1) * t_d)
    ys = np.arange(1, w.max_decode_replicas + 1, dtype=float)[:, None]
    xs = np.maximum(np.ceil(ys * r_d / r_p - 1e-9), 1.0)
    best = np.argmin((xs + ys) / ys, axis=0)  # first (smallest y) among ties
    cols = np.arange(d_max)
    x, y = xs[best, cols], ys[best, 0]
    busy = np.minimum(y * r_d / (x * r_p), 1.0)
    g = dep.par.replica_gpus
    idle = dep.gpu.power.idle_w
    transfer = transfer_seconds(dep, kv_link(dep), i)
    return LayoutPoints(step_s=t_d, ttft_s=np.full(d_max, 2 * t_p + transfer), tok_s=y * dec / t_d,
                        watts=g * (y * p_d + x * (busy * p_p + (1 - busy) * idle)),
                        gpus=((x + y) * g).astype(np.int64), prefill_replicas=x.astype(np.int64),
                        decode_replicas=y.astype(np.int64), cap=min(caps, key=caps.get),
                        kv_capacity_bytes=capacity, concurrent_seqs=dec.astype(np.int64))
