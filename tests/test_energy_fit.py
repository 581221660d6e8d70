"""The fitted power model (pricing/energy.py, data/efficiency.yaml power, benchmarks/fit_power.py).

Figures written out here:
- h100_sxm (data/hardware.yaml): TDP 700 W, 989 TFLOP/s bf16 dense, HBM 3.35 TB/s;
- data/efficiency.yaml defaults.power: idle_fraction_of_tdp 0.15, compute_fraction 3.735, memory_fraction 1.164
  (fitted on the `fit` rows of data/power_measured.csv); b200_hgx: TDP 1000 W, compute 2.543, memory 1.788.

    x = (compute_w·u_c + memory_w·u_m)/(TDP − idle),  P = idle + (TDP − idle)·(1 − e^(−x))

Held-out rows: data/power_measured.csv rows with split=holdout (ML.ENERGY Leaderboard v3.0, vLLM 0.11.1,
Llama-3.3-70B, Qwen3-8B, Qwen3-14B; each row names its source file), never used by the fit.
"""
from __future__ import annotations

import csv
import math
from importlib import resources

import numpy as np
import pytest

from inferbound.deploy.calibration import packaged
from inferbound.deploy.deployment import make_deployment
from inferbound.hardware import get_gpu
from inferbound.pricing.energy import power_w, scalar_power
from inferbound.step import contract

PEAK, BW = 989e12, 3.35e12
IDLE, SPAN = 0.15 * 700, 700 - 0.15 * 700          # 105 W, 595 W
COMPUTE_W, MEMORY_W = 3.735 * 700, 1.164 * 700      # 2614.5 W, 814.8 W per unit utilization


@pytest.mark.parametrize("u_c, u_m, expected", [
    (0.0, 0.0, 105.0),                                                   # idle
    # decode at small batch: x = (2614.5·0.02 + 814.8·0.7)/595 = 622.65/595 = 1.046471
    (0.02, 0.7, 105 + 595 * (1 - math.exp(-1.046471))),                 # 105 + 595·0.64883 = 491.1 W
    # decode at large batch: x = (522.9 + 651.84)/595 = 1.974353 -> 105 + 595·0.86115 = 617.4 W
    (0.2, 0.8, 105 + 595 * (1 - math.exp(-1.974353))),
    # compute-bound prefill: x = (2614.5·0.8 + 814.8·0.3)/595 = 2336.04/595 = 3.926118 -> 688.3 W
    (0.8, 0.3, 105 + 595 * (1 - math.exp(-3.926118))),
    (2.0, 0.0, 105 + 595 * (1 - math.exp(-2614.5 / 595))),              # u_c clipped to 1: 692.7 W
])
def test_power_by_hand(u_c, u_m, expected):
    g, t = get_gpu("h100_sxm"), 0.01
    assert float(power_w(g, "bf16", u_c * PEAK * t, u_m * BW * t, t)) == pytest.approx(expected, rel=1e-4)
    assert scalar_power(g, "bf16")(u_c * PEAK * t, u_m * BW * t, t) == pytest.approx(expected, rel=1e-4)


def test_power_stays_below_tdp_and_rises_with_load():
    g, t = get_gpu("h100_sxm"), 1.0
    p = [float(power_w(g, "bf16", u * PEAK, u * BW, t)) for u in (0.0, 0.1, 0.3, 0.6, 1.0)]
    assert p == sorted(p) and p[0] == pytest.approx(105.0) and p[-1] < 700.0


def test_gpu_without_rows_takes_the_h100_shape_of_its_own_tdp():
    a = get_gpu("a100_80gb_sxm").power                                # TDP 400 W, no power override
    assert (a.idle_w, a.compute_w, a.memory_w) == pytest.approx((60.0, 3.735 * 400, 1.164 * 400))
    b = get_gpu("b200_hgx").power                                     # its own fit
    assert (b.idle_w, b.compute_w, b.memory_w) == pytest.approx((150.0, 2543.0, 1788.0))


def _rows():
    text = (resources.files("inferbound") / "data" / "power_measured.csv").read_text("utf-8")
    return list(csv.DictReader(ln for ln in text.splitlines() if ln and not ln.startswith("#")))


def test_every_row_names_its_source():
    rows = _rows()
    assert len(rows) > 100
    for r in rows:
        assert r["source"].startswith("https://github.com/ml-energy/leaderboard/blob/"), r
        assert r["split"] in ("fit", "holdout")
        assert float(r["measured_w_per_gpu"]) > 0 and float(r["j_per_token"]) > 0
        # E[O²]/E[O] >= E[O] (Cauchy-Schwarz): the histogram's second moment and the mean agree (bins ~1 %)
        assert float(r["output_len_m2_m1"]) >= 0.99 * float(r["output_len"])


def _predict(r, input_len=200):
    """The steady state of benchmarks/fit_power.py: B sequences decoding at the length-biased context
    I + E[O²]/(2E[O]) (a request holds a slot for its O steps), B/O prompts of I tokens per step; the rows'
    sampling (top_p, repetition_penalty columns) priced by vLLM 0.11.1's sampler (deploy/sampling.py)."""
    dep = make_deployment(model=r["model"], gpu=r["gpu"], tp=int(r["tp"]), engine=r["engine"],
                          calibration=packaged(),   # the requests sample with top_p 0.95, repetition penalty 1.1
                          engine_options={"top_p": float(r["top_p"]), "repetition_penalty": float(r["repetition_penalty"])})
    b, o = float(r["batch"]), float(r["output_len"])
    ctx = input_len + float(r["output_len_m2_m1"]) / 2
    c = contract.price(dep, contract.uniform(dep.model, decode=b, context=ctx, prompts=b / o, new=input_len),
                       "stream")
    w = float(power_w(dep.gpu, dep.compute_dtype, c.flops, c.bytes, c.time))
    return w, dep.num_gpus * w * float(c.time) / b


@pytest.fixture(scope="module")
def held_out():
    out = {}
    for r in _rows():
        if r["split"] == "holdout":
            w, j = _predict(r)
            out.setdefault(r["gpu"], []).append((w / float(r["measured_w_per_gpu"]) - 1,
                                                 j / float(r["j_per_token"]) - 1))
    return out


def test_h100_held_out_energy_per_token_within_20_percent(held_out):
    e = np.array(held_out["h100_sxm"])
    assert len(e) >= 25
    assert np.median(np.abs(e[:, 0])) < 0.05          # power per GPU (fit_power.py prints 3.6 %)
    assert np.median(np.abs(e[:, 1])) < 0.15          # J/token, under the 20 % target (prints 10.5 %)


def test_b200_held_out_is_recorded_not_hidden(held_out):
    """B200 misses the 20 % target on its own (22.1 % printed): the published B200 power is not monotone in
    batch for the small models and the one-GPU steps at batch 32-64 are short; this bound fails if it worsens."""
    e = np.array(held_out["b200_hgx"])
    assert np.median(np.abs(e[:, 0])) < 0.15
    assert np.median(np.abs(e[:, 1])) < 0.25
