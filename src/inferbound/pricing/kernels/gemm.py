"""GEMM kernel time from the shape of the work: wave quantization, weight streaming, a rounded roofline.

A GEMM C[M,N] = A[M,K]·B[K,N] (M tokens, B the weight) on a GPU with S SMs, dense peak P at the
kernel's dtype and peak HBM bandwidth W (datasheet figures from the catalog). The kernel cuts C into
output tiles of tm×tn; one SM works one tile at a time at P·e_c·f/S, where

    f = min(1, (tm·tn/(tm+tn)) / r)

is the tile's operand-feed efficiency: a tm×tn tile reads tm+tn operand rows per k-step for 2·tm·tn
FLOPs, and below the intensity r the shared-memory/L2 feed, not the tensor cores, sets the pace. When
there are fewer tiles than SMs the kernel may split K (split-K / stream-K) into
s = clip(⌊S/tiles⌋, 1, ⌊K/k_min⌋) slices (k_min = null: the kernel never splits). For a candidate tile
and G equal groups (G = 1 dense; G = active experts of a grouped MoE GEMM, M tokens each)::

    tiles = G·⌈M/tm⌉·⌈N/tn⌉,   waves = ⌈tiles·s / S⌉
    t_c   = waves · 2·tm·tn·(⌈K/s⌉ + k_fill) / (P·e_c·f/S)     (the library picks the fastest tile)
    bytes = G·(M·K·a + N·K·w + M·N·c)
    t_m   = l_m + bytes / (W·e_m)
    t_q   = G·M·K·b_q / (W·e_m)       (on-the-fly activation quantization: its own kernel(s), not overlapped)
    t     = o + (t_c^q + t_m^q)^(1/q) + t_q

k_fill is the pipeline fill/drain of one tile in K-steps (prologue, epilogue), l_m the DRAM latency
ramp of a streaming kernel, o the fixed launch + tail cost, b_q the bytes-equivalent per activation
element of the quantization pass of dtypes that quantize activations at run time (fp8 per-tensor
dynamic, fp8 block, NVFP4, W8A8; b_q = 3 would be one bf16 read and one fp8 write; amax reductions,
scale swizzles and extra launches make it larger; 0 for the others). A large GEMM thus runs at e_c times its
padding and wave-tail losses, a small-M GEMM streams its weights at e_m, and the knee between the two
is rounded by q (q → ∞ is the plain roofline max; measured kernels sit below both roofs near the
ridge). a, w, c are bytes per element of activations, weights (scales included) and output.
Candidate tiles: tm ∈ {tm_min, 2·tm_min, …, 256}, tn ∈ {tn_min, …, 256} (tn_min = 32 unless given).

e_c, e_m, o, l_m, r, q, k_fill, b_q (continuous) and tm_min, k_min (structural, grid-searched) are fitted
per GPU and kernel dtype to measured kernel latencies (benchmarks/fit_kernels.py -> data/kernels.yaml).
References: wave and tile quantization, NVIDIA "Matrix Multiplication Background User's Guide"
(https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/);
stream-K, Osama et al., PPoPP 2023 (https://arxiv.org/abs/2301.03598).

Everything broadcasts over numpy arrays of M, N, K and G.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

def _doublings(lo: float) -> list[float]:
    out = [float(lo)]
    while out[-1] * 2 <= 256:
        out.append(out[-1] * 2)
    return out


@lru_cache(maxsize=64)
def candidate_tiles(tm_min: float, tn_min: float = 32.0):
    """(tm, tn) arrays of the candidate output tiles: powers of two from tm_min (tn_min) up to 256."""
    tm, tn = np.meshgrid(np.array(_doublings(tm_min)), np.array(_doublings(tn_min)), indexing="ij")
    tm, tn = tm.ravel(), tn.ravel()
    tm.flags.writeable = tn.flags.writeable = False   # cached: shared by every caller
    return tm, tn


def soft_ceil(x, spread: float):
    """E[⌈x·(1 + u)⌉] for u uniform on [−spread, spread]: ⌈x⌉ averaged over a relative jitter of x.

    With F(y) = ∫₀^y ⌈t⌉ dt = n(n+1)/2 + (n+1)(y − n) = (n+1)(y − n/2), n = ⌊y⌋, the mean is
    (F(x(1+ε)) − F(x(1−ε))) / (2εx); ε = 0 (or x = 0) is ⌈x⌉ itself.
    """
    x = np.asarray(x, dtype=float)
    if spread <= 0:
        return np.ceil(x)
    lo, hi = x * (1.0 - spread), x * (1.0 + spread)
    width = hi - lo
    if x.ndim == 0:
        n_lo, n_hi = np.floor(lo), np.floor(hi)
        num = (n_hi + 1.0) * (hi - 0.5 * n_hi) - (n_lo + 1.0) * (lo - 0.5 * n_lo)
        return num / width if width > 1e-12 else np.ceil(x)
    # arrays (a fine-grid table: tiles x GEMMs x token counts): the same operations, in place
    n = np.floor(hi)
    a = np.multiply(0.5, n)
    np.subtract(hi, a, out=a)
    n += 1.0
    a *= n                        # (n_hi + 1)(hi − n_hi/2)
    np.floor(lo, out=n)
    b = np.multiply(0.5, n, out=hi)
    np.subtract(lo, b, out=b)
    n += 1.0
    b *= n                        # (n_lo + 1)(lo − n_lo/2)
    a -= b
    ok = width > 1e-12
    if ok.all():
        return np.divide(a, width, out=a)
    np.divide(a, width, out=a, where=ok)
    bad = ~ok
    a[bad] = np.ceil(x[bad])
    return a


@lru_cache(maxsize=256)
def _tile_constants(tm_min: float, tn_min: float, tile_r, peak, e_c, sms):
    """What :func:`compute_time` needs of one curve on one GPU that does not depend on the GEMM's shape:
    the candidate tiles (tm, tn), the distinct tm with the inverse index back to the candidates, and each
    candidate's per-SM rate P·e_c·f/S (f: the tile's feed efficiency, module docstring). Read-only."""
    tm, tn = candidate_tiles(tm_min, tn_min)
    utm, inv = np.unique(tm, return_inverse=True)
    feed = np.minimum(1.0, (tm * tn / (tm + tn)) / tile_r)
    per_sm = peak * e_c * feed / sms
    for a in (utm, inv, per_sm):
        a.flags.writeable = False
    return tm, tn, utm, inv, per_sm


def compute_time(p: dict, sms: int, peak: float, m, n, k, groups=1, spread: float = 0.0):
    """Tensor-core time (s) with the fastest candidate tile; broadcasts over m, n, k, groups.

    ``spread`` > 0 averages the row-tile count ⌈M/tm⌉ and the wave count over a relative jitter of M
    (``soft_ceil``): the expected time of GEMMs whose M varies by ±spread around the given one."""
    m, n, k, g = (np.asarray(x, dtype=float) for x in (m, n, k, groups))
    tm, tn, utm, inv, per_sm = _tile_constants(float(p["tm_min"]), float(p.get("tn_min", 32.0)), p["tile_r"], peak,
                                               p["e_c"], sms)
    shape = np.broadcast(m, n, k, g).shape
    exp = (slice(None),) + (None,) * len(shape)
    tm, tn, per_sm = tm[exp], tn[exp], per_sm[exp]
    # the row-tile count depends on tm only: averaged once per distinct tm, then spread over the tn candidates
    rows = soft_ceil(m / utm.reshape((-1,) + (1,) * len(shape)), spread)[inv]
    tiles = g * rows * np.ceil(n / tn)
    if p.get("k_min") is None:
        s = 1.0
    else:
        s = np.maximum(tiles, 1.0)
        np.divide(sms, s, out=s)
        np.floor(s, out=s)
        s = _inplace(np.clip, s, 1.0, np.maximum(1.0, np.floor(k / p["k_min"])))
    waves = soft_ceil(_inplace(np.divide, tiles * s, sms), spread)
    fill = np.ceil(k / s)
    fill += p["k_fill"]
    # t = waves·2·tm·tn·(⌈K/s⌉ + k_fill)/per_sm, left to right, in place (the same roundings)
    for f, b in ((np.multiply, 2.0), (np.multiply, tm), (np.multiply, tn), (np.multiply, fill), (np.divide, per_sm)):
        waves = _inplace(f, waves, b)
    return waves.min(axis=0)


def _fits(shape: tuple, into: tuple) -> bool:
    """Whether an operand of ``shape`` broadcasts into ``into`` without growing it (np.broadcast_shapes
    (into, shape) == into, without its dispatch)."""
    if len(shape) > len(into):
        return False
    for d, e in zip(reversed(shape), reversed(into)):
        if d != 1 and d != e:
            return False
    return True


def _inplace(f, a, *rest):
    """f(a, *rest) written into ``a`` where the result has a's shape (no temporary), else a new array."""
    if not (isinstance(a, np.ndarray) and a.flags.writeable):
        return f(a, *rest)
    sa = a.shape
    for r in rest:   # each operand must broadcast into a's shape (plain numbers always do)
        if type(r) is not float and type(r) is not int and not _fits(np.shape(r), sa):
            return f(a, *rest)
    return f(a, *rest, out=a)


