"""Least-squares fit of a kernel model to measured latencies, and the error statistics printed for it.

Residuals are log(predicted/measured) (relative error, symmetric in over/under-prediction), with a
soft-L1 loss (f_scale 0.1) so a few kernels the library dispatches badly do not drag the curve.
Training rows are subsampled to ``max_rows`` for speed; statistics are always on every row.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from .tables import subset


@dataclass(frozen=True)
class Param:
    """One continuous parameter: name, start, bounds, and the unit the optimizer sees (value = x·scale)."""

    name: str
    x0: float
    lo: float
    hi: float
    scale: float = 1.0


def ape_stats(pred, meas) -> dict:
    """n, MAPE, median APE, p90 APE and median bias (pred/meas - 1) as fractions."""
    pred, meas = np.asarray(pred, dtype=float), np.asarray(meas, dtype=float)
    if meas.size == 0:
        return {"n": 0}
    ape = np.abs(pred / meas - 1.0)
    return {"n": int(meas.size), "mape": float(ape.mean()), "median": float(np.median(ape)),
            "p90": float(np.percentile(ape, 90)), "bias": float(np.median(pred / meas) - 1.0)}


def fit(model, params: list[Param], fixed: dict, x: dict, y, mask=None, max_rows: int = 8000, seed: int = 0):
    """Fit ``model(p, x) -> seconds`` on rows ``mask``; returns the full parameter dict (fixed + fitted)."""
    idx = np.flatnonzero(np.ones(len(y), bool) if mask is None else mask)
    if idx.size > max_rows:
        idx = np.random.default_rng(seed).choice(idx, max_rows, replace=False)
    xs, ys = subset(x, np.isin(np.arange(len(y)), idx)), np.asarray(y)[np.sort(idx)]

    def unpack(v):
        return {**fixed, **{p.name: float(val) * p.scale for p, val in zip(params, v)}}

    def res(v):
        pred = np.asarray(model(unpack(v), xs), dtype=float)
        return np.log(np.maximum(pred, 1e-15) / ys)

    x0 = [p.x0 for p in params]
    r = least_squares(res, x0, bounds=([p.lo for p in params], [p.hi for p in params]), loss="soft_l1",
                      f_scale=0.1, diff_step=1e-3, max_nfev=400)
    return unpack(r.x)


def holdout_mask(keys, frac: float = 0.25, seed: int = 0):
    """Boolean mask of rows whose key (a tuple per row) falls in a random ``frac`` of the distinct keys."""
    keys = [tuple(k) for k in keys]
    uniq = sorted(set(keys))
    rng = np.random.default_rng(seed)
    n = max(1, int(round(len(uniq) * frac))) if len(uniq) > 1 else 0
    held = set(uniq[i] for i in rng.choice(len(uniq), n, replace=False)) if n else set()
    return np.array([k in held for k in keys], dtype=bool)
