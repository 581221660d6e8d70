"""ITL of the fleet (fleet/itl.py): the log histogram's count, mean and percentiles by hand; a lone request's
ITL is its TPOT; lean replicas agree with exact gaps within the bin width; one replica with step records
equals ``simulate`` (tests/test_fleet_run.py)."""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.fleet import build, parse, run_fleet
from inferbound.fleet.itl import REL_WIDTH, GapHistogram, itl_stats
from inferbound.fleet.traffic import Arrivals
from inferbound.workloads.requests import Request


def test_histogram_count_mean_and_percentiles_by_hand():
    h = GapHistogram()
    h.add(0.010, 3)
    h.add_many(np.array([0.020, 0.0]))
    # gaps sorted: [0, 10, 10, 10, 20] ms; n = 5; mean = (3·10 + 20 + 0) / 5 = 10 ms exactly
    d = itl_stats([h.weighted()])
    assert d["itl_ms_mean"] == pytest.approx(10.0, rel=1e-12)
    # p50: h = (5 − 1)·0.5 = 2 -> the 3rd value, 10 ms (within the half bin, 0.005 %)
    assert d["itl_ms_p50"] == pytest.approx(10.0, rel=REL_WIDTH / 2)
    # p99: h = 3.96 -> 10 + 0.96·(20 − 10) = 19.6 ms
    assert d["itl_ms_p99"] == pytest.approx(19.6, rel=REL_WIDTH / 2)
    # p90: h = 3.6 -> 10 + 0.6·10 = 16 ms
    assert d["itl_ms_p90"] == pytest.approx(16.0, rel=REL_WIDTH / 2)


def test_no_second_token_is_none():
    assert itl_stats([GapHistogram().weighted()])["itl_ms_p99"] is None


def _spec(n_out=64, rate=2.0, duration=30, replicas=2):
    return parse({"traffic": {"rate": {"mean": rate}, "duration": duration, "input_len": 256, "output_len": n_out},
                  "router": "least-outstanding", "slo": {"ttft_p99_ms": 1000},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": replicas}]})


def test_a_lone_requests_itl_is_its_tpot():
    # one request: its N − 1 = 63 gaps sum to e − f, so the ITL mean = (e − f)/(N − 1) = its TPOT
    spec = _spec(replicas=1)
    one = Arrivals((Request(0, 0.0, 256, 64),), np.array([-1], dtype=np.int64), 1.0)
    d = build(run_fleet(spec, arrivals=one, workers=1))
    assert d["requests"] == 1
    assert d["itl_ms_mean"] == pytest.approx(d["tpot_ms_mean"], rel=1e-9)
    # alone, every decode step is the same batch of one: the gaps are nearly equal, p50 <= p99 <= 1.01 · p50
    assert d["itl_ms_p50"] <= d["itl_ms_p99"] <= 1.01 * d["itl_ms_p50"]


def test_lean_gaps_agree_with_exact_gaps_within_the_bin():
    spec = _spec()
    lean, full = build(run_fleet(spec, workers=1)), build(run_fleet(spec, workers=1, steps=True))
    assert lean["itl_ms_mean"] == pytest.approx(full["itl_ms_mean"], rel=1e-9)
    for p in (50, 90, 99):
        assert lean[f"itl_ms_p{p}"] == pytest.approx(full[f"itl_ms_p{p}"], rel=REL_WIDTH)
        for a, b in zip(lean["pools"], full["pools"]):
            assert a[f"itl_ms_p{p}"] == pytest.approx(b[f"itl_ms_p{p}"], rel=REL_WIDTH)
    # every generated token after a request's first is one gap: the ITL mean weighs tokens, TPOT requests;
    # with equal output lengths (64) they coincide: Σ(e − f) / Σ(N − 1) = mean of (e − f)/(N − 1)
    assert full["itl_ms_mean"] == pytest.approx(full["tpot_ms_mean"], rel=1e-9)


def test_add_many_all_positive_keeps_the_array_and_equals_the_masked_path():
    # add_many's two paths (fleet/itl.py): an all-positive array kept as given, one with a zero masked.
    # By hand: [0.01, 0.02] three times each: n = 6, Σ = 3·0.03 = 0.09 s, no zeros.
    h = GapHistogram()
    h.add_many(np.array([0.01, 0.02]), 3.0)
    assert (h.n, h.zeros) == (6.0, 0.0)
    assert h.total == pytest.approx(0.09, rel=1e-15)
    # the same gaps with a 0 appended go through the mask: the same bins and Σ, the zero counted apart
    rng = np.random.default_rng(7)
    a, b = GapHistogram(), GapHistogram()
    for _ in range(50):
        g = rng.uniform(1e-3, 0.2, rng.integers(1, 40))
        c = float(rng.integers(1, 100))
        a.add_many(g.copy(), c)
        b.add_many(np.append(g, 0.0), c)
    va, ca, ta, na = a.weighted()
    vb, cb, tb, nb = b.weighted()
    assert ta == tb and b.zeros == nb - na and a.zeros == 0.0
    assert vb[-1] == 0.0 and cb[-1] == b.zeros
    assert np.array_equal(va, vb[:-1]) and np.array_equal(ca, cb[:-1])
