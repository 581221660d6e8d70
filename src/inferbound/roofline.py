"""The pricing engine: operators (FLOPs, bytes) -> time, bound and explanation.

For each operator instance on a GPU with dense peak P (at the compute dtype), HBM bandwidth W,
achievable fractions e_c and e_m and a fixed per-kernel overhead o (all from the catalog):

    t_compute = FLOPs / (P · e_c),  t_memory = bytes / (W · e_m)
    t = max(t_compute, t_memory) + o

(Williams, Waterman & Patterson, "Roofline", CACM 2009). The operator is compute-bound when
t_compute >= t_memory; its arithmetic intensity is FLOPs/bytes and the GPU's ridge point is
(P·e_c)/(W·e_m). A step adds its operators and a fixed per-step overhead. All arithmetic broadcasts
over numpy arrays. Time is split into compute, weight reads, KV reads and activation traffic: a
memory-bound operator's time is shared among its byte kinds in proportion to their bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hardware import GPU
from .operators import Op


@dataclass
class PricedOp:
    op: Op
    t_compute: object
    t_memory: object
    time: object  # per instance
    compute_bound: object
    detail: str = ""  # collectives: algorithm and link

    @property
    def total(self):
        return self.time * self.op.count

    @property
    def intensity(self):
        return np.asarray(self.op.flops) / np.maximum(np.asarray(self.op.bytes), 1e-30)


@dataclass
class StepCost:
    """A priced step: per-operator detail and the split of the step time."""

    ops: list[PricedOp]
    time: object
    overhead: object
    split: dict = field(default_factory=dict)  # compute, weights, kv, activations, communication, overhead (s)
    comm_kinds: dict = field(default_factory=dict)  # visible collective seconds by kind (all_reduce, ...)

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


def ridge_point(gpu: GPU, compute_dtype: str) -> float:
    """FLOPs per byte above which an operator is compute-bound: (P·e_c)/(W·e_m)."""
    return (gpu.peak_flops[compute_dtype] * compute_eff(gpu, compute_dtype)) / (gpu.hbm_bw * gpu.efficiency.memory)


def compute_eff(gpu: GPU, dtype: str) -> float:
    return gpu.efficiency.compute_for(dtype)


def attention_dtype(gpu: GPU, compute_dtype: str, kv_dtype: str) -> str:
    """Attention math runs at fp8 only when both the GEMMs and the cache are fp8, at fp32 when the
    model runs in fp32; else 16-bit."""
    if compute_dtype == "fp8" and kv_dtype == "fp8":
        return "fp8"
    if compute_dtype == "fp32":
        return "fp32"
    return "bf16" if gpu.supports("bf16") else "fp16"


def price_op(op: Op, gpu: GPU, dtype: str) -> PricedOp:
    """Roofline time of one operator instance at ``dtype``'s peak (attention's memory time at the
    KV-read efficiency, which paged, gathered cache reads lower below that of streaming weights)."""
    eff = gpu.efficiency
    t_c = np.asarray(op.flops, dtype=float) / (gpu.peak_flops[dtype] * compute_eff(gpu, dtype))
    mem_eff = eff.kv_memory_fraction if op.kind == "attention" else eff.memory
    t_m = np.asarray(op.bytes, dtype=float) / (gpu.hbm_bw * mem_eff)
    return PricedOp(op, t_c, t_m, np.maximum(t_c, t_m) + eff.kernel_overhead_s, t_c >= t_m)


def price_step(ops: list[Op], gpu: GPU, compute_dtype: str, kv_dtype: str, comm_pricer=None,
               comm_overlap: float = 0.0, step_overhead: bool = True) -> StepCost:
    """Price every operator; add the per-step overhead; split the time by what each second is spent on.

    ``comm_pricer(op) -> (seconds, label)`` prices collectives (``collectives.py``); without one none may
    occur. ``comm_overlap`` hides that share of the collective time behind the step's other work
    (never more than that work). ``step_overhead=False`` leaves out the per-step fixed cost (a
    pipeline stage's micro-batch: the scheduler runs once per step, not once per stage).
    """
    att = attention_dtype(gpu, compute_dtype, kv_dtype)
    priced, split = [], {"compute": 0.0, "weights": 0.0, "kv": 0.0, "activations": 0.0,
                         "communication": 0.0, "overhead": 0.0}
    kinds: dict = {}
    for op in ops:
        if op.kind == "collective":
            if comm_pricer is None:
                raise ValueError(f"operator {op.name} is a collective but no communication model was given")
            t, how = comm_pricer(op)
            t = np.asarray(t, dtype=float)
            p = PricedOp(op, 0.0, 0.0, t, False, how)
            split["communication"] = split["communication"] + t * op.count
            kinds[op.comm["kind"]] = kinds.get(op.comm["kind"], 0.0) + t * op.count
            priced.append(p)
            continue
        p = price_op(op, gpu, att if op.kind == "attention" else compute_dtype)
        priced.append(p)
        n = op.count
        mem_t = np.where(p.compute_bound, 0.0, p.t_memory)
        total_b = np.maximum(np.asarray(op.bytes, dtype=float), 1e-30)
        split["compute"] = split["compute"] + np.where(p.compute_bound, p.t_compute, 0.0) * n
        split["weights"] = split["weights"] + mem_t * np.asarray(op.weight_bytes) / total_b * n
        split["kv"] = split["kv"] + mem_t * np.asarray(op.kv_bytes) / total_b * n
        split["activations"] = split["activations"] + mem_t * np.asarray(op.act_bytes) / total_b * n
        split["overhead"] = split["overhead"] + gpu.efficiency.kernel_overhead_s * n
    if step_overhead:
        split["overhead"] = split["overhead"] + gpu.efficiency.step_overhead_s
    if comm_overlap:
        work = split["compute"] + split["weights"] + split["kv"] + split["activations"]
        visible = split["communication"] - np.minimum(split["communication"] * comm_overlap, work)
        kinds = {k: v * visible / np.maximum(split["communication"], 1e-30) for k, v in kinds.items()}
        split["communication"] = visible
    total = sum(split.values())
    return StepCost(priced, total, split["overhead"], split, kinds)
