"""Kernel curves (inferbound.pricing.kernels, data/kernels.yaml): hand-computed forms, bounds, monotonicity,
coverage and provenance of the shipped YAML, and no aiconfigurator / pyarrow at run time.

These tests use only the shipped YAML (the fit extra is not needed).
"""
from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from inferbound.pricing import kernels as K
from inferbound.hardware import load_catalog
from inferbound.pricing.kernels import attention as att
from inferbound.pricing.kernels import comm, gemm, moe
from inferbound.pricing.kernels.curves import CLASSES, load_data

PKG = Path(K.__file__).resolve().parent
DATA = load_data()
MEASURED = sorted(DATA["gpus"])
PRIORS = sorted(DATA["priors"])


# ---------------------------------------------------------------- forms, by hand
def _unit_params(**kw):
    """Tiles of 128 and 256 only, feed never limiting, e_c = 1, no fill, no split-K."""
    p = {"tm_min": 128.0, "tn_min": 128.0, "tile_r": 1.0, "e_c": 1.0, "k_fill": 0.0, "k_min": None}
    p.update(kw)
    return p


def test_wave_quantization_by_hand():
    # M = N = 2048, K = 4096 on 132 SMs at P = 1e15 FLOP/s (per SM 1e15/132):
    #  128x128: 16*16 = 256 tiles -> ceil(256/132) = 2 waves x 2*128*128*4096 FLOP = 2 x 134,217,728 FLOP
    #  128x256 / 256x128: 128 tiles -> 1 wave x 268,435,456 FLOP;  256x256: 64 tiles -> 1 wave x 536,870,912
    # fastest: 2 x 134,217,728 x 132 / 1e15 = 3.5433e-5 s (= 268,435,456 x 132 / 1e15, the same)
    t = gemm.compute_time(_unit_params(), 132, 1e15, 2048, 2048, 4096)
    assert t == pytest.approx(2 * 134_217_728 * 132 / 1e15, rel=1e-12)
    # the ideal time is 2*2048*2048*4096/1e15 = 3.4360e-5 s: wave efficiency 256/(2*132) = 0.9697
    assert (2 * 2048 * 2048 * 4096 / 1e15) / t == pytest.approx(256 / (2 * 132), rel=1e-12)


def test_small_m_tile_padding_and_split_k_by_hand():
    # M = 1, N = K = 4096, no split-K: one row pads to a 128-row tile; 128x128 gives 32 tiles, 1 wave:
    # 2*128*128*4096 FLOP on one SM = 134,217,728 x 132 / 1e15 = 1.7717e-5 s (128x256: 16 tiles, 2x the work)
    t = gemm.compute_time(_unit_params(), 132, 1e15, 1, 4096, 4096)
    assert t == pytest.approx(134_217_728 * 132 / 1e15, rel=1e-12)
    # split-K with k_min = 512: 32 tiles -> s = clip(floor(132/32) = 4, 1, floor(4096/512) = 8) = 4 slices,
    # 128 work items, 1 wave, each 2*128*128*1024 FLOP: 33,554,432 x 132 / 1e15 = 4.4292e-6 s
    t = gemm.compute_time(_unit_params(k_min=512.0), 132, 1e15, 1, 4096, 4096)
    assert t == pytest.approx(2 * 128 * 128 * 1024 * 132 / 1e15, rel=1e-12)


def test_operand_feed_penalizes_small_tiles():
    # tile_r = 128: a 128x128 tile has intensity 128*128/256 = 64 -> f = 0.5, a 256x256 tile 128 -> f = 1.
    # M = N = 4096, K = 1024 at 132 SMs: 128x128: 1024 tiles, 8 waves, 2*128*128*1024/(0.5) each;
    # 256x256: 256 tiles, 2 waves, 2*256*256*1024 each -> 2*134,217,728 = 268,435,456 FLOP-time units;
    # 128x128 costs 8 * 33,554,432 / 0.5 = 536,870,912; 256x128 (f = 85.33/128): 512 tiles, 4 waves,
    # 4 * 67,108,864 / 0.6667 = 402,653,184. Fastest is 256x256: 268,435,456 x 132 / 1e15 s.
    t = gemm.compute_time(_unit_params(tile_r=128.0), 132, 1e15, 4096, 4096, 1024)
    assert t == pytest.approx(268_435_456 * 132 / 1e15, rel=1e-12)


