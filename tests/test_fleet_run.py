"""The fleet run against the simulator it is built on: a resumable replica run in pieces equals one run;
one replica equals ``simulate`` exactly; least-outstanding at Δ = 0 equals the simulator's own multi-replica
routing; Δ > 0 (routing on state up to Δ old) costs exactness and saves round trips, as measured here;
every request is accounted for once."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.fleet import build, parse, run_fleet
from inferbound.fleet.replica import ReplicaRun
from inferbound.fleet.result import request_arrays
from inferbound.fleet.run import arrivals_of
from inferbound.sim import poisson, simulate
from inferbound.sim.config import sim_config

DEP = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")


def _reqs(n=600, rate=12.0, seed=3):
    return sorted(poisson(rate, n, 1024, 256, seed, "normal:1000:300", "normal:256:100"), key=lambda r: r.arrival_s)


def test_replica_run_in_pieces_equals_one_run_and_simulate():
    reqs = _reqs()
    ref = simulate(DEP, trace=reqs).requests()
    cfg = sim_config(DEP, None, 1)
    whole = ReplicaRun(DEP, cfg)
    whole.add(reqs)
    whole.run_until()
    pieces = ReplicaRun(DEP, cfg)
    k, T = 0, 0.0
    while k < len(reqs):  # windows of 0.37 s: each window's arrivals added, then run to its end
        T += 0.37
        chunk = []
        while k < len(reqs) and reqs[k].arrival_s < T:
            chunk.append(reqs[k])
            k += 1
        pieces.add(chunk)
        pieces.run_until(T)
    pieces.run_until()
    for run in (whole, pieces):
        t = run.table()
        assert np.array_equal(t["first_s"], ref["first_token_s"])
        assert np.array_equal(t["finish_s"], ref["finish_s"])
        assert np.array_equal(t["admit_s"], ref["admit_s"])


def _spec(router="round-robin", replicas=1, **traffic):
    tr = {"rate": {"mean": 4.0}, "duration": 60, "input_len": 512, "output_len": 128, **traffic}
    return parse({"traffic": tr, "router": router, "slo": {"ttft_p99_ms": 500, "tpot_p99_ms": 50},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": replicas}]})


def test_single_replica_fleet_equals_simulate_exactly():
    spec = _spec()
    fr = run_fleet(spec, workers=1, steps=True)
    reqs = list(fr.arrivals.requests)
    sim = simulate(DEP, trace=reqs, slo_ttft_ms=500, slo_tpot_ms=50)
    summary = fr.results[0][1]
    for k, v in sim.summary.items():
        if k in summary and k not in ("notes", "engine", "slo", "slo_met", "slo_met_fraction", "goodput_rps"):
            assert summary[k] == v, k
    d = build(fr)
    assert d["requests"] == sim.summary["submitted"] == len(reqs)
    assert d["slo_attainment"] == sim.summary["slo_met_fraction"]
    assert d["ttft_ms_p99"] == sim.summary["ttft_ms_p99"]
    assert d["e2e_ms_p50"] == sim.summary["e2e_ms_p50"]
    for k in ("itl_ms_mean", "itl_ms_p50", "itl_ms_p90", "itl_ms_p99"):  # pooled gaps, fleet/itl.py
        assert d[k] == sim.summary[k] and d["pools"][0][k] == sim.summary[k], k


def test_least_outstanding_at_zero_refresh_equals_the_simulators_own_routing():
    """The simulator's replicas share one event loop and route each arrival to the fewest outstanding (lowest
    index on ties): the fleet's least-outstanding at Δ = 0 routes on the same state, so every timestamp agrees."""
    spec = _spec("least-outstanding", 3, rate={"mean": 30.0}).model_copy(update={"router_refresh": 0.0})
    fr = run_fleet(spec, workers=1)
    reqs = list(fr.arrivals.requests)
    ref = simulate(DEP, trace=reqs, replicas=3).requests()
    got = request_arrays(fr)
    assert np.array_equal(got["first_s"], ref["first_token_s"])
    assert np.array_equal(got["finish_s"], ref["finish_s"])


