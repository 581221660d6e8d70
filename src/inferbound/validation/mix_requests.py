"""A Poisson run's requests with their lengths drawn from a length mix, so the simulator's percentiles are
over the row's length distribution and not over one class at the mean lengths.

The length-mix rule (used by predict.py for an open-loop row whose lengths are a mix of several classes:
a dataset profile's measured classes, data/datasets.yaml):

- arrivals: ``n`` Poisson arrivals at ``rate`` as workloads/requests.poisson draws them (seed ``seed``; the
  realized rate is the nominal one), the same times a fixed-length run of that seed has; rate inf puts every
  arrival at t = 0 (an offline run, offline_replay.py);
- shares: class c of weight w_c gets k_c requests, the largest-remainder rounding of w_c·n: k_c = ⌊w_c·n⌋,
  then the n − Σ⌊w_c·n⌋ left over go one each to the classes with the largest fractional parts w_c·n − ⌊w_c·n⌋
  (ties: the earlier class). So Σk_c = n and |k_c − w_c·n| < 1: the run holds each class at its share;
- order: the n class labels are shuffled with ``numpy.random.default_rng(seed)`` and laid over the arrivals in
  time order, so the classes are spread through the run, not in blocks;
- lengths: a request of class c has prompt round(I_c), at least 1, and output round(O_c), at least 2
  (the class means of workloads/lengths.Mix; every class of a profile already has O_c >= 2 and I_c >= 1).

The simulator prices each request at its own lengths; a latency percentile p of the run is then numpy's
percentile over requests (sim/metrics.py), i.e. over the mix at its shares: with isolated requests (no
queueing) the p-th percentile of E2E is the E2E of the class holding the request of rank p·n in E2E order
(tests/test_validation_mix.py works one out by hand).
"""
from __future__ import annotations

import numpy as np

from ..workloads.lengths import Mix
from ..workloads.requests import Request, poisson_noted


def class_counts(weights, n: int) -> np.ndarray:
    """k_c of the module docstring: the largest-remainder rounding of w_c·n (weights divided by their sum)."""
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0 or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"weights={list(weights)!r} must be shares >= 0 with a positive sum")
    if int(n) != n or n < 1:
        raise ValueError(f"n={n!r} must be an integer >= 1")
    exact = w / w.sum() * int(n)
    k = np.floor(exact).astype(int)
    left = int(n) - int(k.sum())
    order = np.argsort(-(exact - k), kind="stable")  # largest fractional part first, ties to the earlier class
    k[order[:left]] += 1
    return k


def mix_requests(mix: Mix, rate: float, n: int, seed: int = 0) -> list[Request]:
    """``n`` requests of the module docstring's rule: Poisson arrivals at ``rate``, lengths from ``mix``."""
    w, ins, outs = mix.arrays()
    arrivals, _ = poisson_noted(rate, n, 1, 2, seed)  # fixed lengths: only the arrival times are used
    labels = np.repeat(np.arange(w.size), class_counts(w, n))
    np.random.default_rng(seed).shuffle(labels)
    i = np.maximum(np.rint(ins), 1).astype(int)[labels]
    o = np.maximum(np.rint(outs), 2).astype(int)[labels]
    return [Request(r.id, r.arrival_s, int(a), int(b)) for r, a, b in zip(arrivals, i, o)]


def describe_lengths(mix: Mix, dataset: str | None) -> str:
    """Which length distribution a serving row was predicted over (its reason says so)."""
    where = f"dataset {dataset}" if dataset else "the row's lengths"
    if len(mix.weights) > 1:
        return (f"lengths: {where}, {len(mix.weights)} length classes (means {mix.mean_input:,.1f} in / "
                f"{mix.mean_output:,.1f} out), each request drawn from them: percentiles over that distribution")
    return (f"lengths: {where}, one class at {mix.mean_input:g} in / {mix.mean_output:g} out (no length "
            f"distribution is cited for it): percentiles over arrivals and batching only")
