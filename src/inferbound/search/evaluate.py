"""One layout, every concurrency at once: steady-state serving figures as numpy arrays.

Prompts of I tokens, outputs of O tokens, token budget B per step (per attention group), step time
t(·) and power from :class:`StepModel` (the step contract tabulated per deployment, as
``max_throughput``).

Aggregated (continuous batching with chunked prefill: workloads/steady_state.py): D = 1..D_max
sequences decode at the mean context c̄ while each step prefills D/(O − 1) prompts; D_max is the
smaller of the KV-cache and token-budget caps (``steady_state.caps``). For every D:

    TPOT = ITL = t(D)                        tok/s per replica = D·(1 + p)/t(D) (decodes and first
                                             tokens, as max_throughput)            per user = 1 / t(D)
    TTFT = W + Σ_k t_k(D)                    the wait for the step in flight and for prefill work
                                             ahead (steady_state.ttft, at the replica's completion
                                             rate D·p/t), then the prompt as chunks of
                                             min(B − D/g, remaining) tokens after k·chunk cached ones,
                                             mixed with the D decodes
    e2e  = TTFT + (O − 1)·TPOT               requests/s = (D/t) / O  (as max_throughput)
    watts = GPUs · P(D)                      P: energy.power_w of the step's FLOPs and bytes

t(D) is the mean step per output token of the steady state's step kinds (steady_state.steps: prompt
chunks arrive in lumps, so some steps carry prefill and the rest only decode).

Disaggregated (DistServe/Splitwise style; each pool may have its own layout, pool_pairs): a decode replica runs
decode-only steps t_d(D) at D = 1..D_max (KV cap C_kv, token cap B·g); a prefill replica runs steps
of k prompts, t_p(k), so it prefills R_p(k) = k/t_p(k) prompts/s. The prefill batch is swept,
k ∈ {1, 2, 4, …, k_max} with k_max = ⌊B·g/Ī⌋ (the token budget; prompts longer than B run alone in
chunks of B) and the KV the prefill replica holds: small batches give short TTFTs at low load, full
ones the fewest prefill GPUs, so TTFT SLOs are judged on the batch that meets them. A decode replica
completes R_d = D/((Ō − 1)·t_d) requests/s. A group of x prefill and y decode replicas (y = 1..Y,
data/search.yaml) needs x = ⌈y·R_d/R_p(k)⌉; the y with the fewest GPUs per decode replica, (x·G_p + y·G)/y,
is kept. Then, per (D, k),

    TPOT = t_d(D)    TTFT = t_p(k) + t_p(k) + KV transfer    (a prefill step in flight, the prompt's own
                                                  step, then kv_bytes_per_gpu(Ī) over the link of
                                                  sim/event_loop.py: NIC, else PCIe)
    tok/s = y·D/t_d  GPUs = x·G_p + y·G   watts = G·y·P_d + G_p·x·(u·P_p + (1 − u)·P_idle),
                                        u = y·R_d/(x·R_p) the prefill pool's busy share.

Engine features (workloads/features.py; docs/features/): the steps carry the runtime's speculative
decoding, prefix hits and host KV tier (steady_state.steps, caps); a disaggregated prefill step prefills
only each prompt's uncached tokens (the draft's own prefill there is not priced).

Length mixes (workloads/lengths.py): the steps price every class (steady_state.load); aggregated TTFT
is the request-weighted mean over classes, Σ w_c TTFT_c; disaggregated prefill steps carry the classes
in their shares.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..deploy.deployment import Deployment, gpu_key
from ..pricing.energy import power_w
from ..deploy.memory import kv_bytes_per_gpu
from ..sim.event_loop import kv_link, transfer_seconds
from ..step.contract import uniform
from ..step.table import StepModel
from ..workloads import steady_state
from ..workloads.lengths import Mix, fixed
from ..workloads.max_throughput import MAX_THROUGHPUT_GRID
from ..deploy.prefix import cached_tokens


@dataclass(frozen=True)
class Workload:
    """What every layout is evaluated on; the engine's limits come from each deployment's runtime.
    ``mix``: the request length classes (None: fixed ``input_len``/``output_len``, which are otherwise
    the mix's means)."""

    input_len: float
    output_len: float
    disaggregated: bool = False
    max_decode_replicas: int = 4
    mix: Mix | None = None

    @property
    def lengths(self) -> Mix:
        return self.mix if self.mix is not None else fixed(self.input_len, self.output_len)


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
    decode_batch: np.ndarray | None = None  # D of each point (None: 1..len)
    prefill_batch: np.ndarray | None = None  # disaggregated: prompts per prefill step (else 0)

    def __post_init__(self):
        n = self.step_s.size
        if self.decode_batch is None:
            self.decode_batch = np.arange(1, n + 1, dtype=np.int64)
        if self.prefill_batch is None:
            self.prefill_batch = np.zeros(n, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.step_s.size)


_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 2048


def _calibration_key(cal) -> tuple | None:
    """What of a calibration prices a step beyond the GPU figures it sets: the kernel-class factors and
    the per-engine-profile residuals (calibration/factors.py)."""
    if cal is None:
        return None
    return (cal.source, repr(sorted(cal.kernel_factors.items())), repr(sorted(cal.engines.items())))


def step_model(dep: Deployment, max_tokens: int) -> StepModel:
    """StepModel of ``dep`` (grid of max_throughput), memoized across searches by its full inputs: the
    engine profile and the calibration price kernels and host work too (kernel_pricing.py), so a search
    under another engine in the same process (the web server) gets its own tables."""
    key = (dep.model, dep.par, dep.dtypes, dep.compute_dtype, gpu_key(dep.gpu), int(max_tokens),
           dep.engine, repr(dep.engine_options), _calibration_key(dep.calibration))
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
    return steady_state.caps(dep, w.lengths, None, dep.runtime, decode_only)


def _priced(sm: StepModel, load):
    """(seconds, watts per GPU) of a load through the tabulated step contract."""
    cost = sm.price(load)
    return cost.time, power_w(sm.dep.gpu, sm.dep.compute_dtype, cost.flops, cost.bytes, cost.time)


def _steady(sm: StepModel, dec, w: Workload, decode_only: bool = False):
    """(seconds, watts per GPU) of the steady-state step at decode batches ``dec`` (steady_state.step_cost)."""
    t, flops, moved, _ = steady_state.step_cost(sm, sm.dep.runtime, dec, w.lengths, None, decode_only)
    return t, power_w(sm.dep.gpu, sm.dep.compute_dtype, flops, moved, t)


def evaluate_layout(dep: Deployment, w: Workload, prefill: Deployment | None = None) -> LayoutPoints | None:
    """All concurrency values of ``dep`` (module docstring); None when not one request fits. Disaggregated,
    ``prefill`` is the prefill pool's own layout (None: ``dep``'s; pool_pairs)."""
    return _disaggregated(dep, w, prefill) if w.disaggregated else _aggregated(dep, w)


def _table(dep: Deployment, w: Workload) -> StepModel:
    g = dep.par.attention_groups
    return step_model(dep, dep.runtime.token_budget * g + g)


def _aggregated(dep: Deployment, w: Workload) -> LayoutPoints | None:
    caps, capacity, _ = concurrency_caps(dep, w)
    d_max = min(caps.values())
    if d_max < 1:
        return None
    mix = w.lengths
    sm = _table(dep, w)
    dec = np.arange(1, d_max + 1, dtype=float)
    st = steady_state.steps(sm, dep.runtime, dec, mix)
    t = st.per_token("time")
    watts = power_w(dep.gpu, dep.compute_dtype, st.per_token("flops"), st.per_token("bytes"), t)
    rate = dec * steady_state.prompts_per_decode(mix) / t  # completions = arrivals per replica
    classes, _, _ = steady_state.ttft(sm, dep.runtime, dec, mix, st, rate)
    ttft = sum(wt * c for wt, c in zip(mix.weights, classes))
    g = dep.par.replica_gpus
    ones = np.ones(d_max, dtype=np.int64)
    return LayoutPoints(step_s=t, ttft_s=ttft, tok_s=dec * (1 + steady_state.prompts_per_decode(mix)) / t, watts=watts * g, gpus=ones * g,
                        prefill_replicas=ones * 0, decode_replicas=ones, cap=min(caps, key=caps.get),
                        kv_capacity_bytes=capacity,
                        concurrent_seqs=np.ceil(steady_state.concurrency(dec, mix, dep.runtime)).astype(np.int64))


def prefill_batches(k_max: int) -> list[int]:
    """The swept prefill batches: powers of two below ``k_max``, then ``k_max``."""
    ks = [1 << j for j in range(max(0, int(k_max).bit_length())) if (1 << j) < k_max]
    return ks + [int(k_max)]


def _prefill_step(sm: StepModel, mix: Mix, k: int, budget: int):
    """(seconds, watts per GPU) of one prefill step of k prompts in the mix's shares; a prompt longer
    than the token budget runs alone in chunks of the budget."""
    cached = [float(cached_tokens(sm.dep.runtime, i)) for i in mix.inputs]  # prefix hits (prefix.py)
    if k == 1 and max(mix.inputs) > budget:
        secs = joules = 0.0
        for wt, i, c in zip(mix.weights, mix.inputs, cached):
            s, j = steady_state.prompt_steps(sm, 0.0, 0.0, float(budget), i - c, c)
            secs, joules = secs + wt * float(s), joules + wt * float(j)
        return secs, joules / secs
    load = None
    for wt, i, c in zip(mix.weights, mix.inputs, cached):
        part = uniform(sm.dep.model, prompts=float(k) * wt, new=float(i - c), past=c)
        load = part if load is None else load + part
    t, p = _priced(sm, load)
    return float(t), float(p)


def prefill_k_max(dep: Deployment, w: Workload) -> int:
    """The largest prefill batch of ``dep``: ⌊B·g/Ī⌋ prompts (1 when a prompt exceeds the budget B), no
    more than its KV capacity holds."""
    _, capacity, _ = concurrency_caps(dep, w, decode_only=True)
    mix = w.lengths
    i, budget, groups = mix.mean_input, dep.runtime.token_budget, dep.par.attention_groups
    prompt_kv = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, i)) * groups
    k_max = max(1, int((budget * groups) // i)) if max(mix.inputs) <= budget else 1
    return int(min(k_max, capacity // prompt_kv)) if prompt_kv > 0 else k_max


def prefill_rate_per_gpu(dep: Deployment, w: Workload) -> float:
    """Prompts/s per GPU of ``dep`` as a prefill replica at its largest batch: k_max / t_p(k_max) / G
    (0 when not one prompt fits)."""
    k = prefill_k_max(dep, w)
    if k < 1:
        return 0.0
    t_p, _ = _prefill_step(_table(dep, w), w.lengths, k, dep.runtime.token_budget)
    return k / t_p / dep.par.replica_gpus


def pool_pairs(deps: list[Deployment], w: Workload) -> list[tuple[int, Deployment]]:
    """Prefill pools of their own layout (docs/features/disaggregated.md): among the layouts of one model,
    GPU, formats and engine options, the one with the most prefill prompts/s per GPU
    (prefill_rate_per_gpu) is paired as the prefill pool with every other layout of the group as its
    decode pool: [(index of the decode layout, prefill deployment)]. Bounded: at most one extra
    evaluation per layout, beside its own pairing (both pools on its layout)."""
    groups: dict = {}
    for j, d in enumerate(deps):
        key = (d.model, gpu_key(d.gpu), d.dtypes, d.compute_dtype, d.engine, d.engine_options)
        groups.setdefault(key, []).append(j)
    pairs = []
    for members in groups.values():
        if len(members) < 2:
            continue
        rates = [prefill_rate_per_gpu(deps[j], w) for j in members]
        best = members[int(np.argmax(rates))]
        if max(rates) <= 0:
            continue
        pairs += [(j, deps[best]) for j in members if deps[j].par != deps[best].par]
    return pairs


def _disaggregated(dep: Deployment, w: Workload, prefill: Deployment | None = None) -> LayoutPoints | None:
    """Decode pool ``dep``; prefill pool ``prefill`` (its own layout, its own step table, GPUs and idle
    power; None: ``dep``). The KV transfer is priced as the decode pool receives it (its KV per GPU, its
    link)."""
    pre = prefill or dep
    caps, capacity, _ = concurrency_caps(dep, w, decode_only=True)
    d_max = min(caps.values())
    mix = w.lengths
    i, o, budget = mix.mean_input, mix.mean_output, pre.runtime.token_budget
    k_max = prefill_k_max(pre, w)
    if d_max < 1 or k_max < 1:
        return None
    sm = _table(dep, w)
    sm_p = sm if pre is dep else _table(pre, w)
    dec = np.arange(1, d_max + 1, dtype=float)
    t_d, p_d = _steady(sm, dec, w, decode_only=True)
    r_d = dec / ((o - 1) * t_d)
    ys = np.arange(1, w.max_decode_replicas + 1, dtype=float)[:, None]
    g, g_p = dep.par.replica_gpus, pre.par.replica_gpus
    idle = pre.gpu.power.idle_w
    transfer = transfer_seconds(dep, kv_link(dep), i)
    cols = np.arange(d_max)
    parts = []
    for k in prefill_batches(k_max):
        t_p, p_p = _prefill_step(sm_p, mix, k, budget)
        r_p = k / t_p
        xs = np.maximum(np.ceil(ys * r_d / r_p - 1e-9), 1.0)
        best = np.argmin((xs * g_p + ys * g) / ys, axis=0)  # fewest GPUs per decode replica; smallest y on ties
        x, y = xs[best, cols], ys[best, 0]
        busy = np.minimum(y * r_d / (x * r_p), 1.0)
        parts.append(dict(step_s=t_d, ttft_s=np.full(d_max, 2 * t_p + transfer), tok_s=y * dec / t_d,
                          watts=g * y * p_d + g_p * x * (busy * p_p + (1 - busy) * idle), gpus=x * g_p + y * g,
                          prefill_replicas=x, decode_replicas=y, concurrent_seqs=dec,
                          decode_batch=dec, prefill_batch=np.full(d_max, k)))
    cat = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    ints = ("gpus", "prefill_replicas", "decode_replicas", "concurrent_seqs", "decode_batch", "prefill_batch")
    return LayoutPoints(**{key: (v.astype(np.int64) if key in ints else v) for key, v in cat.items()},
                        cap=min(caps, key=caps.get), kv_capacity_bytes=capacity)
