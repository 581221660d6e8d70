"""benchmarks/feature_targets.py: issue 20's targets over the published feature points. The shares, the
wrong-side count and the energy median are checked against hand computations written out here; a small
subset of the real points runs through the predictions."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("feature_targets", ROOT / "benchmarks" / "feature_targets.py")
ft = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ft)


def _r(group, predicted, published, unit="speed-up x"):
    return ft._row(group, "x", "https://example.invalid", predicted, published, unit)


def test_shares_wrong_side_and_energy_median_by_hand():
    rows = [
        # speculative: errors 1.8/1.5 − 1 = +20 %, 1.26/1.8 − 1 = −30 % (1.26 and 1.8 both above 1: the right
        # side), 1.25/1.0 − 1 = +25 % (the band's edge counts), 0.95/1.25 − 1 = −24 %
        _r("speculative", 1.2 * 1.5, 1.5), _r("speculative", 1.26, 1.8), _r("speculative", 1.25, 1.0),
        _r("speculative", 0.76 * 1.25, 1.25),
        # a speed-up predicted below 1 where above 1 was published: 0.9 vs 1.1 -> −18.2 %, within, wrong side
        _r("speculative", 0.9, 1.1),
        # a speculative row that is not a speed-up (tok/s per user) counts in the share, not in the side of 1
        _r("speculative", 0.5, 150.0, "tok_s_per_user"),
        # energy: |errors| 10 %, 30 %, 20 % -> median 20 %; within: 2 of 3
        _r("energy", 1.1, 1.0), _r("energy", 0.7, 1.0), _r("energy", 1.2, 1.0),
    ]
    s = ft.summarize(rows)
    # speculative: within = {+20 %, +25 %, −24 %, −18.2 %} = 4 of 6 (0.5/150 − 1 = −99.7 % is not) = 66.7 % < 70 %
    assert s["groups"]["speculative"]["points"] == 6
    assert s["groups"]["speculative"]["within"] == 4
    assert s["groups"]["speculative"]["share"] == pytest.approx(4 / 6)
    assert not s["groups"]["speculative"]["meets"]
    # wrong side: 0.95 predicted where 1.25 was published ((0.95 − 1)·(1.25 − 1) < 0) and 0.9 vs 1.1; a
    # published 1.0 is neither side of 1: (1.25 − 1)·(1 − 1) = 0 is not counted
    assert s["wrong_side"] == 2
    assert s["groups"]["energy"]["share"] == pytest.approx(2 / 3) and not s["groups"]["energy"]["meets"]
    assert s["energy_median"] == pytest.approx(0.20)


def test_a_published_range_is_scored_at_its_midpoint():
    r = _r("speculative", 1.294, [1.29, 1.30])
    assert r["published"] == pytest.approx(1.295)
    assert r["error"] == pytest.approx(1.294 / 1.295 - 1)


def test_every_point_names_a_url_and_a_published_figure():
    pts = yaml.safe_load((ROOT / "benchmarks" / "data" / "feature_points.yaml").read_text())
    for g in ("speculative", "prefix_caching", "kv_offload"):
        assert pts[g], g
        for p in pts[g]:
            assert p["url"].startswith("https://") and p["quote"] and "published" in p, p["label"]
    for g in ("energy", "disaggregated"):
        assert (ROOT / pts[g]["file"]).exists()


def test_a_small_subset_runs_and_its_rows_are_consistent():
    """The first point of the prefix group: vLLM blog figure 2, "up to X9" with CPU hits. The rate with
    full host hits is the host link's (tests/test_kv_tiers.py): 49.92e9 / (496 · 131,072) = 767.9 prompts/s."""
    rows = ft.collect(("prefix_caching",), limit=1)
    assert len(rows) == 1
    r = rows[0]
    assert r["published"] == 9.0
    assert r["error"] == pytest.approx(r["predicted"] / 9.0 - 1)
    assert r["within"] == (abs(r["predicted"] / 9.0 - 1) <= 0.25)
    s = ft.summarize(rows)
    assert s["groups"]["prefix_caching"]["share"] == (1.0 if r["within"] else 0.0)
    assert s["wrong_side"] is None and s["energy_median"] is None


def test_an_unknown_group_is_one_line_exit_2(capsys):
    assert ft.main(["--groups", "speculativ"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "group='speculativ'" in err and "speculative" in err


def test_a_gpu_hit_ratio_is_above_the_host_hit_ratio_of_the_same_prompt():
    """`hit: gpu` divides the recompute by the GPU-hit TTFT t_g; a host hit is t_g plus its load wait
    (prefix_stream.single_ttft), so on the same model, GPU and prompt miss/t_g ≥ miss/(t_g + wait), and the
    wait is > 0 for a 1,024-token prefix: the GPU ratio must be strictly the larger."""
    dep = {"model": "Qwen/Qwen3-30B-A3B", "gpu": "h20"}
    gpu = ft.stream_rows("prefix_caching", [dict(label="g", url="https://example.invalid", published=1.0,
                                                 deployment=dep, kind="ttft_ratio", hit="gpu", input_len=1024)])
    host = ft.stream_rows("kv_offload", [dict(label="h", url="https://example.invalid", published=1.0,
                                              deployment={**dep, "engine_options": {"kv_offload": "host"}},
                                              kind="ttft_ratio", input_len=1024)])
    assert gpu[0]["unit"] == "TTFT recompute / gpu hit" and host[0]["unit"] == "TTFT recompute / host hit"
    assert gpu[0]["predicted"] > host[0]["predicted"] > 1.0


def test_an_unknown_hit_tier_is_a_one_line_error():
    p = dict(label="x", url="https://example.invalid", published=1.0, kind="ttft_ratio", hit="disk",
             input_len=1024, deployment={"model": "Qwen/Qwen3-30B-A3B", "gpu": "h20"})
    with pytest.raises(ValueError, match=r"hit='disk' .*allowed: host, gpu"):
        ft.stream_rows("prefix_caching", [p])
