"""The autoscaler's rule (HPA: desired = ceil(current · metric / target), tolerance, scale-up cap, scale-down
stabilization) by hand, and a fleet that scales up under a burst (paying the startup) and drains after it."""
from __future__ import annotations

import math

import pytest

from inferbound.fleet import build, parse, run_fleet
from inferbound.fleet.autoscale import Scaler, metric_value
from inferbound.fleet.spec import Autoscale


def _scaler(**kw):
    return Scaler(Autoscale(**{"metric": "queue", "target": 2.0, "min": 1, "max": 10, "interval": 60, **kw}))


def test_desired_is_ceil_of_current_times_metric_over_target():
    s = _scaler()
    # 2 replicas, 5 waiting per replica, target 2: ceil(2 * 5/2) = 5; cap max(2*2, 2+4) = 6 does not bind
    assert s.desired(60, 2, 5.0) == 5
    # within the 10 % tolerance (2.15 / 2 = 1.075): unchanged
    assert _scaler().desired(60, 3, 2.15) == 3


def test_scale_up_is_capped_at_double_or_plus_four():
    # 1 replica, metric 20, target 2: ceil(1 * 10) = 10, capped at max(ceil(1*2), 1+4) = 5
    assert _scaler().desired(60, 1, 20.0) == 5


def test_scale_down_waits_out_the_stabilization_window():
    s = _scaler()
    assert s.desired(60, 4, 2.0) == 4  # at target: recommendation 4
    # metric 0.5: ceil(4 * 0.25) = 1, but the highest recommendation of the last 300 s is 4: stays 4
    assert s.desired(120, 4, 0.5) == 4
    # 300 s after the last recommendation of 4 (t = 60) it has left the window: 1 (the highest left)
    assert s.desired(361, 4, 0.5) == 1


def test_bounds_and_missing_metric():
    assert _scaler(max=3).desired(60, 2, 50.0) == 3
    assert _scaler(min=2).desired(60, 2, None) == 2
    assert metric_value("ttft", [(0, 0, 0.1, [])]) is None
    # queue: mean waiting of the ready replicas (3 + 1) / 2 = 2; kv: (0.5 + 0.25) / 2
    states = [(5, 3, 0.5, [0.1]), (1, 1, 0.25, [0.3])]
    assert metric_value("queue", states) == 2.0 and metric_value("kv", states) == 0.375
    # ttft: p99 of [100, 300] ms by linear interpolation: 100 + 0.99 * 200 = 298
    assert metric_value("ttft", states) == pytest.approx(298.0)


def test_a_fleet_scales_up_pays_startup_and_drains():
    spec = parse({"traffic": {"rate": {"mean": 30.0, "peak_to_mean": 2.0, "period": 240}, "duration": 240,
                              "input_len": 2048, "output_len": 64},
                  "router": "round-robin", "slo": {"ttft_p99_ms": 500},
                  "autoscale": {"metric": "queue", "target": 1, "min": 1, "max": 6, "interval": 20, "startup": 30},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 1,
                             "max_num_seqs": 4}]})
    fr = run_fleet(spec, workers=1)
    d = build(fr)
    assert d["replicas_provisioned"] > 1
    added = fr.slots[1:]
    assert all(s.ready_s - s.provisioned_s == 30 for s in added)  # startup paid
    assert all(s.provisioned_s % 20 == 0 for s in added)  # at decision times
    # no request reaches a replica before it is ready, nor one after it began to drain
    arrival = {r.id: r.arrival_s for r in fr.arrivals.requests}
    for rid, k in enumerate(fr.slot_of):
        s = fr.slots[k]
        assert s.ready_s <= arrival[rid] and (s.drain_s is None or arrival[rid] < s.drain_s)
    # billing: each replica from provisioning to the end (or its drain), one GPU each
    bills = sum((d["end_s"] if s.drain_s is None else max(s.drain_s, max(
        [fin for fin, k2 in zip(_finish(fr), fr.slot_of) if k2 == k] or [s.drain_s]))) - s.provisioned_s
        for k, s in enumerate(fr.slots))
    assert d["gpu_hours"] == pytest.approx(bills / 3600, rel=1e-9)
    over = d["pools"][0]["replicas_over_time"]
    assert over[0] == [0.0, 1] and max(n for _, n in over) > 1
    assert math.isclose(sum(d["series"]["arrivals"]), d["requests"])


