"""A toy fleet against an M/G/c hand calculation (within 2 points of attainment).

Toy: c = 4 replicas that each serve one request at a time (max_num_seqs 1) with one output token, so a
request's service is its prefill step alone, S seconds, the same for every request (input 2048 tokens: one
step under the token budget); S is the simulator's TTFT of a request that finds the replica idle. Poisson
arrivals at λ = ρ·c/S with ρ = 0.7, least-outstanding routing at Δ = 0 (join the shortest queue, close to one
shared queue at this load). The SLO is TTFT <= 2S, i.e. a wait W <= S.

M/G/c by hand (Erlang C with the Allen-Cunneen correction for the service's variability, Cs² = 0 here):
    a = λS = ρc = 2.8
    C(c, a) = [a^c / c! / (1 − ρ)] / [Σ_{k<c} a^k/k! + a^c / c! / (1 − ρ)]
            = [2.8^4/24/0.3] / [1 + 2.8 + 2.8²/2 + 2.8³/6 + 2.8^4/24/0.3]
            = 8.5369 / (11.3787 + 8.5369) = 0.4287
    P(W > t) ≈ C · exp(−(c/S − λ) · t · 2/(1 + Cs²)),
    at t = S:  C · exp(−2 · (c − a)) = C · exp(−2.4) = C · 0.0907
    attainment = 1 − 0.4287 · 0.0907 = 0.9611
"""
from __future__ import annotations

import math

from inferbound.fleet import build, parse, run_fleet
from inferbound.sim import simulate


def test_toy_fleet_attainment_agrees_with_m_g_c():
    alone = simulate(model="llama-3.1-8b", gpu="h100_sxm", rate=0.01, requests=3, input_len=2048, output_len=1,
                     max_num_seqs=1)
    S = alone.summary["ttft_ms_p50"] / 1e3
    assert alone.summary["ttft_ms_p99"] == alone.summary["ttft_ms_p50"]  # every request alone: the same S
    c, rho = 4, 0.7
    lam = rho * c / S
    spec = parse({"traffic": {"rate": {"mean": lam}, "duration": 8000 / lam, "input_len": 2048, "output_len": 1},
                  "pools": [{"name": "p", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": c,
                             "max_num_seqs": 1}],
                  "router": "least-outstanding", "router_refresh": 0, "slo": {"ttft_p99_ms": 2 * S * 1e3}, "seed": 1})
    d = build(run_fleet(spec, workers=1))
    a = rho * c
    tail = a ** c / math.factorial(c) / (1 - rho)
    erlang_c = tail / (sum(a ** k / math.factorial(k) for k in range(c)) + tail)
    assert abs(erlang_c - 0.4287) < 5e-4  # the figure worked out above
    hand = 1 - erlang_c * math.exp(-2 * (c - a))
    assert abs(hand - 0.9611) < 5e-4
    assert d["requests"] > 7000
    assert abs(d["slo_attainment"] - hand) <= 0.02, (d["slo_attainment"], hand)
    assert d["ttft_ms_p50"] >= S * 1e3 * (1 - 1e-12)  # nobody is served faster than alone
