"""The running sequences of a replica's scheduler (scheduler.py): the decoding batch and prefilling prompts.

Decoding sequences are the columns 0..n−1 of named numpy rows (one float matrix, one integer matrix),
so a scheduler step updates the whole batch in a few numpy operations and moving or dropping a column
moves every field in two. ``due`` is a lower bound on the fewest output tokens any decoding sequence
still needs (min(target − generated)), that minimum itself while ``exact`` (a removed column may raise
the minimum; a run of decode-only steps reads an exact ``due`` instead of recomputing it): without
speculative decoding every decode step lowers it by one, and while it stays above zero no sequence can
have finished, so the step skips the check. ``last_all``
is the time of every column's last token when they all share one (a decode step sets them all to its
end; NaN once a column with another time joins): the step's gaps are then one value without a
comparison, and the ``last_s`` row is written only when a column with another time joins or a column
is read (``lasts``, ``last_of``). ``deep`` is False while no column references prefix blocks (every
depth 0), so the block need skips adding them.
"""
from __future__ import annotations

import math

import numpy as np


class DecodeBatch:
    """The decoding sequences of a replica: columns 0..n−1 of named arrays (rows of one float and one
    integer matrix, so moving a column moves every field in two numpy operations)."""

    FLOATS = ("cached", "generated", "target", "blocks", "admitted", "last_s", "depth")
    INTS = ("rid", "pid")
    __slots__ = ("n", "_f", "_i", "cg", "due", "exact", "last_all", "deep") + FLOATS + INTS

    def __init__(self, capacity: int):
        self.n = 0
        self.due = math.inf  # a lower bound on min(target − generated) over the columns
        self.exact = True  # whether ``due`` is that minimum itself (to_go()); a removed column may raise it
        self.last_all = math.nan  # last_s of every column when they are all equal, else NaN
        self.deep = False  # whether a column may reference prefix blocks (False: every depth is 0)
        self._f = np.zeros((len(self.FLOATS), capacity))
        self._i = np.zeros((len(self.INTS), capacity), dtype=np.int64)
        # cached C: tokens in the KV cache; generated G: output tokens so far; target O: output tokens
        # wanted; blocks: KV blocks held; admitted: admission order (preemption picks the newest); last_s:
        # time of the sequence's last token; depth: prefix blocks it references (not in ``blocks``)
        for j, name in enumerate(self.FLOATS):
            setattr(self, name, self._f[j])
        self.cg = self._f[:2]  # cached and generated, which grow together
        self.rid, self.pid = self._i[0], self._i[1]  # pid: prefix it references (sim/prefix.py), -1: none
        self.pid[:] = -1

    def add(self, cached, generated, target, blocks, rid, admitted, last_s, pid=-1, depth=0) -> None:
        j = self.n
        self.cached[j], self.generated[j], self.target[j], self.blocks[j] = cached, generated, target, blocks
        self.rid[j], self.admitted[j], self.last_s[j] = rid, admitted, last_s
        self.pid[j], self.depth[j] = pid, depth
        if j == 0:
            self.last_all, self.deep = last_s, False
        if depth:
            self.deep = True
        if j and last_s != self.last_all:
            self.lasts()  # the shared time, written out before it stops being shared
            self.last_all = math.nan
        self.n += 1
        self.due = min(self.due, target - generated)

    def set_last(self, t: float) -> None:
        """Every column's last token at ``t`` (the row itself is written when read: ``lasts``)."""
        self.last_all = t

    def lasts(self) -> np.ndarray:
        """last_s of columns 0..n−1 (the shared ``last_all`` written out first, if there is one)."""
        if self.last_all == self.last_all:  # not NaN
            self.last_s[:self.n] = self.last_all
        return self.last_s[:self.n]

    def last_of(self, j: int) -> float:
        """last_s of column j."""
        return self.last_all if self.last_all == self.last_all else float(self.last_s[j])

    def remove(self, j: int) -> None:
        """Drop column j (the last column moves into the hole; the columns left keep ``last_all``)."""
        self.n -= 1
        k = self.n
        self._f[:, j] = self._f[:, k]
        self._i[:, j] = self._i[:, k]
        self.exact = False  # ``due`` stays a lower bound

    def keep(self, mask: np.ndarray) -> None:
        """Keep the columns where ``mask`` (over 0..n−1) is true, in order."""
        idx = mask.nonzero()[0]
        m = idx.size
        self._f[:, :m] = self._f.take(idx, axis=1)
        self._i[:, :m] = self._i.take(idx, axis=1)
        self.n = m

    def drop(self, j: int) -> None:
        """Drop column j, the columns after it moving down one (keep with only j false: the order kept)."""
        n = self.n
        if j < n - 1:
            self._f[:, j:n - 1] = self._f[:, j + 1:n]  # overlapping slices: numpy copies through a buffer
            self._i[:, j:n - 1] = self._i[:, j + 1:n]
        self.n = n - 1

    def to_go(self) -> float:
        """min(target − generated) over the columns (inf if none): the exact value of ``due``."""
        n = self.n
        return float(np.minimum.reduce(self.target[:n] - self.generated[:n])) if n else math.inf


class Prefilling:
    """A sequence whose prompt (or recomputation) is being prefilled in chunks."""

    __slots__ = ("rid", "cached", "total", "blocks", "admitted", "pid", "depth")

    def __init__(self, rid: int, cached: int, total: int, blocks: int, admitted: int, pid: int = -1, depth: int = 0):
        self.rid, self.cached, self.total, self.blocks, self.admitted = rid, cached, total, blocks, admitted
        self.pid, self.depth = pid, depth  # prefix referenced to ``depth`` blocks (not in ``blocks``)
