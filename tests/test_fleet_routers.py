"""Each routing policy on hand-made states (fleet/routers.py), and each one end to end on a small fleet."""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.fleet import build, parse, run_fleet
from inferbound.fleet.routers import ROUTER_CLASSES, View, make_router, rendezvous
from inferbound.workloads.requests import Request


def _r(k, t=0.0, i=100, pid=-1, plen=0):
    return Request(k, t, i, 10, pid, plen)


def _view(out, kv=None, bs=16, blocks=1000):
    n = len(out)
    return View(np.array(out), np.array(kv if kv is not None else [0.0] * n), np.full(n, bs), np.full(n, blocks))


def test_round_robin_sends_request_k_to_candidate_k_mod_n():
    rr = make_router("round-robin")
    assert rr.route([_r(k) for k in range(7)], np.full(7, -1), [0, 1, 2], None) == [0, 1, 2, 0, 1, 2, 0]


def test_least_outstanding_counts_its_own_dispatches_and_breaks_ties_low():
    # outstanding 2, 0, 1: the first goes to 1 (0 -> 1), then 1 and 2 tie at 1 -> 1 (lowest); then 2 (1 < 2, 2)
    r = make_router("least-outstanding")
    assert r.route([_r(k) for k in range(3)], np.full(3, -1), [0, 1, 2], _view([2, 0, 1])) == [1, 1, 2]


def test_least_kv_adds_the_prompt_blocks_it_dispatched():
    # KV use 0.25 and 0.375 of 1024 blocks; a 2048-token prompt is 2048/16 = 128 blocks = 0.125: 0 (0.25 ->
    # 0.375), then a tie 0.375/0.375 -> 0 (lowest), then 1 (0.5 > 0.375)
    r = make_router("least-kv")
    got = r.route([_r(k, i=2048) for k in range(3)], np.full(3, -1), [0, 1], _view([0, 0], [0.25, 0.375], 16, 1024))
    assert got == [0, 0, 1]


def test_power_of_two_with_two_candidates_always_takes_the_lighter():
    r = make_router("power-of-two", seed=5)
    assert r.route([_r(0)], np.full(1, -1), [3, 4], _view([0, 0, 0, 9, 1])) == [4]


def test_power_of_two_never_takes_the_heaviest_of_three():
    # two distinct of three are drawn: the heaviest can only win against itself, which never happens
    r = make_router("power-of-two", seed=1)
    for k in range(50):
        v = _view([1, 5, 3])
        assert r.route([_r(k)], np.full(k + 1, -1), [0, 1, 2], v) != [1]


def test_prefix_affinity_returns_a_prefix_to_its_replica_until_the_load_is_imbalanced():
    r = make_router("prefix-affinity")
    v = _view([0, 0])
    first = r.pick(_r(0, pid=7, plen=80), -1, [0, 1], v)  # no match anywhere: least loaded, 0
    v.dispatched(first, _r(0))
    # 80 of 100 prompt tokens match on replica 0 (share 0.8 >= 0.5): back there though it is busier
    assert first == 0 and r.pick(_r(1, pid=7, plen=80), -1, [0, 1], v) == 0
    # imbalance: max - min = 40 > 32 and 40 > 1.0001 * 0: the least loaded wins over the match
    assert r.pick(_r(2, pid=7, plen=80), -1, [0, 1], _view([40, 0])) == 1
    # a match share below 0.5 (40 of 100) is not enough: least loaded
    r2 = make_router("prefix-affinity")
    r2.pick(_r(0, pid=9, plen=40), -1, [0, 1], _view([0, 0]))
    assert r2.pick(_r(1, pid=9, plen=40), -1, [0, 1], _view([1, 0])) == 1


def test_session_affinity_keeps_sessions_and_moves_only_a_leaving_replicas():
    sessions = list(range(200))
    before = {s: rendezvous(s, [0, 1, 2, 3]) for s in sessions}
    after = {s: rendezvous(s, [0, 1, 2]) for s in sessions}
    assert all(after[s] == before[s] for s in sessions if before[s] != 3)
    assert {before[s] for s in sessions} == {0, 1, 2, 3}
    r = make_router("session-affinity")
    sess = np.array([5, 5, 6, 5, -1, -1])
    got = r.route([_r(k, t=k) for k in range(6)], sess, [0, 1, 2], None)
    assert got[0] == got[1] == got[3] == rendezvous(5, [0, 1, 2]) and got[2] == rendezvous(6, [0, 1, 2])
    # no session: the lowest count of the router's dispatches over the last 60 s, lowest index on ties
    counts = {s: got[:4].count(s) for s in (0, 1, 2)}
    assert got[4] == min((0, 1, 2), key=lambda s: (counts[s], s))


def test_unknown_router_is_a_one_line_error():
    with pytest.raises(ValueError, match="router='random' unknown; allowed: round-robin"):
        make_router("random")


@pytest.mark.parametrize("router", sorted(ROUTER_CLASSES))
def test_every_router_serves_every_request(router):
    spec = parse({"traffic": {"rate": {"mean": 8.0}, "duration": 20, "input_len": 256, "output_len": 32},
                  "sessions": {"turns": 2, "think_time": 3}, "router": router, "slo": {"ttft_p99_ms": 1000},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 3}]})
    d = build(run_fleet(spec, workers=1))
    assert d["requests"] == sum(p["requests"] for p in d["pools"]) > 0
    assert d["router"] == router
