"""fleet/plot.py: the day's PNG from a small --json-shaped dict (written here by hand)."""
from __future__ import annotations

import pytest

from inferbound.fleet.plot import _series, _title, plot_day


def _day(replicas):
    return {"requests": 9, "slo_attainment": 0.8889, "gpu_hours": 1.5, "cost_usd": 0.45,
            "pools": [{"name": "h100"}, {"name": "a100"}],
            "series": {"t_min": [0, 1, 2], "arrivals": [3, 4, 2], "queue": [0, 2, 1], "replicas": replicas,
                       "attainment": [1.0, 0.75, None]}}


@pytest.mark.parametrize("replicas", [{"h100": [2, 2, 3], "a100": [2, 2, 2]}, [4, 4, 5]])
def test_png_written(tmp_path, replicas):
    out = tmp_path / "day.png"
    plot_day(_day(replicas), out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_series_read_defensively():
    s = _series(_day({"h100": [2, 2, 3], "a100": [2, 2, 2]}))
    assert s["t"].tolist() == [0.0, 1.0, 2.0] and sorted(s["replicas"]) == ["a100", "h100"]
    assert s["attainment"][1] == 0.75 and s["attainment"][2] != s["attainment"][2]  # None -> NaN (a gap)
    # 0.8889 -> 88.9 %; the title names the pools and the figures
    assert _title(_day([1, 1, 1])) == "fleet of 2 pools (h100, a100): 9 requests, SLO attainment 88.9 %, " \
                                     "1.5 GPU-hours, $0.45"


def test_bad_dicts_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"^plot: the result has no 'series' mapping"):
        plot_day({"requests": 1}, tmp_path / "x.png")
    bad = _day([1, 1])  # two values for three minutes
    with pytest.raises(ValueError, match=r"^plot: series.replicas has 2 values, series.t_min has 3"):
        plot_day(bad, tmp_path / "x.png")
    gone = _day([1, 1, 1])
    del gone["series"]["queue"]
    with pytest.raises(ValueError, match=r"^plot: series.queue is missing"):
        plot_day(gone, tmp_path / "x.png")
    with pytest.raises(ValueError, match=r"must end in .png"):
        plot_day(_day([1, 1, 1]), tmp_path / "x.jpg")
