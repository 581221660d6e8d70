"""Every backend gives the same numbers bit for bit: this process, forked workers, Ray actors."""
from __future__ import annotations

import json

import pytest

from inferbound.fleet import build, parse, run_fleet

SPEC = {"traffic": {"rate": {"mean": 10.0, "peak_to_mean": 1.5, "period": 60}, "duration": 30,
                    "input_len": 512, "output_len": 64},
        "slo": {"ttft_p99_ms": 300, "tpot_p99_ms": 30},
        "pools": [{"name": "h", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 2},
                  {"name": "a", "model": "llama-3.1-8b", "gpu": "a100_80gb_sxm", "replicas": 1}]}


def _json(router, **backend):
    return json.dumps(build(run_fleet(parse({**SPEC, "router": router, "router_refresh": 0.5}), **backend)),
                      sort_keys=True)


@pytest.mark.parametrize("router", ["round-robin", "least-outstanding"])
def test_forked_workers_equal_one_process(router):
    assert _json(router, workers=2) == _json(router, workers=1)


@pytest.mark.slow
def test_ray_equals_one_process():
    assert _json("least-outstanding", backend="ray", workers=2) == _json("least-outstanding", workers=1)


def test_unknown_backend_is_a_one_line_error():
    with pytest.raises(ValueError, match="backend='dask' unknown; allowed: local, ray"):
        _json("round-robin", backend="dask")
