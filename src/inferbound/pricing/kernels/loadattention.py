"""Attention kernels priced from a step's sums (operators/attention.py), with the fitted curve forms.

A step's attention operator knows, per layer and GPU, the decode pairs Σ L_i (= cached tokens its D
decodes read), the prefill pairs, the cached tokens read by everything, the new tokens T and the
sampled sequences S. With D = min(S, T) when there are decodes (operators/attention.py) and the
attention.py forms (per-head dims d_qk, d_v; H query and H_kv KV heads per GPU; c cache bytes per
token of the layer on this GPU)::

    decode (one kernel for the D decodes, mean reads L = Σ L_i / D):
        bytes = Σ L_i·c + D·H·(d_qk + d_v)·2,    F = 2·H·Σ L_i·(d_qk + d_v)
        u     = min(1, D·H_kv·⌈L/256⌉ / n_sat)
        t     = o + D·(c_seq + c_head·H) + smooth_max(F/(P·e_c), l_m + bytes/(W·e_m·u), q)
    prefill (one kernel for the T_q = T − D query tokens of the chunks, pairs from the step's sums):
        F     = 2·H·pairs·(d_qk + d_v),   ctas = H·max(1, T_q/bq),   u = ctas/(⌈ctas/SMs⌉·SMs)
                (the wave count averaged over T_q·(1 ± spread), as the GEMMs': efficiency.gemm_spread)
        bytes = T_q·H·(d_qk + d_v)·2 + T_q·H_kv·(d_qk + d_v)·(2 + c_el) + past·c
        t     = o + smooth_max((F + ctas·2·bq·(d_qk + d_v)·s0)/(P·e_c·u), bytes/(W·e_m), q)

(a speculative verify pass, q query tokens per decode reading its KV once: :func:`verify_part`)

where past = cached − Σ L_i − T_q are the cached tokens the chunks read beyond their own, c_el the
cache element size. Per-sequence rounding of the query tiles (⌈S/bq⌉ per sequence) is not in the sums
and is left out. A part without work (no decode pairs, no prefill pairs) costs nothing. Each part
returns (t_compute, t_memory, kernel seconds t − o, o): the bound label is t_compute >= t_memory.

The formulas are written once over a small namespace ``xp`` so the same code prices numpy arrays
(``np``; a sweep) and plain floats (``SCALAR``; the simulator's scalar path, no numpy overhead).
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np


def _where(c, a, b):
    return a if c else b


# The few numpy functions the forms use, on Python floats (plain attributes: the cheapest lookup).
SCALAR = SimpleNamespace(minimum=min, maximum=max, ceil=math.ceil, floor=math.floor, where=_where)


def smooth_max(a, b, q, xp=np):
    """(a^q + b^q)^(1/q) (kernels.gemm.smooth_max) in the namespace ``xp``."""
    hi = xp.maximum(xp.maximum(a, b), 1e-30)
    return hi * ((a / hi) ** q + (b / hi) ** q) ** (1.0 / q)


def soft_ceil(x, spread: float, xp=np):
    """kernels.gemm.soft_ceil in the namespace ``xp``: ⌈x⌉ averaged over x·(1 ± spread)."""
    if spread <= 0:
        return xp.ceil(x)
    lo, hi = x * (1.0 - spread), x * (1.0 + spread)
    n_lo, n_hi = xp.floor(lo), xp.floor(hi)
    f_lo = n_lo * (n_lo + 1.0) / 2.0 + (n_lo + 1.0) * (lo - n_lo)
    f_hi = n_hi * (n_hi + 1.0) / 2.0 + (n_hi + 1.0) * (hi - n_hi)
    return xp.where(hi - lo > 1e-12, (f_hi - f_lo) / xp.maximum(hi - lo, 1e-12), xp.ceil(x))


def decode_part(p: dict, peak: float, bw: float, heads, kv_heads, d_qk, d_v, token_bytes, dec_pairs, decodes,
                latent: bool = False, xp=np):
    """(t_compute, t_memory, kernel seconds, fixed seconds) of the decode kernel (module docstring)."""
    return decode_kernel(decode_constants(p, peak, bw, heads, kv_heads, d_qk, d_v, latent), token_bytes, dec_pairs,
                         decodes, xp)


def decode_constants(p: dict, peak: float, bw: float, heads, kv_heads, d_qk, d_v, latent: bool = False) -> tuple:
    """What of the decode kernel's formula does not depend on the load, evaluated once (each product in
    the order :func:`decode_kernel` would take it, so the same floats)."""
    return (2.0 * heads, d_qk + d_v, heads, 1.0 if latent else kv_heads, p["n_sat"], p["mem_latency_s"],
            bw * p["e_m"], peak * p["e_c"], p["c_seq"] + p["c_head"] * heads, p["q"], p["overhead_s"])


def decode_kernel(c: tuple, token_bytes, dec_pairs, decodes, xp=np):
    """:func:`decode_part` from its :func:`decode_constants` ``c``."""
    two_h, dqv, heads, hk, n_sat, latency, bw_m, pe, per_seq, q, overhead = c
    has = dec_pairs > 0
    d = xp.maximum(decodes, 1e-12)
    ell = dec_pairs / d
    nbytes = dec_pairs * token_bytes + d * heads * dqv * 2.0
    u = xp.maximum(xp.minimum(1.0, d * hk * xp.ceil(ell / 256.0) / n_sat), 1e-12)
    t_m = latency + nbytes / (bw_m * u)
    t_c = two_h * dec_pairs * dqv / pe
    kernel = d * per_seq + smooth_max(t_c, t_m, q, xp)
    if has is True:  # one float load with work: nothing to mask
        return t_c, t_m, kernel, overhead
    return (xp.where(has, t_c, 0.0), xp.where(has, t_m, 0.0), xp.where(has, kernel, 0.0),
            xp.where(has, overhead, 0.0))


def prefill_part(p: dict, peak: float, bw: float, sms: int, heads, kv_heads, d_qk, d_v, token_bytes, kv_elem,
                 pre_pairs, q_tokens, past_tokens, xp=np, spread: float = 0.0):
    """(t_compute, t_memory, kernel seconds, fixed seconds) of the prefill kernel (module docstring);
    ``spread``: the wave count averaged over a relative jitter of the query tokens (soft_ceil)."""
    has = pre_pairs > 0
    flops = 2.0 * heads * pre_pairs * (d_qk + d_v)
    ctas = heads * xp.maximum(1.0, q_tokens / p["bq"])
    u = ctas / (xp.maximum(soft_ceil(ctas / sms, spread, xp), 1.0) * sms)
    t_c = (flops + ctas * 2.0 * p["bq"] * (d_qk + d_v) * p["s0"]) / (peak * p["e_c"] * u)
    nbytes = (q_tokens * heads * (d_qk + d_v) * 2.0 + q_tokens * kv_heads * (d_qk + d_v) * (2.0 + kv_elem)
              + past_tokens * token_bytes)
    t_m = nbytes / (bw * p["e_m"])
    kernel = smooth_max(t_c, t_m, p["q"], xp)
    if has is True:  # one float load with work: nothing to mask
        return t_c, t_m, kernel, p["overhead_s"]
    return (xp.where(has, t_c, 0.0), xp.where(has, t_m, 0.0), xp.where(has, kernel, 0.0),
            xp.where(has, p["overhead_s"], 0.0))


def split_load(dec_pairs, pre_pairs, cached, tokens, sampled, xp=np):
    """(D decodes, T_q prefill query tokens, past cached tokens the chunks read) of a step's sums."""
    dec = xp.where(dec_pairs > 0, xp.minimum(sampled, tokens), 0.0)
    q = xp.where(pre_pairs > 0, xp.maximum(tokens - dec, 1.0), 0.0)
    past = xp.maximum(cached - dec_pairs - q, 0.0)
    return dec, q, past


