"""The one rule that sizes an engine's KV cache per GPU.

With M the GPU's memory, W the weights per GPU (the target's and a speculative draft's), A the
activations of a profiling step at the token budget, N the non-torch reserve (data/runtime.yaml) and f
the engine's fraction (engine_rules.kv_cache_bytes):

    total_fraction (vLLM ``gpu_memory_utilization``):   KV = f·M − W − A − N
    static_fraction (SGLang ``mem_fraction_static``):    KV = f·M − W      (f automatic by GPU and TP)
    free_fraction (TensorRT-LLM ``kv_cache_free_gpu_memory_fraction``):  KV = f·(M − W − A − N)
    static_max_len (gpt-fast, llama.cpp: one static batch): KV = M − W − A − N

Every caller (memory fit and max batch, max throughput, search, the simulator's block pool) sizes the
cache with ``kv_capacity_bytes``; ``rt`` is a runtime.Runtime.
"""
from __future__ import annotations

import numpy as np

from ..base.datafiles import data_yaml
from .engine_rules import kv_cache_bytes
from .engines import EngineProfile, profile_of
from .memory_terms import activation_bytes, kv_bytes_per_gpu
from .speculative import drafter_of


def runtime_reserve_bytes() -> float:
    """Non-torch memory per GPU (CUDA context, library workspaces, NCCL buffers): data/runtime.yaml."""
    return float(data_yaml("runtime.yaml")["memory"]["runtime_reserve_bytes"])


def kv_token_bytes(dep) -> float:
    """KV bytes per GPU of one token of one sequence (memory_terms.kv_bytes_per_gpu), every attention group's."""
    return float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, dep.par.attention_groups, 1))


def kv_capacity_bytes(dep, rt, profile: EngineProfile | None = None, activations=None) -> float:
    """KV-cache bytes per GPU the engine allocates (module docstring); 0 when nothing is left."""
    p = profile or profile_of(rt.engine)
    w = dep.weight_bytes_per_gpu + draft_weight_bytes(dep, rt)
    a = activation_bytes(dep.model, dep.dtypes, dep.par, rt.token_budget, min(rt.max_num_seqs or rt.token_budget,
                                                                              rt.token_budget)) \
        if activations is None else activations
    n = runtime_reserve_bytes()
    if rt.kv_rule == "static_max_len":
        kv = dep.gpu.hbm_bytes - w - a - n
    else:
        kv = kv_cache_bytes(p, dep.gpu.hbm_bytes, w, a, n, fraction=rt.memory_fraction, tp=dep.par.tp,
                            pp=dep.par.pp)
    return float(np.maximum(kv, 0.0))


def draft_weight_bytes(dep, rt) -> float:
    """Weights per GPU of the runtime's speculative draft (speculative.Drafter), 0 without one: the engine
    loads them beside the target's, so the KV cache gets that much less."""
    dr = drafter_of(dep, rt)
    return 0.0 if dr is None else dr.weight_bytes_per_gpu()