def test_coarser_refresh_costs_exactness_and_saves_round_trips():
    """Δ = 0: one round trip per arrival instant; Δ = 2 s: per window holding arrivals (≤ 60 s / 2 s = 30 of
    them, plus the final one). Routing on state up to 2 s old piles a window's arrivals on the replica that
    looked least loaded at its start only as far as the router's own dispatch count allows, so TTFT moves
    but every request is still served."""
    base = _spec("least-outstanding", 3, rate={"mean": 30.0})
    exact = run_fleet(base.model_copy(update={"router_refresh": 0.0}), workers=1)
    coarse = run_fleet(base.model_copy(update={"router_refresh": 2.0}), workers=1)
    n = len(exact.arrivals)
    assert exact.windows == len(np.unique([r.arrival_s for r in exact.arrivals.requests])) + 1
    assert coarse.windows <= math.ceil(60 / 2.0) + 1 < exact.windows
    a, b = build(exact), build(coarse)
    assert a["requests"] == b["requests"] == n
    assert not np.array_equal(exact.slot_of, coarse.slot_of)  # some routing decisions changed
    assert abs(a["slo_attainment"] - b["slo_attainment"]) <= 0.05


def test_every_request_accounted_for_across_pools():
    spec = parse({"traffic": {"rate": {"mean": 6.0}, "duration": 30, "dataset": "sharegpt"},
                  "router": "round-robin", "slo": {"ttft_p99_ms": 2000},
                  "pools": [{"name": "a", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 2},
                            {"name": "b", "model": "llama-3.1-8b", "gpu": "a100_80gb_sxm", "replicas": 1}]})
    d = build(run_fleet(spec, workers=1))
    n = len(arrivals_of(spec))
    assert d["requests"] == n == sum(p["requests"] for p in d["pools"])
    # round-robin over 3 replicas, request k to replica k mod 3: pool a holds replicas 0 and 1
    assert d["pools"][0]["requests"] == sum(1 for k in range(n) if k % 3 < 2)
    assert sum(d["series"]["arrivals"]) == n
    # billing: 3 replicas of one GPU each, always on from 0 to end_s
    assert d["gpu_hours"] == pytest.approx(3 * d["end_s"] / 3600, rel=1e-12)


def test_refresh_converges_as_it_shrinks():
    """An H100 and an A100 replica behind least-outstanding: at Δ = 0 the faster H100 frees its slots sooner and
    takes more than half of the requests; with state 30 s old the router sees only its own dispatch counts, which
    it keeps equal (round-robin's half); at Δ = 0.05 s (llm-d's refresh) the share is back near Δ = 0's."""
    spec = parse({"traffic": {"rate": {"mean": 12.0}, "duration": 60, "input_len": 512, "output_len": 256},
                  "router": "least-outstanding", "slo": {"ttft_p99_ms": 1000},
                  "pools": [{"name": "h", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 1},
                            {"name": "a", "model": "llama-3.1-8b", "gpu": "a100_80gb_sxm", "replicas": 1}]})

    def share(delta):
        d = build(run_fleet(spec.model_copy(update={"router_refresh": delta}), workers=1))
        return d["pools"][0]["requests"] / d["requests"]
    s0, fine, blind = share(0.0), share(0.05), share(30.0)
    assert s0 > 0.55 and abs(blind - 0.5) < 0.05
    assert abs(fine - s0) < abs(blind - s0) / 3


def test_lean_ledgers_change_no_figure():
    """Without the step samples and with binned gaps (replica.LeanLedger, the default) every fleet figure is the
    same, but the ITL percentiles, within fleet/itl.py's bin (0.01 %), and the ITL mean, to rounding."""
    spec = _spec("least-outstanding", 2, rate={"mean": 10.0})
    lean, full = build(run_fleet(spec, workers=1)), build(run_fleet(spec, workers=1, steps=True))

    def split(d):
        itl = {k: d.pop(k) for k in list(d) if k.startswith("itl_")}
        return d, itl
    for a, b in [(lean, full), *zip(lean["pools"], full["pools"])]:
        (a, ia), (b, ib) = split(a), split(b)
        assert ia.keys() == ib.keys() and len(ia) == 4
        for k in ia:
            assert ia[k] == pytest.approx(ib[k], rel=1e-4 if k != "itl_ms_mean" else 1e-9), k
    assert lean == full


def test_ledger_extend_records_every_per_request_field_as_init_does():
    """sim/ledger.Ledger.extend (the fleet's hook) must grow every per-request list __init__ builds: a field added
    to one and not the other fails here."""
    from inferbound.sim.ledger import Ledger
    reqs = _reqs(20)
    built, grown = Ledger(reqs), Ledger([])
    grown.extend(reqs[:7])
    grown.extend(reqs[7:])
    lists = {k for k, v in vars(built).items() if isinstance(v, list) and len(v) == len(reqs)}
    assert {"arrival", "first_s", "prefix_len"} <= lists
    for k in lists:
        assert np.array_equal(np.asarray(getattr(grown, k), dtype=float), np.asarray(getattr(built, k), dtype=float),
                              equal_nan=True), k
