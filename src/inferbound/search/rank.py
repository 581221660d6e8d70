"""Choose each layout's best concurrency, rank the layouts, say what stops each one, find the closest miss.

Score of a point = SENSE·objective (larger is better). Per layout, the best feasible point is the
highest score, the lowest concurrency among ties. Layouts rank by score, then output tok/s per GPU,
then fewer GPUs, then layout order (stable, backend-independent).

What stops a layout at its chosen concurrency D (``limit``): the concurrency cap of the layout when D
is its largest (KV cache or token budget), else the constraints that D + 1 breaks, else ``objective
peak`` (D + 1 is allowed but scores lower).
"""
from __future__ import annotations

import numpy as np

from .metrics import SENSE, Constraint, Points, violation


def score(points: Points, objective: str) -> np.ndarray:
    s = SENSE[objective] * points.metric(objective)
    return np.where(np.isnan(s), -np.inf, s)


def best_per_layout(points: Points, feasible: np.ndarray, objective: str) -> np.ndarray:
    """Point index of each layout's best feasible point, in rank order (best layout first)."""
    idx = np.flatnonzero(feasible)
    if idx.size == 0:
        return idx
    s = score(points, objective)[idx]
    keep = np.isfinite(s)
    idx, s = idx[keep], s[keep]
    order = np.lexsort((points.concurrency[idx], -s, points.layout[idx]))
    idx, s = idx[order], s[order]
    first = np.r_[True, points.layout[idx][1:] != points.layout[idx][:-1]]
    best, bs = idx[first], s[first]
    tie = points.metric("tok_s_per_gpu", best)
    return best[np.lexsort((points.layout[best], points.unit_gpus[best], -tie, -bs))]


def limit_at(points: Points, i: int, feasible: np.ndarray, constraints: list[Constraint], cap: str) -> str:
    """What stops layout points.layout[i] from running at a higher concurrency (module docstring)."""
    j = i + 1
    if j >= len(points) or points.layout[j] != points.layout[i]:
        return cap
    if not feasible[j]:
        broken = [c.label for c in constraints if not (points.metric(c.metric, slice(j, j + 1))[0] <= c.limit)]
        return ", ".join(broken) if broken else "constraints"
    return "objective peak"


def closest_miss(points: Points, constraints: list[Constraint]) -> int | None:
    """Point whose worst constraint ratio (value/limit) is smallest; ties: lowest index."""
    if len(points) == 0:
        return None
    v = violation(points, constraints)
    if not np.any(np.isfinite(v)):
        return None
    return int(np.argmin(v))
