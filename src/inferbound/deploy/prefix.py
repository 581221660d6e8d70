"""Prefix caching: the prompt tokens whose KV is already cached are not prefilled again.

An engine with automatic prefix caching (vLLM APC, SGLang RadixAttention, TensorRT-LLM block reuse)
keys KV blocks by the tokens they hold; a new prompt whose first P tokens match cached blocks computes
only the rest. A prompt of I tokens with P cached:

    prefill work   I − P new tokens (the chunks of the step contract, the token budget)
    attention      the new tokens still read all P cached ones (past = P: the chunk's pairs and reads)
    first token    at the end of the chunk holding the prompt's last token

Cached tokens per prompt (``cached_tokens``):

    --prefix-hit-rate h        P = min(h·I, I − 1)            (a stated share of every prompt)
    --shared-prefix-len S      P = min(⌊S/b⌋·b, I − 1)        (a system prompt all requests share; only
                                                               whole blocks of b tokens are cached)

At least one prompt token is always computed, for its logits (vLLM recomputes the last token of a full
hit). A shared prefix is also held once, not per sequence (``shared_held_tokens``): each attention
group keeps one copy of its ⌊S/b⌋·b tokens, and every sequence holds only its own I − P prompt tokens
and its output. A bare hit rate says nothing about which prompts share what, so its held KV is
counted per sequence (the cached blocks belong to other requests as much as to this one).

The simulator (sim/prefix.py) honours prefixes per request: a hit needs the prefix's blocks resident,
which they are while a running request uses them and until memory pressure evicts them (LRU).
"""
from __future__ import annotations

import numpy as np


def active(rt) -> bool:
    """Whether the runtime states prefix hits (prefix caching on, a hit rate or a shared prefix)."""
    return bool(getattr(rt, "prefix_caching", False)) and bool(getattr(rt, "prefix_hit_rate", 0.0)
                                                               or getattr(rt, "shared_prefix_len", 0))


def cached_tokens(rt, input_len):
    """P: cached tokens of a prompt of ``input_len`` tokens under the runtime (module docstring)."""
    i = np.asarray(input_len, dtype=float)
    if not active(rt):
        return np.zeros_like(i)
    if rt.shared_prefix_len:
        s = np.floor(rt.shared_prefix_len / rt.block_size) * rt.block_size
        return np.clip(np.minimum(s, i - 1), 0.0, None)
    return np.clip(np.minimum(rt.prefix_hit_rate * i, i - 1), 0.0, None)


def shared_held_tokens(rt, input_len):
    """Tokens of a prompt held once per attention group rather than per sequence: the cached part of a
    shared prefix (0 for a bare hit rate)."""
    i = np.asarray(input_len, dtype=float)
    if not active(rt) or not rt.shared_prefix_len:
        return np.zeros_like(i)
    return cached_tokens(rt, i)


def pool_tokens(rt) -> float:
    """Tokens of the shared prefix each attention group holds once (whole blocks)."""
    if not active(rt) or not rt.shared_prefix_len:
        return 0.0
    return float(np.floor(rt.shared_prefix_len / rt.block_size) * rt.block_size)


def request_prefix(rt, input_len: int) -> tuple[int, int]:
    """(prefix id, prefix length) the simulator gives a generated request: every request shares prefix 0,
    to ``shared_prefix_len`` tokens or to ⌊h·I⌋ tokens; (-1, 0) without prefix hits."""
    if not active(rt):
        return -1, 0
    if rt.shared_prefix_len:
        return 0, int(min(rt.shared_prefix_len, input_len))
    return 0, int(np.floor(rt.prefix_hit_rate * input_len))
