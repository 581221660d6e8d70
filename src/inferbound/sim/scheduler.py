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

Preemption (vLLM docs, "Preemption"): ``recompute`` frees the blocks and puts the request at the front
of the queue with C = 0 (its generated tokens are kept and recomputed as prompt); ``swap`` copies its
blocks to host memory (unbounded here) and back when it is readmitted, each way costing
blocks · block bytes per GPU / PCIe bandwidth (every GPU moves its own shard over its own link),
added to the step that performs the copy (vLLM V0 runs swaps before the forward pass).

Step time and power come from ``StepModel.step(decode contexts, chunks)`` only. State is applied
when a step is planned, with token timestamps at its end: nothing else touches a busy replica except
new arrivals, which only join the queue. Decoding sequences live in one (7, max_num_seqs) float array
so a step costs a few numpy operations, not a Python loop over the batch.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..stepmodel import StepModel
from .blocks import BlockManager, blocks_for
from .ledger import Ledger

C_, G_, O_, BLK, RID, ADM, LAST = range(7)  # rows of the decode array


class Replica:
    def __init__(self, index: int, sm: StepModel, pool: BlockManager, ledger: Ledger, budget: int,
                 max_seqs: int, preemption: str, swap_s_per_block: float, role: str = "both"):
        self.index, self.sm, self.pool, self.L = index, sm, pool, ledger
        self.budget, self.max_seqs, self.preemption, self.role = budget, max_seqs, preemption, role
        self.swap_s_per_block = swap_s_per_block
        self.idle_w = sm.dep.gpu.power.idle_w
        self.waiting: deque[int] = deque()
        self.S = np.zeros((7, max_seqs))
        self.n = 0  # decoding sequences: columns 0..n-1 of S
        self.prefilling: list[list] = []  # [rid, C, K, blocks, adm], in admission order
        self.adm = 0
        self.busy = False
        self.outstanding = 0
        self.preemptions = 0
        self.busy_s = 0.0
        self.energy_j_per_gpu = 0.0

    # -- preemption --------------------------------------------------------------------------------
    def _newest(self):
        """('dec', column) or ('pre', index) of the most recently admitted running sequence."""
        j = int(np.argmax(self.S[ADM, :self.n])) if self.n else -1
        if self.prefilling and (j < 0 or self.prefilling[-1][4] > self.S[ADM, j]):
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
            L.C[rid], L.host[rid] = cached, blocks
            return blocks * self.swap_s_per_block
        L.C[rid], L.host[rid] = 0, 0
        return 0.0

    def _evict_decoder(self, j: int) -> float:
        S, L = self.S, self.L
        rid = int(S[RID, j])
        L.G[rid], L.last[rid] = int(S[G_, j]), float(S[LAST, j])
        swap = self._evict(rid, int(S[C_, j]), int(S[BLK, j]))
        self.n -= 1
        S[:, j] = S[:, self.n]  # move the last column into the hole
        return swap

    def _evict_prefilling(self, i: int) -> float:
        rid, c, _, blk, _ = self.prefilling.pop(i)
        return self._evict(rid, c, blk)

    # -- one step ----------------------------------------------------------------------------------
    def start_step(self, t: float):
        """Plan and apply a step starting at ``t``; returns (end, finished rids, handoffs) or None if idle.

        ``handoffs``: (rid, blocks) of prefill-role requests whose first token is out and whose KV
        (still in ``blocks`` blocks here) must move to a decode replica.
        """
        S, L, pool, bs = self.S, self.L, self.pool, self.pool.block_size
        extra_s = 0.0
        preempted = False
        # (1) decodes
        if self.n:
            need = S[C_, :self.n] % bs == 0
            k = int(np.count_nonzero(need))
            while k > pool.free:
                kind, j = self._newest()
                extra_s += self._evict_prefilling(j) if kind == "pre" else self._evict_decoder(j)
                preempted = True
                need = S[C_, :self.n] % bs == 0
                k = int(np.count_nonzero(need))
            pool.free -= k
            S[BLK, :self.n] += need
        n_dec = self.n
        left = self.budget - n_dec
        # (2) continuing prefills
        chunks, sched = [], []
        i = 0
        while i < len(self.prefilling) and left > 0:
            e = self.prefilling[i]
            k = min(e[2] - e[1], left)
            extra = blocks_for(e[1] + k, bs) - e[3]
            while extra > pool.free and len(self.prefilling) - 1 > i:
                extra_s += self._evict_prefilling(len(self.prefilling) - 1)
                preempted = True
            if extra > pool.free:
                extra_s += self._evict_prefilling(i)
                preempted = True
                break
            pool.free -= extra
            e[3] += extra
            chunks.append((e[1], k))
            sched.append((e, k))
            left -= k
            i += 1
        # (3) admissions
        if not preempted:
            while self.waiting and left > 0 and self.n + len(self.prefilling) < self.max_seqs:
                rid = self.waiting[0]
                c, K = L.C[rid], L.P[rid] + L.G[rid]
                k = min(K - c, left)
                need_b = blocks_for(c + k, bs)
                if need_b > pool.free:
                    break
                self.waiting.popleft()
                pool.free -= need_b
                if L.admit[rid] != L.admit[rid]:  # NaN: first admission
                    L.admit[rid] = t
                extra_s += L.host[rid] * self.swap_s_per_block
                L.host[rid] = 0
                self.adm += 1
                if c > 0 and K - c == 1:  # resumed decode (swapped in, or KV transferred here)
                    j = self.n
                    S[:, j] = (c, L.G[rid], L.O[rid], need_b, rid, self.adm, L.last[rid])
                    self.n += 1
                else:
                    e = [rid, c, K, need_b, self.adm]
                    self.prefilling.append(e)
                    chunks.append((c, k))
                    sched.append((e, k))
                left -= k
        n_dec = self.n
        if n_dec == 0 and not chunks:
            return None
        run_s, watts = self.sm.step(S[C_, :n_dec], chunks)
        dur = run_s + extra_s
        end = t + dur
        L.samples.append((t, dur, n_dec, self.budget - left - n_dec, len(self.waiting),
                          n_dec + len(self.prefilling), pool.num_blocks - pool.free, self.index, watts))
        self.busy_s += dur
        self.energy_j_per_gpu += watts * run_s + self.idle_w * extra_s  # copies: GPU near idle
        finished, handoffs = self._apply_decodes(end, n_dec), []
        self._apply_chunks(end, sched, finished, handoffs)
        return end, finished, handoffs

    def _apply_decodes(self, end: float, n: int) -> list[int]:
        if not n:
            return []
        S = self.S
        S[C_, :n] += 1
        S[G_, :n] += 1
        self.L.gap_arrays.append(end - S[LAST, :n])
        S[LAST, :n] = end
        fin = S[G_, :n] >= S[O_, :n]
        if not fin.any():
            return []
        rids = S[RID, :n][fin].astype(int).tolist()
        self.pool.release(int(S[BLK, :n][fin].sum()))
        keep = ~fin
        m = int(np.count_nonzero(keep))
        S[:, :m] = S[:, :n][:, keep]
        self.n = m
        for rid in rids:
            self.L.G[rid] = self.L.O[rid]
            self.L.finish[rid] = end
        return rids

    def _apply_chunks(self, end: float, sched, finished: list[int], handoffs: list) -> None:
        L, S = self.L, self.S
        for e, k in sched:
            e[1] += k
            if e[1] < e[2]:
                continue
            rid = e[0]
            self.prefilling.remove(e)  # entries differ in their rid, so == finds this one
            g = L.G[rid] = L.G[rid] + 1
            if g == 1:
                L.first[rid] = end
            else:
                L.gap_scalars.append(end - L.last[rid])
            L.last[rid] = end
            if g >= L.O[rid]:
                L.finish[rid] = end
                self.pool.release(e[3])
                finished.append(rid)
            elif self.role == "prefill":
                L.C[rid] = e[1]
                handoffs.append((rid, e[3]))
            else:
                S[:, self.n] = (e[1], g, L.O[rid], e[3], rid, e[4], end)
                self.n += 1