def _finish(fr):
    from inferbound.fleet.result import request_arrays
    return request_arrays(fr)["finish_s"]


def _burst(metric, target, **extra):
    return parse({"traffic": {"rate": {"mean": 30.0}, "duration": 90, "input_len": 2048, "output_len": 64},
                  "router": "least-outstanding", "router_refresh": 1.0, "slo": {"ttft_p99_ms": 500},
                  "autoscale": {"metric": metric, "target": target, "min": 1, "max": 3, "interval": 30, **extra},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 1,
                             "max_num_seqs": 4}]})


@pytest.mark.parametrize("metric, target", [("kv", 0.002), ("ttft", 100.0)])
def test_kv_and_ttft_metrics_scale_an_overloaded_pool_up(metric, target):
    """30 requests/s of 2048-token prompts on one replica of 4 sequences. KV: 4 running sequences of 2,048 to
    2,112 tokens hold at least 4 · 2048/16 = 512 of its 26,559 blocks, a use >= 0.019, over 9 × the 0.002 target;
    TTFT: the queue grows by about 30 − 4/(prefill + 64 decode steps) per second, p99 far above 100 ms. At the
    first decision (t = 30 s) desired = ⌈1 · ratio⌉ >= 5, capped at max(2·1, 1 + 4) = 5, then max = 3."""
    fr = run_fleet(_burst(metric, target, startup=10), workers=1)
    assert len(fr.slots) == 3 and all(s.provisioned_s == 30 for s in fr.slots[1:])


def test_startup_is_priced_from_the_weights_when_not_given():
    """No autoscale.startup: Llama-3.1-8B's 8,030,261,248 bf16 parameters = 16.06 GB on one GPU, read from the
    object store at 1.5625 GB/s (data/fleet.yaml startup) = 10.28 s, plus vLLM's 34.11 s init = 44.39 s."""
    fr = run_fleet(_burst("queue", 1), workers=1)
    hand = 8_030_261_248 * 2 / 1e9 / 1.5625 + 34.11
    assert len(fr.slots) > 1
    assert all(s.ready_s - s.provisioned_s == pytest.approx(hand, abs=0.01) for s in fr.slots[1:])
    assert any("replica startup 44.4 s" in n for n in fr.notes)


def test_concurrency_is_the_mean_in_flight_per_ready_replica():
    # (outstanding, waiting, kv, ttfts): in flight = running + waiting = outstanding; (5 + 1) / 2 = 3
    assert metric_value("concurrency", [(5, 3, 0.5, []), (1, 1, 0.25, [])]) == 3.0
    # 4 replicas at 3 in flight each, target 2.8: ratio 3/2.8 = 1.071, inside the 10 % tolerance: stays 4
    assert _scaler(metric="concurrency", target=2.8).desired(60, 4, 3.0) == 4


def _steady(metric: str, target: float):
    """6 requests/s for 10 minutes, replicas of at most 4 sequences: one replica queues at once."""
    spec = parse({"traffic": {"rate": {"mean": 6.0}, "duration": 600, "input_len": 512, "output_len": 128},
                  "router": "least-outstanding", "slo": {"ttft_p99_ms": 2000},
                  "autoscale": {"metric": metric, "target": target, "min": 1, "max": 8, "interval": 30, "startup": 20},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": 1,
                             "max_num_seqs": 4}]})
    return build(run_fleet(spec, workers=1))


def test_queue_flaps_under_steady_traffic_and_concurrency_does_not():
    """issue 22 follow-up: on queue, once nobody waits, desired = ceil(n · 0 / target) = 1 after the 300 s
    window and the queue rebuilds while the traffic is unchanged; concurrency (in flight per replica, KServe's
    scaleMetric) reads L / n > 0, so the pool settles near L / target (Little's law, L = λ · mean E2E)."""
    q, c = _steady("queue", 1.0), _steady("concurrency", 2.8)
    rq, rc = q["series"]["replicas"]["p"], c["series"]["replicas"]["p"]
    assert min(rq[2:]) == 1 and max(q["series"]["queue"][2:]) > 0  # dropped to one, the queue came back
    assert min(rc[2:]) >= 2 and max(c["series"]["queue"][2:]) == 0  # held, and nobody waited again
    little = 6.0 * c["e2e_ms_mean"] / 1e3  # requests in flight on average
    assert abs(rc[-1] - little / 2.8) <= 1.0
    assert c["slo_attainment"] > q["slo_attainment"]
