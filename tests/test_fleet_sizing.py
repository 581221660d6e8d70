"""--size-for-slo: the fewest replicas meeting the SLO at the attainment, with one fewer missing it, and the
cost per day from the catalog's price."""
from __future__ import annotations

import pytest

from inferbound.fleet import parse, size_for_slo
from inferbound.hardware import get_gpu


def _spec(pools):
    # 1-token requests of 2048 prompt tokens, one at a time per replica: service S ≈ 44 ms on an H100, so
    # 40 req/s need λS ≈ 1.7 busy replicas: at least 2 (an H100 replica cannot serve 40/s alone)
    return parse({"traffic": {"rate": {"mean": 40.0}, "duration": 30, "input_len": 2048, "output_len": 1},
                  "router": "least-outstanding", "slo": {"ttft_p99_ms": 150},
                  "pools": [{"model": "llama-3.1-8b", "replicas": 1, "max_num_seqs": 1, **p} for p in pools]})


def test_one_pool_fewest_replicas_and_one_fewer_misses():
    a = size_for_slo(_spec([{"name": "h", "gpu": "h100_sxm"}]), 0.95, workers=1)
    n = a["replicas"]["h"]
    assert n >= 2 and a["slo_attainment"] >= 0.95
    (fewer,) = a["fewer"]
    assert fewer["replicas"] == {"h": n - 1} and fewer["slo_attainment"] < 0.95
    price = get_gpu("h100_sxm").price_per_hour  # $/GPU-hour, one GPU per replica, 24 h
    assert a["cost_per_day_usd"] == pytest.approx(n * price * 24)


def test_two_pools_cheapest_mix_and_each_one_fewer_misses():
    a = size_for_slo(_spec([{"name": "h", "gpu": "h100_sxm"}, {"name": "a", "gpu": "a100_80gb_sxm"}]), 0.95, workers=1)
    mix = a["replicas"]
    assert a["slo_attainment"] >= 0.95 and sum(mix.values()) >= 2
    cost = mix["h"] * get_gpu("h100_sxm").price_per_hour * 24 + mix["a"] * get_gpu("a100_80gb_sxm").price_per_hour * 24
    assert a["cost_per_day_usd"] == pytest.approx(cost)
    assert len(a["fewer"]) == sum(1 for v in mix.values() if v > 0)
    for f in a["fewer"]:
        assert f["slo_attainment"] is None or f["slo_attainment"] < 0.95
        assert f["cost_per_day_usd"] < a["cost_per_day_usd"]
