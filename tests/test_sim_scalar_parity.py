"""The simulator's scalar step prices are tabulations of the contract, not second formulas.

- StepModel.step (plain floats: tables as lists, attention_of on floats) vs the vectorized
  StepModel.price on the same of_sequences load, on many random loads (decodes, prompt chunks, both,
  CUDA-graph sizes and eager ones), time and watts to 1e-12 relative, for a dense GQA model with kernel
  curves, a sliding-window model and a GPU priced by the attention Roof;
- StepModel.decode_run (a run's decode-only steps with the tables read once and the decode sums
  D_0 + n·s) vs StepModel.step at contexts c_j + s: the same floats (==), the window's per-step sums too;
- DecodeBatch.drop(j) vs keep(mask without j): the same columns in the same order;
- DecodeBatch.due while ``exact``: equal to to_go() whenever a run of decode-only steps starts (the run
  reads it instead of recomputing), through arrivals, finishes and recompute preemptions.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import inferbound.sim as sim_pkg
import inferbound.sim.scheduler as scheduler
from inferbound import make_deployment
from inferbound.pricing.energy import power_w
from inferbound.sim import simulate
from inferbound.sim.batch import DecodeBatch
from inferbound.step.contract import of_sequences
from inferbound.step.table import StepModel

MAX_TOKENS = 4096
MODELS = [("llama-3.1-8b", "h100_sxm"), ("google/gemma-2-9b", "h100_sxm"), ("llama-3.1-8b", "mi300x")]


def _random_loads(rng: np.random.Generator, count: int):
    """(decode contexts, chunks) of ``count`` steps within MAX_TOKENS: decodes only, chunks only, mixed."""
    out = []
    for i in range(count):
        shape = i % 3  # 0: decodes only, 1: chunks only, 2: both
        n_dec = 0 if shape == 1 else int(rng.integers(1, 300))
        dec = rng.integers(1, 9000, n_dec).astype(float)
        chunks, left = [], MAX_TOKENS - n_dec
        for _ in range(0 if shape == 0 else int(rng.integers(1, 4))):
            if left < 1:
                break
            new = int(rng.integers(1, min(left, 1500) + 1))
            chunks.append((int(rng.integers(0, 5000)), new))
            left -= new
        out.append((dec, chunks))
    return out


@pytest.fixture(scope="module", params=MODELS, ids=lambda p: f"{p[0]}@{p[1]}")
def model(request):
    name, gpu = request.param
    dep = make_deployment(model=name, gpu=gpu, calibration="none")
    return dep, StepModel(dep, MAX_TOKENS)


def test_scalar_step_equals_vectorized_price_on_random_loads(model):
    dep, sm = model
    rng = np.random.default_rng(11)
    for dec, chunks in _random_loads(rng, 90):
        load = of_sequences(dep.model, dec, [p for p, _ in chunks], [n for _, n in chunks])
        for mode in ("stream", "isolated"):
            t, w = sm.step(dec, chunks, mode)
            cost = sm.price(load, mode)
            ref_w = float(power_w(dep.gpu, dep.compute_dtype, cost.flops, cost.bytes, cost.time))
            assert t == pytest.approx(float(cost.time), rel=1e-12, abs=0.0), (dec.size, chunks, mode)
            assert w == pytest.approx(ref_w, rel=1e-12, abs=0.0), (dec.size, chunks, mode)


def test_decode_run_prices_are_the_steps_own(model):
    _, sm = model
    assert sm._scalar is None or sm._scalar  # these models take the scalar path
    rng = np.random.default_rng(12)
    for n in (1, 2, 7, 30, 128, 511):  # eager and CUDA-graph batch sizes
        ctx = rng.integers(1, 6000, n).astype(float)
        price = sm.decode_run(ctx)
        assert price is not None
        for s in (0, 1, 2, 5, 17, 300):  # a window of 4096 (gemma) is crossed on the way
            assert price(s) == sm.step(ctx + s), (n, s)


def test_decode_run_is_none_on_the_general_path():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", pp=2, calibration="none")
    sm = StepModel(dep, 2048)
    assert sm.decode_run(np.array([100.0, 200.0])) is None  # pipeline stages: StepModel.step's general path


def test_drop_equals_keep_without_the_column():
    rng = np.random.default_rng(13)
    for n in (1, 2, 5, 9):
        for j in range(n):
            a, b = DecodeBatch(16), DecodeBatch(16)
            for k in range(n):
                row = (float(rng.integers(1, 900)), float(rng.integers(1, 50)), 60.0, float(k + 3), k * 10,
                       float(k), float(rng.random()), int(rng.integers(-1, 3)), int(rng.integers(0, 2)))
                a.add(*row)
                b.add(*row)
            mask = np.ones(n, dtype=bool)
            mask[j] = False
            a.drop(j)
            b.keep(mask)
            assert a.n == b.n == n - 1
            np.testing.assert_array_equal(a._f[:, :n - 1], b._f[:, :n - 1])
            np.testing.assert_array_equal(a._i[:, :n - 1], b._i[:, :n - 1])


@pytest.mark.parametrize("kw", [
    dict(rate=20.0, requests=120, input_len=512, output_len=200, output_dist="uniform:20:400", seed=1),
    dict(rate=float("inf"), requests=40, input_len=1024, output_len=300, num_blocks=600,
         preemption="recompute", seed=6),  # preemptions remove columns: due only a lower bound then
], ids=["rate", "recompute"])
def test_exact_due_is_to_go_when_a_run_starts(monkeypatch, kw):
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    real_run, seen = scheduler.decode_run, {"exact": 0, "bound": 0}

    def checking(rep, t, horizon):
        dec = rep.dec
        if dec.exact:
            assert dec.due == dec.to_go()
            seen["exact"] += 1
        else:
            assert dec.due <= dec.to_go()
            seen["bound"] += 1
        return real_run(rep, t, horizon)

    real = sim_pkg.sim_config
    monkeypatch.setattr(sim_pkg, "sim_config", lambda *a, **k: replace(real(*a, **k), decode_runs=True))
    monkeypatch.setattr(scheduler, "decode_run", checking)
    res = simulate(dep, **kw)
    assert res.summary["completed"] == kw["requests"]
    assert seen["exact"] > 0  # runs that read due instead of recomputing it
    if kw.get("preemption") == "recompute":
        assert res.summary["preemptions"] > 0  # columns were removed on the way
