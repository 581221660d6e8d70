"""Energy and cost (energy.py): the power model by hand, energy of a static batch, cost per token,
energy per token against batch size, max-throughput and simulator energy fields.

Catalog figures written out here:
- h100_sxm (data/hardware.yaml): TDP 700 W, dense 989 TFLOP/s bf16 and 1979 TFLOP/s fp8, HBM 3.35 TB/s,
  price 3.90 $/GPU-hour (data/prices.yaml: Crusoe on-demand, 2026-09-20);
- l4 (data/prices.yaml): usd_per_gpu_hour null (no public on-demand price found);
- data/efficiency.yaml defaults.power: idle_fraction_of_tdp 0.15, compute_fraction 3.735,
  memory_fraction 1.164 (fitted by benchmarks/fit_power.py; h100_sxm has no power override);
- Llama-3.1-8B (data/models): hidden 4096, 32 layers, 32 heads, 8 KV heads of 128, MLP 14336, vocab 128256.

Power of one GPU over a step of t seconds doing F FLOPs and moving B bytes:
    x = (compute_w·clip(F/(t·peak), 0, 1) + memory_w·clip(B/(t·bw), 0, 1))/(TDP − idle),
    P = idle + (TDP − idle)·(1 − e^(−x)).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from inferbound.step import contract as step
from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.pricing.energy import power_w
from inferbound.workloads.static import estimate
from inferbound.hardware import get_gpu
from inferbound.workloads import max_throughput

TDP = 700.0                    # hardware.yaml h100_sxm tdp_w
IDLE = 0.15 * TDP              # efficiency.yaml idle_fraction_of_tdp -> 105 W
COMPUTE_W = 3.735 * TDP        # efficiency.yaml compute_fraction -> 2614.5 W per unit utilization
MEMORY_W = 1.164 * TDP         # efficiency.yaml memory_fraction -> 814.8 W per unit utilization
SPAN = TDP - IDLE              # 595 W
PEAK = {"bf16": 989e12, "fp8": 1979e12}   # hardware.yaml h100_sxm dense TFLOP/s
BW = 3.35e12                   # hardware.yaml h100_sxm hbm_tbps
PRICE = 3.90                   # hardware.yaml h100_sxm price.usd_per_gpu_hour (Crusoe on-demand, 2026-09-20)

# Llama-3.1-8B
D, L, H, KVH, HD, FF, V = 4096, 32, 32, 8, 128, 14336, 128256


def p_hand(flops, moved, t, dtype="bf16"):
    u_c = min(max(flops / (t * PEAK[dtype]), 0.0), 1.0)
    u_m = min(max(moved / (t * BW), 0.0), 1.0)
    return IDLE + SPAN * (1 - math.exp(-(COMPUTE_W * u_c + MEMORY_W * u_m) / SPAN))


@pytest.fixture(scope="module")
def h100():
    return get_gpu("h100_sxm")


def test_h100_power_coefficients(h100):
    p = h100.power
    assert (p.tdp_w, p.idle_w, p.compute_w, p.memory_w) == pytest.approx((700, 105, 2614.5, 814.8), rel=1e-12)


@pytest.mark.parametrize("u_c, u_m, expected", [
    (0.0, 0.0, 105.0),                                       # idle
    (0.5, 0.4, 105 + 595 * (1 - math.exp(-2.744824))),       # x = (1307.25 + 325.92)/595: 661.8 W
    (0.2, 0.8, 105 + 595 * (1 - math.exp(-1.974353))),       # x = (522.9 + 651.84)/595: 617.4 W
    (0.9, 0.9, 105 + 595 * (1 - math.exp(-5.187176))),       # x = (2353.05 + 733.32)/595: 696.7 W
    (1.0, 1.0, 105 + 595 * (1 - math.exp(-5.763529))),       # x = 3429.3/595: 698.1 W, below TDP
    (2.0, 0.0, 105 + 595 * (1 - math.exp(-4.394118))),       # u_c clipped to 1: x = 2614.5/595: 692.7 W
    (0.0, 3.0, 105 + 595 * (1 - math.exp(-1.369412))),       # u_m clipped to 1: x = 814.8/595: 548.7 W
])
def test_power_by_hand(h100, u_c, u_m, expected):
    t = 0.01
    got = power_w(h100, "bf16", u_c * PEAK["bf16"] * t, u_m * BW * t, t)
    assert float(got) == pytest.approx(expected, rel=1e-5)


def test_power_uses_the_compute_dtype_peak(h100):
    t = 1.0
    # 989e12 FLOPs in 1 s: u_c = 1 at bf16, 0.5 at fp8 (1979 TFLOP/s)
    assert float(power_w(h100, "bf16", 989e12, 0.0, t)) == pytest.approx(105 + 595 * (1 - math.exp(-2614.5 / 595)),
                                                                       rel=1e-9)
    assert float(power_w(h100, "fp8", 989e12, 0.0, t)) == pytest.approx(
        105 + 595 * (1 - math.exp(-2614.5 / 595 * 989 / 1979)), rel=1e-9)


def test_power_is_vectorized_and_capped(h100):
    t = np.array([1.0, 1.0, 2.0])
    flops = np.array([0.0, 989e12, 989e12])
    moved = np.array([3.35e12, 3.35e12, 0.0])
    # x = 814.8/595 (u_m = 1); (2614.5 + 814.8)/595 (both 1); 2614.5·0.5/595 (t = 2 s: u_c = 0.5)
    want = [105 + 595 * (1 - math.exp(-x)) for x in (814.8 / 595, 3429.3 / 595, 1307.25 / 595)]
    np.testing.assert_allclose(power_w(h100, "bf16", flops, moved, t), want, rtol=1e-9)
    assert (power_w(h100, "bf16", flops, moved, t) < TDP).all()


# --- estimate: energy of a static batch --------------------------------------------------------------

B, S, N = 8, 1024, 64          # N - 1 = 63 <= 64: TPOT averages the exact contexts S .. S + 62


@pytest.fixture(scope="module")
def dep():
    # module scope is set up before conftest's function-scoped INFERBOUND_CALIBRATION=none: say it here
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm", calibration="none")


@pytest.fixture(scope="module")
def est(dep):
    return estimate(dep, batch=B, input_len=S, output_len=N)


def prefill_flops_by_hand(batch, s):
    """FLOPs of one prefill step of Llama-3.1-8B (tp=1): GEMMs 2·T·params, attention 4·h·hd per causal
    pair, norms/residual 8 per element, LM head for the last token of each prompt."""
    T = batch * s
    attn_p = D * (H * HD + 2 * KVH * HD) + H * HD * D
    mlp_p = 3 * D * FF
    pairs = batch * s * (s + 1) / 2
    per_layer = 2 * T * (attn_p + mlp_p) + 2 * H * (HD + HD) * pairs + 8 * T * D * 3
    return L * per_layer + 8 * T * D + 2 * batch * D * V


def test_step_flops_are_the_operators_flops_by_hand(dep):
    pre = step.prefill(dep, B, S)
    flops, moved = pre.flops, pre.bytes
    assert float(flops) == pytest.approx(prefill_flops_by_hand(B, S), rel=1e-12)
    assert float(moved) > 16_060_522_496          # at least the bf16 weights (8.03 B params x 2 B)


def test_prefill_energy_is_power_times_ttft(dep, est):
    pre = step.prefill(dep, B, S)
    flops, moved = pre.flops, pre.bytes
    t = est.ttft_s
    assert float(pre.time) == pytest.approx(t, rel=1e-12)
    p = p_hand(float(flops), float(moved), t)
    assert 105 < p <= 700
    e = est.energy
    assert e["prefill_energy_j"] == pytest.approx(p * t * 1, rel=1e-9)
    assert e["prefill_joules_per_input_token"] == pytest.approx(p * t / (B * S), rel=1e-9)


def test_decode_energy_is_the_sum_over_decode_steps(dep, est):
    e = est.energy
    total = 0.0
    for c in range(S, S + N - 1):                 # step j feeds token j with S + j - 1 tokens cached
        cost = step.decode(dep, B, float(c))
        f, m = cost.flops, cost.bytes
        total += p_hand(float(f), float(m), float(cost.time)) * float(cost.time)
    assert e["decode_energy_j"] == pytest.approx(total, rel=1e-9)
    assert e["energy_j"] == pytest.approx(e["prefill_energy_j"] + total, rel=1e-9)
    assert e["decode_joules_per_output_token"] == pytest.approx(total / (B * N), rel=1e-9)


def test_per_token_energy_power_and_cost(est):
    e = est.energy
    out_tokens = B * N
    assert e["joules_per_output_token"] == pytest.approx(e["energy_j"] / out_tokens, rel=1e-12)
    assert e["output_tokens_per_joule"] == pytest.approx(out_tokens / e["energy_j"], rel=1e-12)
    assert e["average_power_w"] == pytest.approx(e["energy_j"] / est.e2e_s, rel=1e-12)
    assert e["average_power_per_gpu_w"] == pytest.approx(e["energy_j"] / est.e2e_s, rel=1e-12)   # one GPU
    assert IDLE < e["average_power_w"] <= TDP
    assert e["usd_per_hour"] == pytest.approx(PRICE, rel=1e-12)
    dollars_per_s = PRICE * 1 / 3600
    out_tok_s = B * N / est.e2e_s
    assert e["usd_per_million_output_tokens"] == pytest.approx(dollars_per_s / out_tok_s * 1e6, rel=1e-12)
    in_tok_s = B * S / est.ttft_s                # input tokens are charged their prefill time
    assert e["usd_per_million_input_tokens"] == pytest.approx(dollars_per_s / in_tok_s * 1e6, rel=1e-12)


def test_energy_counts_every_gpu_tp2():
    dep2 = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2)
    e2 = estimate(dep2, batch=B, input_len=S, output_len=N)
    pre = step.prefill(dep2, B, S)
    f, m = pre.flops, pre.bytes               # per GPU, collectives excluded
    assert float(f) == pytest.approx(prefill_flops_by_hand(B, S) / 2, rel=1e-3)  # norms replicated: ~half
    p = p_hand(float(f), float(m), e2.ttft_s)
    assert e2.energy["prefill_energy_j"] == pytest.approx(p * e2.ttft_s * 2, rel=1e-9)
    assert e2.energy["usd_per_hour"] == pytest.approx(2 * PRICE, rel=1e-12)
    assert e2.energy["usd_per_million_output_tokens"] == pytest.approx(
        2 * PRICE / 3600 / e2.output_tok_s * 1e6, rel=1e-12)
    assert e2.energy["average_power_per_gpu_w"] == pytest.approx(e2.energy["average_power_w"] / 2, rel=1e-12)


def test_data_parallel_replicas_keep_energy_per_token(est):
    e_dp = estimate(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", num_gpus=2, tp=1, dp=2),
                    batch=B, input_len=S, output_len=N)
    assert e_dp.energy["energy_j"] == pytest.approx(2 * est.energy["energy_j"], rel=1e-12)
    assert e_dp.energy["joules_per_output_token"] == pytest.approx(est.energy["joules_per_output_token"], rel=1e-12)
    assert e_dp.energy["usd_per_million_output_tokens"] == pytest.approx(
        est.energy["usd_per_million_output_tokens"], rel=1e-12)


def test_no_price_gives_no_cost_but_energy():
    g = get_gpu("l4")
    assert g.price_per_hour is None              # hardware.yaml l4: price.usd_per_gpu_hour: null (a reason)
    e = estimate(model="llama-3.1-8b", gpu="l4", batch=4, input_len=256, output_len=32)
    assert e.energy["usd_per_million_output_tokens"] is None
    assert e.energy["usd_per_million_input_tokens"] is None
    assert e.energy["usd_per_hour"] is None
    assert e.energy["joules_per_output_token"] > 0
    r = max_throughput(model="llama-3.1-8b", gpu="l4", input_len=512, output_len=128)
    assert r.usd_per_million_output_tokens is None and r.joules_per_output_token > 0


def test_energy_per_output_token_falls_as_batch_grows_memory_bound(dep):
    """Decode-dominated (128 in, 512 out): a bigger batch reads the same weights for more tokens."""
    jpt, power, tput = [], [], []
    for b in (1, 4, 16, 64):
        e = estimate(dep, batch=b, input_len=128, output_len=512)
        assert e.decode.bound == "memory"
        jpt.append(e.energy["joules_per_output_token"])
        power.append(e.energy["average_power_w"])
        tput.append(e.output_tok_s)
    assert all(a > b for a, b in zip(jpt, jpt[1:]))
    assert jpt[-1] < 0.25 * jpt[0]
    # why: throughput grows far faster than power while memory-bound
    assert tput[-1] / tput[0] > 10 * (power[-1] / power[0])


def test_max_throughput_energy_fields():
    dep2 = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2)
    r = max_throughput(dep2, input_len=1000, output_len=201)
    assert IDLE <= r.power_per_gpu_w <= TDP
    assert r.joules_per_output_token == pytest.approx(r.power_per_gpu_w * 2 / r.output_tok_s, rel=1e-12)
    assert r.output_tokens_per_joule == pytest.approx(r.output_tok_s / (2 * r.power_per_gpu_w), rel=1e-12)
    assert r.usd_per_million_output_tokens == pytest.approx(2 * PRICE / 3600 / r.output_tok_s * 1e6, rel=1e-12)


def test_max_throughput_uses_less_energy_per_token_than_batch_one(dep):
    r = max_throughput(dep, input_len=128, output_len=512)
    e1 = estimate(dep, batch=1, input_len=128, output_len=512)
    assert r.joules_per_output_token < 0.1 * e1.energy["joules_per_output_token"]


def test_simulator_reports_energy_at_low_load(dep):
    from inferbound.sim import simulate
    s = simulate(dep, rate=0.01, requests=3, input_len=128, output_len=8, seed=2).summary
    assert s["joules_per_output_token"] > 0
    assert s["energy_j"] == pytest.approx(s["busy_energy_j"] + s["idle_energy_j"], rel=1e-9)
    assert s["output_tokens_per_joule"] == pytest.approx(1 / s["joules_per_output_token"], rel=1e-9)
    assert IDLE <= s["average_power_w"] <= TDP


# --- CLI ------------------------------------------------------------------------------------------

def test_cli_estimate_shows_energy_and_cost():
    runner = CliRunner()
    res = runner.invoke(app, ["estimate", "--batch", "8", "--input", "1024", "--output", "64", "--json"])
    assert res.exit_code == 0, res.output
    e = json.loads(res.stdout)["energy"]
    for k in ("joules_per_output_token", "output_tokens_per_joule", "average_power_w", "prefill_energy_j",
              "decode_energy_j", "usd_per_million_output_tokens", "usd_per_million_input_tokens"):
        assert e[k] is not None and e[k] > 0
    table = runner.invoke(app, ["estimate", "--gpu", "l4"])   # l4: no price in data/prices.yaml
    assert table.exit_code == 0, table.output
    assert "energy per output token" in table.output and "n/a" in table.output