def _bytes(p: dict, m, n, k, groups):
    m, n, k, g = (np.asarray(x, dtype=float) for x in (m, n, k, groups))
    main = g * (m * k * p["a_bytes"] + n * k * p["w_bytes"] + m * n * p["out_bytes"])
    quant = g * m * k * p.get("quant_bytes", 0.0) if p.get("quant_act") else 0.0 * main
    return main, quant


def traffic_bytes(p: dict, m, n, k, groups=1):
    """HBM bytes (equivalent) of the GEMM: activations in, weights, output, plus the quantization pass."""
    main, quant = _bytes(p, m, n, k, groups)
    return main + quant


def smooth_max(a, b, q):
    """(a^q + b^q)^(1/q), computed stably; q → ∞ gives max(a, b)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    hi = np.maximum(np.maximum(a, b), 1e-30)
    return hi * ((a / hi) ** q + (b / hi) ** q) ** (1.0 / q)


def gemm_time(p: dict, sms: int, peak: float, hbm_bw: float, m, n, k, groups=1, spread: float = 0.0):
    """(t, t_compute, t_memory incl. the quantization pass) in seconds under parameters ``p`` (module doc);
    ``spread``: see compute_time."""
    t_c = compute_time(p, sms, peak, m, n, k, groups, spread)
    main, quant = _bytes(p, m, n, k, groups)
    t_m = p["mem_latency_s"] + main / (hbm_bw * p["e_m"])
    t_q = quant / (hbm_bw * p["e_m"])
    return p["overhead_s"] + smooth_max(t_c, t_m, p["q"]) + t_q, t_c, t_m + t_q


def roofline_fractions(flops, nbytes, t_kernel, t_c, t_m, peak: float, hbm_bw: float):
    """Effective (e_c, e_m) that make max(F/(P·e_c), B/(W·e_m)) equal the modelled kernel time.

    ``t_kernel`` excludes the fixed overhead. The binding side (t_c >= t_m: compute) gets the fraction
    that reproduces ``t_kernel``; the other side keeps its own roof, so the bound label is preserved.
    """
    flops, nbytes = np.asarray(flops, dtype=float), np.asarray(nbytes, dtype=float)
    t_kernel = np.maximum(np.asarray(t_kernel, dtype=float), 1e-30)
    cb = np.asarray(t_c) >= np.asarray(t_m)
    e_c = np.where(cb, flops / (peak * t_kernel), flops / (peak * np.maximum(t_c, 1e-30)))
    e_m = np.where(cb, nbytes / (hbm_bw * np.maximum(t_m, 1e-30)), nbytes / (hbm_bw * t_kernel))
    return np.clip(e_c, 1e-9, 1.0), np.clip(e_m, 1e-9, 1.0)
