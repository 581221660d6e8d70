"""The measured ShareGPT length profile (issue 21, item 6): data/datasets.yaml ``sharegpt_8k_sarathi`` is
recomputed here from the shipped copy of Sarathi-Serve's per-request file
(benchmarks/data/sharegpt_8k_sarathi.csv: microsoft/sarathi-serve @ 72339db, data/processed_traces/
sharegpt_8k_filtered_stats_llama2_tokenizer.csv, Llama-2 tokenizer, prompt + output <= 8192)."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _scripts import load_benchmark
from inferbound.base.datafiles import data_yaml
from inferbound.cli import app
from inferbound.workloads.lengths import dataset_names, from_dataset

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "data" / "sharegpt_8k_sarathi.csv"
NAME = "sharegpt_8k_sarathi"


def profile() -> dict:
    return data_yaml("datasets.yaml")["datasets"][NAME]


def lengths() -> tuple[list[float], list[float]]:
    with FILE.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return [float(r["num_prefill_tokens"]) for r in rows], [float(r["num_decode_tokens"]) for r in rows]


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_copy_is_the_cited_file():
    p = profile()
    assert p["source"] == ("https://github.com/microsoft/sarathi-serve/blob/72339db5b120614033b317880ad3a05a5e4c9415/"
                           "data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv")
    i, o = lengths()
    # the source's first rows as read there: 74,918 / 290,905 / 1402,711 / 2497,918 (its total column: 992,
    # 1195, 2113, 3415), and 30,731 rows below its header
    assert list(zip(i[:4], o[:4])) == [(74, 918), (290, 905), (1402, 711), (2497, 918)]
    assert [a + b for a, b in zip(i[:4], o[:4])] == [992, 1195, 2113, 3415]
    assert len(i) == 30_731
    assert (ROOT / "benchmarks" / "data" / "LICENSE.sarathi-serve").read_text().lstrip().startswith("Apache License")


def test_moments_equal_the_file_by_hand():
    """mean = Σx / n, population std = sqrt(Σ(x − mean)² / n), each printed in the profile to 0.1 token."""
    p = profile()
    i, o = lengths()
    n = len(i)
    for xs, mean_key, std_key in ((i, "input_mean", "input_std"), (o, "output_mean", "output_std")):
        mean = math.fsum(xs) / n
        std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / n)
        assert p[mean_key] == pytest.approx(mean, abs=0.05), mean_key
        assert p[std_key] == pytest.approx(std, abs=0.05), std_key
    # the file's caps: prompt + output never over 8192, outputs never over 1024
    assert max(a + b for a, b in zip(i, o)) <= p["total_cap"] == 8192 and max(o) == 1024


def test_classes_equal_the_file_grouped_by_hand():
    """16 equal-count classes by (output, prompt): 30,731 = 16 × 1920 + 11, so the first 11 classes hold
    1921 requests (share 1921 / 30,731 = 0.062510) and the last 5 hold 1920 (0.062478)."""
    rows = profile()["classes"]
    i, o = lengths()
    pairs = sorted(zip(o, i))
    sizes = [1921] * 11 + [1920] * 5
    assert sum(sizes) == len(pairs)
    start = 0
    for row, size in zip(rows, sizes, strict=True):
        part = pairs[start:start + size]
        start += size
        assert row[0] == pytest.approx(size / 30_731, abs=5e-7)
        assert row[1] == pytest.approx(sum(b for _, b in part) / size, abs=0.05)  # mean prompt
        assert row[2] == pytest.approx(sum(a for a, _ in part) / size, abs=0.05)  # mean output
    mix = from_dataset(NAME)
    assert mix.mean_input == pytest.approx(profile()["input_mean"], abs=0.1)
    assert mix.mean_output == pytest.approx(profile()["output_mean"], abs=0.1)


def test_the_script_prints_the_profile(capsys):
    load_benchmark("sharegpt_profile").main(FILE)
    out = capsys.readouterr().out
    p = profile()
    for key in ("input_mean", "output_mean", "input_std", "output_std"):
        assert f"    {key}: {p[key]:.1f}\n" in out
    for w, a, b in p["classes"]:
        assert f"      - [{w:.6f}, {a:.1f}, {b:.1f}]\n" in out


def test_offered_and_modelled_without_the_no_spread_note():
    assert NAME in dataset_names()
    mix = from_dataset("ShareGPT_8k_Sarathi")  # any case
    assert len(mix.weights) == 16 and not mix.notes
    r = run("estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--dataset", NAME)
    assert r.exit_code == 0, r.output
    assert "spread of its lengths is not published" not in r.output


def test_simulate_draws_a_spread():
    n = 40
    r = run("simulate", "llama-3.1-8b", "--dataset", NAME, "--requests", str(n), "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    notes = " ".join(got.get("notes") or [])
    assert "normal(mean, std)" in notes and "not published" not in notes
    # at the means every request would carry round(2340.0) prompt and round(438.7) output tokens
    assert got["input_tokens"] != n * 2340 and got["output_tokens"] != n * 439


def test_vllm_sharegpt_keeps_its_honest_note():
    """The first-turn vLLM profile has no published spread (its comment lists what was searched)."""
    p = data_yaml("datasets.yaml")["datasets"]["sharegpt"]
    assert p["input_std"] is None and p["output_std"] is None
    assert any("not published" in n for n in from_dataset("sharegpt").notes)
