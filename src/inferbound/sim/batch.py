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

Derived blocks (``derived``, a batch built with its pool's ``block_size`` and ``derive`` on: no drafts, no
full reservation). While every column holds exactly the blocks of its cached tokens, blocks_j = ⌈C_j/bs⌉
(depth 0; sim/blocks.py), the ``blocks`` row is not kept up to date: a sequence's blocks are read off its C
(:meth:`blocks_of`, :meth:`blocks_sum`) and the batch keeps the phases instead, as a rotating histogram:
every column adds the same tokens in a decode step (``rot`` counts them), so key_j = (C_j − rot) mod bs is
fixed while it stays and ``hist[key]`` counts the columns of each key; step r_j = (−C_j) mod bs from now
takes sequence j's next block (the r_j of sim/decode_run.py, H_j·bs − C_j with H_j = ⌈C_j/bs⌉), so
#{j : r_j = i} = hist[(−i − rot) mod bs] (:meth:`phases`) and the blocks a decode step takes are
#{j : C_j ≡ 0 mod bs} = hist[(−rot) mod bs] (:meth:`needy`): Python integers, no pass over the batch. Between
the blocks a planned step takes for its decodes and its tokens (``pending`` 1) each column holds
⌈(C_j + 1)/bs⌉. A column joining with other blocks (a prefix depth, blocks past its tokens) writes the row
out (:meth:`_underive`) and the batch keeps it as before until it is empty again. With ``derive`` the batch
also keeps ``csum`` = Σ_j C_j (whole numbers: exact in any order, the float np.add.reduce gives; else None).
"""
from __future__ import annotations

import math

import numpy as np


class DecodeBatch:
    """The decoding sequences of a replica: columns 0..n−1 of named arrays (rows of one float and one
    integer matrix, so moving a column moves every field in two numpy operations)."""

    FLOATS = ("cached", "generated", "target", "blocks", "admitted", "last_s", "depth")
    INTS = ("rid", "pid")
    __slots__ = ("n", "_f", "_i", "cg", "due", "exact", "last_all", "deep", "bs", "derive", "derived", "hist",
                 "rot", "pending", "csum") + FLOATS + INTS

    def __init__(self, capacity: int, block_size: int = 0, derive: bool = False):
        self.n = 0
        self.bs = int(block_size)  # the pool's block size (0: derived blocks off)
        self.derive = bool(derive) and self.bs > 0  # derived blocks allowed (module docstring)
        self.derived = self.derive  # blocks read off C and the phases histogram kept (module docstring)
        self.hist = [0] * self.bs  # hist[(C_j − rot) mod bs]: columns per key
        self.rot = 0  # tokens every column added since the batch was last empty (decode steps)
        self.pending = 0  # 1 between a planned step's block allocation and its tokens (module docstring)
        self.csum = 0.0 if self.derive else None  # Σ of the columns' cached tokens (module docstring)
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
        if j == 0:  # an empty batch starts derived again
            self.derived, self.rot = self.derive, 0
            if self.derive:
                self.hist, self.csum = [0] * self.bs, 0.0
        if self.derive:
            self.csum += float(cached)
        if self.derived:
            c = int(cached)
            if depth or int(blocks) != -(-(c + self.pending) // self.bs):  # not its tokens' blocks: keep the row
                self._underive()
            else:
                self.hist[(c - self.rot) % self.bs] += 1
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

    def _underive(self) -> None:
        """Leave derived blocks: the ``blocks`` row written out (⌈(C_j + pending)/bs⌉) and kept from now on."""
        n = self.n
        np.ceil((self.cached[:n] + float(self.pending)) / self.bs, out=self.blocks[:n])
        self.derived = False

    def _unkey(self, c: float) -> None:
        """Column of cached tokens ``c`` leaves: out of the histogram (derived) and of ``csum``."""
        if self.derived:
            self.hist[(int(c) - self.rot) % self.bs] -= 1
        self.csum -= float(c)

    def advance(self, k: int) -> None:
        """Every column's cached and generated tokens + k (a decode step each; whole k, no drafts)."""
        cg = self.cg[:, :self.n]
        np.add(cg, float(k), out=cg)  # in place (``cg[...] += k`` would also copy the view back onto itself)
        self.rot += k
        if self.derive:
            self.csum += float(k * self.n)

    def blocks_of(self, j: int) -> int:
        """Blocks column j holds (derived: ⌈(C_j + pending)/bs⌉)."""
        if self.derived:
            return -(-(int(self.cached[j]) + self.pending) // self.bs)
        return int(self.blocks[j])

    def blocks_sum(self, cols: np.ndarray) -> int:
        """Blocks the columns ``cols`` hold together (whole numbers: exact in any order)."""
        if self.derived:
            c = self.cached[cols]  # a copy (cols: indices)
            if self.pending:
                c += float(self.pending)
            return int(np.add.reduce(np.ceil(c / self.bs)))
        return int(np.add.reduce(self.blocks[cols]))

    def needy(self) -> int:
        """Derived: the blocks a decode step takes now, #{j : C_j ≡ 0 mod bs} (module docstring)."""
        return self.hist[-self.rot % self.bs]

    def phases(self) -> list[int]:
        """Derived: [#{j : r_j = i} for i < bs], r_j = (−C_j) mod bs, from the rotating histogram: with
        o = (−rot) mod bs, entry i is hist[(o − i) mod bs] (module docstring)."""
        h, o = self.hist, -self.rot % self.bs
        return h[o::-1] + h[:o:-1]

    def remove(self, j: int) -> None:
        """Drop column j (the last column moves into the hole; the columns left keep ``last_all``)."""
        if self.derive:
            self._unkey(self.cached[j])
        self.n -= 1
        k = self.n
        self._f[:, j] = self._f[:, k]
        self._i[:, j] = self._i[:, k]
        self.exact = False  # ``due`` stays a lower bound

    def keep(self, mask: np.ndarray, gone: np.ndarray | None = None) -> None:
        """Keep the columns where ``mask`` (over 0..n−1) is true, in order (``gone``: the indices where it is
        false, when the caller has them)."""
        if self.derive:
            for c in (self.cached[:self.n][~mask] if gone is None else self.cached[gone]).tolist():
                self._unkey(c)
        idx = mask.nonzero()[0]
        m = idx.size
        self._f[:, :m] = self._f.take(idx, axis=1)
        self._i[:, :m] = self._i.take(idx, axis=1)
        self.n = m

    def drop(self, j: int) -> None:
        """Drop column j, the columns after it moving down one (keep with only j false: the order kept)."""
        n = self.n
        if self.derive:
            self._unkey(self.cached[j])
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
