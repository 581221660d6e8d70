"""The attention kernels of one op on plain Python floats, constants bound once: the simulator's per-step path.

``kernel_pricing.attention_of`` prices a load in a namespace ``xp`` (numpy arrays, or loadattention.SCALAR
for floats); each call unpacks the op's constants, builds the decode kernel's (loadattention.
decode_constants) and runs the forms of loadattention.py through ``xp``'s functions. Here the same forms are
written out on floats once per op, every product in the order loadattention.py takes it (so the same
floats; tests/test_pricing_scalar_parity.py checks them against attention_of on numpy arrays to 1e-12):

    decode  (loadattention.decode_kernel):  d = max(D, 1e-12), L = P_d/d,
            u = max(min(1, d·H_kv·⌈L/256⌉/n_sat), 1e-12),  t_m = l_m + (P_d·c + d·H·(d_qk + d_v)·2)/(W·e_m·u),
            t_c = 2H·P_d·(d_qk + d_v)/(P·e_c),  kernel = d·(c_seq + c_head·H) + smooth_max(t_c, t_m, q)
    prefill (loadattention.prefill_part):   ctas = H·max(1, T_q/bq),  u = ctas/(max(soft_ceil(ctas/SMs), 1)·SMs),
            t_c = (2H·P_p·(d_qk + d_v) + ctas·2·bq·(d_qk + d_v)·s0)/(P·e_c·u),
            t_m = (T_q·H·(d_qk + d_v)·2 + T_q·H_kv·(d_qk + d_v)·(2 + c_el) + past·c)/(W·e_m),
            kernel = smooth_max(t_c, t_m, q)

with smooth_max(a, b, q) = h·((a/h)^q + (b/h)^q)^(1/q), h = max(a, b, 1e-30), the load split as
loadattention.split_load (D = min(S, T), T_q = max(T − D, 1), past = max(cached − P_d − T_q, 0)), each
kernel's seconds on its binding side (kernel_pricing.binding_side: compute when t_c >= t_m) and the
calibration factor f on every figure. No verify pass (extra query tokens): that stays attention_of's.
"""
from __future__ import annotations

import math

import numpy as np

from .kernels.loadattention import decode_constants


def _decode_kernel(consts: tuple):
    """``k(dec_pairs, tokens, sampled) -> (compute s, memory s, overhead s)`` of the decode kernel before the
    calibration factor, for dec_pairs > 0 (module docstring)."""
    (pd, peak_d, bw, h, hk, dq_d, dv_d, tb, mla) = consts[0]
    two_h, dqv, heads, hk_, n_sat, latency, bw_m, pe, per_seq, q, overhead = \
        decode_constants(pd, peak_d, bw, h, hk, dq_d, dv_d, mla)
    inv_q, ceil = 1.0 / q, math.ceil

    def kernel_of(dec_pairs: float, tokens: float, sampled: float):
        d = sampled if sampled < tokens else tokens  # min(S, T), as split_load
        if d < 1e-12:
            d = 1e-12
        r = d * hk_ * ceil(dec_pairs / d / 256.0) / n_sat
        u = 1.0 if r >= 1.0 else r  # min(1.0, r)
        if u < 1e-12:
            u = 1e-12
        t_m = latency + (dec_pairs * tb + d * heads * dqv * 2.0) / (bw_m * u)
        t_c = two_h * dec_pairs * dqv / pe
        hi = t_c if t_c >= t_m else t_m
        if hi < 1e-30:
            hi = 1e-30
        kernel = d * per_seq + hi * ((t_c / hi) ** q + (t_m / hi) ** q) ** inv_q
        return (kernel, 0.0, overhead) if t_c >= t_m else (0.0, kernel, overhead)
    return kernel_of


def decode_only(consts: tuple):
    """``f(dec_pairs, tokens, sampled) -> (compute s, memory s, overhead s)`` of a step without prefill pairs,
    ``consts`` from kernel_pricing.attention_consts (module docstring; attention_of's floats)."""
    kernel_of, f = _decode_kernel(consts), consts[2]

    def price(dec_pairs: float, tokens: float, sampled: float):
        if dec_pairs <= 0:
            return 0.0, 0.0, 0.0
        comp, mem, over = kernel_of(dec_pairs, tokens, sampled)
        return comp * f, mem * f, over * f
    return price


