"""MLPerf's Llama-2-70B OpenOrca profile (issue 19): data/datasets.yaml ``mlperf_llama2_70b_openorca`` recomputed
by hand from the shipped per-sample length file (benchmarks/data/mlperf_llama2_70b_openorca_lengths.csv:
openshift-psap/performance-dashboard @ 7cd1065, mlperf-data/summaries/llama2-70b-99.csv, the tok_input_length
column of MLCommons' processed pickle)."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from _scripts import load_benchmark
from inferbound.base.datafiles import data_yaml
from inferbound.workloads.lengths import from_dataset

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "data" / "mlperf_llama2_70b_openorca_lengths.csv"
NAME = "mlperf_llama2_70b_openorca"


def profile() -> dict:
    return data_yaml("datasets.yaml")["datasets"][NAME]


def prompts() -> list[float]:
    with FILE.open(newline="") as f:
        return [float(r["input_length"]) for r in csv.DictReader(f)]


def test_the_copy_is_the_cited_file():
    assert profile()["input_source"] == (
        "https://github.com/openshift-psap/performance-dashboard/blob/7cd1065d1e2c53ee745cbda08e2a8f13a42c93bb/"
        "mlperf-data/summaries/llama2-70b-99.csv")
    i = prompts()
    # the source's first rows as read there: 146,195 / 122,366 / 141,89; 24,576 rows = MLPerf's sample count
    assert i[:3] == [146, 122, 141] and len(i) == 24_576
    assert (ROOT / "benchmarks" / "data" / "LICENSE.performance-dashboard").read_text().lstrip().startswith(
        "Apache License")


def test_prompt_moments_equal_the_file_by_hand():
    """mean = Σx / n, population std = sqrt(Σ(x − mean)² / n), printed to 0.1 token; the output mean stays
    MLPerf's reference 294.45 and its spread unpublished (null)."""
    p, i = profile(), prompts()
    mean = math.fsum(i) / len(i)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in i) / len(i))
    assert p["input_mean"] == pytest.approx(mean, abs=0.05)
    assert p["input_std"] == pytest.approx(std, abs=0.05)
    assert max(i) <= p["input_cap"] == 1024
    assert p["output_mean"] == 294.45 and p["output_std"] is None


def test_classes_are_the_prompts_in_sixteen_equal_parts():
    """24,576 = 16 × 1536: class k holds the prompts of sorted ranks 1536·k .. 1536·k + 1535, share 1/16."""
    rows, i = profile()["classes"], sorted(prompts())
    assert len(rows) == 16
    for k, (share, prompt, output) in enumerate(rows):
        part = i[1536 * k:1536 * (k + 1)]
        assert share == pytest.approx(1 / 16, abs=5e-7)
        assert prompt == pytest.approx(sum(part) / 1536, abs=0.05)
        assert output == 294.45
    assert from_dataset(NAME).mean_input == pytest.approx(profile()["input_mean"], abs=0.1)


def test_the_script_prints_the_profile(capsys):
    load_benchmark("openorca_profile").main(FILE)
    out = capsys.readouterr().out
    p = profile()
    assert f"    input_mean: {p['input_mean']:.1f}\n" in out and f"    input_std: {p['input_std']:.1f}\n" in out
    for w, a, b in p["classes"]:
        assert f"      - [{w:.6f}, {a:.1f}, {b}]\n" in out
