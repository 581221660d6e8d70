"""Attention kernel time: prefill (flash / context) and paged decode (generation), MHA/GQA and MLA.

Prefill of B sequences of S new tokens, H query heads, H_kv KV heads, head dims d_qk (Q·K) and d_v
(P·V), causal, optionally windowed (W)::

    pairs = S(S+1)/2                 (window W < S: W(W+1)/2 + (S−W)·W)
    F     = 2·B·H·pairs·(d_qk + d_v)   (windowed: the kernel works whole KV tiles, so W + bq is used)
    ctas  = B·H·⌈S/bq⌉,  u = ctas / (⌈ctas/SMs⌉·SMs)          (wave utilization of the query tiles)
    t_c   = (F + ctas·2·bq·(d_qk + d_v)·s0) / (P·e_c·u)       (s0: per-tile fixed cost in key rows)
    bytes = B·S·H·(d_qk + d_v)·a + B·S·H_kv·(d_qk + d_v)·(a + c)   (Q, O; K, V in and the cache write)
    t     = o + (t_c^q + (bytes/(W·e_m))^q)^(1/q)

Decode of B sequences with L cached tokens each (L = min(ctx, W) + 1 incl. the new token)::

    bytes = B·L·H_kv·(d_qk + d_v)·c + B·H·(d_qk + d_v)·2     (paged K/V read; q in, o out)
            MLA (absorbed, latent cache shared by all heads): B·L·d_qk·c + B·H·(d_qk + d_v)·2
    F     = 2·B·H·L·(d_qk + d_v)
    u     = min(1, B·H_kv·⌈L/256⌉ / n_sat)          (split-KV work items over those that saturate HBM)
    t     = o + B·(c_seq + c_head·H) + (t_c^q + (l_m + bytes/(W·e_m·u))^q)^(1/q),  t_c = F/(P·e_c)

c is the KV-cache element size, a the activation size (2 bytes), c_seq and c_head the per-sequence and
per-head work of the decode kernel (RoPE, cache append, softmax bookkeeping). Fitted per GPU and
attention dtype (prefill) or KV-cache dtype (decode) to measured TensorRT-LLM attention latencies
(benchmarks/fit_kernels.py). Broadcasts over numpy arrays.
"""
from __future__ import annotations

import numpy as np

from .gemm import smooth_max


def causal_pairs(seq, window=0):
    """Query-key pairs of one head of one causal sequence of ``seq`` tokens (sliding window if > 0)."""
    s = np.asarray(seq, dtype=float)
    w = np.asarray(window, dtype=float)
    full = s * (s + 1) / 2
    win = w * (w + 1) / 2 + (s - w) * w
    return np.where((w > 0) & (w < s), win, full)


def prefill_time(p: dict, sms: int, peak: float, hbm_bw: float, seq, batch, heads, kv_heads, d_qk,
                 d_v=None, kv_bytes=2.0, window=0):
    """Seconds for one prefill attention call (module docstring)."""
    s, b, h, hk, dq = (np.asarray(x, dtype=float) for x in (seq, batch, heads, kv_heads, d_qk))
    dv = dq if d_v is None else np.asarray(d_v, dtype=float)
    w = np.asarray(window, dtype=float)
    flops = 2.0 * b * h * causal_pairs(s, np.where(w > 0, w + p["bq"], 0.0)) * (dq + dv)
    ctas = b * h * np.ceil(s / p["bq"])
    u = ctas / (np.ceil(ctas / sms) * sms)
    t_c = (flops + ctas * 2.0 * p["bq"] * (dq + dv) * p["s0"]) / (peak * p["e_c"] * u)
    nbytes = b * s * h * (dq + dv) * 2.0 + b * s * hk * (dq + dv) * (2.0 + kv_bytes)
    return p["overhead_s"] + smooth_max(t_c, nbytes / (hbm_bw * p["e_m"]), p["q"])


def prefill_flops(seq, batch, heads, d_qk, d_v=None, window=0):
    """FLOPs of causal prefill attention: 2·B·H·pairs·(d_qk + d_v)."""
    dv = d_qk if d_v is None else d_v
    return 2.0 * np.asarray(batch, dtype=float) * heads * causal_pairs(seq, window) * (np.asarray(d_qk) + dv)


def decode_bytes(ctx, batch, heads, kv_heads, d_qk, d_v, kv_bytes, window=0, latent=False):
    """HBM bytes of one decode attention call (paged K/V or MLA latent read, q in, o out)."""
    c, b = np.asarray(ctx, dtype=float), np.asarray(batch, dtype=float)
    w = np.asarray(window, dtype=float)
    ell = np.where(w > 0, np.minimum(c, w), c) + 1.0
    per_tok = np.asarray(d_qk, dtype=float) if latent else np.asarray(kv_heads, dtype=float) * (d_qk + d_v)
    return b * ell * per_tok * kv_bytes + b * heads * (np.asarray(d_qk) + d_v) * 2.0, ell


def decode_time(p: dict, sms: int, peak: float, hbm_bw: float, ctx, batch, heads, kv_heads, d_qk,
                d_v=None, kv_bytes=2.0, window=0, latent=False):
    """Seconds for one decode (generation) attention call (module docstring)."""
    dv = d_qk if d_v is None else d_v
    b, h = np.asarray(batch, dtype=float), np.asarray(heads, dtype=float)
    nbytes, ell = decode_bytes(ctx, b, h, kv_heads, d_qk, dv, kv_bytes, window, latent)
    hk = 1.0 if latent else np.asarray(kv_heads, dtype=float)
    u = np.minimum(1.0, b * hk * np.ceil(ell / 256.0) / p["n_sat"])
    t_m = p["mem_latency_s"] + nbytes / (hbm_bw * p["e_m"] * u)
    t_c = 2.0 * b * h * ell * (np.asarray(d_qk) + dv) / (peak * p["e_c"])
    return p["overhead_s"] + b * (p["c_seq"] + p["c_head"] * h) + smooth_max(t_c, t_m, p["q"])
