"""Steady state of continuous batching with chunked prefill: the one place its arithmetic lives.

D sequences decode. Each request needs I prompt tokens and O − 1 decode steps after the prefill that
yields its first token; decode step j of a request sees I + j − 1 cached tokens, so over its life a
request decodes at the mean context

    c̄ = I + (O − 2)/2.

Requests complete at D/(O − 1) per step, and to keep D constant the engine prefills that many new
prompts, P = D·I/(O − 1) prompt tokens per step, mixed into the decode step (chunked prefill,
SARATHI-style; Agrawal et al., OSDI 2024). A step therefore runs T = D + P tokens for
S = D + D/(O − 1) sequences, and the requests in flight (decoding + prefilling) are

    C = D·(1 + 1/(O − 1)).

Caps on D (``caps``), per replica (with attention data parallelism a replica is ``groups`` attention
groups, each with its own KV cache and token budget):
- KV cache: every sequence in flight holds H tokens of KV, H = I + O (``kv_reservation: max``,
  TensorRT-LLM's guaranteed-no-evict scheduler reserves prompt + max new tokens) or I + O/2
  (``average``, engines that allocate on demand), rounded up to whole blocks; with K bytes per GPU
  for the cache and k(H) bytes per sequence on its GPU, groups·K/k(H) sequences fit: D ≤ that / (1 + 1/(O − 1));
- token budget B per step and attention group: D·(1 + I/(O − 1)) ≤ B·groups;
- decode-only steps (a disaggregated decode pool): C = D, T = D, D ≤ groups·K/k(H) and D ≤ B·groups.
"""
from __future__ import annotations

import numpy as np

from ..memory import kv_bytes_per_gpu, kv_capacity_bytes
from ..step import StepLoad, uniform


def mean_context(input_len: float, output_len: float) -> float:
    """c̄ = I + (O − 2)/2: the mean cached tokens of a request's decode steps."""
    return input_len + (output_len - 2) / 2


def prompts_per_decode(output_len: float) -> float:
    """New prompts per decoding sequence per step: 1/(O − 1)."""
    return 1.0 / (output_len - 1)


def concurrency(decode, output_len: float):
    """Requests in flight, C = D·(1 + 1/(O − 1))."""
    return decode * (1 + prompts_per_decode(output_len))


def load(m, decode, input_len: float, output_len: float, decode_only: bool = False) -> StepLoad:
    """The steady-state step at D = ``decode`` (arrays allowed): D decodes at c̄ plus D/(O − 1) prompts
    of I tokens (none in a decode-only pool)."""
    prompts = 0.0 if decode_only else np.asarray(decode, dtype=float) * prompts_per_decode(output_len)
    return uniform(m, decode=decode, context=mean_context(input_len, output_len), prompts=prompts,
                   new=0.0 if decode_only else input_len)


def held_tokens(input_len: float, output_len: float, policy: str, block: int) -> float:
    """KV tokens a sequence in flight holds against the capacity, rounded up to whole blocks."""
    if policy not in ("max", "average"):
        raise ValueError(f"kv_reservation={policy!r} unknown; allowed: max, average")
    held = input_len + output_len if policy == "max" else input_len + output_len / 2
    return float(np.ceil(held / block) * block)


def kv_sequences(dep, input_len: float, output_len: float, budget: int, policy: str, block: int,
                 kv_fraction: float | None = None) -> tuple[float, float, float]:
    """(sequences the replica's KV cache holds, KV capacity bytes per GPU, KV bytes per sequence on its GPU)."""
    groups = dep.par.attention_groups
    held = held_tokens(input_len, output_len, policy, block)
    kv_seq = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, held)) * groups  # one sequence, its GPU
    capacity = kv_capacity_bytes(dep.model, dep.gpu, dep.dtypes, dep.par, budget, kv_fraction)
    seqs = groups * capacity / kv_seq if kv_seq > 0 else np.inf
    return seqs, capacity, kv_seq


def caps(dep, input_len: float, output_len: float, budget: int, policy: str, block: int,
         decode_only: bool = False, kv_fraction: float | None = None) -> tuple[dict, float, float]:
    """({cap: largest decode batch D}, KV capacity bytes per GPU, KV bytes per sequence) (module docstring)."""
    groups = dep.par.attention_groups
    seqs, capacity, kv_seq = kv_sequences(dep, input_len, output_len, budget, policy, block, kv_fraction)
    seqs = min(seqs, 1e9)
    if decode_only:
        return {"kv-cache": int(seqs), "token budget": int(budget * groups)}, capacity, kv_seq
    per_prompt = input_len * prompts_per_decode(output_len)
    return ({"kv-cache": int(seqs / (1 + prompts_per_decode(output_len))),
             "token budget": int(budget // (1 + per_prompt)) * groups}, capacity, kv_seq)
