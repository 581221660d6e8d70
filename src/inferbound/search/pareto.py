"""Pareto frontier of two objectives, each maximized or minimized, in O(n log n).

Point q dominates p when q is at least as good in both objectives and strictly better in one. After
flipping minimized objectives (so both are maximized), sort by x descending; group equal x. A point
is non-dominated iff

    y == max y of its x-group          (no point with the same x has a larger y), and
    y >  max y of every larger x       (no point further right is at least as high)

Identical points do not dominate each other, so duplicates on the frontier are all kept. NaN points
are never on the frontier.
"""
from __future__ import annotations

import numpy as np


def pareto_mask(x, y, maximize_x: bool = True, maximize_y: bool = True) -> np.ndarray:
    """Boolean mask of the non-dominated points of (x, y)."""
    x = np.asarray(x, dtype=float) * (1 if maximize_x else -1)
    y = np.asarray(y, dtype=float) * (1 if maximize_y else -1)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D arrays of one length; got shapes {x.shape} and {y.shape}")
    mask = np.zeros(x.size, dtype=bool)
    ok = np.flatnonzero(~(np.isnan(x) | np.isnan(y)))
    if ok.size == 0:
        return mask
    order = ok[np.lexsort((-y[ok], -x[ok]))]  # x descending, then y descending
    xs, ys = x[order], y[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    group_max = ys[starts]  # y descending inside a group: its first is its max
    before = np.r_[-np.inf, np.maximum.accumulate(group_max)[:-1]]  # best y of strictly larger x
    gid = np.cumsum(np.r_[True, xs[1:] != xs[:-1]]) - 1
    keep = (ys == group_max[gid]) & (ys > before[gid])
    mask[order[keep]] = True
    return mask

