"""What-if links move the intra-node collectives (hardware/whatif.link_scale, pricing/collectives.py).

Llama-3.1-70B TP=8 on h100_sxm, vLLM: an all-reduce of a 4096-token prefill activation is
S = 4096 · 8192 (hidden) · 2 B = 67,108,864 B (64 MiB), above vLLM's custom all-reduce limit (8 MiB,
engines' custom_all_reduce max_bytes), so NCCL's measured curve prices it (data/kernels.yaml, h100_sxm
all_reduce nccl n=8, nccl 2.29.2 table): α = 14.6591 µs, β = 575.48 GB/s, α_b = 78.4896 µs, β_b = 243.326 GB/s.
nccl-tests traffic factor f = 2(n − 1)/n = 1.75, so S·f = 117,440,512 B.

    t(S) = min((√α + √(S·f/β))², α_b + S·f/β_b)
    base:      √α = 0.00382872,  √(S·f/β) = √2.040740e-4 = 0.01428545  -> t = 0.01811417² = 328.12 µs
               (second line: 78.49 + 482.65 = 561.14 µs, not the minimum)
    link_bw=4: β and β_b × 4:   √(S·f/4β) = 0.01428545 / 2 = 0.00714273 -> t = 0.01097145² = 120.37 µs
               (second line: 78.49 + 120.66 = 199.15 µs)

The bandwidth term S·f/β falls to 1/4 (204.07 -> 51.02 µs) and the latency α stays: (√t − √α)² is that term.
"""
from __future__ import annotations

import math

import pytest

from inferbound import make_deployment
from inferbound.hardware import get_gpu
from inferbound.hardware.whatif import link_scale, parse_scales, scale_gpu
from inferbound.pricing.collectives import comm_pricer_of
from inferbound.step import contract

S = 4096 * 8192 * 2
ALPHA = 1.46591e-05


def _pricer(scale=None):
    dep = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=8, engine="vllm", calibration="none",
                          gpu_scale=scale)
    pr = comm_pricer_of(dep)
    return dep, pr, pr.placement("tp", 8)


def test_link_scale_of_a_what_if_gpu():
    base = get_gpu("h100_sxm")
    assert link_scale(base) == 1.0
    assert link_scale(scale_gpu(base, parse_scales("link_bw=4"))) == 4.0
    assert link_scale(scale_gpu(base, parse_scales("scaleup_bw=2,link_bw=3"))) == 6.0
    assert link_scale(scale_gpu(base, parse_scales("scaleout_bw=4"))) == 1.0     # NIC only: NVLink unchanged
    assert link_scale(scale_gpu(base, parse_scales("pcie_bw=4"))) == 1.0         # h100_sxm talks over NVLink


def test_all_reduce_of_64_mib_by_hand():
    _, pr, pl = _pricer()
    t1, _ = pr.curve_time("all_reduce", S, pl)
    assert float(t1) == pytest.approx((math.sqrt(ALPHA) + math.sqrt(S * 1.75 / 575.48e9)) ** 2, rel=1e-6)
    assert float(t1) == pytest.approx(328.12e-6, rel=1e-4)
    for spec in ("link_bw=4", "scaleup_bw=4"):
        _, pr4, pl4 = _pricer(spec)
        t4, name = pr4.curve_time("all_reduce", S, pl4)
        assert "nccl" in name
        assert float(t4) == pytest.approx(120.37e-6, rel=1e-4)
        # the bandwidth term is a quarter, the latency term the base's
        bw1 = (math.sqrt(float(t1)) - math.sqrt(ALPHA)) ** 2
        bw4 = (math.sqrt(float(t4)) - math.sqrt(ALPHA)) ** 2
        assert bw1 == pytest.approx(204.074e-6, rel=1e-4)
        assert bw4 == pytest.approx(bw1 / 4, rel=1e-9)


def test_small_all_reduce_keeps_its_latency():
    """A 32 KiB decode all-reduce (batch 2 x 8192 x 2 B) is latency-bound: a 4x link saves little of it."""
    _, pr, pl = _pricer()
    _, pr4, pl4 = _pricer("link_bw=4")
    t1, t4 = float(pr.curve_time("all_reduce", 32768, pl)[0]), float(pr4.curve_time("all_reduce", 32768, pl4)[0])
    assert t4 < t1 and t4 > 0.75 * t1


def test_scaleout_only_leaves_the_node_unchanged():
    _, pr, pl = _pricer()
    _, pro, plo = _pricer("scaleout_bw=4")
    assert float(pro.curve_time("all_reduce", S, plo)[0]) == pytest.approx(float(pr.curve_time("all_reduce", S, pl)[0]))


def test_the_step_moves_with_the_link():
    """The priced prefill of the TP=8 deployment: its all-reduce seconds fall with the 4x link."""
    dep1, _, _ = _pricer()
    dep4, _, _ = _pricer("link_bw=4")
    c1, c4 = contract.prefill(dep1, 1, 4096), contract.prefill(dep4, 1, 4096)
    ar1, ar4 = float(c1.comm_kinds["all_reduce"]), float(c4.comm_kinds["all_reduce"])
    assert ar1 > 0 and ar4 < 0.5 * ar1
    assert float(c4.time) < float(c1.time)
    assert "what-if" in dep4.gpu.name


def test_a_pcie_machine_follows_pcie_bw():
    """l40s (no NVLink, data/hardware.yaml): its intra-node curve is the PCIe pair's, so pcie_bw (or link_bw)
    moves it and scaleup_bw does not. 64 MiB over 2 GPUs is bandwidth-bound: twice the link, about half."""
    def t(scale):
        dep = make_deployment(model="llama-3.1-8b", gpu="l40s", tp=2, calibration="none", gpu_scale=scale)
        pr = comm_pricer_of(dep)
        return float(pr.curve_time("all_reduce", S, pr.placement("tp", 2))[0])
    base = t(None)
    assert link_scale(scale_gpu(get_gpu("l40s"), {"pcie_bw": 2.0})) == 2.0
    assert t("scaleup_bw=2") == pytest.approx(base)
    assert 0.5 * base < t("pcie_bw=2") < 0.55 * base
    assert t("link_bw=2") == pytest.approx(t("pcie_bw=2"))
