"""The serving engines' rules that are functions of the hardware, not constants (profiles: engines.py).

- ``tier_value``: vLLM V1's ``max_num_batched_tokens`` / ``max_num_seqs`` tiers by device memory;
- ``sglang_mem_fraction``: SGLang's automatic ``mem_fraction_static`` by GPU memory and TP size (with
  its token budget, ``chunked_prefill_size``, and prefill CUDA-graph sizes);
- ``kv_cache_bytes``: KV capacity per GPU by ``kv_sizing.rule`` (M = device memory the engine sees,
  W = weights, A = peak activations of the profiling pass at the token budget, N = non-torch memory,
  G = CUDA graphs, f = the fraction):
    ``total_fraction``  (vLLM, ATOM):   KV = f*M - (W + A + N [+ G if graphs_in_fraction]) [- r*M, ATOM's
                                        2 % safety margin ``reserve_fraction``]
    ``static_fraction`` (SGLang):       KV = f*M - W            (A and G must fit in (1-f)*M)
    ``free_fraction``   (TensorRT-LLM): KV = f*(M - W - A - N - G)   (1.x counts graphs in the peak)
    ``static_max_len``  (gpt-fast, llama.cpp): KV preallocated for batch * max_seq_len
- ``sglang_max_running``: SGLang's running-request cap from its KV tokens and context length;
- ``cuda_graph_cap``: the largest decode batch the engine captures a CUDA graph for;
- ``trtllm_bench_limits``: trtllm-bench's max_batch_size / max_num_tokens heuristic.

Memory tiers compare the device total in GiB (2^30 B) because the engines do (vLLM ``70 * GiB_bytes``;
SGLang MiB from nvidia-smi, ``20 * 1024``); inputs and outputs are bytes. Every constant a rule reads
is a cited field of data/engines.yaml.
"""
import math
from typing import Optional

import numpy as np

from .engines import GIB, MIB, EngineProfile, SglangAuto, Tiered


def tier_value(tiered: Tiered, gpu_total_bytes, device_name: str = "", tp: int = 1):
    """The tier value for device memory ``gpu_total_bytes`` (scalar or numpy array)."""
    gib = np.asarray(gpu_total_bytes, dtype=float) / GIB
    pick = lambda t: t.value_tp4 if (t.value_tp4 is not None and tp >= 4) else t.value  # noqa: E731
    out = np.full(gib.shape, pick(tiered.tiers[0]), dtype=np.int64)
    for t in tiered.tiers[1:]:
        if any(s in device_name.lower() for s in t.exclude_names):
            continue
        out = np.where(gib >= t.min_total_gib, pick(t), out)
    return int(out) if out.ndim == 0 else out


def _prefill_graph_sizes(auto: SglangAuto, budget: int) -> int:
    n = 0
    for start, stop, step in auto.prefill_graph_ranges:
        end = budget if stop is None else min(stop, budget)
        n += len(range(start, end + 1, step)) if end >= start else 0
    return n


def sglang_mem_fraction(p: EngineProfile, gpu_total_bytes: float, tp: int, pp: int = 1) -> float:
    """SGLang's automatic mem_fraction_static for one GPU of ``gpu_total_bytes`` (speculative/DP-attention terms excluded)."""
    a = p.kv_sizing.auto
    if p.kv_sizing.rule != "static_fraction" or a is None:
        raise ValueError(f"engine={p.key!r} has no automatic memory fraction; allowed: sglang profiles")
    if a.kind == "tp_table":
        return next(f for min_tp, f in a.tp_table if tp >= min_tp)
    mib = gpu_total_bytes / MIB
    if a.kind == "reserve_gib_table":
        base, per_rank = next((b, r) for g, b, r in reversed(a.gib_table) if mib >= g * 1024)
        reserved = (base + tp * pp * per_rank) * 1024
    else:
        budget = tier_value(p.token_budget, gpu_total_bytes, tp=tp)
        bs = tier_value(p.cuda_graphs.max_batch, gpu_total_bytes, tp=tp)
        reserved = (a.base_mib + a.mib_per_prefill_token * max(budget, a.min_prefill_tokens)
                    + a.mib_per_decode_graph_bs * bs + a.mib_per_rank * tp * pp
                    + a.mib_per_prefill_graph * _prefill_graph_sizes(a, budget))
        if mib > a.floor_above_gib * 1024:
            reserved = max(reserved, a.floor_mib)
    return round((mib - reserved) / mib, 3)


