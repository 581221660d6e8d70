"""Prefix caching: the prompt tokens whose KV is already cached are not prefilled again, and what a hit still costs.

An engine with automatic prefix caching (vLLM APC, SGLang RadixAttention, TensorRT-LLM block reuse)
keys KV blocks by the tokens they hold; a new prompt whose first P tokens match cached blocks computes
only the rest. A prompt of I tokens with P cached:

    prefill work   I − P new tokens (the chunks of the step contract, the token budget)
    attention      the new tokens still read all P cached ones (past = P: the chunk's pairs and reads;
                   the suffix's queries attend to the whole prefix)
    host work      every full block of the prompt hashed and looked up, ⌊I/b⌋·t_block seconds
                   (``lookup_seconds``; data/features.yaml prefix.lookup_s_per_block)
    first token    at the end of the chunk holding the prompt's last token

Hit tokens (``hit_tokens``) are whole blocks only: vLLM hashes full blocks (vllm/v1/core/kv_cache_utils.py
``hash_request_tokens``/``hash_block_tokens``: a trailing partial block has no hash) and caps a hit at
I − 1 tokens so the last one is computed for its logits (vllm/v1/core/kv_cache_manager.py
``get_computed_blocks``: max_cache_hit_length = prompt length − 1). The partial last block of the
prefix is recomputed:

    --prefix-hit-rate h        P = ⌊min(h·I, I − 1)/b⌋·b     (a stated share of every prompt)
    --shared-prefix-len S      P = ⌊min(S, I − 1)/b⌋·b       (a system prompt all requests share)

Hit rate from the workload (``--shared-prefix-len S --prefix-groups G``): requests pick one of G distinct
prefixes uniformly. Under KV pressure an LRU cache (vLLM's free-block queue, SGLang's radix-tree
eviction) keeps the prefixes that running requests reference and evicts the rest first, so at the
operating point (the pool full) a new request hits on the device when one of the C other requests in
flight in its attention group holds its prefix (``device_share``):

    s_dev = 1 − (1 − 1/G)^C          (G = 1: every request hits)

the R = G·s_dev referenced prefixes being resident. With a host KV tier (offload.py) evicted prefixes
stay in host memory, up to H = ⌊K_host/κ_P⌋ of them (κ_P a prefix's KV bytes per GPU), so a further

    s_host = min(G − R, H)/G

of requests hit in host memory and load the prefix over the host link instead of recomputing it
(``host_share``). A hit share s makes the mean cached tokens s·P (Features, workloads/features.py).

A shared prefix with G = 1 is held once per attention group, not per sequence (``shared_held_tokens``,
``pool_tokens``); a bare hit rate, or G > 1, is counted per sequence (which prompts share what is not
stated, so the held KV is not reduced).

The simulator (sim/prefix.py) honours prefixes per request: a hit needs the prefix's blocks resident,
which they are while a running request uses them and until memory pressure evicts them (LRU).
"""
from __future__ import annotations

import numpy as np

from ..base.datafiles import data_yaml


def active(rt) -> bool:
    """Whether the runtime states prefix hits (prefix caching on, a hit rate or a shared prefix)."""
    return bool(getattr(rt, "prefix_caching", False)) and bool(getattr(rt, "prefix_hit_rate", 0.0)
                                                               or getattr(rt, "shared_prefix_len", 0))


def groups(rt) -> int:
    """G: distinct shared prefixes the requests pick from (1 unless --prefix-groups says more)."""
    return int(getattr(rt, "prefix_groups", 1) or 1)


def whole_blocks(tokens, block_size: int):
    """⌊tokens/b⌋·b: the tokens of whole blocks (arrays allowed)."""
    return np.floor(np.asarray(tokens, dtype=float) / block_size) * block_size


def hit_tokens(rt, input_len):
    """P of a hit: cached tokens of a prompt of ``input_len`` tokens, whole blocks, at most I − 1 (module
    docstring); 0 without prefix hits."""
    i = np.asarray(input_len, dtype=float)
    if not active(rt):
        return np.zeros_like(i)
    want = rt.shared_prefix_len if rt.shared_prefix_len else rt.prefix_hit_rate * i
    return np.clip(whole_blocks(np.minimum(want, i - 1), rt.block_size), 0.0, None)