def verify_part(p: dict, peak: float, bw: float, heads, kv_heads, d_qk, d_v, token_bytes, dec_pairs, decodes,
                extra, full: bool, latent: bool = False, xp=np):
    """(t_compute, t_memory, kernel seconds, fixed seconds, reads) of the decode kernel run with q > 1 query
    tokens per sequence: a speculative verify pass (step/speculative.py), as the engines' decode kernels
    take it (FlashInfer / FlashAttention decode with q_len = k + 1 per request, the query tokens packed with
    the heads that share a KV head; FlashMLA's seq_len_q for MLA): every sequence's cached KV is read once
    for all its query tokens. D decodes, E extra query tokens (Q = D + E, q = Q/D), P decode pairs:

        reads R = P/q + D·(q − 1)/2   (full attention: P = Σ_{t=0}^{q−1} (L − t) = q·L − q(q − 1)/2 per
                                       sequence of L tokens; a window or chunk the sequence has passed: P/q;
                                       a step mixing q's, n-gram's m·D verifying: its mean q, within
                                       (q − 1)/2 tokens per sequence)
        bytes = R·c + Q·H·(d_qk + d_v)·2,   F = 2·H·P·(d_qk + d_v)
        u     = min(1, D·H_kv·⌈(R/D)/256⌉ / n_sat)
        t     = o + D·(c_seq + c_head·H) + smooth_max(F/(P·e_c), l_m + bytes/(W·e_m·u), q)

    the decode kernel's fitted curve (the same constants as :func:`decode_part`); E = 0 is decode_part.
    ``reads`` (R) is returned for the prefill part's past tokens (split_load)."""
    two_h, dqv, h, hk, n_sat, latency, bw_m, pe, per_seq, qexp, overhead = decode_constants(
        p, peak, bw, heads, kv_heads, d_qk, d_v, latent)
    d = xp.maximum(decodes, 1e-12)
    q = 1.0 + extra / d
    reads = dec_pairs / q + (d * (q - 1.0) / 2.0 if full else 0.0)
    nbytes = reads * token_bytes + (d + extra) * h * dqv * 2.0
    u = xp.maximum(xp.minimum(1.0, d * hk * xp.ceil(reads / d / 256.0) / n_sat), 1e-12)
    t_m = latency + nbytes / (bw_m * u)
    t_c = two_h * dec_pairs * dqv / pe
    kernel = d * per_seq + smooth_max(t_c, t_m, qexp, xp)
    has = dec_pairs > 0
    if has is True:
        return t_c, t_m, kernel, overhead, reads
    return (xp.where(has, t_c, 0.0), xp.where(has, t_m, 0.0), xp.where(has, kernel, 0.0),
            xp.where(has, overhead, 0.0), xp.where(has, reads, 0.0))
