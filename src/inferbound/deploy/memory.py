"""Memory per GPU: weights, KV cache, peak activations, runtime reserve; fit, max batch, max context.

- weights: parameters on this GPU × bytes per weight (quantized weights include their scales;
  embeddings, LM head and norms stay 16-bit). TP splits all matrices t ways (vocab-parallel embedding);
  norms are replicated.
- KV: batch × kv_bytes_for_context(context) / KV shard, where the shard is min(tp, n_kv_heads) (KV heads
  replicate past that) and 1 for MLA (the latent is replicated on every rank).
- activations: the largest live set of one forward step of T tokens, T·(4·d + 2·ff/t + qkv/t)·bytes
  (residual, normed input, MLP intermediate, projections), plus fp32 logits of the sequences sampled.
- reserve: CUDA context and workspaces (data/runtime.yaml), and the memory the serving engine leaves
  unused: HBM − weights − activations − that reserve − the KV cache the engine allocates
  (runtime.kv_capacity_bytes: each engine's own rule, e.g. vLLM's gpu_memory_utilization).

A batch fits when its KV cache fits the engine's KV allocation (and the weights leave room for it).
Engine features (docs/features/): speculative decoding adds the draft's weights and its own KV, and k
drafted slots per sequence to the target's KV (``sequence_kv_bytes``); a host KV tier
(``kv_offload=host``, offload.py) holds evicted prefixes and adds nothing to a batch's room
(``HostTier.capacity_bytes`` is 0).
Functions over a deployment take it whole; the arithmetic of the model under a layout
(weights, KV, activations per GPU) takes (model, dtypes, parallelism).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .memory_terms import activation_bytes, kv_bytes_per_gpu, kv_shard, weight_bytes_per_gpu  # noqa: F401  (re-exported)
from .offload import tier_of
from .runtime import draft_weight_bytes, runtime_reserve_bytes
from .speculative import drafter_of, extra_kv_tokens


@dataclass
class MemoryReport:
    """Bytes per GPU. ``fits`` when the KV cache fits what the engine allocates for it and weights, KV,
    activations and the runtime reserve fit the GPU; ``unused`` is what the engine leaves free."""

    weights: object
    kv_cache: object
    activations: object
    reserve: float
    capacity: float
    kv_capacity: float = 0.0  # KV bytes the engine allocates on this GPU
    unused: float = 0.0
    kv_host_capacity: float = 0.0  # host-memory KV pool per GPU (kv_offload=host), beside kv_capacity

    @property
    def total(self):
        return self.weights + self.kv_cache + self.activations + self.reserve

    @property
    def fits(self):
        on_gpu = np.minimum(self.kv_cache, self.kv_capacity) if self.kv_host_capacity else self.kv_cache
        return (self.kv_cache <= self.kv_capacity + self.kv_host_capacity) & \
            (self.weights + on_gpu + self.activations + self.reserve <= self.capacity)

    @property
    def in_host(self):
        """KV bytes per GPU beyond the device allocation, held in the host tier."""
        return np.maximum(self.kv_cache - self.kv_capacity, 0.0) if self.kv_host_capacity else 0.0 * self.kv_cache

    @property
    def free(self):
        return self.kv_capacity + self.kv_host_capacity - self.kv_cache

    @property
    def reason(self) -> str:
        """Why it does not fit (empty when it fits)."""
        if bool(np.all(self.fits)):
            return ""
        w, kv, cap = float(self.weights), float(np.max(self.kv_cache)), float(self.kv_capacity)
        if cap <= 0:
            return (f"the weights ({w / 1e9:.1f} GB per GPU) leave the engine no memory for a KV cache on a "
                    f"{self.capacity / 1e9:.0f} GB GPU")
        if kv > cap + self.kv_host_capacity:
            host = f" + {self.kv_host_capacity / 1e9:.1f} GB host tier" if self.kv_host_capacity else ""
            return (f"the batch's KV cache ({kv / 1e9:.1f} GB per GPU) exceeds the {cap / 1e9:.1f} GB the engine "
                    f"allocates{host}")
        return (f"weights + KV + activations + reserve need {float(np.max(self.total)) / 1e9:.1f} GB per GPU of "
                f"{self.capacity / 1e9:.0f} GB")

    def to_dict(self) -> dict:
        d = {k: float(v) if np.ndim(v) == 0 else np.asarray(v).tolist()
             for k, v in ((f.name, getattr(self, f.name)) for f in fields(self))}
        d.update(total=float(np.asarray(self.total).max()), fits=bool(np.all(self.fits)), units="bytes",
                 reason=self.reason)
        return d


def kv_capacity(dep) -> float:
    """KV-cache bytes per GPU the deployment's engine allocates (runtime.kv_capacity_bytes)."""
    return dep.kv_capacity_bytes


