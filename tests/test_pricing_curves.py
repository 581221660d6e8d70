"""The pricing engine on measured kernel curves (kernel_pricing.py, collectives.py, kernels/loadattention.py).

Each expected value is the curve's formula written out here with its parameters read from
data/kernels.yaml (the data, not the code's output), or a relation the physics demands: the GEMM op
of a shape costs the kernels API's time for it, split into a compute or memory side and the fixed cost;
fp4 GEMMs run at their own compute plateau; weight-only int4/int8 decode streams below bf16 rates;
the engine's all-reduce algorithm; the host work per step and sequence; the scalar roofline where a GPU
has no curves.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from inferbound.pricing import kernels as K
from inferbound.step import contract as step
from inferbound.deploy.config import Dtypes
from inferbound.deploy.deployment import make_deployment
from inferbound.pricing.kernel_pricing import KernelPricer, gemm_kernel_dtype, host_cost
from inferbound.pricing.kernels import gemm as G
from inferbound.pricing.kernels import load_data
from inferbound.pricing.kernels.loadattention import SCALAR, soft_ceil as la_soft_ceil
from inferbound.operators import Op
from inferbound.operators.op import gemm_shape
from inferbound.pricing.roofline import price_ops
from inferbound.pricing.collectives import comm_pricer_of

NO_SPREAD = {"efficiency.gemm_spread": 0.0}


def dep(**kw):
    kw.setdefault("calibration", "none")
    return make_deployment(**kw)


def priced(cost, name):
    (p,) = [p for p in cost.ops if p.op.name == name]
    return p


# ----------------------------------------------------------------- GEMMs
def test_gemm_op_costs_the_curve_time_split_by_its_bound():
    """Llama-3.1-8B decode on H100 (vLLM): attn_out is one GEMM of m = 8 rows, n = 4096, k = 4096; its time
    is the vllm bf16 curve's (kernels.gemm_time), memory-bound at 8 rows (weights dominate)."""
    d = dep(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm", gpu_overrides=NO_SPREAD)
    c = K.curves_for("h100_sxm")
    p = priced(step.decode(d, 8, 1000), "attn_out")
    t = float(K.gemm_time(c, "bf16", 8, 4096, 4096, engine="vllm"))
    o = K.gemm_overhead_s(c, "bf16", engine="vllm")
    assert float(p.time) == pytest.approx(t, rel=1e-12)
    comp, mem, over = p.parts
    assert over == pytest.approx(o) and comp == 0.0 and mem == pytest.approx(t - o, rel=1e-12)
    assert not bool(p.compute_bound)


def test_mlp_op_is_the_sum_of_its_two_gemms_and_compute_bound_at_prefill():
    """The MLP op: gate+up (n = 2·14336, k = 4096) then down (n = 4096, k = 14336); at 4096 rows both are
    compute-bound and the op's time is the sum of the two curve times."""
    d = dep(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm", gpu_overrides=NO_SPREAD)
    c = K.curves_for("h100_sxm")
    p = priced(step.prefill(d, 4, 1024), "mlp")
    t = sum(float(K.gemm_time(c, "bf16", 4096, n, k, engine="vllm")) for n, k in ((28672, 4096), (4096, 14336)))
    assert float(p.time) == pytest.approx(t, rel=1e-12)
    assert bool(p.compute_bound)


def test_gemm_spread_averages_the_curve_over_the_row_jitter():
    """soft_ceil(x, ε) = E[⌈x(1 + u)⌉], u ~ U(−ε, ε): at x = 2, ε = 0.1 the jitter spans [1.8, 2.2], half of it
    rounds to 2 and half to 3: 2.5; below one the ceiling stays 1; ε = 0 is the ceiling."""
    assert float(G.soft_ceil(2.0, 0.1)) == pytest.approx(2.5)
    assert float(G.soft_ceil(0.5, 0.1)) == pytest.approx(1.0)
    assert float(G.soft_ceil(3.3, 0.0)) == 4.0
    assert la_soft_ceil(2.0, 0.1, SCALAR) == pytest.approx(2.5)
    # x = 10, ε = 0.05: [9.5, 10.5], ceil 10 on [9.5, 10] and 11 on (10, 10.5]: mean 10.5
    assert float(G.soft_ceil(10.0, 0.05)) == pytest.approx(10.5)


def test_fp4_gemms_run_at_their_own_compute_plateau():
    """B200 NVFP4: a large GEMM's achieved fraction of the fp4 peak is the fp4 curve's, below bf16's of its
    own peak (kernels.yaml: TRT-LLM fp4 e_c ~0.5 against bf16 ~0.74): fp4 is not priced with bf16's fraction."""
    c = K.curves_for("b200_hgx")
    m, n, k = 8192, 8192, 8192
    frac = {}
    for dt in ("bf16", "fp4"):
        t = float(K.gemm_time(c, dt, m, n, k, engine="trtllm"))
        frac[dt] = 2 * m * n * k / (c.peak_flops[dt] * (t - K.gemm_overhead_s(c, dt, engine="trtllm")))
    e = load_data()["gpus"]["b200_hgx"]["gemm"]["trtllm"]
    assert frac["fp4"] < e["fp4"]["e_c"] + 1e-9 and frac["fp4"] < 0.8 * frac["bf16"]
    shape = gemm_shape(Dtypes(weight="fp4", act="fp4"), "dense_mlp", 1, (8192, 8192))
    assert gemm_kernel_dtype(shape, "fp4", "trtllm") == ("fp4", False)
    d = dep(model="llama-3.1-8b", gpu="b200_hgx", weight_dtype="fp4", act_dtype="fp4", engine="trtllm")
    assert comm_pricer_of(d).kernels.params("gemm", "fp4")["e_c"] == e["fp4"]["e_c"]


def test_nvfp4_activations_default_to_an_fp8_kv_cache():
    """NVIDIA's NVFP4 (ModelOpt) checkpoints serve an FP8 KV cache: a blank KV dtype with fp4 activations
    is fp8, which halves the KV bytes per token against bf16 (Llama-3.1-8B: 32·2·8·128 = 65,536 B)."""
    assert Dtypes(weight="fp4", act="fp4").kv_dtype == "fp8"
    d = dep(model="llama-3.1-8b", gpu="b200_hgx", weight_dtype="fp4", act_dtype="fp4")
    assert d.dtypes.kv_dtype == "fp8"
    (att,) = [o for o in step.stage_ops(d.model, d.dtypes, d.par, 1, 1, step.uniform(d.model, decode=1, context=999)
                                         .attention) if o.name == "attention"]
    assert float(att.kv_bytes) * att.count == pytest.approx(1000 * 32 * 2 * 8 * 128 * 1)


def test_weight_only_int4_int8_decode_streams_below_bf16():
    """A100, one token through an 8192 x 8192 weight (TRT-LLM's dequantizing kernels): the weight bytes per
    second the int4 and int8 weight-only GEMMs reach are well below the bf16 GEMM's."""
    c = K.curves_for("a100_80gb_sxm")
    bw = {}
    for dt, wb in (("bf16", 2.0), ("int8_wo", 1.0), ("int4_wo", 0.5)):
        bw[dt] = 8192 * 8192 * wb / float(K.gemm_time(c, dt, 1, 8192, 8192, engine="trtllm")) / c.hbm_bw
    assert bw["int4_wo"] < 0.6 * bw["bf16"] and bw["int8_wo"] < 0.85 * bw["bf16"]
    shape = gemm_shape(Dtypes(weight="int4", act="bf16"), "dense_mlp", 1, (8192, 8192))
    assert gemm_kernel_dtype(shape, "bf16", "trtllm")[0] == "int4_wo"


def test_static_fp8_scales_skip_the_quantization_pass():
    """Per-tensor fp8 with calibrated (static) scales, as TensorRT-LLM builds it, pays no activation-
    quantization pass: the curve's t_q = M·K·b_q/(W·e_m) term is gone (vLLM's online fp8 pays it)."""
    g = comm_pricer_of(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", weight_dtype="fp8", act_dtype="fp8",
                                       engine="trtllm", calibration="none")).kernels
    dyn, stat = g.params("gemm", "fp8", False), g.params("gemm", "fp8", True)
    assert dyn["quant_bytes"] > 0 and stat["quant_bytes"] == 0.0
    shape = gemm_shape(Dtypes(weight="fp8", act="fp8"), "dense_mlp", 1, (4096, 4096))
    assert gemm_kernel_dtype(shape, "fp8", "trtllm") == ("fp8", True)
    assert gemm_kernel_dtype(shape, "fp8", "vllm") == ("fp8", False)
    block = dict(shape, bits=8 + 32 / 16384)
    assert gemm_kernel_dtype(block, "fp8", "vllm") == ("fp8_block", False)


def test_scalar_roofline_where_the_gpu_has_no_curves():
    """Curves switched off: a GEMM op is max(F/(P e_c), B/(W e_m)) + kernel overhead (efficiency.yaml)."""
    d = dep(model="llama-3.1-8b", gpu="h100_sxm", gpu_overrides={"efficiency.kernel_curves": False})
    p = priced(step.decode(d, 8, 1000), "attn_out")
    g = d.gpu
    f, b = 2 * 8 * 4096 * 4096, 4096 * 4096 * 2 + 8 * (4096 + 4096) * 2
    expect = max(f / (g.peak_flops["bf16"] * 0.803), b / (g.hbm_bw * 0.85)) + 2e-6
    assert float(p.time) == pytest.approx(expect, rel=1e-12)


def test_moe_without_the_engines_measured_kernel_uses_its_grouped_gemm():
    """A100 has fused-MoE tables of SGLang's Triton kernel only; TensorRT-LLM's MoE there is priced as the
    engine's bf16 GEMM curve grouped over the active experts, no routing term: Mixtral prefill of 2048
    tokens (top-2 of 8, balanced): 8 experts active, 512 tokens each."""
    d = dep(model="mixtral-8x7b-v0.1", gpu="a100_80gb_sxm", engine="trtllm", tp=2,
            gpu_overrides={**NO_SPREAD, "efficiency.moe_routing_skew": 1.0})
    c = K.curves_for("a100_80gb_sxm")
    p = priced(step.prefill(d, 1, 2048), "experts")
    inter = 14336 / 2
    g1 = float(K.gemm_time(c, "bf16", 512, 2 * inter, 4096, engine="trtllm", groups=8))
    g2 = float(K.gemm_time(c, "bf16", 512, 4096, inter, engine="trtllm", groups=8))
    e = load_data()["gpus"]["a100_80gb_sxm"]["gemm"]["trtllm"]["bf16"]
    perm = (2048 * 4096 * 2 + 2048 * 2 * 4096 * 4) / (c.hbm_bw * e["e_m"])
    assert float(p.time) == pytest.approx(g1 + g2 + perm, rel=1e-9)


# ----------------------------------------------------------------- attention
def test_decode_attention_follows_the_fitted_decode_form():
    """Llama-3.1-8B on H100 (vLLM), a decode-only step of 16 sequences at 2000 cached tokens: D = 16,
    L = 2001 reads each, H = 32, H_kv = 8, d = 128, c = 8·2·128·2 = 4096 B per token and layer:
        bytes = 16·2001·4096 + 16·32·256·2,  u = min(1, 16·8·⌈2001/256⌉/n_sat)
        t = o + 16·(c_seq + 32·c_head) + smooth_max(2·32·16·2001·256/(P e_c), l_m + bytes/(W e_m u), q)."""
    d = dep(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm")
    p = load_data()["gpus"]["h100_sxm"]["attention_decode"]["vllm"]["bf16"]
    c = K.curves_for("h100_sxm")
    nbytes = 16 * 2001 * 4096 + 16 * 32 * 256 * 2
    u = min(1.0, 16 * 8 * math.ceil(2001 / 256) / p["n_sat"])
    t_m = p["mem_latency_s"] + nbytes / (c.hbm_bw * p["e_m"] * u)
    t_c = 2 * 32 * 16 * 2001 * 256 / (c.peak_flops["bf16"] * p["e_c"])
    hi = max(t_c, t_m)
    expect = p["overhead_s"] + 16 * (p["c_seq"] + 32 * p["c_head"]) + hi * ((t_c / hi) ** p["q"] + (t_m / hi) ** p["q"]) ** (1 / p["q"])
    att = priced(step.decode(d, 16, 2000), "attention")
    assert float(att.time) == pytest.approx(expect, rel=1e-12)
    assert not bool(att.compute_bound)


# ----------------------------------------------------------------- collectives
def curve(gpu, kind, algo, n, S, scale=1.0):
    c = load_data()["gpus"][gpu]["collectives"][kind][algo][n]
    f = 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n
    return min((math.sqrt(c["alpha_s"] * scale) + math.sqrt(S * f / c["busbw"])) ** 2,
               c["alpha_b_s"] * scale + S * f / c["busbw_b"])


def _ar(d, size):
    op = Op("ar", "collective", 1, comm={"kind": "all_reduce", "bytes": size, "group": "tp", "size": d.par.tp})
    return float(comm_pricer_of(d)(op)[0])


def test_vllm_custom_all_reduce_below_8_mib_nccl_above():
    d = dep(model="llama-3.1-70b", gpu="h200_sxm", tp=4, engine="vllm")
    assert _ar(d, 4 * 2**20) == pytest.approx(curve("h200_sxm", "all_reduce", "vllm", 4, 4 * 2**20), rel=1e-12)
    assert _ar(d, 16 * 2**20) == pytest.approx(curve("h200_sxm", "all_reduce", "nccl", 4, 16 * 2**20), rel=1e-12)


def test_trtllm_auto_all_reduce_is_the_faster_of_custom_and_nccl():
    d = dep(model="llama-3.1-70b", gpu="h200_sxm", tp=8, engine="trtllm")
    for size in (64 * 1024, 2**20, 64 * 2**20):
        expect = min(curve("h200_sxm", "all_reduce", "trtllm", 8, size), curve("h200_sxm", "all_reduce", "nccl", 8, size))
        assert _ar(d, size) == pytest.approx(expect, rel=1e-12)


def test_pcie_groups_use_the_pair_curve_with_log_alpha():
    """L40S (PCIe): n = 4 uses the measured n = 2 curve with α·log2(4)/log2(2) = 2α (collectives.py)."""
    d = dep(model="llama-3.1-70b", gpu="l40s", tp=4, weight_dtype="fp8", act_dtype="fp8")
    S = 2**20
    assert _ar(d, S) == pytest.approx(_pair(S), rel=1e-12)


def _pair(S):
    c = load_data()["gpus"]["l40s"]["collectives"]["all_reduce"]["nccl"][2]
    f = 2 * 3 / 4                                   # n = 4: 2(n-1)/n; the pair's alpha-beta, alpha doubled
    return min((math.sqrt(2 * c["alpha_s"]) + math.sqrt(S * f / c["busbw"])) ** 2, 2 * c["alpha_b_s"] + S * f / c["busbw_b"])


def test_forced_algorithm_or_two_nodes_use_the_alpha_beta_model():
    d = dep(model="llama-3.1-70b", gpu="h100_sxm", tp=8, collective_algo="ring")
    n, a, b, S = 8, 5e-6, 450e9 * 0.65, 2**20
    assert _ar(d, S) == pytest.approx(2 * (n - 1) * a + 2 * (n - 1) / n * S / b, rel=1e-12)


# ----------------------------------------------------------------- host work, engines, calibration factors
def test_host_work_per_step_and_sequence_and_the_host_factor():
    step_s, seq_s = host_cost("vllm@0.33.0")
    d = dep(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm")
    (h,) = [p for p in step.decode(d, 64, 500).ops if p.op.kind == "host"]
    assert float(h.time) == pytest.approx(step_s + 64 * seq_s, rel=1e-12)
    half = dep(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm", gpu_overrides={"efficiency.host_factor": 0.5})
    (h2,) = [p for p in step.decode(half, 64, 500).ops if p.op.kind == "host"]
    assert float(h2.time) == pytest.approx(0.5 * (step_s + 64 * seq_s), rel=1e-12)


def test_engine_picks_its_backends_curves():
    """The same fp8 GEMM under vLLM and TensorRT-LLM: each engine's measured kernel (they differ)."""
    c = K.curves_for("h100_sxm")
    t = {}
    for eng in ("vllm", "trtllm"):
        d = dep(model="llama-3.1-8b", gpu="h100_sxm", weight_dtype="fp8", act_dtype="fp8", engine=eng,
                gpu_overrides=NO_SPREAD)
        t[eng] = float(priced(step.decode(d, 8, 100), "attn_out").time)
    assert t["vllm"] == pytest.approx(float(K.gemm_time(c, "fp8", 8, 4096, 4096, engine="vllm")), rel=1e-12)
    assert t["vllm"] != pytest.approx(t["trtllm"], rel=1e-3)


def test_calibration_engine_factor_multiplies_the_class():
    from inferbound.calibration import Calibration
    base = dep(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm")
    cal = Calibration(engines={"vllm@0.33.0": {"step_s": 1e-3, "seq_s": 0.0, "gemm": 2.0}})
    two = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm", calibration=cal)
    p0, p1 = priced(step.decode(base, 8, 100), "mlp"), priced(step.decode(two, 8, 100), "mlp")
    o = sum(p0.parts[2:])
    assert float(p1.time) == pytest.approx(2 * (float(p0.time) - o) + 2 * o, rel=1e-12)
    (h,) = [p for p in step.decode(two, 8, 100).ops if p.op.kind == "host"]
    assert float(h.time) == pytest.approx(1e-3)


def test_price_ops_without_a_pricer_keeps_the_roofline_and_default_host():
    ops = [Op("x", "gemm", 1, flops=1e12, weight_bytes=1e9), Op("host", "host", 1, shape={"host": 4.0})]
    from inferbound.hardware import get_gpu
    g = get_gpu("h100_sxm")
    w = price_ops(ops, g, "bf16", "bf16")
    step_s, seq_s = host_cost("vllm@0.33.0")
    assert float(w.split["overhead"]) == pytest.approx(2e-6 + step_s + 4 * seq_s)
    assert isinstance(KernelPricer(g, "vllm@0.33.0").curves, K.KernelCurves)


def test_mxfp4_experts_run_the_engines_kernel_on_blackwell():
    """gpt-oss's MXFP4 experts with 16-bit activations: TensorRT-LLM runs MXFP8 activations x MXFP4 weights
    on Blackwell (engines.yaml pricing.mxfp4_moe_activation) and a weight-only kernel on Hopper."""
    shape = {"weight": "fp4", "bits": 4.25, "checkpoint": True, "moe": {}}
    b200 = comm_pricer_of(dep(model="llama-3.1-8b", gpu="b200_hgx", engine="trtllm")).kernels
    h200 = comm_pricer_of(dep(model="llama-3.1-8b", gpu="h200_sxm", engine="trtllm")).kernels
    e = load_data()["gpus"]
    assert b200.moe_params(shape, "bf16")["e_c"] == e["b200_hgx"]["moe"]["trtllm"]["mxfp4_fp8"]["e_c"]
    assert h200.moe_params(shape, "bf16")["e_c"] == e["h200_sxm"]["moe"]["trtllm"]["mxfp4_wo"]["e_c"]


def test_sglang_mla_decode_on_amd_is_priced_with_a_native_fp8_kernel():
    # engines.yaml pricing.vendor_kernels: SGLang's aiter MLA decode on AMD reads fp8 KV natively, so the AMD
    # prior takes its template's TensorRT-LLM MLA generation curve, not SGLang FA3's fp8-KV path
    from inferbound.hardware import get_gpu
    amd = KernelPricer(get_gpu("mi300x"), "sglang@0.5.9")
    nv = KernelPricer(get_gpu("h200_sxm"), "sglang@0.5.9")
    assert amd.class_engine == {"mla_decode": "trtllm"} and nv.class_engine == {}
    assert amd.params("mla_decode", "fp8")["engine"] == "trtllm"
    assert nv.params("mla_decode", "fp8")["engine"] == "sglang"
    # other classes keep the engine's own curves
    assert amd.params("mla_prefill", "fp8")["engine"] == nv.params("mla_prefill", "fp8")["engine"]
    # ATOM is priced with SGLang's curves (engines.yaml kernel_curves) and follows the same rule
    assert KernelPricer(get_gpu("mi355x"), "atom@0.1.5").class_engine == {"mla_decode": "trtllm"}
    # from the SGLang 0.5 profiles only (min_version "0.5"): the 0.4 profile keeps the template's curve
    assert KernelPricer(get_gpu("mi300x"), "sglang@0.4.3").class_engine == {}
