"""A normal length draw below 1 is set to 1 and said, never silently (workloads/requests.py): the count is in
the simulation's notes, printed by ``simulate`` and in ``--json``."""
from __future__ import annotations

import json
import math

import numpy as np
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.workloads.requests import draw_lengths, draw_lengths_raised, poisson, poisson_noted


def _phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def test_the_count_is_the_draws_that_round_below_one():
    # by hand, from the same generator: normal(10, 10) draws, rounded; those < 1 (raw < 0.5) are raised
    raw = np.rint(np.random.default_rng(3).normal(10, 10, 5000))
    want = int((raw < 1).sum())
    got, k = draw_lengths_raised("normal:10:10", 7, 5000, np.random.default_rng(3), "input")
    assert k == want and k > 0
    assert got.min() == 1 and int((got == 1).sum()) == want + int((raw == 1).sum())
    assert np.array_equal(got[raw >= 1], raw[raw >= 1])  # the others are untouched
    # the share is P(x < 0.5) = Φ((0.5 - 10)/10) = Φ(-0.95) = 0.1711; binomial sd sqrt(p(1-p)/n) = 0.0053
    assert abs(k / 5000 - _phi(-0.95)) < 4 * math.sqrt(0.1711 * 0.8289 / 5000)
    # draw_lengths is the same draw
    assert np.array_equal(draw_lengths("normal:10:10", 7, 5000, np.random.default_rng(3), "input"), got)


def test_no_note_when_no_draw_is_raised():
    assert draw_lengths_raised("normal:1000:10", 7, 1000, np.random.default_rng(0), "input")[1] == 0
    assert draw_lengths_raised(None, 7, 10, np.random.default_rng(0), "input")[1] == 0
    assert draw_lengths_raised("uniform:1:3", 7, 10, np.random.default_rng(0), "input")[1] == 0
    reqs, notes = poisson_noted(1.0, 50, 100, 20, 0, "normal:1000:10", "normal:100:5")
    assert notes == [] and reqs == poisson(1.0, 50, 100, 20, 0, "normal:1000:10", "normal:100:5")


def test_poisson_notes_name_the_count_the_total_and_the_spec():
    n, seed = 400, 5
    reqs, notes = poisson_noted(2.0, n, 100, 20, seed, "normal:5:20", "normal:50:1")
    # by hand, in the module's draw order: n gaps, then n input lengths, then n output lengths
    rng = np.random.default_rng(seed)
    rng.exponential(0.5, size=n)
    k = int((np.rint(rng.normal(5, 20, n)) < 1).sum())
    assert k > 0
    assert notes == [f"{k} of {n} prompt lengths drawn below 1 were set to 1 (input_dist=normal:5:20)"]
    assert min(r.input_len for r in reqs) == 1


def test_simulate_prints_the_raised_count_for_sharegpt_8k():
    args = ["simulate", "llama-3.1-8b", "--gpu", "h100_sxm", "--dataset", "sharegpt_8k_sarathi",
            "--requests", "200", "--rate", "2"]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    notes = json.loads(r.output)["notes"]
    line = next(n for n in notes if "prompt lengths drawn below 1" in n)
    k, n = int(line.split()[0]), int(line.split()[2])
    assert n == 200
    # expected share Φ((0.5 - 2340)/2088.8) = Φ(-1.120) = 0.131, i.e. 26 of 200; sd sqrt(200·0.131·0.869) = 4.8
    assert abs(k - 200 * _phi((0.5 - 2340) / 2088.8)) < 4 * 4.8
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert f"note: {line}" in " ".join(text.output.split())
