"""InferenceX's closed-loop DeepSeek-R1 sweeps (benchmarks/data/measured_inferencex.csv, written by
benchmarks/inferencex_import.py from a snapshot of the InferenceX benchmarks API; scored by
benchmarks/accuracy_report.py, never fitted on): every row is read by the validation reader, names its
GitHub Actions run, and states its closed loop (a concurrency and the client's prompt count).

Spot check written out from the snapshot (vngcloud/InferenceX-app @ 7fe6d62,
packages/app/cypress/fixtures/api/benchmarks.json; the entry of run 26306422380, 2026-05-22): 8x B300, SGLang
v0.5.12, DeepSeek-R1-0528 FP8, TP 8, EP 1, ISL/OSL 1024/1024 at range ratio 0.8, 16 clients: mean_ttft
0.312315 s, mean_tpot 0.0123518 s, mean_e2el 11.6180 s, output_tput_per_gpu 154.312 tok/s; the client's
lengths are uniform integers in [819, 1024], mean 921.5; 160 prompts (16 x 10).
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from inferbound.validation import read_csv

FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "measured_inferencex.csv"


@pytest.fixture(scope="module")
def rows():
    parsed, unreadable = read_csv(FILE)
    assert unreadable == []
    return parsed


def test_every_row_reads_and_states_its_closed_loop(rows):
    with FILE.open(newline="") as f:
        raw = list(csv.DictReader(f))
    assert len(rows) == len(raw) > 600
    for r in raw:
        assert r["source_url"].startswith("https://github.com/SemiAnalysisAI/InferenceX/actions/runs/"), r["case"]
    for r in rows:
        assert r.scenario == "serving" and r.concurrency >= 1 and r.num_requests >= r.concurrency, r.case
        assert r.value > 0


def test_spot_check_against_the_snapshot(rows):
    hit = {r.metric: r for r in rows if r.gpu == "b300_hgx" and r.tp == 8 and r.concurrency == 16
           and r.engine_version == "0.5.12" and r.model == "deepseek-ai/DeepSeek-R1-0528"
           and r.input_len == 921.5 and r.output_len == 921.5 and (r.ep in (None, 1))}
    assert hit["ttft_ms"].value == pytest.approx(312.315, rel=1e-5)
    assert hit["tpot_ms"].value == pytest.approx(12.3518, rel=1e-5)
    assert hit["e2e_ms"].value == pytest.approx(11618.0, rel=1e-4)
    assert hit["output_tok_s_per_gpu"].value == pytest.approx(154.312, rel=1e-5)
    assert hit["ttft_ms"].num_requests == 160
    assert (819 + 1024) / 2 == 921.5


def test_every_row_carries_its_client_command(rows):
    """The client's own command line (validate replays it: validation/replayed.py) states the row's concurrency and
    prompt count."""
    from inferbound.bench.load import parse_load
    seen = {}
    for r in rows:
        if r.bench_command in seen:
            continue
        p = seen[r.bench_command] = parse_load(r.bench_command)
        assert p.max_concurrency == r.concurrency and p.inputs.size == r.num_requests, r.case


def test_a_stated_mean_agrees_with_a_draw_within_its_sampling_error():
    """validation/replayed._agree: 1 % + 1 token, or 3 standard errors of the draw's mean. 40 draws uniform on
    [6553, 8192]: std 1639/sqrt(12) = 473.2, SE 74.8, 3 SE = 224.5 tokens; so 7262 against 7372.5 agrees, 7100 does
    not."""
    import numpy as np
    from inferbound.validation.replayed import _agree
    rng = np.random.default_rng(0)
    draw = rng.integers(6553, 8193, 40).astype(float)
    draw += 7262.0 - draw.mean()
    _agree("output_len", 7372.5, draw)
    with pytest.raises(ValueError, match="output_len=7372.5 disagrees"):
        _agree("output_len", 7372.5, draw - 162.0)