def test_traffic_and_smooth_max_by_hand():
    p = {"a_bytes": 1.0, "w_bytes": 1.0, "out_bytes": 2.0, "quant_act": True, "quant_bytes": 3.0}
    # M=16, N=K=1024: 16*1024*1 + 1024*1024*1 + 16*1024*2 = 16,384 + 1,048,576 + 32,768 = 1,097,728;
    # a quantization pass of b_q = 3 bytes per activation (bf16 read + fp8 write): 16*1024*3 = 49,152
    assert gemm.traffic_bytes(p, 16, 1024, 1024) == pytest.approx(1_146_880)
    assert gemm.traffic_bytes({**p, "quant_act": False}, 16, 1024, 1024) == pytest.approx(1_097_728)
    # the pass is its own kernel: with no compute, no latency and no overhead, t = main/(W e_m) + quant/(W e_m)
    q = {**p, "tm_min": 128.0, "tile_r": 1.0, "e_c": 1.0, "k_fill": 0.0, "k_min": None, "e_m": 0.5,
         "mem_latency_s": 0.0, "overhead_s": 0.0, "q": 200.0}
    t, t_c, t_m = gemm.gemm_time(q, 132, 1e30, 1e12, 16, 1024, 1024)
    assert t == pytest.approx((1_097_728 + 49_152) / 0.5e12, rel=1e-6) and t_m == pytest.approx(t, rel=1e-6)
    assert gemm.smooth_max(3.0, 4.0, 2.0) == pytest.approx(5.0)       # sqrt(9 + 16)
    assert gemm.smooth_max(3.0, 4.0, 200.0) == pytest.approx(4.0, rel=1e-2)


def test_causal_pairs_and_prefill_flops_by_hand():
    assert att.causal_pairs(4) == 10                                   # 1+2+3+4
    assert att.causal_pairs(4, window=2) == 7                          # 1+2+2+2 = 3 + (4-2)*2
    assert att.causal_pairs(4, window=8) == 10                         # window longer than the sequence
    # Llama-3.1-8B-like head: B=2, H=32, S=1024, d=128: 2*2*32*(1024*1025/2)*(128+128) = 8,598,323,200
    assert att.prefill_flops(1024, 2, 32, 128) == pytest.approx(2 * 2 * 32 * 524_800 * 256)


def test_decode_bytes_by_hand():
    # B=8 sequences, 1023 cached + 1 new token, 8 KV heads x (128+128) x 2 bytes = 4,096 B per token:
    # 8*1024*4096 = 33,554,432; plus q in / o out 8*32*256*2 = 131,072 -> 33,685,504 bytes
    b, ell = att.decode_bytes(1023, 8, 32, 8, 128, 128, 2.0)
    assert ell == 1024 and b == pytest.approx(33_685_504)
    # MLA latent: 576 x 1 byte (fp8) per token shared by all 16 heads: 8*1024*576 + 8*16*(576+512)*2
    b, _ = att.decode_bytes(1023, 8, 16, 1, 576, 512, 1.0, latent=True)
    assert b == pytest.approx(8 * 1024 * 576 + 8 * 16 * 1088 * 2)


def test_expert_load_by_hand():
    # 4 tokens x top-8 of 256 experts over EP 8: 32 slots -> 32 distinct experts, 4 per GPU, 1 token each
    a, m, s = moe.expert_load(4, 8, 256, 8)
    assert (a, m, s) == (4.0, 1.0, 4.0)
    # 1024 tokens: 8192 slots, all 256 experts active, 32 per GPU, 1024 slots / 32 = 32 tokens per expert
    a, m, s = moe.expert_load(1024, 8, 256, 8)
    assert (a, m, s) == (32.0, 32.0, 1024.0)


