"""Serving at a rate or a concurrency: the analytic steady state (workloads/serving.py) and the simulator's
closed loop (sim/sources.py ClosedLoop).

Checks: Little's law by construction and in the simulator, the one-client limit against the static batch
of one, the queue past the engine's caps written out, overload refused, and the analytic figures against
the simulator at Poisson rates (random arrivals: the regime both model).
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound import make_deployment
from inferbound.workloads.static import estimate
from inferbound.sim import simulate
from inferbound.workloads.serving import serving

M8 = "meta-llama/Llama-3.1-8B"


@pytest.fixture(scope="module")
def dep():
    return make_deployment(model=M8, gpu="h100_sxm", calibration="none")


@pytest.mark.parametrize("n, think", [(1, 0.0), (16, 0.0), (64, 0.0), (16, 2.0)])
def test_closed_loop_obeys_littles_law(dep, n, think):
    s = serving(dep, concurrency=n, think_time=think, input_len=1024, output_len=256)
    # N clients each cycle through E2E + Z: requests/s × (E2E + Z) = N
    assert s.requests_per_s * (s.e2e_s["mean"] + think) == pytest.approx(n, rel=1e-5)
    assert s.littles_law == pytest.approx(1.0, rel=1e-9 if think == 0 else 1e-5)  # think: C found to 1e-6
    assert s.output_tok_s == pytest.approx(s.requests_per_s * 256, rel=1e-12)
    assert s.e2e_s["mean"] == pytest.approx(s.ttft_s["mean"] + 255 * s.tpot_s, rel=1e-12)
    if think:
        assert s.in_service < n  # some clients are thinking


def test_open_loop_obeys_littles_law(dep):
    s = serving(dep, rate=4.0, input_len=1024, output_len=256)
    assert s.requests_per_s == 4.0
    assert s.in_service == pytest.approx(4.0 * s.e2e_s["mean"], rel=1e-3)


def test_one_client_is_a_batch_of_one(dep):
    """One client never meets another request: no wait, its prompt alone, then one decoder; within 3 % of
    the static batch of one (whose prefill carries no decodes and whose decode sees one sequence)."""
    s = serving(dep, concurrency=1, input_len=1024, output_len=256)
    e = estimate(dep, batch=1, input_len=1024, output_len=256)
    assert s.ttft_s["mean"] == pytest.approx(e.ttft_s, rel=0.03)
    assert s.itl_s == pytest.approx(e.tpot_s, rel=0.03)
    assert s.queued == 0.0 and s.limited_by == "none"


def test_clients_past_the_caps_queue(dep):
    """With more clients than the engine holds, C stays at C_max = D_max(1 + p) and the rest wait:
    requests/s X = C_max/E2E_service, each client's cycle is N/X, the wait N/X − E2E_service."""
    n = 20_000
    s = serving(dep, concurrency=n, input_len=1024, output_len=256)
    assert s.limited_by in ("kv-cache", "max_num_seqs", "token budget")
    assert s.in_service + s.queued == pytest.approx(n)
    service_e2e = s.e2e_s["mean"] - s.queue_wait_s
    x = s.in_service / service_e2e
    assert s.requests_per_s == pytest.approx(x, rel=1e-9)
    assert s.queue_wait_s == pytest.approx(n / x - service_e2e, rel=1e-9)
    assert s.requests_per_s * s.e2e_s["mean"] == pytest.approx(n, rel=1e-9)


def test_overload_is_refused_with_the_capacity(dep):
    with pytest.raises(ValueError, match=r"rate=1e\+06 req/s overloads .* serves at most"):
        serving(dep, rate=1e6, input_len=1024, output_len=256)
    with pytest.raises(ValueError, match="exactly one of rate"):
        serving(dep, input_len=1024, output_len=256)


def test_length_classes_give_percentiles(dep):
    from inferbound.workloads.lengths import Mix
    mix = Mix((0.5, 0.5), (200.0, 2000.0), (100.0, 400.0), "two")
    s = serving(dep, concurrency=8, lengths=mix)
    assert s.ttft_s["p50"] <= s.ttft_s["p99"] and s.e2e_s["p50"] <= s.e2e_s["p99"]
    assert s.ttft_s["p50"] < s.ttft_s["p99"]  # the long prompts prefill longer


@pytest.mark.parametrize("model, tp, rate", [(M8, 1, 2.0), (M8, 1, 8.0), ("meta-llama/Llama-3.1-70B", 4, 2.0)])
def test_analytic_rate_agrees_with_the_simulator(model, tp, rate):
    """Poisson arrivals: the analytic steady state against a 1500-request simulation of the same step model
    (uncalibrated): ITL within 10 %, TTFT within 20 %, output tokens/s within 5 %."""
    d = make_deployment(model=model, gpu="h100_sxm", tp=tp, calibration="none")
    a = serving(d, rate=rate, input_len=1024, output_len=256)
    s = simulate(d, rate=rate, requests=1500, input_len=1024, output_len=256, seed=0).summary
    assert a.itl_s * 1e3 == pytest.approx(s["itl_ms_mean"], rel=0.10)
    assert a.ttft_s["mean"] * 1e3 == pytest.approx(s["ttft_ms_mean"], rel=0.20)
    # the simulator's realized rate is its drawn arrivals', the analytic one is the nominal rate
    assert a.output_tok_s == pytest.approx(s["output_tok_s"], rel=0.05)


def test_simulated_closed_loop_obeys_littles_law():
    """The issue's check: `simulate --concurrency 16`: requests/s × mean E2E = 16 ± 5 % (the run's fill and
    drain are inside the window, hence the tolerance)."""
    d = make_deployment(model=M8, gpu="h100_sxm", calibration="none")
    s = simulate(d, concurrency=16, requests=800, input_len=1024, output_len=256, seed=0).summary
    assert s["requests_per_s"] * s["e2e_ms_mean"] / 1e3 == pytest.approx(16, rel=0.05)
    assert s["mean_running"] <= 16 + 1e-9


def test_closed_loop_never_exceeds_its_clients():
    d = make_deployment(model=M8, gpu="h100_sxm", calibration="none")
    r = simulate(d, concurrency=4, requests=40, input_len=256, output_len=32, seed=0)
    arrivals = np.sort(np.asarray(r.run.ledger.arrival))
    finish = np.sort(np.asarray(r.run.ledger.finish_s))
    # at every arrival, arrivals so far − completions so far <= 4
    for t in arrivals:
        assert np.searchsorted(arrivals, t, side="right") - np.searchsorted(finish, t, side="right") <= 4


def test_poisson_arrivals_run_at_their_nominal_rate():
    """n gaps scaled to sum n/λ: the n-th arrival is at n/λ exactly (issue: 500 unscaled gaps with seed 0 sum
    to ~548 mean gaps); the gaps stay exponential-like (coefficient of variation near 1)."""
    from inferbound.workloads.requests import poisson
    reqs = poisson(4.0, 500, 100, 10, seed=0)
    arrivals = np.array([r.arrival_s for r in reqs])
    assert arrivals[-1] == pytest.approx(500 / 4.0, rel=1e-12)
    gaps = np.diff(np.concatenate([[0.0], arrivals]))
    assert gaps.mean() == pytest.approx(0.25, rel=1e-12)
    assert 0.85 < gaps.std() / gaps.mean() < 1.15
    raw = np.random.default_rng(0).exponential(0.25, size=500)
    assert raw.sum() / 0.25 > 540  # what the scaling removes
