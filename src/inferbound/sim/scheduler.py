"""One replica's continuous-batching scheduler, after vLLM V1 (``vllm/v1/core/sched/scheduler.py``).

Every sequence knows K = prompt + generated tokens and has C of them in its KV cache; a step computes
n <= K − C of them, and when C reaches K the step samples one new token (K grows by one). A prompt
is a chunk (0, n); a decode is the chunk (K − 1, 1); a recomputed sequence prefills prompt and output
so far, and the step that finishes it samples its next token. Each step, under a token budget B
(``max_num_batched_tokens``) and at most ``max_num_seqs`` running sequences:

1. every decoding sequence gets one token, oldest first; one whose next token starts a new block
   (C mod block_size = 0) takes a free block, and while too few are free the most recently admitted
   running sequence is preempted (it may be the one asking);
2. partially prefilled sequences continue with min(K − C, budget left) tokens each, oldest first,
   preempting the newest not-yet-scheduled sequence (or themselves) when blocks run out;
3. if nothing was preempted in this step, waiting requests are admitted first-come first-served while
   budget, ``max_num_seqs`` and free blocks allow; a prompt longer than the budget left is split
   (chunked prefill) and continues in (2) next step.

Engine behaviour (sim/config.py, from the engine profile): with ``reserve_full`` (TensorRT-LLM's
GUARANTEED_NO_EVICT) a request is admitted only when blocks for its prompt and every output token
are free, takes them all at once and is never preempted; without ``chunked_prefill`` a prompt is
admitted only when it fits the budget left whole; without ``mixed_batches`` (SGLang's prefill-first
scheduler, vLLM V0) a step that can admit or continue a prefill runs prefills only, and decodes wait
for the next step without one.

Preemption (vLLM docs, "Preemption"): ``recompute`` frees the blocks and puts the request at the front
of the queue with C = 0 (its generated tokens are kept and recomputed as prompt); ``swap`` copies its
blocks to host memory (unbounded here) and back when it is readmitted, each way costing
blocks · block bytes per GPU / PCIe bandwidth (every GPU moves its own shard over its own link),
added to the step that performs the copy (vLLM V0 runs swaps before the forward pass).

Step time and power come from ``StepModel.step(decode contexts, chunks, mode)`` only: a step that
starts when the previous one ends runs in the pipeline's stream, one after idle is isolated
(step.py). Every block taken or returned goes through the replica's :class:`BlockManager`. State is
applied when a step is planned, with token timestamps at its end: nothing else touches a busy replica
except new arrivals, which only join the queue. Decoding sequences live in :class:`DecodeBatch`
(named numpy columns), so a step costs a few numpy operations, not a Python loop over the batch.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..stepmodel import StepModel
from .blocks import BlockManager, blocks_for
from .ledger import Ledger


class DecodeBatch:
    """The decoding sequences of a replica: columns 0..n−1 of named arrays."""

    __slots__ = ("n", "cached", "generated", "target", "blocks", "rid", "admitted", "last_s")

    def __init__(self, capacity: int):
        self.n = 0
        self.cached = np.zeros(capacity)      # C: tokens in the KV cache
        self.generated = np.zeros(capacity)   # G: output tokens so far
        self.target = np.zeros(capacity)      # O: output tokens wanted
        self.blocks = np.zeros(capacity)      # KV blocks held
        self.rid = np.zeros(capacity, dtype=np.int64)
        self.admitted = np.zeros(capacity)    # admission order (preemption picks the newest)
        self.last_s = np.zeros(capacity)      # time of the sequence's last token

    def add(self, cached, generated, target, blocks, rid, admitted, last_s) -> None:
        j = self.n
        self.cached[j], self.generated[j], self.target[j], self.blocks[j] = cached, generated, target, blocks
        self.rid[j], self.admitted[j], self.last_s[j] = rid, admitted, last_s
        self.n += 1

    def remove(self, j: int) -> None:
        """Drop column j (the last column moves into the hole)."""
        self.n -= 1
        k = self.n
        for name in self.__slots__[1:]:
            a = getattr(self, name)
            a[j] = a[k]

    def keep(self, mask: np.ndarray) -> None:
        """Keep the columns where ``mask`` (over 0..n−1) is true, in order."""
        m = int(np.count_nonzero(mask))
        for name in self.__slots__[1:]:
            a = getattr(self, name)
            a[:m] = a[:self.n][mask]
        self.n = m


class Prefilling:
    """A sequence whose prompt (or recomputation) is being prefilled in chunks."""

    __slots__ = ("rid", "cached", "total", "blocks", "admitted")

    def __init__(self, rid: int, cached: int, total: int, blocks: int, admitted: int):
        self.rid, self.cached, self.total, self.blocks, self.admitted = rid, cached, total, blocks, admitted


class Replica:
    def __init__(self, index: int, sm: StepModel, pool: BlockManager, ledger: Ledger, cfg,
                 swap_s_per_block: float, role: str = "both"):
        self.index, self.sm, self.pool, self.L = index, sm, pool, ledger
        self.budget, self.max_seqs, self.preemption, self.role = (cfg.max_num_batched_tokens, cfg.max_num_seqs,
                                                                  cfg.preemption, role)
        self.reserve_full, self.chunked, self.mixed = cfg.reserve_full, cfg.chunked_prefill, cfg.mixed_batches
        self.swap_s_per_block = swap_s_per_block
        self.idle_w = sm.dep.gpu.power.idle_w
        self.waiting: deque[int] = deque()
        self.dec = DecodeBatch(self.max_seqs)
        self.prefilling: list[Prefilling] = []  # in admission order
        self.admissions = 0
        self.busy = False
        self.last_end = -1.0  # end of the last step (a step starting then continues the stream)
        self.outstanding = 0
        self.preemptions = 0
        self.busy_s = 0.0
        self.energy_j_per_gpu = 0.0

    def _admissible(self) -> bool:
        """Whether the first waiting request could be admitted now (prefill-first engines)."""
        if not self.waiting or self.dec.n + len(self.prefilling) >= self.max_seqs:
            return False
        L, rid, bs = self.L, self.waiting[0], self.pool.block_size
        c, total = L.cached[rid], L.prompt[rid] + L.generated[rid]
        k = min(total - c, self.budget)
        if not self.chunked and k < total - c:
            return False
        need = blocks_for(L.prompt[rid] + L.output[rid] - 1 if self.reserve_full else c + k, bs)
        return need <= self.pool.free

    # -- preemption --------------------------------------------------------------------------------
    def _newest(self):
        """('dec', column) or ('pre', index) of the most recently admitted running sequence."""
        d = self.dec
        j = int(np.argmax(d.admitted[:d.n])) if d.n else -1
        if self.prefilling and (j < 0 or self.prefilling[-1].admitted > d.admitted[j]):
            return "pre", len(self.prefilling) - 1
        return ("dec", j) if j >= 0 else (None, -1)

    def _evict(self, rid: int, cached: int, blocks: int) -> float:
        """Preempt ``rid`` holding ``cached`` tokens in ``blocks`` blocks; returns swap-out seconds."""
        L = self.L
        self.pool.release(blocks)
        L.preempts[rid] += 1
        self.preemptions += 1
        self.waiting.appendleft(rid)
        if self.preemption == "swap":
            L.cached[rid], L.host_blocks[rid] = cached, blocks
            return blocks * self.swap_s_per_block
        L.cached[rid], L.host_blocks[rid] = 0, 0
        return 0.0

    def _evict_decoder(self, j: int) -> float:
        d, L = self.dec, self.L
        rid = int(d.rid[j])
        L.generated[rid], L.last_s[rid] = int(d.generated[j]), float(d.last_s[j])
        swap = self._evict(rid, int(d.cached[j]), int(d.blocks[j]))
        d.remove(j)
        return swap

    def _evict_prefilling(self, i: int) -> float:
        e = self.prefilling.pop(i)
        return self._evict(e.rid, e.cached, e.blocks)

    # -- one step ----------------------------------------------------------------------------------
    def start_step(self, t: float):
        """Plan and apply a step starting at ``t``; returns (end, finished rids, handoffs) or None if idle.

        ``handoffs``: (rid, blocks) of prefill-role requests whose first token is out and whose KV
        (still in ``blocks`` blocks here) must move to a decode replica.
        """
        d, L, pool, bs = self.dec, self.L, self.pool, self.pool.block_size
        extra_s = 0.0
        preempted = False
        prefill_only = not self.mixed and (self.prefilling or self._admissible())
        # (1) decodes (their blocks were taken at admission under reserve_full)
        if d.n and not self.reserve_full and not prefill_only:
            need = d.cached[:d.n] % bs == 0
            k = int(np.count_nonzero(need))
            while k > pool.free:
                kind, j = self._newest()
                extra_s += self._evict_prefilling(j) if kind == "pre" else self._evict_decoder(j)
                preempted = True
                need = d.cached[:d.n] % bs == 0
                k = int(np.count_nonzero(need))
            pool.allocate(k)
            d.blocks[:d.n] += need
        n_dec = 0 if prefill_only else d.n
        left = self.budget - n_dec
        # (2) continuing prefills
        chunks, sched = [], []
        i = 0
        while i < len(self.prefilling) and left > 0:
            e = self.prefilling[i]
            k = min(e.total - e.cached, left)
            extra = max(blocks_for(e.cached + k, bs) - e.blocks, 0)
            while extra > pool.free and len(self.prefilling) - 1 > i:
                extra_s += self._evict_prefilling(len(self.prefilling) - 1)
                preempted = True
            if extra > pool.free:
                extra_s += self._evict_prefilling(i)
                preempted = True
                break
            pool.allocate(extra)
            e.blocks += extra
            chunks.append((e.cached, k))
            sched.append((e, k))
            left -= k
            i += 1
        # (3) admissions
        if not preempted:
            while self.waiting and left > 0 and d.n + len(self.prefilling) < self.max_seqs:
                rid = self.waiting[0]
                c, total = L.cached[rid], L.prompt[rid] + L.generated[rid]
                k = min(total - c, left)
                if not self.chunked and k < total - c:
                    break
                need_b = blocks_for(L.prompt[rid] + L.output[rid] - 1 if self.reserve_full else c + k, bs)
                if need_b > pool.free:
                    break
                self.waiting.popleft()
                pool.allocate(need_b)
                if L.admit_s[rid] != L.admit_s[rid]:  # NaN: first admission
                    L.admit_s[rid] = t
                extra_s += L.host_blocks[rid] * self.swap_s_per_block
                L.host_blocks[rid] = 0
                self.admissions += 1
                if c > 0 and total - c == 1:  # resumed decode (swapped in, or KV transferred here)
                    d.add(c, L.generated[rid], L.output[rid], need_b, rid, self.admissions, L.last_s[rid])
                else:
                    e = Prefilling(rid, c, total, need_b, self.admissions)
                    self.prefilling.append(e)
                    chunks.append((c, k))
                    sched.append((e, k))
                left -= k
        n_dec = 0 if prefill_only else d.n
        if n_dec == 0 and not chunks:
            if prefill_only and d.n:  # nothing could be admitted after all: decode instead
                self.mixed = True
                out = self.start_step(t)
                self.mixed = False
                return out
            return None
        mode = "stream" if t == self.last_end else "isolated"
        run_s, watts = self.sm.step(d.cached[:n_dec], chunks, mode)
        dur = run_s + extra_s
        end = t + dur
        L.record_step(t, dur, n_dec, self.budget - left - n_dec, len(self.waiting), n_dec + len(self.prefilling),
                      pool.num_blocks - pool.free, self.index, watts)
        self.busy_s += dur
        self.energy_j_per_gpu += watts * run_s + self.idle_w * extra_s  # copies: GPU near idle
        self.last_end = end
        finished, handoffs = self._apply_decodes(t, end, n_dec), []
        self._apply_chunks(end, sched, finished, handoffs)
        return end, finished, handoffs

    def _apply_decodes(self, start: float, end: float, n: int) -> list[int]:
        if not n:
            return []
        d = self.dec
        d.cached[:n] += 1
        d.generated[:n] += 1
        self.L.record_gaps(end, d.last_s[:n], start)
        d.last_s[:n] = end
        fin = d.generated[:n] >= d.target[:n]
        if not fin.any():
            return []
        rids = d.rid[:n][fin].tolist()
        self.pool.release(int(d.blocks[:n][fin].sum()))
        d.keep(~fin)
        for rid in rids:
            self.L.generated[rid] = self.L.output[rid]
            self.L.finish_s[rid] = end
        return rids

    def _apply_chunks(self, end: float, sched, finished: list[int], handoffs: list) -> None:
        L = self.L
        for e, k in sched:
            e.cached += k
            if e.cached < e.total:
                continue
            rid = e.rid
            self.prefilling.remove(e)
            g = L.generated[rid] = L.generated[rid] + 1
            if g == 1:
                L.first_s[rid] = end
            else:
                L.record_gap(end - L.last_s[rid])
            L.last_s[rid] = end
            if g >= L.output[rid]:
                L.finish_s[rid] = end
                self.pool.release(e.blocks)
                finished.append(rid)
            elif self.role == "prefill":
                L.cached[rid] = e.cached
                handoffs.append((rid, e.blocks))
            else:
                self.dec.add(e.cached, g, L.output[rid], e.blocks, rid, e.admitted, end)