def check_shared_prefix(rt, input_len) -> None:
    """Refuse a shared prefix longer than a fixed prompt: S (--shared-prefix-len) is a system prompt inside
    every request's prompt, so a prompt of I tokens holds at most S = I of it (that prompt hits
    ⌊(I − 1)/b⌋·b, ``hit_tokens``); S > I cannot be, and is a one-line ValueError naming the field. Lengths
    that vary are not checked: a class shorter than S hits ⌊(I_c − 1)/b⌋·b (docs/features/prefix-caching.md)."""
    s = int(getattr(rt, "shared_prefix_len", 0) or 0)
    if input_len is None or not s or s <= int(input_len):
        return
    raise ValueError(f"shared_prefix_len={s} exceeds input_len={int(input_len)}: the shared prefix is a system "
                     f"prompt inside every request's prompt; allowed: shared_prefix_len <= input_len "
                     f"({int(input_len)})")


def cached_tokens(rt, input_len):
    """P for a prompt that hits (``hit_tokens``); with G > 1 groups the share that hits is the steady
    state's (workloads/features.py scales it by device_share + host_share)."""
    return hit_tokens(rt, input_len)


def device_share(n_groups: int, others_in_flight) -> float:
    """s_dev = 1 − (1 − 1/G)^C: share of requests whose prefix another of the C requests in flight holds."""
    c = np.maximum(np.asarray(others_in_flight, dtype=float), 0.0)
    return 1.0 - (1.0 - 1.0 / max(int(n_groups), 1)) ** c


def host_share(n_groups: int, s_dev, host_prefixes) -> float:
    """s_host = min(G − R, H)/G, R = G·s_dev resident on the device, H prefixes in the host tier."""
    g = float(max(int(n_groups), 1))
    return np.minimum(g - g * np.asarray(s_dev, dtype=float), np.floor(max(float(host_prefixes), 0.0))) / g


def lookup_seconds(rt, input_len):
    """⌊I/b⌋·t_block: the host time hashing and looking up a prompt's full blocks (module docstring)."""
    if not getattr(rt, "prefix_caching", False):
        return np.zeros_like(np.asarray(input_len, dtype=float))
    t = float(data_yaml("features.yaml")["prefix"]["lookup_s_per_block"]["value"])
    return whole_blocks(input_len, rt.block_size) / rt.block_size * t


def shared_held_tokens(rt, input_len):
    """Tokens of a prompt held once per attention group rather than per sequence: the cached part of one
    shared prefix (0 for a bare hit rate or G > 1 groups)."""
    i = np.asarray(input_len, dtype=float)
    if not active(rt) or not rt.shared_prefix_len or groups(rt) > 1:
        return np.zeros_like(i)
    return hit_tokens(rt, i)


def pool_tokens(rt) -> float:
    """Tokens of the shared prefix each attention group holds once (whole blocks; 0 unless G = 1)."""
    if not active(rt) or not rt.shared_prefix_len or groups(rt) > 1:
        return 0.0
    return float(whole_blocks(rt.shared_prefix_len, rt.block_size))


def request_prefix(rt, input_len: int, index: int = 0) -> tuple[int, int]:
    """(prefix id, prefix length) the simulator gives its ``index``-th generated request: prefix 0 to
    ``shared_prefix_len`` tokens or to ⌊h·I⌋ tokens, or with G > 1 groups one of G ids drawn uniformly
    (``group_of``); (-1, 0) without prefix hits."""
    if not active(rt):
        return -1, 0
    if rt.shared_prefix_len:
        return group_of(index, groups(rt)), int(min(rt.shared_prefix_len, input_len))
    return 0, int(np.floor(rt.prefix_hit_rate * input_len))


def group_of(index: int, n_groups: int) -> int:
    """A uniform draw of one of ``n_groups`` ids for request ``index``, reproducible without a generator:
    SplitMix64's finalizer of the index (Steele et al., "Fast splittable pseudorandom number generators",
    OOPSLA 2014), scaled to [0, n_groups)."""
    if n_groups <= 1:
        return 0
    z = (int(index) * 0x9E3779B97F4A7C15 + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return int(((z ^ (z >> 31)) * n_groups) >> 64)
