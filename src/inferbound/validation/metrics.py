"""Error summaries: MAPE, median absolute percentage error, share within ±25 %, signed bias.

With e_i = (predicted − measured)/measured over the covered rows of a group:
MAPE = mean |e_i|; median APE = median |e_i|; within25 = share of |e_i| <= 0.25;
bias = mean e_i (positive: over-prediction).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .predict import Prediction


def summarize(errors) -> dict:
    e = np.asarray([x for x in errors], dtype=float)
    if e.size == 0:
        return {"n": 0, "mape": None, "median_ape": None, "within_25": None, "bias": None}
    a = np.abs(e)
    return {"n": int(e.size), "mape": float(a.mean()), "median_ape": float(np.median(a)),
            "within_25": float((a <= 0.25).mean()), "bias": float(e.mean())}


def group_summary(preds: list[Prediction], keys=("source", "scenario", "metric")) -> list[dict]:
    """One summary per group of ``keys`` (covered rows), plus the count not covered."""
    groups: dict[tuple, list[Prediction]] = defaultdict(list)
    for p in preds:
        groups[tuple(getattr(p.row, k) for k in keys)].append(p)
    out = []
    for key, ps in sorted(groups.items()):
        s = summarize([p.error for p in ps if p.covered])
        out.append({**dict(zip(keys, key)), **s, "not_covered": sum(not p.covered for p in ps)})
    return out