def memory_report(dep, batch, context, step_tokens=None) -> MemoryReport:
    """Memory of ``batch`` sequences at ``context`` tokens; the activations of a prefill step of
    ``step_tokens`` (default batch·context), which a continuous-batching engine caps at its token
    budget (it chunks the rest); the engine's KV allocation and what it leaves unused."""
    m, dt, par, rt = dep.model, dep.dtypes, dep.par, dep.runtime
    step_tokens = np.asarray(batch) * np.asarray(context) if step_tokens is None else step_tokens
    if rt.continuous:
        step_tokens = np.minimum(step_tokens, rt.token_budget * par.attention_groups)
    w = dep.weight_bytes_per_gpu + draft_weight_bytes(dep, rt)
    act = activation_bytes(m, dt, par, step_tokens, batch)
    cap = kv_capacity(dep)
    kv = sequence_kv_bytes(dep, batch, context)
    reserve = runtime_reserve_bytes()
    unused = max(dep.gpu.hbm_bytes - w - cap - reserve - float(np.max(act)), 0.0)
    return MemoryReport(weights=w, kv_cache=kv, activations=act, reserve=reserve, capacity=dep.gpu.hbm_bytes,
                        kv_capacity=cap, unused=unused, kv_host_capacity=host_kv_capacity(dep))


def sequence_kv_bytes(dep, batch, context, rt=None):
    """KV bytes on the most loaded GPU of ``batch`` sequences holding ``context`` tokens under the runtime
    (default the deployment's): the target's at context + k (the k drafted slots of speculative decoding,
    speculative.extra_kv_tokens) plus the draft's own KV at ``context``."""
    rt = rt or dep.runtime
    k = extra_kv_tokens(rt)
    kv = kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, batch, np.asarray(context, dtype=float) + k)
    dr = drafter_of(dep, rt) if k else None
    if dr is not None and dr.model is not None:
        kv = kv + dr.kv_bytes_per_gpu(batch, context)
    return kv


def host_kv_capacity(dep, rt=None) -> float:
    """The host KV tier per GPU (offload.py), 0 without kv_offload=host."""
    tier = tier_of(dep, rt)
    return 0.0 if tier is None else tier.capacity_bytes


def max_batch(dep, context):
    """Largest batch whose KV cache at ``context`` tokens each fits the engine's KV allocation (and the host
    tier, with kv_offload=host)."""
    per_seq = sequence_kv_bytes(dep, 1, context)
    room = kv_capacity(dep) + host_kv_capacity(dep)
    return np.maximum(np.floor(room / np.maximum(per_seq, 1e-30)), 0).astype(int)


def max_context(dep, batch, limit: int = 10_000_000) -> int:
    """Longest context (tokens) at which ``batch`` sequences fit (bisection; KV grows monotonically)."""
    lo, hi = 0, limit
    if max_batch(dep, 1) < batch:
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if max_batch(dep, mid) >= batch:
            lo = mid
        else:
            hi = mid - 1
    return lo
