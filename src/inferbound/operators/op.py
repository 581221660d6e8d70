"""One operator of a step, per GPU: its FLOPs and bytes by kind, and the shape of its kernels.

Collectives state their size and group (``comm``). GEMMs, the fused MoE layer, attention and the
engine's host work state their shape (``shape``), so the pricing engine can price them from measured
kernel curves (kernel_pricing.py) instead of a scalar roofline; every quantity broadcasts over arrays:

- ``gemm``: ``{"gemm": ((n, k), ...), "m": tokens, **fmt}``: one GEMM C[m, n] = A[m, k]·W[k, n] per
  (n, k) pair (a fused QKV, a gate+up and a down projection ...), all with the op's m rows;
- ``moe``: ``{"moe": {tokens, hidden, inter, topk, experts, tp, ep, gated, imbalance}, **fmt}``: one rank's
  fused expert layer (routing, both grouped GEMMs, permutation) for the step's tokens;
- ``attention``: ``{"attention": {mla, heads, kv_heads, d_dec, d_pre, kv_bytes, window}, "load": (decode
  pairs, prefill pairs, cached tokens read, new tokens, sampled sequences)}`` (operators/attention.py);
- ``host``: ``{"host": sequences}``: the engine's per-step and per-sequence host work (scheduling,
  sampling), once per step.

``fmt`` (``weight_format``) is how the op's weights are stored: ``weight`` (a dtype), ``bits`` (bits
per weight with scales, None: the dtype's default) and ``checkpoint`` (formats a checkpoint ships carry
calibrated, static activation scales).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..deploy.config import Dtypes, Parallelism
from ..base.dtypes import bytes_per_element
from ..model.groups import group_key, regroup  # noqa: F401  (re-exported: operators' layer kinds)
from ..model.spec import LayerGroup, ModelSpec


@dataclass
class Op:
    """One operator of a step, per GPU. ``count`` identical instances (layers) run one after another.
    ``dtype``: the format it computes at when not the step's (a state-space scan on CUDA cores)."""

    name: str
    kind: str  # gemm | attention | scan | elementwise | embedding | collective
    count: int
    flops: object = 0.0
    weight_bytes: object = 0.0
    act_bytes: object = 0.0
    kv_bytes: object = 0.0
    group: str = ""  # which layer group (e.g. "full", "window128", "moe")
    comm: dict = field(default_factory=dict)  # collectives: kind, bytes, group size, scope
    dtype: str | None = None
    shape: dict | None = None  # kernel shape for curve pricing (module docstring); None: roofline only

    @property
    def bytes(self):
        return self.weight_bytes + self.act_bytes + self.kv_bytes


def _merged_groups(m: ModelSpec) -> list[LayerGroup]:
    """Identical layer groups of the whole model merged."""
    return regroup(m.layers)


def _group_label(g: LayerGroup) -> str:
    att = "full" if g.attention == "full" else f"{g.attention}{g.window}"
    return att + ("/moe" if g.moe else "")


def _comm_bytes(dt: Dtypes) -> float:
    """Bytes per value of tensors crossing GPUs: 16-bit (engines reduce in bf16/fp16), fp32 if asked."""
    return bytes_per_element(dt.high_precision)


def _act_bytes(dt: Dtypes) -> float:
    """Bytes per activation value: the activation dtype (fp4 activations are stored as 8-bit)."""
    return bytes_per_element(dt.act) if dt.act != "fp4" else 1.0


def weight_format(dt: Dtypes, component: str | None) -> dict:
    """How the weights of ``component`` are stored (None: kept at high precision: LM head, router)."""
    if component is not None and dt.stored_at(component):
        return {"weight": dt.weight, "bits": dt.weight_bits, "checkpoint": dt.weight_source == "checkpoint"}
    return {"weight": dt.high_precision, "bits": None, "checkpoint": False}


def gemm_shape(dt: Dtypes, component: str | None, m, *nk) -> dict:
    """Shape of an op of one or more GEMMs of ``m`` rows, (n, k) each, on ``component``'s weights."""
    return {"gemm": tuple((float(n), float(k)) for n, k in nk), "m": m, **weight_format(dt, component)}


def _collective(name: str, kind: str, count: int, size_bytes, group: str, n: int, label: str) -> Op:
    return Op(name, "collective", count, group=label,
              comm={"kind": kind, "bytes": size_bytes, "group": group, "size": n})


def _tp_reduce(name: str, g: LayerGroup, par: Parallelism, size_bytes, label: str) -> list[Op]:
    """The TP reduction after a row-parallel GEMM: all-reduce, or RS + AG with sequence parallelism."""
    if par.tp <= 1:
        return []
    if par.sequence_parallel:
        return [_collective(f"{name}_reduce_scatter", "reduce_scatter", g.count, size_bytes, "tp", par.tp, label),
                _collective(f"{name}_all_gather", "all_gather", g.count, size_bytes, "tp", par.tp, label)]
    return [_collective(f"{name}_all_reduce", "all_reduce", g.count, size_bytes, "tp", par.tp, label)]


