"""The blocks a decode run takes, step by step (sim/decode_run.py's module docstring: sequence j with r_j tokens of
room before its next block takes one block at step r_j and every bs steps after, so step s takes
a_s = #{j : r_j ≡ s mod bs, r_j <= s} blocks); plain functions and the ``_Phases`` view that reads the r_j once.
"""
from __future__ import annotations

import numpy as np


def blocks_per_step(first: np.ndarray, bs: int, steps: int) -> list[int]:
    """a_s, the blocks step s takes, for s = 0..steps−1 (module docstring); ``first``: each sequence's
    r_j (whole numbers >= 0). With every r_j < bs the pattern repeats every bs steps: a_s = #{j : r_j = s
    mod bs}."""
    r = first.astype(np.int64)
    if int(np.maximum.reduce(r)) < bs:
        return (np.bincount(r, minlength=bs).tolist() * -(-steps // bs))[:steps]
    return _blocks(first, bs, steps).tolist()


def taken_by(first: np.ndarray, bs: int, k: int) -> int:
    """Σ_s<k a_s, the blocks steps 0..k−1 take: sequence j takes one at r_j, r_j + bs, ... (module docstring),
    so max(0, ⌊(k − 1 − r_j)/bs⌋ + 1) of them (whole numbers, integer floor division)."""
    return int(np.add.reduce(np.maximum((k - 1 - first.astype(np.int64)) // bs + 1, 0)))


class _Phases:
    """The r_j of a run's sequences (module docstring) read once: ``first`` (floats), their whole numbers ``r``
    and, in the usual state where every r_j < bs (each sequence's blocks hold just its cached tokens), their
    histogram ``hist`` (hist[i] = #{j : r_j = i}, i < bs), from which a_s = hist[s mod bs] and
    Σ_s<k a_s = ⌊k/bs⌋·n + Σ_i<(k mod bs) hist[i] follow in Python integers (the same whole numbers as
    :func:`blocks_per_step` and :func:`taken_by`, without an array of the run's steps); ``hist`` None else."""

    __slots__ = ("first", "r", "hist", "n", "bs")

    def __init__(self, first: np.ndarray, r: np.ndarray, counts: np.ndarray, bs: int):
        self.first, self.r, self.n, self.bs = first, r, int(r.size), bs
        if counts.size <= bs:  # max r_j < bs
            hist = counts.tolist()
            self.hist = hist + [0] * (bs - len(hist))
        else:
            self.hist = None

    @classmethod
    def of_hist(cls, hist: list[int], n: int, bs: int):
        """Derived blocks (sim/batch.py): ``hist`` = DecodeBatch.phases(), every r_j < bs; no arrays."""
        self = cls.__new__(cls)
        self.first = self.r = None
        self.hist, self.n, self.bs = hist, n, bs
        return self

    @classmethod
    def of(cls, first: np.ndarray, bs: int):
        """The phases of ``first``, or None when some r_j < 0 (blocks short of the cached tokens: not a run's
        state)."""
        r = first.astype(np.int64)
        try:
            counts = np.bincount(r)
        except ValueError:  # a negative r_j (np.bincount takes none)
            return None
        return cls(first, r, counts, bs)

    def per_step(self, steps: int) -> list[int]:
        """:func:`blocks_per_step`."""
        if self.hist is not None:
            return (self.hist * -(-steps // self.bs))[:steps]
        return _blocks(self.first, self.bs, steps).tolist()

    def taken(self, k: int) -> int:
        """:func:`taken_by`."""
        if self.hist is not None:
            q, m = divmod(k, self.bs)
            return q * self.n + sum(self.hist[:m])
        return taken_by(self.first, self.bs, k)

    def fitting(self, steps: int, free: int, keeps_samples: bool):
        """(cum, steps): the cumulative blocks per step (None when neither the samples nor the pool need them:
        every step's blocks fit) and the steps whose blocks fit the ``free`` ones (Σ a nondecreasing: a search)."""
        if not keeps_samples and self.taken(steps) <= free:
            return None, steps
        if self.hist is not None:  # a_s = hist[s mod bs]: _blocks' bincount(r, minlength=bs) is hist
            cum = np.cumsum(np.array(self.hist, dtype=np.int64)[np.arange(steps) % self.bs])
        else:
            cum = np.cumsum(_blocks(self.first, self.bs, steps))
        return cum, min(steps, int(np.searchsorted(cum, free, side="right")))


def _blocks(first: np.ndarray, bs: int, steps: int) -> np.ndarray:
    """:func:`blocks_per_step` as an int64 array."""
    r = first.astype(np.int64)
    if int(np.maximum.reduce(r)) < bs:
        return np.bincount(r, minlength=bs)[np.arange(steps) % bs]
    per = np.zeros(-(-steps // bs) * bs, dtype=np.int64)
    per[:steps] = np.bincount(r[r < steps], minlength=steps)[:steps]  # first blocks, at step r_j
    return per.reshape(-1, bs).cumsum(axis=0).ravel()[:steps]  # and every bs steps after
