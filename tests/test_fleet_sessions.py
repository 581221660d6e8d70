"""Closed-loop sessions (fleet/closed_loop.py): turn k + 1 arrives its think time after turn k's last token;
late turns are at most ``sessions.sync`` late and counted; a coarser sync costs lateness and saves round
trips; every backend gives the same numbers."""
from __future__ import annotations

import re

import pytest

from inferbound.fleet import build, parse, run_fleet
from inferbound.fleet.result import request_arrays
from inferbound.fleet.run import arrivals_of


def _spec(router="session-affinity", sync=None, **more):
    sessions = {"turns": 4, "think_time": "5s", **({"sync": sync} if sync is not None else {})}
    return parse({"traffic": {"rate": {"mean": 4.0}, "duration": 120, "input_len": 200, "output_len": 100},
                  "sessions": sessions, "router": router, "slo": {"ttft_p99_ms": 1000}, "seed": 1,
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 2}], **more})


def _turns(arrivals, arrival, finish=None):
    """{session: [(arrival, finish, prompt), ...] in turn order}."""
    out: dict[int, list] = {}
    for r in sorted(arrivals.requests, key=lambda r: (arrival[r.id], r.id)):
        out.setdefault(int(arrivals.session[r.id]), []).append(
            (arrival[r.id], None if finish is None else finish[r.id], r.input_len))
    return out


def _late(notes) -> tuple[int, float]:
    (line,) = [x for x in notes if x.startswith("sessions (closed loop)")]
    m = re.search(r"(\d+) of \d+ turns arrived late .* by at most ([0-9.e-]+) s", line)
    return int(m.group(1)), float(m.group(2))


@pytest.mark.parametrize("router", ["session-affinity", "least-outstanding"])
def test_the_next_turn_arrives_a_think_time_after_the_reply(router):
    spec = _spec(router)
    plan = arrivals_of(spec)  # the open-loop plan: its turn gaps are the think-time draws
    plan_turns = _turns(plan, {r.id: r.arrival_s for r in plan.requests})
    fr = run_fleet(spec, workers=1)
    req = request_arrays(fr)
    got = _turns(fr.arrivals, req["arrival_s"], req["finish_s"])
    late, worst = _late(build(fr)["notes"])
    checked, seen_late = 0, 0
    for s, turns in got.items():
        want = plan_turns[s]
        assert [t[2] for t in turns] == [t[2] for t in want[:len(turns)]]  # the same prompts, turn by turn
        for k in range(1, len(turns)):
            think = want[k][0] - want[k - 1][0]
            waited = turns[k][0] - turns[k - 1][1]  # next arrival − previous turn's last token
            assert waited >= 0.0  # never before the reply: the closed loop
            if waited == pytest.approx(think, abs=1e-9):
                checked += 1
            else:  # learned late: arrives at the next synchronization, at most sync (0.1 s) after its time
                assert think < waited <= think + 0.1 + 1e-9
                seen_late += 1
    assert checked > 100 and seen_late == late and worst <= 0.1


def test_a_coarser_sync_costs_lateness_and_saves_round_trips():
    fine, coarse = build(run_fleet(_spec(sync=0.1), workers=1)), build(run_fleet(_spec(sync=5), workers=1))
    (lf, wf), (lc, wc) = _late(fine["notes"]), _late(coarse["notes"])
    assert lc > lf and wc > wf and wc <= 5.0
    assert coarse["windows"] < fine["windows"]


def test_backends_agree_bit_for_bit_with_sessions():
    spec = _spec("least-outstanding")
    assert build(run_fleet(spec, workers=1)) == build(run_fleet(spec, workers=2))


def test_router_refresh_with_sessions_is_an_error():
    with pytest.raises(ValueError, match=r"router_refresh=1: closed-loop sessions"):
        run_fleet(_spec("least-outstanding", router_refresh=1), workers=1)


def test_bad_sync_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"sessions.sync"):
        _spec(sync=0)
