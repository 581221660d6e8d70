"""Numeric helpers every layer shares."""
from __future__ import annotations

import numpy as np


def fast_ndim(x) -> int:
    """np.ndim without its dispatch for the plain Python numbers most operator quantities are."""
    return 0 if type(x) is float or type(x) is int else np.ndim(x)


def sorted_unique(x) -> np.ndarray:
    """``np.unique(x)`` for a flat array without NaN: its distinct values, ascending, same dtype (sort, keep the
    first of each run of equal values: numpy's own sorting path, lib/_arraysetops_impl.py ``_unique1d``). numpy
    2.x's ``np.unique`` imports ``numpy.ma`` on its first call (``np.ma.is_masked``), about 15 ms of a cold
    process (issue 18); this does not. An array holding NaN goes to ``np.unique`` (its NaN rule)."""
    a = np.sort(np.ravel(x))
    if a.dtype.kind in "fc" and a.size and np.isnan(a[-1]):
        return np.unique(a)
    keep = np.empty(a.shape, dtype=bool)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]
