"""Shape-dependent kernel models fitted to measured kernel latencies (data/kernels.yaml).

The roofline t = max(F/(P·e_c), B/(W·e_m)) + o stays; e_c and e_m become functions of the shape of the
work instead of per-GPU scalars. Forms (each module's docstring gives the formula and its source):

- ``gemm``: dense GEMM (M tokens × N × K): wave quantization over the SM count and candidate tiles,
  split-K, weight streaming, a rounded roofline knee, a fixed per-kernel cost;
- ``moe``: fused MoE layer = two grouped GEMMs over the active experts + routing and permutation;
- ``attention``: prefill (causal flash / context) and paged decode; MLA prefill and absorbed decode;
- ``comm``: collectives as pipelined alpha-beta curves per (collective, algorithm, GPU count).

Parameters come from benchmarks/fit_kernels.py (aiconfigurator-core's measured tables; provenance in
the YAML header), per GPU × kernel class × engine (trtllm, vllm, sglang) × dtype. Unmeasured catalog
GPUs get priors (``curves.py``), flagged ``extrapolated``. Nothing here imports aiconfigurator or pyarrow.

Interface (arrays broadcast; a few numpy ops per call, so a search can price millions of shapes)::

    c = curves_for("h200_sxm")                       # KernelCurves | None
    gemm_time(c, "bf16", m, n, k)                    # seconds, overhead included
    gemm_efficiency(c, "bf16", m, n, k)              # (e_c, e_m): fractions of the datasheet peak at that
                                                     # dtype and of peak HBM such that
                                                     # max(F/(P·e_c), B/(W·e_m)) + gemm_overhead_s = time
    moe_time(c, "fp8_block", tokens, hidden, inter, topk, experts, tp, ep)
    grouped_gemm_efficiency(c, "fp8", tokens_per_expert, experts, n, k)
    attention_prefill_time / attention_prefill_efficiency(c, "bf16", seq_len, batch, heads, kv_heads, head_dim)
    attention_decode_time / attention_decode_bandwidth(c, kv_dtype, context, batch, heads, kv_heads, head_dim)
    mla_prefill_time, mla_decode_time / mla_decode_bandwidth(c, kv_dtype, context, batch, heads)
    collective_time(c, "all_reduce", nbytes, n, algorithm="nccl"); collective_alpha_beta(...)

``dtype`` is a kernel dtype (``KERNEL_DTYPES``): bf16 (fp16 uses it), fp8 (per-tensor scale, dynamic
activation quantization included), fp8_block (1×128 / 128×128 block scales), fp4 (NVFP4),
int8 (W8A8), int8_wo / int4_wo (weight-only), mxfp4_wo (W4A16 MXFP4), mxfp4_fp8, int4_fp8; byte
widths per element are in kernels.yaml ``dtypes``. ``engine`` picks the backend whose kernels were
measured (default trtllm; a missing engine falls back to trtllm). Each *_time already contains that
kernel's fixed costs: do not add a separate per-kernel overhead on top.
"""
from __future__ import annotations

import numpy as np

from . import attention as _att
from . import comm as _comm
from . import gemm as _gemm
from . import moe as _moe
from .curves import KernelCurves, available_gpus, curves_for, load_data

__all__ = ["KernelCurves", "curves_for", "available_gpus", "load_data", "kernel_dtype", "KERNEL_DTYPES",
           "gemm_time", "gemm_efficiency", "gemm_overhead_s", "grouped_gemm_efficiency", "moe_time",
           "attention_prefill_time", "attention_prefill_efficiency", "attention_decode_time",
           "attention_decode_bandwidth", "mla_prefill_time", "mla_decode_time", "mla_decode_bandwidth",
           "collective_time", "collective_alpha_beta"]

KERNEL_DTYPES = ("bf16", "fp16", "fp8", "fp8_block", "fp4", "int8", "int8_wo", "int4_wo", "mxfp4_wo",
                 "mxfp4_fp8", "int4_fp8")
#: DeepSeek MLA geometry of the measured tables: latent 512 + rope 64 (absorbed decode), qk 192 / v 128
MLA_DIMS = {"d_qk_prefill": 192.0, "d_v_prefill": 128.0, "d_latent": 576.0, "d_v_latent": 512.0}
_KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}


