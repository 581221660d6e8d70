"""Inter-token latency (ITL) of the fleet: every gap between consecutive tokens of a request, pooled over the
requests of a pool or of the fleet, each generated token after a request's first weighing once (the ITL
of sim/metrics.py and of vLLM's benchmark_serving: the gaps of all requests, pooled).

A replica with its full ledger (``steps``) gives its gaps exactly (sim/ledger.Ledger: values with counts).
A lean replica (fleet/replica.LeanLedger, the default) keeps them in :class:`GapHistogram`, a logarithmic
histogram whose bin k holds the gaps g with floor(ln(g) / w) = k, w = ln(1 + 1e-4): the exact count and the
exact sum of the gaps, so the mean is exact, and each percentile read at its bin's geometric centre
exp((k + 1/2) w), within a factor (1 + 1e-4)^(1/2) of the true order statistic: 0.005 %. Gaps of 0 (tokens
of the same step: accepted draft tokens) are counted apart, at 0. Memory: one count per bin holding a gap,
where the full ledger keeps one (value, count) pair per step (docs/fleet.md "Speed").

Pooled percentiles (:func:`itl_stats`): the order statistics of the union of the (value, count) pairs with
numpy's linear interpolation, as sim/ledger.Ledger.gap_stats computes them for one replica (so one replica
with ``steps`` equals ``simulate`` bit for bit).
"""
from __future__ import annotations

import math

import numpy as np

#: relative width of a histogram bin (module docstring)
REL_WIDTH = 1e-4
_W = math.log1p(REL_WIDTH)
_FLUSH = 1 << 16  # gaps held by add_many before they are binned (0.5 MB a replica)


class GapHistogram:
    """Counts of the gaps per logarithmic bin (module docstring); ``add``/``add_many`` as a ledger records."""

    def __init__(self):
        self.bins: dict[int, float] = {}
        self.zeros = 0.0
        self.total = 0.0  # Σ gap · count (s)
        self.n = 0.0
        self._pending: list[tuple[np.ndarray, float]] = []  # add_many's positive gaps not yet binned
        self._held = 0

    def add(self, gap: float, count: float) -> None:
        if count <= 0:
            return
        self.n += count
        if gap <= 0.0:
            self.zeros += count
            return
        self.total += gap * count
        k = math.floor(math.log(gap) / _W)
        self.bins[k] = self.bins.get(k, 0.0) + count

    def add_many(self, gaps: np.ndarray, count: float = 1.0) -> None:
        """Each gap of ``gaps`` ``count`` times. The positive ones are binned later, many calls at once
        (:meth:`_flush`); an array whose gaps are all positive (a run's steps, the usual case) is kept as
        given, without the mask's copy, so the caller passes one it does not write to afterwards (every
        caller in fleet/replica.py passes a new array). The same count, zeros, Σ and bins either way."""
        g = gaps if type(gaps) is np.ndarray and gaps.dtype == np.float64 else np.asarray(gaps, dtype=float)
        m = g.size
        if m == 0:
            return
        if np.minimum.reduce(g) > 0.0:  # every gap positive (NaN compares false: the mask below)
            pos = g
        else:
            pos = g[g > 0.0]
            self.zeros += float(count * (m - pos.size))
        self.n += float(count * m)
        self.total += float(np.add.reduce(pos) * count)
        if pos.size:  # binned later, many calls at once (_flush): the bins' counts are whole numbers, exact
            self._pending.append((pos, count))
            self._held += pos.size
            if self._held >= _FLUSH:
                self._flush()

    def _flush(self) -> None:
        """Bin the gaps held by add_many: one np.unique over them all, each bin's count Σ of its gaps' counts."""
        if not self._pending:
            return
        pos = np.concatenate([p for p, _ in self._pending])
        weights = np.repeat([c for _, c in self._pending], [p.size for p, _ in self._pending])
        self._pending, self._held = [], 0
        ks, inv = np.unique(np.floor(np.log(pos) / _W).astype(np.int64), return_inverse=True)
        for k, m in zip(ks.tolist(), np.bincount(inv, weights=weights).tolist()):
            self.bins[k] = self.bins.get(k, 0.0) + m

    def weighted(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(values, counts, Σ gaps, n): the bins at their geometric centres, the zeros at 0."""
        self._flush()
        ks = np.fromiter(self.bins.keys(), dtype=np.int64, count=len(self.bins))
        values = np.exp((ks + 0.5) * _W)
        counts = np.fromiter(self.bins.values(), dtype=float, count=len(self.bins))
        if self.zeros:
            values, counts = np.append(values, 0.0), np.append(counts, self.zeros)
        return values, counts, self.total, self.n


def exact_gaps(ledger) -> tuple[np.ndarray, np.ndarray, None, float]:
    """(values, counts, None, n) of a full sim/ ledger (None: the mean is taken from the values)."""
    v, c = ledger._weighted_gaps()
    return v, c, None, float(c.sum())


def itl_stats(parts: list[tuple], pcts=(50, 90, 99)) -> dict:
    """``itl_ms_mean`` and ``itl_ms_p{p}`` of the pooled gaps of ``parts`` ((values, counts, Σ or None, n) per
    replica, in slot order); None where no request had a second token."""
    parts = [p for p in parts if p[3] > 0]
    if not parts:
        return {"itl_ms_mean": None, **{f"itl_ms_p{p}": None for p in pcts}}
    v = np.concatenate([p[0] for p in parts])
    c = np.concatenate([p[1] for p in parts])
    n = c.sum()
    order = np.argsort(v, kind="stable")
    v, c = v[order], c[order]
    cum = np.cumsum(c)

    def nth(k: float) -> float:  # k-th order statistic (0-based) of the expanded sample
        return float(v[np.searchsorted(cum, k + 1)])
    out = {}
    if any(p[2] is None for p in parts):  # exact gaps: the mean as sim/ledger.gap_stats takes it
        mean = float((v * c).sum() / n)
    else:
        mean = sum(p[2] for p in parts) / n
    out["itl_ms_mean"] = float(mean) * 1e3
    for p in pcts:
        h = (n - 1) * p / 100
        lo = math.floor(h)
        a, b = nth(lo), nth(min(lo + 1, n - 1))
        out[f"itl_ms_p{p}"] = (a + (h - lo) * (b - a)) * 1e3
    return out
