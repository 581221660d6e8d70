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

Engines that do not mix prefills into decode steps (``mixed_batches: false``: SGLang's prefill-first
scheduler, vLLM V0) run prefill steps of k prompts (k = B/I with chunked prefill, else ⌊B/I⌋) between
decode-only steps; per decode step they need D/((O − 1)·k) of them, so (``step_cost``)

    t(D) = t_decode(D at c̄) + D/((O − 1)·k) · t_prefill(k prompts of I),

FLOPs and bytes adding alike; users see one token per t(D) either way.

Caps on D (``caps``), per replica, from the engine's runtime (runtime.py; with attention data
parallelism a replica is ``groups`` attention groups, each with its own KV cache, token budget and
running-sequence cap):
- KV cache: every sequence in flight holds H tokens of KV, H = I + O (reservation ``max``:
  TensorRT-LLM's guaranteed-no-evict scheduler reserves prompt + max new tokens) or I + O/2
  (``current``: engines that allocate as sequences grow hold half the output on average), rounded up
  to whole blocks; with K bytes per GPU for the cache (the engine's rule) and k(H) bytes per sequence
  on its GPU, groups·K/k(H) sequences fit: D ≤ that / (1 + 1/(O − 1));
- token budget B per step and attention group: D·(1 + I/(O − 1)) ≤ B·groups;
- running sequences S per attention group: D·(1 + 1/(O − 1)) ≤ S·groups;
- decode-only steps (a disaggregated decode pool): C = D, T = D, D ≤ groups·K/k(H), D ≤ B·groups,
  D ≤ S·groups.
"""
from __future__ import annotations

import numpy as np

from ..memory import kv_bytes_per_gpu
from ..runtime import kv_capacity_bytes
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


def step_cost(sm, rt, decode, input_len: float, output_len: float, decode_only: bool = False):
    """(seconds, FLOPs per GPU, bytes per GPU, the priced decode-side step) of the steady state at D =
    ``decode`` (arrays allowed) through the tabulated step contract ``sm`` (module docstring)."""
    m = sm.dep.model
    if decode_only or rt.mixed_batches:
        cost = sm.price(load(m, decode, input_len, output_len, decode_only))
        return cost.time, cost.flops, cost.bytes, cost
    cost = sm.price(load(m, decode, input_len, output_len, decode_only=True))
    groups = sm.dep.par.attention_groups
    per_group = rt.token_budget / input_len if rt.chunked_prefill else float(max(1, rt.token_budget // input_len))
    if not rt.chunked_prefill and input_len > rt.token_budget:
        raise ValueError(f"input_len={input_len} exceeds the token budget {rt.token_budget} of {rt.label} without "
                         f"chunked prefill; allowed: input_len <= token_budget, or enable chunked prefill")
    k = per_group * groups
    pre = sm.price(uniform(m, prompts=k, new=input_len))
    r = np.asarray(decode, dtype=float) * prompts_per_decode(output_len) / k
    return cost.time + r * pre.time, cost.flops + r * pre.flops, cost.bytes + r * pre.bytes, cost


def held_tokens(input_len: float, output_len: float, reservation: str, block: int) -> float:
    """KV tokens a sequence in flight holds against the capacity, rounded up to whole blocks."""
    if reservation not in ("max", "current"):
        raise ValueError(f"kv_reservation={reservation!r} unknown; allowed: max, current")
    held = input_len + output_len if reservation == "max" else input_len + output_len / 2
    return float(np.ceil(held / block) * block)


def kv_sequences(dep, input_len: float, output_len: float, rt) -> tuple[float, float, float]:
    """(sequences the replica's KV cache holds, KV capacity bytes per GPU, KV bytes per sequence on its GPU)."""
    groups = dep.par.attention_groups
    held = held_tokens(input_len, output_len, rt.reservation, rt.block_size)
    kv_seq = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, held)) * groups  # one sequence, its GPU
    capacity = kv_capacity_bytes(dep, rt)
    seqs = groups * capacity / kv_seq if kv_seq > 0 else np.inf
    return seqs, capacity, kv_seq


def caps(dep, input_len: float, output_len: float, rt, decode_only: bool = False) -> tuple[dict, float, float]:
    """({cap: largest decode batch D}, KV capacity bytes per GPU, KV bytes per sequence) (module docstring)."""
    groups = dep.par.attention_groups
    seqs, capacity, kv_seq = kv_sequences(dep, input_len, output_len, rt)
    seqs = min(seqs, 1e9)
    running = rt.max_num_seqs * groups
    if decode_only:
        return ({"kv-cache": int(seqs), "token budget": int(rt.token_budget * groups), "max_num_seqs": int(running)},
                capacity, kv_seq)
    per_prompt = input_len * prompts_per_decode(output_len)
    held = 1 + prompts_per_decode(output_len)
    return ({"kv-cache": int(seqs / held), "token budget": int(rt.token_budget // (1 + per_prompt)) * groups,
             "max_num_seqs": int(running / held)}, capacity, kv_seq)