def kernel_dtype(weight_dtype: str, act_dtype: str, block_scaled: bool = False) -> str:
    """Kernel dtype of a GEMM from inferbound's (weight, activation) dtypes; ValueError if none fits."""
    if weight_dtype == act_dtype or (weight_dtype == "fp4" and act_dtype == "fp4"):
        if weight_dtype in ("bf16", "fp16"):
            return weight_dtype
        if weight_dtype == "fp8":
            return "fp8_block" if block_scaled else "fp8"
        if weight_dtype in ("fp4", "int8"):
            return weight_dtype
    if act_dtype in ("bf16", "fp16") and weight_dtype in ("int8", "int4"):
        return f"{weight_dtype}_wo"
    if act_dtype in ("bf16", "fp16") and weight_dtype == "fp4":
        return "mxfp4_wo"
    if act_dtype == "fp8" and weight_dtype == "int4":
        return "int4_fp8"
    if act_dtype == "fp8" and weight_dtype == "fp4":
        return "mxfp4_fp8"
    raise ValueError(f"(weight_dtype={weight_dtype!r}, act_dtype={act_dtype!r}) has no kernel dtype; "
                     f"allowed kernel dtypes: {', '.join(KERNEL_DTYPES)}")


def _peak(c: KernelCurves, p: dict) -> float:
    key = p.get("peak", "bf16")
    v = c.peak_flops.get(key) or (c.peak_flops.get("fp16") if key == "bf16" else None)
    if not v:
        raise ValueError(f"gpu={c.gpu_id!r} has no {key} peak in the catalog; the kernel curve needs it")
    return float(v)


def gemm_time(c: KernelCurves, dtype: str, m, n, k, engine: str = "trtllm", groups=1):
    p = c.curve("gemm", dtype, engine)
    return _gemm.gemm_time(p, c.sm_count, _peak(c, p), c.hbm_bw, m, n, k, groups)[0]


def gemm_overhead_s(c: KernelCurves, dtype: str, engine: str = "trtllm") -> float:
    return float(c.curve("gemm", dtype, engine)["overhead_s"])


def _fractions(c, p, m, n, k, groups):
    t, t_c, t_m = _gemm.gemm_time(p, c.sm_count, _peak(c, p), c.hbm_bw, m, n, k, groups)
    flops = 2.0 * np.asarray(groups, dtype=float) * np.asarray(m, dtype=float) * n * np.asarray(k, dtype=float)
    nbytes = _gemm.traffic_bytes(p, m, n, k, groups)
    return _gemm.roofline_fractions(flops, nbytes, t - p["overhead_s"], t_c, t_m, _peak(c, p), c.hbm_bw)


def gemm_efficiency(c: KernelCurves, dtype: str, m, n, k, engine: str = "trtllm"):
    """(e_c, e_m) of a dense GEMM: F = 2MNK, B = M·K·a + N·K·w + M·N·2 (+ quantization pass), see gemm.py."""
    return _fractions(c, c.curve("gemm", dtype, engine), m, n, k, 1.0)


def grouped_gemm_efficiency(c: KernelCurves, dtype: str, tokens_per_expert, experts, n, k, engine: str = "trtllm"):
    """(e_c, e_m) of one grouped MoE GEMM (``experts`` groups of ``tokens_per_expert`` rows), MoE-fitted params."""
    return _fractions(c, c.curve("moe", dtype, engine), tokens_per_expert, n, k, experts)


def moe_time(c: KernelCurves, dtype: str, tokens, hidden, inter, topk, experts, tp=1, ep=1, gated=True,
             engine: str = "trtllm"):
    p = c.curve("moe", dtype, engine)
    return _moe.moe_time(p, c.sm_count, _peak(c, p), c.hbm_bw, tokens, hidden, inter, topk, experts, tp, ep, gated)


def attention_prefill_time(c: KernelCurves, dtype: str, seq_len, batch, heads, kv_heads, head_dim,
                           kv_dtype: str = "bf16", window=0, engine: str = "trtllm"):
    p = c.curve("attention_prefill", dtype, engine)
    return _att.prefill_time(p, c.sm_count, _peak(c, p), c.hbm_bw, seq_len, batch, heads, kv_heads, head_dim,
                             None, _KV_BYTES[kv_dtype], window)


def attention_prefill_efficiency(c: KernelCurves, dtype: str, seq_len, batch, heads, kv_heads, head_dim,
                                 kv_dtype: str = "bf16", window=0, engine: str = "trtllm"):
    """Achieved fraction of the dtype's peak: F/(P·(t − o)), F = 2·B·H·pairs·2d (causal, window-limited)."""
    p = c.curve("attention_prefill", dtype, engine)
    t = attention_prefill_time(c, dtype, seq_len, batch, heads, kv_heads, head_dim, kv_dtype, window, engine)
    f = _att.prefill_flops(seq_len, batch, heads, head_dim, None, window)
    return np.minimum(1.0, f / (_peak(c, p) * np.maximum(t - p["overhead_s"], 1e-30)))


