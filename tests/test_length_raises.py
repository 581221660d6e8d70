"""Lengths raised to a floor are said, not done silently: the estimate's length mix (workloads/lengths.py
from_spec, from_row_moments: prompts below 1 to 1, outputs below 2 to 2) and the fleet's drawn traffic
(fleet/traffic.py: draws below 1 set to 1, in the words simulate uses). The shares are worked by hand from
the normal CDF Φ; a count of N = 20,000 draws is binomial, so it must lie within 4σ = 4·√(p(1−p)/N)."""
from __future__ import annotations

import math
import re

from inferbound.fleet.spec import parse
from inferbound.fleet.traffic import generate
from inferbound.workloads.lengths import SAMPLE, from_row_moments, from_spec


def phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def _count(notes, what: str) -> tuple[int, int]:
    hits = [m for n in notes if (m := re.match(rf"(\d+) of (\d+) {what} lengths", n))]
    assert len(hits) == 1, notes
    return int(hits[0].group(1)), int(hits[0].group(2))


def _near(k: int, n: int, p: float):
    assert abs(k / n - p) < 4 * math.sqrt(p * (1 - p) / n), (k, n, p)


def test_from_spec_notes_the_prompts_raised_to_1_and_outputs_raised_to_2():
    # prompt normal(0, 1) rounded: below 1 when the draw is < 0.5, p = Φ(0.5) = 0.6915
    # output uniform 1..4 (integers): below 2 only at 1, p = 1/4
    mix = from_spec(100, 100, "normal:0:1", "uniform:1:4")
    k, n = _count(mix.notes, "prompt")
    assert n == SAMPLE == 20_000
    _near(k, n, phi(0.5))
    k, n = _count(mix.notes, "output")
    _near(k, n, 0.25)
    assert any("set to 2" in x and "output_dist=uniform:1:4" in x for x in mix.notes)
    # after the raise: prompts all 1 or more, outputs 2, 2, 3, 4 → mean (2 + 2 + 3 + 4)/4 = 2.75 (σ ≈ 0.006)
    assert min(mix.inputs) >= 1 and abs(mix.mean_output - 2.75) < 0.03


def test_from_spec_without_a_raise_has_no_note():
    assert from_spec(100, 100, "uniform:10:20", "uniform:5:9").notes == ()


def test_from_row_moments_notes_its_raises():
    # the Azure code 2023 moments: output normal(27.9, 59.9) rounded is below 2 when the draw is < 1.5,
    # p = Φ((1.5 − 27.9)/59.9) = Φ(−0.4407) = 0.3297; prompt normal(2047.8, 1973.8) below 1 when < 0.5,
    # p = Φ((0.5 − 2047.8)/1973.8) = Φ(−1.0372) = 0.1498
    mix = from_row_moments(2047.8, 27.9, 1973.8, 59.9)
    assert abs(phi((1.5 - 27.9) / 59.9) - 0.3297) < 1e-4 and abs(phi((0.5 - 2047.8) / 1973.8) - 0.1498) < 1e-4
    _near(*_count(mix.notes, "output"), 0.3297)
    _near(*_count(mix.notes, "prompt"), 0.1498)
    assert from_row_moments(1000, 500, 10, 10).notes == ()  # 100σ above the floors: nothing raised


POOL = {"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm"}


def test_fleet_traffic_notes_the_lengths_drawn_below_1():
    # traffic.dataset azure_code_2023 draws normal lengths from its published moments; a rounded draw is
    # below 1 when < 0.5: outputs p = Φ((0.5 − 27.9)/59.9) = Φ(−0.4574) = 0.3237, prompts p = 0.1498 (above)
    spec = parse({"traffic": {"rate": {"mean": 5}, "duration": 2000, "dataset": "azure_code_2023"},
                  "pools": [POOL], "seed": 1})
    arr = generate(spec)
    k, n = _count(arr.notes, "output")
    assert n == len(arr) and any("were set to 1 (output_dist=normal:27.9:59.9)" in x for x in arr.notes)
    _near(k, n, phi((0.5 - 27.9) / 59.9))
    _near(*_count(arr.notes, "prompt"), phi((0.5 - 2047.8) / 1973.8))
    # fixed lengths draw nothing below 1: no note
    fixed = parse({"traffic": {"rate": {"mean": 3}, "duration": 100, "input_len": 10, "output_len": 5}, "pools": [POOL]})
    assert not [x for x in generate(fixed).notes if "drawn below 1" in x]