def test_collective_lines_by_hand():
    p = {"alpha_s": 10e-6, "busbw": 100e9, "alpha_b_s": 5e-6, "busbw_b": 50e9}
    # all-reduce, n = 4: f = 2*3/4 = 1.5; S = 1e6 B -> 1.5e6 bus bytes.
    # pipelined: (sqrt(1e-5) + sqrt(1.5e6/1e11))^2 = (3.1623e-3 + 3.8730e-3)^2 = 4.9495e-5 s
    # line b: 5e-6 + 1.5e6/5e10 = 3.5e-5 s  -> the envelope is 3.5e-5
    assert comm.line_time(p, "all_reduce", 1e6, 4) == pytest.approx(3.5e-5)
    big = (math.sqrt(1e-5) + math.sqrt(1.5e6 / 1e11)) ** 2
    assert comm.line_time({**p, "busbw_b": 1.0}, "all_reduce", 1e6, 4) == pytest.approx(big)
    # very large messages run at the bus bandwidth: t -> S*f/busbw
    assert comm.line_time(p, "all_reduce", 1e12, 4) == pytest.approx(1.5e12 / 100e9, rel=2e-2)
    assert comm.traffic_factor("all_gather", 8) == pytest.approx(7 / 8)
    with pytest.raises(ValueError, match="kind='broadcast'"):
        comm.traffic_factor("broadcast", 2)


# ---------------------------------------------------------------- shipped curves
def _shapes():
    m = np.array([1, 4, 16, 64, 256, 1024, 4096, 16384], dtype=float)[:, None, None]
    n = np.array([128, 1024, 4096, 14336, 65536], dtype=float)[None, :, None]
    k = np.array([256, 2048, 8192, 65536], dtype=float)[None, None, :]
    return m, n, k


@pytest.mark.parametrize("gid", MEASURED + PRIORS)
def test_gemm_efficiencies_bounded_and_reproduce_time(gid):
    c = K.curves_for(gid)
    assert c is not None
    m, n, k = _shapes()
    for eng in c.engines("gemm"):
        for dt in c.classes["gemm"][eng]:
            e_c, e_m = K.gemm_efficiency(c, dt, m, n, k, engine=eng)
            assert np.all((e_c > 0) & (e_c <= 1)) and np.all((e_m > 0) & (e_m <= 1)), (gid, eng, dt)
            p = c.curve("gemm", dt, eng)
            flops = 2 * m * n * k
            nbytes = gemm.traffic_bytes(p, m, n, k)
            peak = c.peak_flops[p["peak"]]
            t_roof = np.maximum(flops / (peak * e_c), nbytes / (c.hbm_bw * e_m)) + K.gemm_overhead_s(c, dt, eng)
            np.testing.assert_allclose(t_roof, K.gemm_time(c, dt, m, n, k, engine=eng), rtol=1e-6)


@pytest.mark.parametrize("gid", MEASURED)
def test_gemm_time_grows_with_work(gid):
    """More tokens, more columns or a deeper K never make a GEMM faster (checked at doublings)."""
    c = K.curves_for(gid)
    m = 2.0 ** np.arange(0, 16)
    for eng in c.engines("gemm"):
        for dt in c.classes["gemm"][eng]:
            for n, k in ((1024, 1024), (4096, 4096), (8192, 28672), (28672, 8192)):
                t = K.gemm_time(c, dt, m, n, k, engine=eng)
                assert np.all(np.diff(t) >= -1e-12 * t[1:]), (gid, eng, dt, n, k)
            t = K.gemm_time(c, dt, 4096, 4096, 2.0 ** np.arange(8, 17), engine=eng)
            assert np.all(np.diff(t) >= -1e-12 * t[1:]), (gid, eng, dt, "K")


@pytest.mark.parametrize("gid", MEASURED + PRIORS)
def test_attention_and_moe_bounded(gid):
    c = K.curves_for(gid)
    seq = np.array([128.0, 1024.0, 8192.0])[:, None]
    batch = np.array([1.0, 8.0, 64.0])[None, :]
    for eng in c.engines("attention_prefill"):
        for dt in c.classes["attention_prefill"][eng]:
            e = K.attention_prefill_efficiency(c, dt, seq, batch, 32, 8, 128, engine=eng)
            assert np.all((e > 0) & (e <= 1)), (gid, eng, dt)
    for eng in c.engines("attention_decode"):
        for dt in c.classes["attention_decode"][eng]:
            bw = K.attention_decode_bandwidth(c, dt, seq * 8, batch, 32, 8, 128, engine=eng)
            assert np.all((bw > 0) & (bw <= 1)), (gid, eng, dt)
    for eng in c.engines("mla_decode"):
        for dt in c.classes["mla_decode"][eng]:
            bw = K.mla_decode_bandwidth(c, dt, seq * 8, batch, 16, engine=eng)
            assert np.all((bw > 0) & (bw <= 1)), (gid, eng, dt)
    for eng in c.engines("moe"):
        for dt in c.classes["moe"][eng]:
            e_c, e_m = K.grouped_gemm_efficiency(c, dt, np.array([1.0, 8.0, 64.0, 512.0]), 32, 4096, 7168, engine=eng)
            assert np.all((e_c > 0) & (e_c <= 1)) and np.all((e_m > 0) & (e_m <= 1)), (gid, eng, dt)
            t = K.moe_time(c, dt, np.array([1.0, 64.0, 4096.0]), 7168, 2048, 8, 256, 1, 8, engine=eng)
            assert np.all(np.diff(t) > 0) and np.all(t > 0), (gid, eng, dt)


