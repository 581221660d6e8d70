"""POST /api/fleet (web/routes_fleet.py): the fleet file as JSON or YAML text, 422 at the bad key's path, the caps."""
from __future__ import annotations

import warnings

import pytest

from inferbound.fleet import fleet
from inferbound.web.app import create_app

with warnings.catch_warnings():  # starlette's TestClient warns about httpx; not ours to fix
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

SMALL = {"traffic": {"rate": {"mean": 2, "peak_to_mean": 1.0, "period": "24h"}, "duration": "30s",
                     "input_len": 200, "output_len": 50},
         "pools": [{"name": "h100", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 1}],
         "router": "round-robin", "slo": {"ttft_p99_ms": 2000}}
SMALL_YAML = """traffic: {rate: {mean: 2, peak_to_mean: 1.0, period: 24h}, duration: 30s, input_len: 200, output_len: 50}
pools:
  - {name: h100, model: llama-3.1-8b, gpu: h100_sxm, replicas: 1}
router: round-robin
slo: {ttft_p99_ms: 2000}
"""


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def _err(r):
    assert r.status_code == 422, r.text
    (d,) = r.json()["detail"]
    return d["loc"], d["msg"]


def test_result_is_the_fleets_json_from_a_mapping_and_from_yaml(client):
    r = client.post("/api/fleet", json={"fleet": SMALL})
    assert r.status_code == 200, r.text
    got = r.json()["result"]
    want = fleet(SMALL, workers=1)
    # a Poisson stream at 2/s over 30 s: the requests the Python API draws for the same seed
    assert got["requests"] == want["requests"] and got["requests"] > 0
    assert got["slo_attainment"] == want["slo_attainment"] and got["ttft_ms_p99"] == want["ttft_ms_p99"]
    assert got["series"]["arrivals"] == want["series"]["arrivals"]
    assert sum(p["requests"] for p in got["pools"]) == got["requests"]
    y = client.post("/api/fleet", json={"yaml": SMALL_YAML})
    assert y.status_code == 200 and y.json()["result"]["requests"] == got["requests"]


def test_bad_keys_are_422_at_their_path(client):
    bad = {**SMALL, "traffic": {**SMALL["traffic"], "rate": {"mean": -1, "peak_to_mean": 1, "period": "24h"}}}
    loc, msg = _err(client.post("/api/fleet", json={"fleet": bad}))
    assert loc == ["body", "fleet", "traffic", "rate", "mean"] and "traffic.rate.mean=-1" in msg
    loc, msg = _err(client.post("/api/fleet", json={"fleet": {**SMALL, "router": "random"}}))
    assert loc == ["body", "fleet", "router"] and "allowed:" in msg
    loc, msg = _err(client.post("/api/fleet", json={"yaml": "traffic: [1"}))
    assert loc == ["body", "yaml"] and msg.startswith("not YAML")
    loc, msg = _err(client.post("/api/fleet", json={"fleet": SMALL, "yaml": SMALL_YAML}))
    assert "exactly one of fleet" in msg


def test_pool_errors_from_the_run_point_at_the_pool(client):
    bad = {**SMALL, "pools": [{"name": "h100", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 1, "tp": 3}]}
    loc, msg = _err(client.post("/api/fleet", json={"fleet": bad}))
    assert loc == ["body", "fleet", "pools", 0, "tp"] and "tp=3" in msg


def test_caps(client):
    loc, msg = _err(client.post("/api/fleet", json={"fleet": {**SMALL, "traffic": {"trace": "/etc/passwd"}}}))
    assert loc == ["body", "fleet", "traffic", "trace"] and "reads no files of the server" in msg
    # peak rate 2/s x 86400 s = 172,800 requests > the 20,000 cap
    day = {**SMALL, "traffic": {**SMALL["traffic"], "duration": "24h"}}
    loc, msg = _err(client.post("/api/fleet", json={"fleet": day}))
    assert loc == ["body", "fleet", "traffic", "duration"] and msg.startswith("up to 172,800 requests")
    many = {**SMALL, "pools": [{**SMALL["pools"][0], "replicas": 65}]}
    loc, msg = _err(client.post("/api/fleet", json={"fleet": many}))
    assert loc == ["body", "fleet", "pools"] and "up to 65 replicas" in msg


def test_past_the_work_budget_the_run_is_ended_with_422():
    # a budget no run can meet (the first progress report comes after the replicas are built): the
    # 30 s of traffic of SMALL takes well under 0.05 s once decode runs are priced in one call
    slow = TestClient(create_app(work_seconds=1e-6))
    loc, msg = _err(slow.post("/api/fleet", json={"fleet": SMALL}))
    assert loc == ["body", "fleet"] and "stopped after 1e-06 s of work" in msg
