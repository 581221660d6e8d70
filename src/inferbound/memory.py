"""Memory per GPU: weights, KV cache, peak activations, runtime reserve; fit, max batch, max context.

- weights: parameters on this GPU × bytes per weight (quantized weights include their scales;
  embeddings, LM head and norms stay 16-bit). TP splits all matrices t ways (vocab-parallel embedding);
  norms are replicated.
- KV: batch × kv_bytes_for_context(context) / KV shard, where the shard is min(tp, n_kv_heads) (KV heads
  replicate past that) and 1 for MLA (the latent is replicated on every rank).
- activations: the largest live set of one forward step of T tokens, T·(4·d + 2·ff/t + qkv/t)·bytes
  (residual, normed input, MLP intermediate, projections), plus fp32 logits of the sequences sampled.
- reserve: CUDA context and workspaces (data/runtime.yaml), and HBM the engine leaves unused
  (1 − memory_utilization).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import yaml

from .config import Dtypes, Parallelism
from .dtypes import bytes_per_element, weight_bytes_per_element
from .hardware import GPU
from .model.kv import kv_bytes_for_context
from .model.params import count_params
from .model.spec import ModelSpec


@lru_cache(maxsize=1)
def runtime_defaults() -> dict:
    return yaml.safe_load((resources.files("inferbound") / "data" / "runtime.yaml").read_text())


def kv_shard(m: ModelSpec, par: Parallelism) -> int:
    """Ways the KV cache is split over the TP group."""
    if m.mla is not None:
        return 1
    return min(par.tp, m.num_kv_heads)


def weight_bytes_per_gpu(m: ModelSpec, dt: Dtypes, par: Parallelism) -> float:
    """Weight bytes resident on one GPU.

    Dense parts split over tp·pp; routed experts over (GPUs sharing a MoE layer)·pp, i.e. tp·pp, or
    tp·dp·pp with attention data parallel (E/ep experts per GPU, each split expert_tp ways).
    """
    p = count_params(m)
    hb = bytes_per_element(dt.high_precision)
    wb = weight_bytes_per_element(dt.weight)
    dense = p.attention + p.dense_mlp + p.shared_experts
    return (dense * wb + p.router * hb + (p.embedding + p.lm_head) * hb) / (par.tp * par.pp) \
        + p.routed_experts * wb / (par.moe_group * par.pp) + p.norms * hb / par.pp


def kv_bytes_per_gpu(m: ModelSpec, dt: Dtypes, par: Parallelism, batch, context):
    """KV bytes on one GPU: the attention group's share of the batch, split over KV heads and stages."""
    seqs = np.asarray(batch, dtype=float) / par.attention_groups
    return seqs * kv_bytes_for_context(m, context, dt.kv_dtype) / (kv_shard(m, par) * par.pp)


def activation_bytes(m: ModelSpec, dt: Dtypes, par: Parallelism, tokens, sequences):
    """Peak live activations of a step of ``tokens`` tokens sampling ``sequences`` logits rows."""
    ab = max(bytes_per_element(dt.act), 1.0)
    ff = m.intermediate_size
    if m.moe is not None:
        ff = max(ff, m.moe.top_k * m.moe.expert_intermediate_size)
    width = 4 * m.hidden_size + (2 * ff + (m.num_heads + 2 * m.num_kv_heads) * m.head_dim) / par.tp
    return np.asarray(tokens, dtype=float) * width * ab + np.asarray(sequences, dtype=float) * m.vocab_size / par.tp * 4


def reserve_bytes(gpu: GPU) -> float:
    r = runtime_defaults()["memory"]
    return r["runtime_reserve_bytes"] + (1 - r["memory_utilization"]) * gpu.hbm_bytes


@dataclass
class MemoryReport:
    """Bytes per GPU; ``fits`` when the sum is within HBM."""

    weights: object
    kv_cache: object
    activations: object
    reserve: float
    capacity: float

    @property
    def total(self):
        return self.weights + self.kv_cache + self.activations + self.reserve

    @property
    def fits(self):
        return self.total <= self.capacity

    @property
    def free(self):
        return self.capacity - self.total

    def to_dict(self) -> dict:
        d = {k: float(v) if np.ndim(v) == 0 else np.asarray(v).tolist() for k, v in asdict(self).items()}
        d.update(total=float(np.asarray(self.total).max()), fits=bool(np.all(self.fits)), units="bytes")
        return d


def memory_report(m, gpu, dt, par, batch, context, step_tokens=None) -> MemoryReport:
    """Memory of ``batch`` sequences at ``context`` tokens; prefill step of ``step_tokens`` (default batch·context)."""
    step_tokens = np.asarray(batch) * np.asarray(context) if step_tokens is None else step_tokens
    return MemoryReport(weights=weight_bytes_per_gpu(m, dt, par),
                        kv_cache=kv_bytes_per_gpu(m, dt, par, batch, context),
                        activations=activation_bytes(m, dt, par, step_tokens, batch),
                        reserve=reserve_bytes(gpu), capacity=gpu.hbm_bytes)


def max_batch(m, gpu, dt, par, context, step_tokens=None):
    """Largest batch whose weights + KV + activations + reserve fit at ``context`` tokens each.

    Linear in the batch: free = cap − weights − reserve − act(fixed); per sequence: KV(context) +
    (context tokens of prefill activations, unless a fixed ``step_tokens`` budget bounds them) + logits.
    """
    base = gpu.hbm_bytes - weight_bytes_per_gpu(m, dt, par) - reserve_bytes(gpu)
    kv_seq = kv_bytes_per_gpu(m, dt, par, 1, context)
    if step_tokens is None:
        per_seq = kv_seq + activation_bytes(m, dt, par, context, 1)
    else:
        base = base - activation_bytes(m, dt, par, step_tokens, 0)
        per_seq = kv_seq + activation_bytes(m, dt, par, 0, 1)
    return np.maximum(np.floor(base / per_seq), 0).astype(int)


def max_context(m, gpu, dt, par, batch, step_tokens=None, limit: int = 10_000_000) -> int:
    """Longest context (tokens) at which ``batch`` sequences fit (bisection; KV grows monotonically)."""
    lo, hi = 0, limit
    if max_batch(m, gpu, dt, par, 1, step_tokens) < batch:
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if max_batch(m, gpu, dt, par, mid, step_tokens) >= batch:
            lo = mid
        else:
            hi = mid - 1
    return lo


def kv_capacity_bytes(m, gpu, dt, par, step_tokens) -> float:
    """Bytes per GPU the engine gives the KV cache: a fraction of what is free after weights, the
    activations of a ``step_tokens`` step and the runtime reserve (TensorRT-LLM's
    kv_cache_free_gpu_mem_fraction accounting; data/runtime.yaml)."""
    r = runtime_defaults()["memory"]
    free = (gpu.hbm_bytes - weight_bytes_per_gpu(m, dt, par) - activation_bytes(m, dt, par, step_tokens, 0)
            - r["runtime_reserve_bytes"])
    return max(float(free) * r["kv_free_fraction"], 0.0)