def test_decode_streams_better_with_longer_context():
    """Paged decode reads its cache at a higher fraction of peak as the context grows (fixed batch)."""
    c = K.curves_for("h200_sxm")
    ctx = 2.0 ** np.arange(10, 17)
    for eng in c.engines("attention_decode"):
        bw = K.attention_decode_bandwidth(c, "bf16", ctx, 16, 32, 8, 128, engine=eng)
        assert np.all(np.diff(bw) >= -1e-9), eng


def test_prefill_efficiency_grows_with_sequence():
    c = K.curves_for("h100_sxm")
    s = 2.0 ** np.arange(9, 15)
    for eng in c.engines("attention_prefill"):
        e = K.attention_prefill_efficiency(c, "bf16", s, 1, 32, 8, 128, engine=eng)
        assert np.all(np.diff(e) >= -1e-9), eng


def test_collectives_keep_the_link_bandwidth():
    """Two-GPU NCCL all-reduce (no in-switch reduction at n=2) runs at 45-105 % of the catalog link."""
    cat = load_catalog()
    for gid in MEASURED:
        coll = DATA["gpus"][gid].get("collectives", {}).get("all_reduce", {}).get("nccl", {})
        if 2 not in coll:
            continue
        g = cat[gid]
        link = g.scaleup_bw if g.nvlink else g.pcie_bw
        assert 0.45 <= coll[2]["busbw"] / link <= 1.05, (gid, coll[2]["busbw"] / link)


def test_collective_time_and_extrapolated_counts():
    c = K.curves_for("h200_sxm")
    t = K.collective_time(c, "all_reduce", np.array([1e3, 1e6, 1e9]), 8)
    assert np.all(np.diff(t) > 0)
    a, b, extrap = K.collective_alpha_beta(c, "all_reduce", 8)
    assert a > 0 and b > 0 and extrap is False
    a16, b16, extrap16 = K.collective_alpha_beta(c, "all_reduce", 16)
    assert extrap16 is True and b16 == b and a16 == pytest.approx(a * math.log2(16) / math.log2(8))
    with pytest.raises(ValueError, match="algorithm='ring'"):
        K.collective_time(c, "all_reduce", 1e6, 8, algorithm="ring")


# ---------------------------------------------------------------- coverage and provenance
def test_yaml_provenance_header():
    prov = DATA["provenance"]
    for key in ("aiconfigurator_core", "generated", "method", "command", "source", "efficiencies_relative_to"):
        assert prov.get(key), key
    text = (PKG.parents[1] / "data" / "kernels.yaml").read_text()
    assert text.startswith("# ") and "aiconfigurator-core" in text.splitlines()[1]
    assert "/work/" not in text and "/tmp/" not in text and "site-packages" not in text   # no machine paths


def test_per_gpu_sections_parse_to_the_whole_file():
    """curves.py parses one measured GPU's entry at a time: the parts must equal a parse of the whole."""
    import yaml

    from inferbound.pricing.kernels import curves
    whole = yaml.safe_load((PKG.parents[1] / "data" / "kernels.yaml").read_text())
    assert curves.load_data() == whole
    assert curves.measured_gpus() == list(whole["gpus"])
    for gid in whole["gpus"]:
        assert curves._measured(gid) == whole["gpus"][gid]


