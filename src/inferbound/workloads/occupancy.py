"""What a length mix keeps in flight: prompts per decoding sequence, class shares, concurrency, and the KV
a decoding sequence holds against the engine's KV allocation.

    p = 1 / Σ w_c (O_c − 1)          new prompts per decoding sequence per step
    s_c ∝ w_c (O_c − 1)              the share of decoding sequences in class c
    C = D·(1 + τ·p)                  requests in flight at D decoding sequences (τ: speculative decoding)
    held = I + O (reservation max) or I + O/2 (current), rounded up to whole blocks

``kv_per_decoder`` counts each decoding sequence with the prefilling ones that come with it.
"""
from __future__ import annotations

import numpy as np

from ..deploy import prefix
from ..deploy.memory import kv_bytes_per_gpu, sequence_kv_bytes
from ..deploy.runtime import kv_capacity_bytes
from ..deploy.speculative import spec_of
from .lengths import Mix, fixed


def as_mix(input_len, output_len=None) -> Mix:
    """A Mix from a Mix or from fixed lengths."""
    return input_len if isinstance(input_len, Mix) else fixed(input_len, output_len)


def mean_context(input_len: float, output_len: float) -> float:
    """c̄ = I + (O − 2)/2: the mean cached tokens of a request's decode steps."""
    return input_len + (output_len - 2) / 2


def prompts_per_decode(mix: Mix | float) -> float:
    """New prompts per decoding sequence per step: p = 1 / Σ w (O − 1) (fixed lengths: 1/(O − 1))."""
    if not isinstance(mix, Mix):
        return 1.0 / (mix - 1)
    w, _, o = mix.arrays()
    return 1.0 / float(np.dot(w, o - 1))


def decode_shares(mix: Mix) -> np.ndarray:
    """s_c: the share of decoding sequences in class c, ∝ w_c (O_c − 1)."""
    w, _, o = mix.arrays()
    x = w * (o - 1)
    return x / x.sum()


def concurrency(decode, mix: Mix | float, rt=None):
    """Requests in flight, C = D·(1 + τ·p) (τ = 1 without speculative decoding)."""
    tau = 1.0 if rt is None else _tau(rt)
    return decode * (1 + tau * prompts_per_decode(mix))


def _tau(rt) -> float:
    s = spec_of(rt)
    return 1.0 if s is None else s.tau


def held_tokens(input_len: float, output_len: float, reservation: str, block: int) -> float:
    """KV tokens a sequence in flight holds against the capacity, rounded up to whole blocks."""
    if reservation not in ("max", "current"):
        raise ValueError(f"kv_reservation={reservation!r} unknown; allowed: max, current")
    held = input_len + output_len if reservation == "max" else input_len + output_len / 2
    return float(np.ceil(held / block) * block)


def kv_per_decoder(dep, mix: Mix, rt, decode_only: bool = False) -> tuple[float, float]:
    """(KV bytes on its GPU per decoding sequence, counting the prefilling ones that come with it;
    the KV capacity bytes per GPU left for sequences: the engine's allocation less one copy of a shared
    prefix per attention group). Speculative decoding adds k slots and the draft's KV per sequence
    (memory.sequence_kv_bytes); a shared prefix is not held per sequence (prefix.py)."""
    groups = dep.par.attention_groups
    p = 0.0 if decode_only else prompts_per_decode(mix) * _tau(rt)
    shared = np.atleast_1d(prefix.shared_held_tokens(rt, np.asarray(mix.inputs, dtype=float)))
    per = 0.0
    for s, w, i, o, sh in zip(decode_shares(mix), mix.weights, mix.inputs, mix.outputs, shared):
        held = held_tokens(i - sh, o, rt.reservation, rt.block_size)
        per += (s + p * w) * float(sequence_kv_bytes(dep, 1, held, rt)) * groups
    pool = prefix.pool_tokens(rt)
    capacity = kv_capacity_bytes(dep, rt)
    if pool:
        capacity -= float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, groups, pool))
    return per, capacity


def kv_sequences(dep, input_len, output_len, rt) -> tuple[float, float, float]:
    """(sequences in flight the replica's KV cache holds, KV capacity bytes per GPU, KV bytes per
    sequence in flight on its GPU)."""
    mix = as_mix(input_len, output_len)
    per_decoder, capacity = kv_per_decoder(dep, mix, rt)
    kv_seq = per_decoder / (1 + prompts_per_decode(mix))
    seqs = dep.par.attention_groups * capacity / kv_seq if kv_seq > 0 else np.inf
    return seqs, capacity, kv_seq