def attention_decode_time(c: KernelCurves, kv_dtype: str, context, batch, heads, kv_heads, head_dim,
                          window=0, engine: str = "trtllm"):
    p = c.curve("attention_decode", kv_dtype, engine)
    return _att.decode_time(p, c.sm_count, _peak(c, {}), c.hbm_bw, context, batch, heads, kv_heads,
                            head_dim, None, _KV_BYTES[kv_dtype], window)


def attention_decode_bandwidth(c: KernelCurves, kv_dtype: str, context, batch, heads, kv_heads, head_dim,
                               window=0, engine: str = "trtllm"):
    """Achieved fraction of peak HBM bandwidth: bytes/(W·(t − o)), bytes as in attention.decode_bytes."""
    p = c.curve("attention_decode", kv_dtype, engine)
    t = attention_decode_time(c, kv_dtype, context, batch, heads, kv_heads, head_dim, window, engine)
    b, _ = _att.decode_bytes(context, batch, heads, kv_heads, head_dim, head_dim, _KV_BYTES[kv_dtype], window)
    return np.minimum(1.0, b / (c.hbm_bw * np.maximum(t - p["overhead_s"], 1e-30)))


def mla_prefill_time(c: KernelCurves, kv_dtype: str, seq_len, batch, heads, engine: str = "trtllm"):
    p = c.curve("mla_prefill", kv_dtype, engine)
    return _att.prefill_time(p, c.sm_count, _peak(c, {}), c.hbm_bw, seq_len, batch, heads, heads,
                             MLA_DIMS["d_qk_prefill"], MLA_DIMS["d_v_prefill"], _KV_BYTES[kv_dtype])


def mla_decode_time(c: KernelCurves, kv_dtype: str, context, batch, heads, engine: str = "trtllm"):
    p = c.curve("mla_decode", kv_dtype, engine)
    return _att.decode_time(p, c.sm_count, _peak(c, {}), c.hbm_bw, context, batch, heads, 1.0,
                            MLA_DIMS["d_latent"], MLA_DIMS["d_v_latent"], _KV_BYTES[kv_dtype], 0.0, latent=True)


def mla_decode_bandwidth(c: KernelCurves, kv_dtype: str, context, batch, heads, engine: str = "trtllm"):
    """Achieved fraction of peak HBM: latent-cache bytes/(W·(t − o))."""
    p = c.curve("mla_decode", kv_dtype, engine)
    t = mla_decode_time(c, kv_dtype, context, batch, heads, engine)
    b, _ = _att.decode_bytes(context, batch, heads, 1.0, MLA_DIMS["d_latent"], MLA_DIMS["d_v_latent"],
                             _KV_BYTES[kv_dtype], 0.0, latent=True)
    return np.minimum(1.0, b / (c.hbm_bw * np.maximum(t - p["overhead_s"], 1e-30)))


def _coll(c: KernelCurves, kind: str, n: int, algorithm: str):
    by_algo = c.collectives.get(kind)
    if not by_algo:
        raise ValueError(f"kind={kind!r} has no collective curve for gpu={c.gpu_id!r}; "
                         f"allowed: {', '.join(sorted(c.collectives)) or 'none'}")
    if algorithm not in by_algo:
        raise ValueError(f"algorithm={algorithm!r} has no {kind} curve for gpu={c.gpu_id!r}; "
                         f"allowed: {', '.join(sorted(by_algo))}")
    if int(n) < 2:
        raise ValueError(f"n={n!r} GPUs: a collective needs at least 2")
    return _comm.pick_curve(by_algo[algorithm], int(n))


def collective_time(c: KernelCurves, kind: str, nbytes, n: int, algorithm: str = "nccl"):
    """Seconds of one collective over ``n`` GPUs on a buffer of ``nbytes`` (nccl-tests size convention)."""
    p, scale, _ = _coll(c, kind, n, algorithm)
    return _comm.line_time(p, kind, nbytes, n, scale)


def collective_alpha_beta(c: KernelCurves, kind: str, n: int, algorithm: str = "nccl"):
    """(α seconds, β bus bytes/s, extrapolated) of the bandwidth-optimized curve for ``n`` GPUs."""
    p, scale, extrap = _coll(c, kind, n, algorithm)
    return p["alpha_s"] * scale, p["busbw"], extrap or c.extrapolated