def test_every_measured_curve_has_its_fit_and_table():
    for gid in MEASURED:
        e = DATA["gpus"][gid]
        assert e["extrapolated"] is False and e["sm_count"] > 0 and e["sm_count_source"]
        assert e["tables"] and all(not t.startswith("/") for t in e["tables"])
        for cls in CLASSES:
            for eng, by_dt in (e.get(cls) or {}).items():
                for dt, curve in by_dt.items():
                    fit = curve["fit"]
                    assert fit["rows"] > 0 and 0 <= fit["mape"] < 5 and fit["table"] in e["tables"], (gid, cls, eng, dt)
        for kind, by_algo in (e.get("collectives") or {}).items():
            for algo, by_n in by_algo.items():
                for n, curve in by_n.items():
                    assert curve["fit"]["rows"] > 0 and curve["fit"]["table"] in e["tables"], (gid, kind, algo, n)


def test_measured_peaks_match_the_catalog():
    """Efficiencies are fractions of the catalog's datasheet peaks at fit time; a changed peak needs a refit."""
    cat = load_catalog()
    for gid in MEASURED:
        e = DATA["gpus"][gid]
        assert e["hbm_bw_at_fit"] == pytest.approx(cat[gid].hbm_bw)
        for dt, v in e["peaks_at_fit"].items():
            assert v == pytest.approx(cat[gid].peak_flops[dt]), (gid, dt)


def test_priors_are_flagged_and_sourced():
    cat = load_catalog()
    for gid in PRIORS:
        r = DATA["priors"][gid]
        assert gid in cat and r["derived_from"] in DATA["gpus"] and r["sources"] and r["sm_count_source"]
        c = K.curves_for(gid)
        assert c.extrapolated and c.derived_from == r["derived_from"]
        curves = [cv for cls in c.classes.values() for by in cls.values() for cv in by.values()]
        assert curves and all(cv["extrapolated"] for cv in curves)
        for dt in {d for cls in c.classes.values() for by in cls.values() for d in by}:
            fam = DATA["dtypes"][dt]["peak"]
            assert cat[gid].supports(fam) or (fam == "bf16" and cat[gid].supports("fp16")), (gid, dt)


def test_coverage_of_the_catalog():
    """Every covered id is a catalog id; curves_for answers for all of them and None for others."""
    cat = load_catalog()
    assert set(MEASURED) >= {"h100_sxm", "h200_sxm", "b200_hgx", "gb200_nvl72", "a100_80gb_sxm", "l40s"}
    for gid in MEASURED + PRIORS:
        assert gid in cat
    assert {"mi300x", "mi325x", "mi355x", "gaudi3"} <= set(PRIORS)
    assert K.available_gpus() == {**{g: False for g in MEASURED}, **{g: True for g in PRIORS}}
    assert K.curves_for("no_such_gpu") is None


def test_missing_dtype_and_kernel_dtype_errors():
    c = K.curves_for("h100_sxm")
    with pytest.raises(ValueError, match="dtype='fp4' has no gemm curve for gpu='h100_sxm'; allowed: "):
        c.curve("gemm", "fp4")
    assert c.curve("gemm", "fp16")["e_c"] == c.curve("gemm", "bf16")["e_c"]
    assert K.kernel_dtype("fp8", "fp8") == "fp8" and K.kernel_dtype("fp8", "fp8", block_scaled=True) == "fp8_block"
    assert K.kernel_dtype("int4", "bf16") == "int4_wo" and K.kernel_dtype("fp4", "fp4") == "fp4"
    with pytest.raises(ValueError, match="weight_dtype='fp32'"):
        K.kernel_dtype("fp32", "fp8")


# ---------------------------------------------------------------- no fit dependencies at run time
def test_runtime_never_imports_aiconfigurator_or_pyarrow():
    for path in PKG.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [x for x in names if x.split(".")[0] in ("aiconfigurator_core", "aiconfigurator", "pyarrow")], path
    code = ("import sys, inferbound.pricing.kernels as K; c = K.curves_for('h200_sxm'); K.gemm_time(c, 'bf16', 8, 4096, 4096);"
            "K.moe_time(c, 'fp8_block', 64, 7168, 2048, 8, 256, 1, 8); K.collective_time(c, 'all_reduce', 1e6, 8);"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'aiconfigurator_core')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
