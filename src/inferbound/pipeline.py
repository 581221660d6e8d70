"""Pipeline parallelism: layers split over ``pp`` stages, micro-batches, bubble and activation sends.

Stage i holds a contiguous run of layers (``pp_split`` or an even split, earlier stages taking the
remainder); the first stage also holds the embedding, the last the final norm and LM head. A batch of
B sequences runs as m micro-batches of B/m (m = ``microbatches`` or min(B, pp)); t_i is stage i's time
for one micro-batch and s the activation send between stages (b·new·d values, point-to-point):

    prefill (fill and drain):      T = Σ_i t_i + (m − 1)·max_i t_i + (pp − 1)·s + o
    decode (m micro-batches in flight, every sequence advances one token):
                                   T = max(m·max_i t_i, Σ_i t_i + (pp − 1)·s) + o

(o: the per-step overhead — scheduling, sampling — paid once per step, not per stage.)

so decode keeps every stage busy once m >= pp and the stages are balanced; with fewer micro-batches
the difference is the bubble. The split of T reports the average GPU's work (m·mean_i of the stage
splits), the sends as communication, and the remainder as ``bubble``.
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import numpy as np

from .collectives import comm_pricer
from .comm import p2p
from .config import Dtypes, Parallelism
from .dtypes import bytes_per_element
from .model.spec import LayerGroup, ModelSpec
from .operators import forward_ops
from .roofline import StepCost, price_step
from .topology import place


@lru_cache(maxsize=256)
def stage_layers(m: ModelSpec, par: Parallelism) -> list[list[LayerGroup]]:
    """Ordered layer groups of each stage."""
    n = m.num_layers
    if par.pp_split is not None:
        if sum(par.pp_split) != n:
            raise ValueError(f"pp_split={list(par.pp_split)} sums to {sum(par.pp_split)}, "
                             f"but {m.name} has {n} layers")
        sizes = list(par.pp_split)
    else:
        base, extra = divmod(n, par.pp)
        sizes = [base + (i < extra) for i in range(par.pp)]
    flat = [g.model_copy(update={"count": 1}) for g in m.layers for _ in range(g.count)]
    stages, start = [], 0
    for size in sizes:
        stages.append(_regroup(flat[start:start + size]))
        start += size
    return stages


def _regroup(layers: list[LayerGroup]) -> list[LayerGroup]:
    counts: dict[tuple, int] = {}
    for g in layers:
        key = (g.attention, g.window, g.moe)
        counts[key] = counts.get(key, 0) + 1
    return [LayerGroup(count=c, attention=a, window=w, moe=e) for (a, w, e), c in counts.items()]


_WORK_CACHE: OrderedDict = OrderedDict()
_WORK_CACHE_SIZE = 4096


def _key(x):
    a = np.asarray(x, dtype=float)
    return (a.shape, a.tobytes())


def stage_work(m: ModelSpec, dt: Dtypes, par: Parallelism, batch, new, past, logits_per_seq, imbalance,
               attention: bool = True):
    """Operators (the work, no prices) of every stage; memoized, since re-pricing the same work with
    other efficiency factors (calibration, hardware overrides) is the common case. ``attention=False``
    leaves the attention operators out (the step model prices them itself)."""
    key = (m, dt, par, _key(batch), _key(new), _key(past), float(logits_per_seq), float(imbalance), attention)
    hit = _WORK_CACHE.get(key)
    if hit is not None:
        _WORK_CACHE.move_to_end(key)
        return hit
    if par.pp == 1:
        work = [forward_ops(m, dt, par, batch, new, past, logits_per_seq, moe_imbalance=imbalance)]
    else:
        stages = stage_layers(m, par)
        work = [forward_ops(m, dt, par, batch, new, past, logits_per_seq, layers=layers, first=i == 0,
                            last=i == len(stages) - 1, moe_imbalance=imbalance) for i, layers in enumerate(stages)]
    if not attention:
        work = [[op for op in ops if op.kind != "attention"] for ops in work]
    _WORK_CACHE[key] = work
    if len(_WORK_CACHE) > _WORK_CACHE_SIZE:
        _WORK_CACHE.popitem(last=False)
    return work


def step_cost(m: ModelSpec, gpu, dt: Dtypes, par: Parallelism, compute_dtype: str, batch, new, past,
              phase: str, logits_per_seq: float = 1, attention: bool = True) -> StepCost:
    """Time of one step (prefill, decode or mixed) of ``batch`` sequences on the whole deployment
    (``attention=False``: everything but the attention operators)."""
    pricer = comm_pricer(gpu, par)
    imb = gpu.efficiency.moe_imbalance

    def price(ops, step_overhead=True):
        return price_step(ops, gpu, compute_dtype, dt.kv_dtype, pricer, par.comm_overlap, step_overhead)

    if par.pp == 1:
        return price(stage_work(m, dt, par, batch, new, past, logits_per_seq, imb, attention)[0])
    batch = np.asarray(batch, dtype=float)
    mb = np.minimum(batch, par.pp) if par.microbatches is None else np.minimum(batch, par.microbatches)
    b = batch / mb
    costs = [price(ops, step_overhead=False)
             for ops in stage_work(m, dt, par, b, new, past, logits_per_seq, imb, attention)]
    times = np.stack(np.broadcast_arrays(*[np.asarray(c.time, dtype=float) for c in costs]))
    link = place(gpu, par, 2, par.tp * par.attention_groups)
    send, _ = p2p(b / par.attention_groups * np.asarray(new, dtype=float) * m.hidden_size
                  * bytes_per_element(dt.high_precision), link.outer or link.inner)
    sends = (par.pp - 1) * send
    step_fixed = gpu.efficiency.step_overhead_s  # once per step, not per stage or micro-batch
    if phase == "prefill":
        total = times.sum(axis=0) + (mb - 1) * times.max(axis=0) + sends + step_fixed
    else:
        total = np.maximum(mb * times.max(axis=0), times.sum(axis=0) + sends) + step_fixed
    split = {k: mb * np.mean(np.stack(np.broadcast_arrays(*[np.asarray(c.split[k], dtype=float) for c in costs])),
                             axis=0) for k in costs[0].split}
    split["communication"] = split["communication"] + sends
    split["overhead"] = split["overhead"] + step_fixed
    split["bubble"] = np.maximum(total - sum(split.values()), 0.0)
    kinds: dict = {"p2p": sends}
    for c in costs:
        for k, v in c.comm_kinds.items():
            kinds[k] = kinds.get(k, 0.0) + mb * v / len(costs)
    ops = [p for c in costs for p in c.ops]
    return StepCost(ops, total, split["overhead"], split, kinds)
