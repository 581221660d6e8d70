"""The tensor-rate rule of prior kernel curves (pricing/kernels/curves.py): a GPU whose tensor cores are
throttled against its SMs keeps the template's non-tensor work per SM, not its plateau fraction.

Hand numbers from the catalog (data/hardware.yaml) and the template's fitted curve (data/kernels.yaml,
gpus.h100_sxm.moe.vllm.bf16: e_c 0.576588, tile_r 80.7793):

    ρ(H20 / H100 SXM) = (148 / 44) / (989 / 67) = 148·67 / (44·989) = 9916 / 43516 = 0.227870
    e_c' = 1 / (1 + ρ·(1/e_c − 1)) = 1 / (1 + 0.227870·0.734340) = 1 / 1.167334 = 0.856653
    tile_r' = ρ·tile_r = 0.227870·80.7793 = 18.4072
"""
from __future__ import annotations

import pytest

from inferbound.hardware.kernel_data import _measured
from inferbound.pricing.kernels import curves as CV
from inferbound.pricing.kernels.curves import curves_for, tensor_ratio


def test_h20_tensor_ratio_from_the_catalog_peaks():
    rho = 148.0 * 67.0 / (44.0 * 989.0)
    assert rho == pytest.approx(0.227870, abs=1e-6)
    r = tensor_ratio("h20", "h100_sxm")
    assert r["bf16"] == pytest.approx(rho, rel=1e-9)
    assert r["fp8"] == pytest.approx(296.0 * 67.0 / (44.0 * 1979.0), rel=1e-9)   # 0.227754


def test_h20_moe_plateau_and_feed_threshold_by_hand():
    tpl = _measured("h100_sxm")["moe"]["vllm"]["bf16"]
    rho = 148.0 * 67.0 / (44.0 * 989.0)
    want_ec = 1.0 / (1.0 + rho * (1.0 / tpl["e_c"] - 1.0))
    assert tpl["e_c"] == pytest.approx(0.576588, abs=1e-6) and want_ec == pytest.approx(0.856653, abs=1e-5)
    p = curves_for("h20").curve("moe", "bf16", "vllm")
    assert p["e_c"] == pytest.approx(want_ec, rel=1e-9)
    assert p["tile_r"] == pytest.approx(rho * 80.7793, rel=1e-6)          # 18.4072
    assert p["e_m"] == tpl["e_m"] and p["tm_min"] == tpl["tm_min"]          # memory side and tiles kept
    assert "tensor ratio 0.228" in p["prior"]


def test_a_plateau_of_one_stays_one_and_rho_one_changes_nothing():
    """1/e_c − 1 = 0 has no non-tensor share to shrink; ρ = 1 (A100 40 GB SXM: the 80 GB's peaks) leaves
    every curve as the compute_ratio alone makes it."""
    rules = {"derived_from": "h100_sxm", "tensor_ratio": {"bf16": 0.25}}
    assert CV._scale_curve({"e_c": 1.0, "tile_r": 40.0}, "gemm", "bf16", rules)["e_c"] == 1.0
    assert tensor_ratio("a100_40gb_sxm", "a100_80gb_sxm") == {"bf16": 1.0, "int8": 1.0}
    tpl = _measured("a100_80gb_sxm")["gemm"]["vllm"]["bf16"]
    assert curves_for("a100_40gb_sxm").curve("gemm", "bf16", "vllm")["e_c"] == pytest.approx(tpl["e_c"], rel=1e-12)


def test_no_rule_across_vendors():
    """MI300X from the H100 template: CDNA's FP32 peak (packed dual-issue) is no SM rate of the H100's
    kind, so ρ is not formed and the plateau is the template's times compute_ratio only."""
    assert tensor_ratio("mi300x", "h100_sxm") == {}
    from inferbound.hardware.kernel_data import _meta
    rc = _meta()["priors"]["mi300x"]["compute_ratio"]["bf16"]
    tpl = _measured("h100_sxm")["gemm"]["vllm"]["bf16"]
    got = curves_for("mi300x").curve("gemm", "bf16", "vllm")
    assert got["e_c"] == pytest.approx(min(1.0, tpl["e_c"] * rc), rel=1e-12)
    assert got["tile_r"] == pytest.approx(tpl["tile_r"], rel=1e-12)


def test_h20_long_prompt_recompute_against_its_measurement():
    """Qwen3-30B-A3B on one H20, vLLM: a 65,536-token prompt recomputed in 15.2 s (gahow/agentic-kvc
    exp_a_tier_latency, the feature point's source). A floor by hand: causal attention alone is
    2·H·S(S+1)/2·(d_qk + d_v) per layer = 2·32·2,147,516,416·256 = 3.5185e13 FLOP, ×48 layers = 1.6889e15,
    11.41 s at the 148 TFLOP/s peak. With the template's plateaus the prompt priced 23.1 s (+52 %)."""
    from inferbound.deploy.deployment import make_deployment
    from inferbound.workloads.prefix_stream import single_ttft
    t = single_ttft(make_deployment(model="Qwen/Qwen3-30B-A3B", gpu="h20"), 65536, "miss")
    floor = 2 * 32 * (65536 * 65537 / 2) * 256 * 48 / 148e12
    assert floor == pytest.approx(11.41, abs=0.01)
    assert floor < t and abs(t / 15.2 - 1) <= 0.25