def kv_cache_bytes(p: EngineProfile, gpu_total_bytes, weights_bytes, activation_bytes=0.0, non_torch_bytes=0.0,
                   graph_bytes=0.0, fraction: Optional[float] = None, tp: int = 1, pp: int = 1):
    """KV pool bytes per GPU by the profile's ``kv_sizing.rule`` (module docstring); numpy-friendly."""
    k = p.kv_sizing
    if k.rule == "static_max_len":
        raise ValueError(f"engine={p.key!r} preallocates KV for batch x max_seq_len; allowed: continuous-batching engines")
    if fraction is None:
        fraction = sglang_mem_fraction(p, gpu_total_bytes, tp, pp) if k.rule == "static_fraction" else k.fraction.value
    if k.rule == "static_fraction":
        return fraction * gpu_total_bytes - weights_bytes
    used = weights_bytes + activation_bytes + non_torch_bytes
    if k.rule == "free_fraction":
        return fraction * (gpu_total_bytes - used - graph_bytes)
    counted = graph_bytes if (k.graphs_in_fraction is not None and k.graphs_in_fraction.value) else 0.0
    reserve = k.reserve_fraction.value * gpu_total_bytes if k.reserve_fraction is not None else 0.0
    return fraction * gpu_total_bytes - used - counted - reserve


def sglang_max_running(p: EngineProfile, kv_tokens: int, context_len: int) -> int:
    """SGLang's automatic max_running_requests per (attention-DP) worker."""
    r = p.max_seqs_auto
    if r is None:
        raise ValueError(f"engine={p.key!r} has no automatic max_running_requests; allowed: sglang profiles")
    pool = max(min(int(kv_tokens / context_len * r.scale), r.hi), r.lo)
    return min(pool, int(kv_tokens * r.token_share))


def cuda_graph_cap(p: EngineProfile, gpu_total_bytes: float, tp: int, max_seqs: int, blackwell: bool = False) -> int:
    """Largest decode batch replayed from a CUDA graph; larger decode steps run eagerly (0: no graphs)."""
    g = p.cuda_graphs
    if g is None or g.mode.value == "none":
        return 0
    if g.cap_rule == "batch":
        return max_seqs
    if g.cap_rule == "tiers":
        return min(tier_value(g.max_batch, gpu_total_bytes, tp=tp), max_seqs)
    cap = (g.cap_blackwell if blackwell and g.cap_blackwell else g.cap).value
    if g.cap_rule == "twice_seqs_capped":
        return min(2 * max_seqs, cap)
    if g.cap_rule == "seqs_padded":
        return min(8 * math.ceil(max_seqs / 8) if max_seqs > 4 else max_seqs, cap)
    return cap


def trtllm_bench_limits(p: EngineProfile, kv_max_requests: float, input_len: float, output_len: float,
                        pp: int = 1) -> tuple[int, int]:
    """trtllm-bench's (max_batch_size, max_num_tokens) from the KV-bound request count (finetune_setting)."""
    b = p.trtllm_bench
    if b is None:
        raise ValueError(f"engine={p.key!r} has no trtllm-bench heuristic; allowed: trtllm profiles")
    raw_bs = min(kv_max_requests, b.bs_cap) / pp
    raw_tok = min(raw_bs * (1 + input_len / output_len), b.tokens_cap)
    return (_round_up(raw_bs, b.min_bs, ((256, 32), (1024, 128)), 256),
            _round_up(raw_tok, b.min_tokens, ((4096, 256), (8192, 512)), 1024))


def _round_up(x: float, floor: int, steps: tuple, top_step: int) -> int:
    """finetune_setting's rounding: up to a multiple of the step of the first (limit, step) with x < limit
    (``top_step`` past the last), at least ``floor`` in the first band."""
    for i, (limit, step) in enumerate(steps):
        if x < limit:
            v = step * math.ceil(x / step)
            return max(floor, v) if i == 0 else v
    return top_step * math.ceil(x / top_step)
