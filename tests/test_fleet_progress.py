"""run_fleet's progress hook (fleet/run.py): called as the replicas advance, ending at (n, n), changing no figure;
a callback that raises stops the run (web/budget.py Deadline, /api/fleet)."""
from __future__ import annotations

import multiprocessing

import pytest

from inferbound.fleet import build, parse, run_fleet
from inferbound.fleet.run import PROGRESS_CHUNKS


def _spec(router: str):
    return parse({"traffic": {"rate": {"mean": 8.0}, "duration": 40, "input_len": 256, "output_len": 32},
                  "router": router, "slo": {"ttft_p99_ms": 500},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 2}]})


@pytest.mark.parametrize("router", ["round-robin", "least-outstanding"])
def test_progress_is_monotone_ends_at_total_and_changes_nothing(router):
    calls = []
    spec = _spec(router)
    with_bar = run_fleet(spec, workers=1, progress=lambda d, t: calls.append((d, t)))
    plain = run_fleet(spec, workers=1)
    n = len(with_bar.arrivals)
    assert calls[-1] == (n, n) and all(t == n for _, t in calls)
    assert all(a <= b for (a, _), (b, _) in zip(calls, calls[1:]))
    if router == "round-robin":  # routed up front: at most one report per chunk, plus the start and the end
        assert len(calls) <= PROGRESS_CHUNKS + 2 and with_bar.windows == plain.windows == 1
    else:  # one report per routing window
        assert len(calls) == with_bar.windows
    assert build(with_bar) == build(plain)


class Stop(Exception):
    pass


def test_a_raising_callback_stops_the_run_and_the_workers():
    seen = []

    def stop(done, total):
        seen.append(done)
        if done > 0:
            raise Stop(done, total)
    with pytest.raises(Stop):
        run_fleet(_spec("round-robin"), workers=2, progress=stop)
    assert seen[0] == 0 and len(seen) == 2  # stopped at the first report after the start
    assert multiprocessing.active_children() == []  # the forked workers were ended (run.py's finally)