def mixed(consts: tuple):
    """``f(dec_pairs, pre_pairs, cached, tokens, sampled) -> (compute s, memory s, overhead s)`` of any step
    without verify queries, ``consts`` from kernel_pricing.attention_consts: the decode part (when there are
    decode pairs) plus the prefill part (when there are prefill pairs), summed before the factor f as
    attention_of sums them."""
    kernel_of = _decode_kernel(consts)
    _, (pp, peak_p, bw_p, sms, h_p, hk_p, dq_p, dv_p, tb_p, kv_elem, spread), f = consts[:3]
    bq, s0, q, over_p = pp["bq"], pp["s0"], pp["q"], pp["overhead_s"]
    dqv = dq_p + dv_p
    pe, bw_m, inv_q = peak_p * pp["e_c"], bw_p * pp["e_m"], 1.0 / q
    floor, ceil = math.floor, math.ceil

    def soft_ceil(x: float) -> float:  # loadattention.soft_ceil on a float
        if spread <= 0:
            return ceil(x)
        lo, hi = x * (1.0 - spread), x * (1.0 + spread)
        if not hi - lo > 1e-12:
            return ceil(x)
        n_lo, n_hi = floor(lo), floor(hi)
        f_lo = n_lo * (n_lo + 1.0) / 2.0 + (n_lo + 1.0) * (lo - n_lo)
        f_hi = n_hi * (n_hi + 1.0) / 2.0 + (n_hi + 1.0) * (hi - n_hi)
        return (f_hi - f_lo) / (hi - lo)  # hi − lo > 1e-12: max(hi − lo, 1e-12) is hi − lo

    def price(dec_pairs: float, pre_pairs: float, cached: float, tokens: float, sampled: float):
        if dec_pairs > 0:
            comp, mem, over = kernel_of(dec_pairs, tokens, sampled)
            dec = sampled if sampled < tokens else tokens
        else:
            comp = mem = over = dec = 0.0
        if pre_pairs <= 0:
            return comp * f, mem * f, over * f
        q_t = tokens - dec
        if q_t < 1.0:  # max(T − D, 1.0)
            q_t = 1.0
        past = cached - dec_pairs - q_t
        if past < 0.0:
            past = 0.0
        x = q_t / bq
        ctas = h_p * (x if x > 1.0 else 1.0)  # max(1.0, T_q/bq)
        w = soft_ceil(ctas / sms)
        u = ctas / ((w if w > 1.0 else 1.0) * sms)
        t_c = (2.0 * h_p * pre_pairs * dqv + ctas * 2.0 * bq * dqv * s0) / (pe * u)
        t_m = (q_t * h_p * dqv * 2.0 + q_t * hk_p * dqv * (2.0 + kv_elem) + past * tb_p) / bw_m
        hi = t_c if t_c >= t_m else t_m
        if hi < 1e-30:
            hi = 1e-30
        kernel = hi * ((t_c / hi) ** q + (t_m / hi) ** q) ** inv_q
        if t_c >= t_m:
            comp = comp + kernel
        else:
            mem = mem + kernel
        return comp * f, mem * f, (over + over_p) * f
    return price


def decode_only_array(consts: tuple, shortcut: bool = True):
    """:func:`decode_only` over an array of decode pairs (one run of decode-only steps: ``tokens`` and
    ``sampled`` fixed, every dec_pairs > 0): the same constants (decode_constants) and the same float
    operations in the same order, elementwise (numpy float64 + − × ÷, ceil and ``**`` give Python's floats;
    tests/test_decode_run_vector_parity.py), the comparisons as np.minimum/np.maximum (equal for non-NaN).
    Returns (compute s + memory s, overhead s): the kernel's seconds f·kernel on whichever side binds, the
    other side being 0.0 (x + 0.0 == x), as ScalarSteps._attended sums them."""
    (pd, peak_d, bw, h, hk, dq_d, dv_d, tb, mla) = consts[0]
    two_h, dqv, heads, hk_, n_sat, latency, bw_m, pe, per_seq, q, overhead = \
        decode_constants(pd, peak_d, bw, h, hk, dq_d, dv_d, mla)
    inv_q, f = 1.0 / q, consts[2]
    mx, mn = np.maximum, np.minimum
    # t_m >= latency: with latency >= 1e-30 the floor of h never applies, and the binding side's ratio is
    # x/x = 1.0, 1.0**q = 1.0 exactly: the sum is 1.0 + (other side/h)**q (addition commutes), one pow
    one_pow = latency >= 1e-30 and shortcut
    # and where that ratio r < 2^(−56/q), r**q < 2^−56 (pow within an ulp) and 1.0 + r**q rounds to 1.0,
    # 1.0**(1/q) = 1.0, h·1.0 = h: a run with every step's r below it needs no pow (low batches: memory-bound)
    tiny = 2.0 ** (-56.0 / q)

    def price(dec_pairs: np.ndarray, tokens: float, sampled: float):
        d = sampled if sampled < tokens else tokens
        if d < 1e-12:
            d = 1e-12
        u = mx(mn(d * hk_ * np.ceil(dec_pairs / d / 256.0) / n_sat, 1.0), 1e-12)
        t_m = latency + (dec_pairs * tb + d * heads * dqv * 2.0) / (bw_m * u)
        t_c = two_h * dec_pairs * dqv / pe
        if one_pow:
            hi = mx(t_c, t_m)
            r = mn(t_c, t_m) / hi
            if float(np.maximum.reduce(r)) < tiny:  # (``shortcut`` False: the pows always, for the test)
                kernel = d * per_seq + hi
            else:
                kernel = d * per_seq + hi * (1.0 + r ** q) ** inv_q
        else:
            hi = mx(mx(t_c, t_m), 1e-30)
            kernel = d * per_seq + hi * ((t_c / hi) ** q + (t_m / hi) ** q) ** inv_q
        return kernel * f, overhead * f
    return price
