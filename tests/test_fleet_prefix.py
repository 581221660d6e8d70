"""Pool prefix options (shared_prefix_len, prefix_groups, prefix_hit_rate) become request prefixes as in
``simulate`` (fleet/traffic.with_pool_prefixes): hits counted by hand for round-robin and prefix-affinity,
one replica equals ``simulate``, pools that disagree are an error, the traffic's own prefixes win."""
from __future__ import annotations

import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.fleet import build, parse, run_fleet
from inferbound.fleet.run import arrivals_of
from inferbound.sim import simulate


def _spec(router="round-robin", replicas=4, pools=None, **traffic):
    pool = {"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": replicas,
            "shared_prefix_len": 512, "prefix_groups": 4}
    return parse({"traffic": {"rate": {"mean": 4.0}, "duration": 60, "input_len": 1024, "output_len": 32, **traffic},
                  "router": router, "slo": {"ttft_p99_ms": 500}, "pools": pools or [pool]})


@pytest.mark.parametrize("router, misses", [("round-robin", 4 * 4), ("prefix-affinity", 4)])
def test_hits_by_hand(router, misses):
    """1024-token prompts of which 512 (32 whole 16-token blocks) are one of G = 4 system prompts; sparse
    arrivals (4/s, a prefill of ~15 ms), so a prefix is cached before the next request that shares it arrives.
    Every request hits its 512 tokens but the first of its group on each replica: round-robin spreads each
    group over all R = 4 replicas (R·G = 16 misses), prefix-affinity keeps a group on one (G = 4 misses).
    hit rate = 512 · (n − misses) / (1024 · n)."""
    d = build(run_fleet(_spec(router), workers=1))
    n = d["requests"]
    assert d["prefix_hit_rate"] == pytest.approx(512 * (n - misses) / (1024 * n), rel=1e-12)
    assert any("512 shared tokens in 4 group(s)" in x for x in d["notes"])


def test_one_replica_equals_simulate_with_the_same_prefix_options():
    spec = _spec(replicas=1)
    fr = run_fleet(spec, workers=1, steps=True)
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm",
                          engine_options={"shared_prefix_len": 512, "prefix_groups": 4})
    sim = simulate(dep, trace=list(arrivals_of(spec).requests), slo_ttft_ms=500)  # they name no prefix
    d = build(fr)
    assert d["prefix_hit_rate"] == sim.summary["prefix_hit_rate"] > 0
    assert d["ttft_ms_p99"] == sim.summary["ttft_ms_p99"] and d["e2e_ms_p50"] == sim.summary["e2e_ms_p50"]


def test_pools_stating_different_prefixes_are_an_error():
    pools = [{"name": "a", "model": "llama-3.1-8b", "gpu": "h100_sxm", "shared_prefix_len": 512},
             {"name": "b", "model": "llama-3.1-8b", "gpu": "h100_sxm", "shared_prefix_len": 256}]
    with pytest.raises(ValueError, match=r"pools\[b\].*differ from pools\[a\]"):
        run_fleet(_spec(pools=pools), workers=1)


def test_an_option_given_twice_with_two_values_is_an_error():
    pools = [{"name": "a", "model": "llama-3.1-8b", "gpu": "h100_sxm", "shared_prefix_len": 512,
              "engine_options": {"shared_prefix_len": 256}}]
    with pytest.raises(ValueError, match=r"pools\[a\].shared_prefix_len=512: engine_options.shared_prefix_len=256"):
        run_fleet(_spec(pools=pools), workers=1)
