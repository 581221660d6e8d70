"""Diurnal Poisson traffic by thinning, sessions, traces into requests, and the fleet file's one-line errors."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from inferbound.fleet.spec import parse, read, seconds
from inferbound.fleet.traffic import diurnal_times, from_trace, generate, rate_at
from inferbound.fleet.traces import read_trace

DATA = Path(__file__).parent / "data" / "traces"
POOL = {"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm"}


def test_durations():
    assert (seconds("10m", "k"), seconds("24h", "k"), seconds("500ms", "k"), seconds(7, "k")) == (600, 86400, 0.5, 7)
    with pytest.raises(ValueError, match="k='ten' must be a duration"):
        seconds("ten", "k")


def test_rate_is_mean_times_one_plus_a_sine():
    # mean 5, peak/mean 2 (a = 1), period 24 h: 5 at 0, 10 at 6 h (the peak), 0 at 18 h
    assert rate_at([0, 6 * 3600, 18 * 3600], 5, 2.0, 86400) == pytest.approx([5, 10, 0], abs=1e-9)


def test_thinning_gives_the_integral_of_the_rate():
    """Counts of a Poisson process: over a whole period mean·P = 20·1000 = 20,000 (σ = √20,000 ≈ 141); over
    the first half ∫ mean(1 + a sin) = mean·P/2·(1 + 2a/π) = 20·500·(1 + 2·0.5/π) ≈ 13,183 (σ ≈ 115)."""
    t = diurnal_times(20.0, 1.5, 1000.0, 1000.0, np.random.default_rng(0))
    assert abs(t.size - 20_000) < 4 * math.sqrt(20_000)
    first = 20 * 500 * (1 + 2 * 0.5 / math.pi)
    assert abs(np.sum(t < 500) - first) < 4 * math.sqrt(first)
    assert np.all(np.diff(t) >= 0) and t.min() >= 0 and t.max() < 1000


def test_same_seed_same_day():
    spec = parse({"traffic": {"rate": {"mean": 3}, "duration": 100, "input_len": 10, "output_len": 5}, "pools": [POOL]})
    a, b = generate(spec), generate(spec)
    assert a.requests == b.requests and len(a) > 0


def test_sessions_carry_their_context_as_the_shared_prefix():
    spec = parse({"traffic": {"rate": {"mean": 2}, "duration": 3600, "input_len": 100, "output_len": 50},
                  "sessions": {"turns": 3, "think_time": "10s"}, "pools": [POOL], "seed": 2})
    arr = generate(spec)
    by = {}
    for r in arr.requests:
        by.setdefault(int(arr.session[r.id]), []).append(r)
    full = [v for v in by.values() if len(v) == 3]
    assert full
    for a, b, c in full:  # turn k+1: previous prompt + previous reply + a new 100-token message
        assert (a.prefix_id, a.prefix_len, a.input_len) == (-1, 0, 100)
        assert b.prefix_len == 150 and b.input_len == 250 and c.prefix_len == 300 and c.input_len == 400
        assert b.prefix_id == c.prefix_id >= 0 and a.arrival_s <= b.arrival_s <= c.arrival_s
    # session starts at λ/turns: the request rate stays about λ = 2/s over the hour, 7,200 ± 4σ (the turns cut
    # off by the hour's end, about (2/3 sessions/s)·(10 + 20 s) = 20, are well inside σ ≈ 85)
    assert abs(len(arr) - 7200) < 4 * math.sqrt(7200)


def test_a_mooncake_trace_names_its_shared_prefixes():
    spec = parse({"traffic": {"trace": str(DATA / "mooncake_conversation_trace_head100.jsonl")}, "pools": [POOL]})
    arr = from_trace(spec, read_trace)
    tr = read_trace(spec.traffic.trace)
    assert len(arr) == len(tr)
    for k, r in enumerate(arr.requests):  # a prefix is whole 512-token blocks shared with an earlier request
        assert r.prefix_len % 512 == 0 or r.prefix_len == r.input_len
        if r.prefix_id >= 0:
            assert r.prefix_id == tr.prefix_hashes[k][0]


@pytest.mark.parametrize("data, words", [
    ({"traffic": {"rate": {"mean": 1}, "duration": 10, "dataset": "sharegpt"}, "pools": [POOL], "routr": "x"},
     "routr unknown key"),
    ({"traffic": {"rate": {"mean": 1}, "duration": 10, "dataset": "sharegpt"}, "pools": [POOL], "router": "fastest"},
     "router='fastest' unknown; allowed:"),
    ({"traffic": {"rate": {"mean": 1}}, "pools": [POOL]}, "traffic.duration is required"),
    ({"traffic": {"rate": {"mean": 1}, "duration": "10 parsecs"}, "pools": [POOL]}, "traffic.duration='10 parsecs'"),
    ({"traffic": {"rate": {"mean": 1}, "duration": 10}, "pools": [{**POOL, "tq": 2}]}, "pools[p].tq unknown; allowed"),
    ({"traffic": {"rate": {"mean": 1, "peak_to_mean": 3}, "duration": 10}, "pools": [POOL]}, "peak_to_mean"),
    ({"traffic": {"rate": {"mean": 1}, "duration": 10}, "pools": [POOL],
      "autoscale": {"metric": "queue", "target": 1, "min": 5, "max": 2}}, "autoscale.min=5 must be <= autoscale.max=2"),
])
def test_bad_fleet_files_are_one_line_errors(data, words):
    with pytest.raises(ValueError) as e:
        parse(data)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_example_file_parses_as_written():
    spec = read(Path(__file__).parents[1] / "docs" / "fleet-example.yaml")
    assert [p.name for p in spec.pools] == ["h100", "a100"] and spec.router == "least-outstanding"
    assert spec.traffic.duration == 600 and spec.traffic.rate.period == 86400
