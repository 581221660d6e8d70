"""Applying a planned step of one replica's scheduler (scheduler.py) at its end: tokens, timestamps, finishes.

A step that ran from ``start`` to ``end`` gives each of its n decoding sequences its tokens (one, or
1 + j accepted drafts under speculative decoding: sim/stepcost.py), each at ``end``: the gaps
end − (the sequence's previous token) go to the ledger, and a sequence whose generated tokens reach its
target leaves, its blocks returned to the pool. A prefill chunk adds its tokens to the KV; the chunk that
completes a prompt (or a recomputation) samples its next token at ``end``, the first token (TTFT) of a
new request, and the sequence joins the decodes, finishes, or (prefill role) hands its KV to a decode
replica. With prefix caching a prefilled prefix's whole blocks become the cache's (sim/prefix.py).

:class:`StepApply` is the part of :class:`~inferbound.sim.scheduler.Replica` that does this; every
block returned goes through the replica's ``pool.release``.
"""
from __future__ import annotations

import math

import numpy as np

from .batch import Prefilling


class StepApply:
    """The tokens of a planned step of a :class:`~inferbound.sim.scheduler.Replica` (module docstring)."""

    def _apply_decodes(self, start: float, end: float, n: int) -> list[int]:
        """Advance the ``n`` decoding sequences (all of them: n = dec.n, or 0) by this step's tokens."""
        dec, ledger = self.dec, self.ledger
        dec.pending = 0  # the step's tokens land: derived blocks read off C again (batch.py)
        if not n:
            return []
        if self.spec_k:
            gained = np.minimum(self.pricer.produced(n), dec.target[:n] - dec.generated[:n])
            dec.cg[:, :n] += gained  # cached and generated
        else:  # one token each: every decoding sequence has at least one to go (finished ones leave below)
            dec.advance(1)
        if dec.last_all == start:  # every one decoded in the step before (n = dec.n: all of them decode)
            ledger.record_equal_gaps(end - start, n)
        else:
            ledger.record_gaps(end, dec.lasts(), start)
        if self.spec_k:
            got = int(np.add.reduce(gained))  # whole numbers: exact
            ledger.record_same_time(got - n)
            ledger.verify_passes += n
            ledger.verify_tokens += got
        dec.set_last(end)
        if not self.spec_k:  # each gained one token: none finished while the bound on what is left stays > 0
            dec.due -= 1.0
            if dec.due > 0:
                return []
        return self._finish_decodes(end, n)

    def _finish_decodes(self, end: float, n: int) -> list[int]:
        """The decoding sequences among the first ``n`` whose generated tokens reach their target leave at
        ``end``, their blocks returned to the pool and their prefix references released; their rids."""
        dec, ledger = self.dec, self.ledger
        left = dec.target[:n] - dec.generated[:n]  # tokens still to go; <= 0: finished
        cols = (left <= 0).nonzero()[0]
        if not cols.size:
            dec.due, dec.exact = (float(np.minimum.reduce(left)) if n else math.inf), True
            return []
        if cols.size == 1:  # one finish (the common case): plain indexing, the columns after it move down
            j = int(cols[0])
            rids = [int(dec.rid[j])]
            self.pool.release(dec.blocks_of(j))
            if self.cache is not None:
                self._release_prefix(int(dec.pid[j]), float(dec.depth[j]), end)
            dec.drop(j)
        else:
            rids = dec.rid[cols].tolist()
            self.pool.release(dec.blocks_sum(cols))
            if self.cache is not None:
                for pid, depth in zip(dec.pid[cols].tolist(), dec.depth[cols].tolist()):
                    self._release_prefix(pid, depth, end)
            dec.keep(left > 0, cols)
        left[cols] = math.inf  # the columns left: min of the rest is to_go (inf when none is left)
        dec.due, dec.exact = float(np.minimum.reduce(left)), True
        for rid in rids:
            ledger.generated[rid] = ledger.output[rid]
            ledger.finish_s[rid] = end
        return rids

    def _apply_chunks(self, end: float, sched, finished: list[int], handoffs: list) -> None:
        ledger = self.ledger
        for entry, tokens in sched:
            entry.cached += tokens
            if self.cache is not None:
                self._fill_prefix(entry, end)
            if entry.cached < entry.total:
                continue
            rid = entry.rid
            self.prefilling.remove(entry)
            g = ledger.generated[rid] = ledger.generated[rid] + 1
            if g == 1:
                ledger.first_s[rid] = end
            else:
                ledger.record_gap(end - ledger.last_s[rid])
            ledger.last_s[rid] = end
            if g >= ledger.output[rid]:
                ledger.finish_s[rid] = end
                self.pool.release(entry.blocks)
                self._release_prefix(entry.pid, entry.depth, end)
                finished.append(rid)
            elif self.role == "prefill":
                ledger.cached[rid] = entry.cached
                self._release_prefix(entry.pid, entry.depth, end)  # the decode replica gets the whole KV
                handoffs.append((rid, entry.blocks))
            else:
                self.dec.add(entry.cached, g, ledger.output[rid], entry.blocks, rid, entry.admitted, end,
                             entry.pid, entry.depth)

    def _fill_prefix(self, entry: Prefilling, t: float) -> None:
        """Once ``entry`` has prefilled its prefix's whole blocks past what the cache holds, those blocks of
        its own become the cache's (sim/prefix.py)."""
        ledger, bs = self.ledger, self.pool.block_size
        pid = ledger.prefix_id[entry.rid]
        if pid < 0 or entry.pid not in (-1, pid):
            return
        target = min(ledger.prefix_len[entry.rid], entry.total - 1) // bs
        have = self.cache.blocks.get(pid, 0)
        if target <= have or entry.cached < target * bs or entry.depth > have:
            return
        give = target - have
        entry.blocks -= give
        self.cache.give(pid, give, t)
        self._release_prefix(entry.pid, entry.depth, t)
        self.cache.acquire(pid, target, t)
        entry.pid, entry.depth = pid, target
