"""ShareGPT's first turns under vLLM's filter, from the shipped Sarathi-Serve file (benchmarks/sharegpt_profile.py
``--first-turns``): the rule worked by hand, the file counted by a plain loop, and the verdict the README and
datasets.yaml state (not shipped as the ``sharegpt`` profile's classes: the means are too far from the published)."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from _scripts import load_benchmark
from inferbound.base.datafiles import data_yaml

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "data" / "sharegpt_8k_sarathi.csv"
SCRIPT = load_benchmark("sharegpt_profile")


def test_the_rule_by_hand():
    #            prompt, output   previous prompt + output   first turn?   vLLM's filter (>=4, <=1024, <=2048)
    rows = [(10, 20),   # -                         yes (row 0)   kept
            (35, 5),    # 30                        no (35 >= 30)
            (3, 50),    # 40                        yes           prompt 3 < 4: dropped
            (20, 600),  # 53                        yes           kept
            (1200, 10),  # 620                      no (1200 >= 620)
            (1100, 5),   # 1210                     yes           prompt 1100 > 1024: dropped
            (900, 1200),  # 1105                    yes           total 2100 > 2048: dropped
            (8, 3),      # 2100                     yes           output 3 < 4: dropped
            (11, 30)]    # 11                       no (11 >= 11)
    i = np.array([a for a, _ in rows], dtype=float)
    o = np.array([b for _, b in rows], dtype=float)
    first = SCRIPT.first_turns(i, o)
    assert first.tolist() == [True, False, True, True, False, True, True, True, False]
    kept = SCRIPT.vllm_valid(i[first], o[first], 1024, 2048)
    assert kept.tolist() == [True, False, True, False, False, False]
    c = SCRIPT.first_turn_check(i, o, {"input_mean": 15.0, "output_mean": 310.0, "input_cap": 1024,
                                       "total_cap": 2048})
    # kept: (10, 20) and (20, 600): means 15 in / 310 out, exactly the "published" ones here
    assert (c["first_turns"], c["kept"]) == (6, 2)
    assert c["input_mean"] == 15.0 and c["output_mean"] == 310.0 and c["plausible"]
    # against 30 in / 310 out the prompts are 15 / 30 − 1 = −50 % off: beyond 25 %, not plausible
    assert not SCRIPT.first_turn_check(i, o, {"input_mean": 30.0, "output_mean": 310.0, "input_cap": 1024,
                                              "total_cap": 2048})["plausible"]


def test_the_file_counted_by_a_loop():
    with FILE.open(newline="") as f:
        pairs = [(float(r["num_prefill_tokens"]), float(r["num_decode_tokens"])) for r in csv.DictReader(f)]
    firsts = [p for k, p in enumerate(pairs) if k == 0 or p[0] < pairs[k - 1][0] + pairs[k - 1][1]]
    kept = [(a, b) for a, b in firsts if a >= 4 and b >= 4 and a <= 1024 and a + b <= 2048]
    pub = data_yaml("datasets.yaml")["datasets"]["sharegpt"]
    i, o = SCRIPT.read(FILE)
    c = SCRIPT.first_turn_check(i, o, pub)
    assert (c["first_turns"], c["kept"]) == (len(firsts), len(kept))
    mean_in, mean_out = sum(a for a, _ in kept) / len(kept), sum(b for _, b in kept) / len(kept)
    assert c["input_mean"] == pytest.approx(mean_in) and c["output_mean"] == pytest.approx(mean_out)
    # the verdict: prompts far shorter and outputs far longer than vLLM's 229.7 / 203.1, beyond 25 % each way
    assert mean_in / 229.7 - 1 < -0.25 and mean_out / 203.1 - 1 > 0.25 and not c["plausible"]
    # ... so the profile stays one class at its published means, and the README row gives the figures
    assert not pub.get("classes") and pub["input_std"] is None
    readme = (ROOT / "benchmarks" / "data" / "README.md").read_text()
    assert f"{mean_in:.1f} in / {mean_out:.1f} out" in readme and f"{len(kept):,}" in readme


def test_the_script_prints_the_verdict(capsys):
    SCRIPT.main_first_turns(FILE)
    out = capsys.readouterr().out
    assert "published 229.7 / 203.1" in out and "plausible (both means within 25 %): no" in out
