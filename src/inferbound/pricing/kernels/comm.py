"""Collective time from message size: alpha-beta lines per (GPU, collective, algorithm, GPU count).

nccl-tests convention (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md): for a
buffer of S bytes over n GPUs the bus bandwidth is busbw = (S/t)·f(n), with f = 2(n−1)/n for
all-reduce and (n−1)/n for all-gather, reduce-scatter and all-to-all; busbw is what one GPU's link
carries and is comparable to the link's physical bandwidth. Each measured curve is the lower envelope
of a pipelined bandwidth-optimized algorithm (two-shot / ring / NVLS) and a second alpha-beta line
(another algorithm or protocol the library switches to over part of the size range: one-shot, LL/LL128)::

    t(S) = min((√α + √(S·f/β))²,  α_b + S·f/β_b)

The second term is the optimum of a chunked pipeline (startup α per chunk, chunk size chosen to
minimize α·(stages) + bytes/β; R. van de Geijn, "On global combine operations", J. Parallel Distrib.
Comput. 1994): it equals α for tiny S, tends to S·f/β for large S and ramps in between, so β (the
large-message bus bandwidth) is the link's achievable bandwidth and is not dragged down by the ramp.
With NVLink SHARP (NVLS) the switch reduces in-network and each GPU moves about S instead of
2(n−1)/n·S, so an all-reduce busbw above the link rate is physical there. For a GPU count n
outside the measured ones the nearest measured n0 below it is used with its β and with
α scaled by log2(n)/log2(n0) (tree- and NVLS-like latency growth); such results are extrapolations.
"""
from __future__ import annotations

import numpy as np

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")


def traffic_factor(kind: str, n):
    """Bus-bandwidth factor f(n) of the nccl-tests convention."""
    n = np.asarray(n, dtype=float)
    if kind == "all_reduce":
        return 2.0 * (n - 1.0) / n
    if kind in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1.0) / n
    raise ValueError(f"kind={kind!r} is not a collective; allowed: {', '.join(KINDS)}")


def line_time(p: dict, kind: str, nbytes, n, alpha_scale=1.0):
    """Lower envelope of the two alpha-beta lines of one curve ``p`` (seconds)."""
    s = np.asarray(nbytes, dtype=float) * traffic_factor(kind, n)
    big = (np.sqrt(p["alpha_s"] * alpha_scale) + np.sqrt(s / p["busbw"])) ** 2
    line_b = p["alpha_b_s"] * alpha_scale + s / p["busbw_b"]
    return np.where(np.asarray(nbytes) <= 0, 0.0, np.minimum(big, line_b))


def pick_curve(by_n: dict, n: int):
    """(curve, alpha scale, extrapolated) for GPU count ``n`` from curves keyed by measured counts."""
    counts = sorted(int(c) for c in by_n)
    if n in counts:
        return by_n[n], 1.0, False
    below = [c for c in counts if c < n]
    n0 = below[-1] if below else counts[0]
    return by_n[n0], float(np.log2(n) / np.log2(n0)), True
