"""The pricing engine: operators (FLOPs, bytes) -> time, bound and the split of a step's time.

For each operator instance on a GPU with dense peak P (at the compute dtype), HBM bandwidth W,
achievable fractions e_c and e_m and a fixed per-kernel overhead o (all from the catalog):

    t_compute = FLOPs / (P · e_c),  t_memory = bytes / (W · e_m)
    t = max(t_compute, t_memory) + o

(Williams, Waterman & Patterson, "Roofline", CACM 2009). The operator is compute-bound when
t_compute >= t_memory; its arithmetic intensity is FLOPs/bytes and the GPU's ridge point is
(P·e_c)/(W·e_m). Attention reads its KV cache at the KV-read fraction e_kv instead of e_m (paged,
gathered reads stream less well than weights). :class:`Roof` holds (P·e_c, W·e_m, o) for one kind of
operator and is the only place that formula is written; :func:`price_op` applies it to an operator.

Where the GPU has measured kernel curves, operators that state their kernel shape (GEMMs, the fused
MoE layer, attention, the engine's host work) are priced by kernel_pricing.py instead: the same
split into a compute or memory side (the bound label) and a fixed cost, with the curve's time; the
rest (norms, elementwise, embeddings, GPUs without curves) by the roof above. Collectives are priced
by the deployment's pricer (collectives.py).

A step's operators are priced into :class:`Work` (seconds split into compute, weight reads, KV reads,
activation traffic, communication and kernel overhead; FLOPs and HBM bytes for the power model): a
memory-bound operator's time is shared among its byte kinds in proportion to their bytes. Pieces of
work add; ``step.py`` turns a stage's work into a step's time (pipeline, per-step overhead).
All arithmetic broadcasts over numpy arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..base.numeric import fast_ndim
from ..deploy.runtime import profile_of
from ..hardware import GPU
from .kernel_pricing import host_cost
from ..operators import Op

SPLIT_KEYS = ("compute", "weights", "kv", "activations", "communication", "overhead")
WORK_KEYS = ("compute", "weights", "kv", "activations")  # busy time that can hide communication


@dataclass(frozen=True)
class Roof:
    """Effective compute rate (FLOP/s), memory rate (bytes/s) and fixed overhead (s) of one kind of
    kernel on one GPU at one dtype: t = max(F/peak, B/bandwidth) + overhead."""

    peak: float
    bandwidth: float
    overhead: float

    def times(self, flops, moved):
        """(t_compute, t_memory, t) for ``flops`` and ``moved`` bytes (floats or arrays)."""
        t_c = flops / self.peak
        t_m = moved / self.bandwidth
        return t_c, t_m, np.maximum(t_c, t_m) + self.overhead

    def time(self, flops: float, moved: float) -> float:
        """t for scalar work (the simulator's per-step path; the same formula as :meth:`times`)."""
        return max(flops / self.peak, moved / self.bandwidth) + self.overhead


def compute_eff(gpu: GPU, dtype: str) -> float:
    return gpu.efficiency.compute_for(dtype)


def roof(gpu: GPU, dtype: str, kind: str) -> Roof:
    """The roof an operator of ``kind`` runs under at ``dtype`` (attention: KV-read bandwidth)."""
    eff = gpu.efficiency
    mem = eff.kv_memory_fraction if kind == "attention" else eff.memory
    return Roof(gpu.peak_flops[dtype] * compute_eff(gpu, dtype), gpu.hbm_bw * mem, eff.kernel_overhead_s)


def ridge_point(gpu: GPU, compute_dtype: str) -> float:
    """FLOPs per byte above which an operator is compute-bound: (P·e_c)/(W·e_m)."""
    r = roof(gpu, compute_dtype, "gemm")
    return r.peak / r.bandwidth


def attention_dtype(gpu: GPU, compute_dtype: str, kv_dtype: str) -> str:
    """Attention math runs at fp8 only when both the GEMMs and the cache are fp8, at fp32 when the
    model runs in fp32; else 16-bit."""
    if compute_dtype == "fp8" and kv_dtype == "fp8":
        return "fp8"
    if compute_dtype == "fp32":
        return "fp32"
    return "bf16" if gpu.supports("bf16") else "fp16"


@dataclass
class PricedOp:
    op: Op
    t_compute: object
    t_memory: object
    time: object  # per instance
    compute_bound: object
    detail: str = ""  # collectives: algorithm and link
    parts: tuple | None = None  # (compute s, memory s, overhead s) per instance where not the roof's max

    @property
    def total(self):
        return self.time * self.op.count

    @property
    def intensity(self):
        return np.asarray(self.op.flops) / np.maximum(np.asarray(self.op.bytes), 1e-30)


def price_op(op: Op, gpu: GPU, dtype: str) -> PricedOp:
    """Roofline time of one operator instance at ``dtype``'s peak (module docstring)."""
    t_c, t_m, t = roof(gpu, dtype, op.kind).times(np.asarray(op.flops, dtype=float), np.asarray(op.bytes, dtype=float))
    return PricedOp(op, t_c, t_m, t, t_c >= t_m)


def _zero_split() -> dict:
    return dict.fromkeys(SPLIT_KEYS, 0.0)


@dataclass
class Work:
    """Priced operators of (part of) a step on one GPU: seconds by kind, visible collective seconds by
    collective kind, FLOPs and HBM bytes. Pieces of one stage add with ``+``."""

    split: dict = field(default_factory=_zero_split)
    comm_kinds: dict = field(default_factory=dict)
    flops: object = 0.0
    bytes: object = 0.0
    ops: list = field(default_factory=list)

    def __add__(self, other: "Work") -> "Work":
        kinds = dict(self.comm_kinds)
        for k, v in other.comm_kinds.items():
            kinds[k] = kinds.get(k, 0.0) + v
        return Work({k: self.split[k] + other.split[k] for k in SPLIT_KEYS}, kinds, self.flops + other.flops,
                    self.bytes + other.bytes, self.ops + other.ops)

    @property
    def time(self):
        return sum(self.split.values())

    def with_overlap(self, overlap: float) -> "Work":
        """``overlap`` of the collective time hidden behind the busy time (never more than that work)."""
        if not overlap:
            return self
        s = dict(self.split)
        busy = sum(s[k] for k in WORK_KEYS)
        visible = s["communication"] - np.minimum(s["communication"] * overlap, busy)
        kinds = {k: v * visible / np.maximum(s["communication"], 1e-30) for k, v in self.comm_kinds.items()}
        s["communication"] = visible
        return Work(s, kinds, self.flops, self.bytes, self.ops)


def _default_host(ops, gpu: GPU) -> dict:
    """Host ops priced without a deployment pricer: the default engine's host work (kernel_pricing)."""
    step_s, seq_s = host_cost(profile_of(None).key)
    h = gpu.efficiency.host_factor
    return {i: (0.0, 0.0, 0.0, 0.0, h * (step_s + seq_s * np.asarray(op.shape["host"], dtype=float)))
            for i, op in enumerate(ops) if op.kind == "host"}


_SUM_KEYS = SPLIT_KEYS + ("flops", "bytes")


def price_ops(ops: list[Op], gpu: GPU, compute_dtype: str, kv_dtype: str, comm_pricer=None, kernels=None) -> Work:
    """Price every operator (no per-step overhead, no overlap): the split of their time by kind.

    ``comm_pricer(op) -> (seconds, label)`` prices collectives (``collectives.py``); without one none may
    occur. ``kernels``: a kernel_pricing.KernelPricer (default: the comm pricer's ``kernels``, if any);
    ops it prices use the curves (module docstring), the rest the roof.
    """
    att = attention_dtype(gpu, compute_dtype, kv_dtype)
    kp = kernels if kernels is not None else getattr(comm_pricer, "kernels", None)
    curved = kp.price(ops, compute_dtype, att) if kp is not None else _default_host(ops, gpu)
    roofs = {"attention": roof(gpu, att, "attention"), "other": roof(gpu, compute_dtype, "gemm")}
    priced: list = []
    kinds: dict = {}
    # Sums in two parts: the plain numbers of one-step operators (most of a static batch's: Python floats,
    # no numpy call) and the arrays of a sweep's; added once at the end.
    num = dict.fromkeys(_SUM_KEYS, 0.0)
    arr: dict = {}

    def add(key, v):
        if isinstance(v, float):
            num[key] += v
        else:
            arr[key] = arr[key] + v if key in arr else v
    for i, op in enumerate(ops):
        n = op.count
        if op.kind == "collective":
            if comm_pricer is None:
                raise ValueError(f"operator {op.name} is a collective but no communication model was given")
            t, how = comm_pricer(op)
            priced.append(PricedOp(op, 0.0, 0.0, t, False, how))
            add("communication", t * n)
            kinds[op.comm["kind"]] = kinds.get(op.comm["kind"], 0.0) + t * n
            continue
        f, b = op.flops, op.bytes
        if i in curved:
            t_c, t_m, comp, mem, over = curved[i]
            cb = comp >= mem
            priced.append(PricedOp(op, t_c, t_m, comp + mem + over, cb, "kernel curve", (comp, mem, over)))
        else:
            if op.kind == "scan" or (op.kind == "attention" and op.dtype):  # a state-space scan (or the DSA
                # indexer, operators/sparse_attn.py) reads its state like a cache, at its own dtype
                r = roof(gpu, op.dtype if op.dtype and gpu.supports(op.dtype) else compute_dtype, "attention")
            else:
                r = roofs["attention" if op.kind == "attention" else "other"]
            if fast_ndim(f) == 0 and fast_ndim(b) == 0:  # one step: plain floats, the same formula
                f, b = float(f), float(b)
                t_c, t_m = f / r.peak, b / r.bandwidth
                cb = t_c >= t_m
                t = max(t_c, t_m) + r.overhead
                comp, mem = (t_c, 0.0) if cb else (0.0, t_m)
            else:
                f, b = np.asarray(f, dtype=float), np.asarray(b, dtype=float)
                t_c, t_m, t = r.times(f, b)
                cb = t_c >= t_m
                comp, mem = np.where(cb, t_c, 0.0), np.where(cb, 0.0, t_m)
            priced.append(PricedOp(op, t_c, t_m, t, cb))
            over = r.overhead
        add("compute", comp * n)
        if op.kind != "host":
            share = mem * (n / np.maximum(b, 1e-30)) if fast_ndim(b) else mem * n / max(float(b), 1e-30)
            add("weights", share * op.weight_bytes)
            add("kv", share * op.kv_bytes)
            add("activations", share * op.act_bytes)
        add("overhead", over * n)
        add("flops", f * n)
        add("bytes", b * n)
    tot = {k: (num[k] + arr[k] if k in arr else num[k]) for k in _SUM_KEYS}
    split = {k: tot[k] for k in SPLIT_KEYS}
    flops, moved = tot["flops"], tot["bytes"]
    return Work(split, kinds, flops, moved, priced)


@dataclass
class StepCost:
    """A priced step: per-operator detail, its time, the split of that time (per GPU, ``bubble``
    included with pipeline stages), visible collective seconds by kind, and per-GPU FLOPs and bytes."""

    ops: list[PricedOp]
    time: object
    overhead: object
    split: dict = field(default_factory=dict)  # compute, weights, kv, activations, communication, overhead (s)
    comm_kinds: dict = field(default_factory=dict)  # visible collective seconds by kind (all_reduce, ...)
    flops: object = 0.0  # per GPU (the average GPU of a pipeline)
    bytes: object = 0.0

    @property
    def bound(self):
        """Label of the largest share of the step time: compute, memory or communication."""
        mem = self.split["weights"] + self.split["kv"] + self.split["activations"]
        comm = self.split.get("communication", 0.0)
        stack = np.stack(np.broadcast_arrays(np.asarray(self.split["compute"], dtype=float),
                                             np.asarray(mem, dtype=float), np.asarray(comm, dtype=float)))
        labels = np.array(["compute", "memory", "communication"])
        out = labels[np.argmax(stack, axis=0)]
        return str(out) if out.ndim == 0 else out


def price_step(ops: list[Op], gpu: GPU, compute_dtype: str, kv_dtype: str, comm_pricer=None,
               comm_overlap: float = 0.0, step_overhead: bool = True) -> StepCost:
    """One GPU's operators as a whole step: :func:`price_ops`, ``comm_overlap`` of the collective time
    hidden, plus the per-step overhead (``step_overhead=False`` leaves it out)."""
    w = price_ops(ops, gpu, compute_dtype, kv_dtype, comm_pricer).with_overlap(comm_overlap)
    split = dict(w.split)
    if step_overhead:
        split["overhead"] = split["overhead"] + gpu.efficiency.step_overhead_s
    return StepCost(w.ops, sum(split.values()), split["overhead"], split, w.comm_kinds, w.flops, w.bytes)
