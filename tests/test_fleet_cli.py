"""``inferbound fleet``: the issue's example file runs as written (JSON keys as named, a PNG), a bad file is a
one-line error with exit 2, and --size-for-slo prints the answer and the one-fewer case."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.fleet import parse

from cli_helpers import assert_one_line_error

EXAMPLE = Path(__file__).parents[1] / "docs" / "fleet-example.yaml"
KEYS = ("requests", "slo_attainment", "ttft_ms_p99", "tpot_ms_p99", "itl_ms_p99", "e2e_ms_p99", "gpu_hours",
        "cost_usd", "energy_kwh", "pools", "series")


def test_the_example_runs_as_written_with_json_and_plot(tmp_path):
    png = tmp_path / "day.png"
    r = CliRunner().invoke(app, ["fleet", str(EXAMPLE), "--json", "--plot", str(png), "--workers", "1"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert all(k in d for k in KEYS)
    assert [p["name"] for p in d["pools"]] == ["h100", "a100"]
    assert sum(p["requests"] for p in d["pools"]) == d["requests"] == sum(d["series"]["arrivals"])
    for p in d["pools"]:
        assert all(k in p for k in KEYS[:9]) and p["replicas_over_time"] == [[0.0, 2]]
    # 4 one-GPU replicas on from 0 to the last finish (>= the 10 minutes of traffic)
    assert d["gpu_hours"] == d["pools"][0]["gpu_hours"] + d["pools"][1]["gpu_hours"]
    assert d["gpu_hours"] >= 4 * 600 / 3600
    assert len(d["series"]["t_min"]) == len(d["series"]["queue"]) >= 10
    assert png.is_file() and png.read_bytes()[:4] == b"\x89PNG"


def test_a_bad_fleet_file_is_one_line_exit_2(tmp_path):
    f = tmp_path / "f.yaml"
    f.write_text(EXAMPLE.read_text().replace("router: least-outstanding", "router: fastest"))
    assert_one_line_error(CliRunner().invoke(app, ["fleet", str(f)]), "router='fastest' unknown", "round-robin")
    assert_one_line_error(CliRunner().invoke(app, ["fleet", str(tmp_path / "none.yaml")]), "is not a file")


def test_size_for_slo_prints_the_answer_and_the_one_fewer_case(tmp_path):
    f = tmp_path / "f.yaml"
    f.write_text("traffic: {rate: {mean: 40}, duration: 20, input_len: 2048, output_len: 1}\n"
                 "pools: [{name: h, model: llama-3.1-8b, gpu: h100_sxm, max_num_seqs: 1}]\n"
                 "router: least-outstanding\nslo: {ttft_p99_ms: 150}\n")
    r = CliRunner().invoke(app, ["fleet", str(f), "--size-for-slo", "--attainment", "0.95", "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "fewest replicas meeting the SLO at 95 % attainment: h:" in r.stdout
    assert "one fewer in h" in r.stdout and "misses the target" in r.stdout


BURST = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
45,ChatGPT,1087,230,1317,Conversation log
5,ChatGPT,472,18,490,Conversation log
60,ChatGPT,300,0,300,Conversation log
118,GPT-4,417,276,693,Conversation log
"""


def test_the_trace_readers_notes_reach_json_and_the_table(tmp_path):
    """What the reader drops (a failed row: Response tokens = 0) or sorts (45 before 5) is said, in --json
    ``notes`` and as a warning line under the table (fleet/traffic.from_trace carries the Trace's notes)."""
    (tmp_path / "b.csv").write_text(BURST)
    (tmp_path / "f.yaml").write_text("traffic: {trace: b.csv}\npools:\n  - {name: p, model: llama-3.1-8b, gpu: "
                                     "h100_sxm, replicas: 1}\nrouter: round-robin\nslo: {ttft_p99_ms: 2000}\n")
    r = CliRunner().invoke(app, ["fleet", str(tmp_path / "f.yaml"), "--json", "--workers", "1"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["requests"] == 3  # 4 rows, the failed one dropped
    assert any("1 failed requests dropped" in n for n in d["notes"])
    assert any("sorted by arrival" in n for n in d["notes"])
    r = CliRunner().invoke(app, ["fleet", str(tmp_path / "f.yaml"), "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "1 failed requests dropped" in r.output and "sorted by arrival" in r.output


def test_a_mooncake_traces_block_size_is_the_readers():
    """The prefix of a Mooncake request is its shared leading hash blocks x the trace's block_tokens (512, from
    the reader's Trace, data/fleet.yaml traces.mooncake), capped at its prompt."""
    from inferbound.fleet.traces import read_trace
    from inferbound.fleet.traffic import from_trace
    trace = Path(__file__).parent / "data" / "traces" / "mooncake_conversation_trace_head100.jsonl"
    spec = parse({"traffic": {"trace": str(trace)}, "router": "round-robin", "slo": {"ttft_p99_ms": 2000},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 1}]})
    tr = read_trace(trace, None)
    arr = from_trace(spec, lambda path, fmt: dataclasses.replace(tr, block_tokens=256))
    ref = from_trace(spec, read_trace)
    # common leading blocks k: prefix = min(k · block, prompt); uncapped at 512 it is k · 512, so k · 256 at 256
    uncapped = [(a, b) for a, b in zip(arr.requests, ref.requests) if 0 < b.prefix_len < b.input_len]
    assert uncapped  # the excerpt has shared prefixes
    assert all(2 * a.prefix_len == b.prefix_len for a, b in uncapped)
