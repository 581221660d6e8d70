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

Engine features (docs/features/): with speculative decoding (sim/stepcost.py) every decoding sequence
takes k + 1 tokens of the budget and blocks for C + k + 1 tokens (the verify pass writes the KV of all
drafted positions), and gains 1 + j tokens per step (j accepted drafts, drawn); its blocks are rounded
back to what its cached tokens need only as it grows. With prefix caching (sim/prefix.py) an admitted
request with no KV of its own starts at the cached blocks of its prefix (a hit needs them resident),
its blocks past the cache's become the cache's once prefilled, and freed cache blocks are evicted (LRU)
before any preemption when blocks run out. With a host KV tier the pool holds the device's blocks and
the host's; the blocks in use beyond the device's are read over the host link each step.

Step time and power come from ``StepModel.step(decode contexts, chunks, mode)`` (through
sim/stepcost.StepPricer, which prices verify passes and drafts with the same step model): a step that
starts when the previous one ends runs in the pipeline's stream, one after idle is isolated
(step.py). Every block taken or returned goes through the replica's :class:`BlockManager`. State is
applied when a step is planned, with token timestamps at its end: nothing else touches a busy replica
except new arrivals, which only join the queue. Decoding sequences live in :class:`DecodeBatch`
(named numpy columns), so a step costs a few numpy operations, not a Python loop over the batch.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..step.table import StepModel
from .batch import DecodeBatch, Prefilling
from .blocks import BlockManager, blocks_for
from .ledger import Ledger
from .prefix import PrefixCache
from .stepcost import StepPricer


class Replica:
    def __init__(self, index: int, sm: StepModel, pool: BlockManager, ledger: Ledger, cfg,
                 swap_s_per_block: float, role: str = "both", extras: dict | None = None):
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
        self.pricer = StepPricer(sm, cfg, extras)
        self.k = cfg.spec_k  # drafted tokens per decode (0: no speculative decoding)
        self.cache = PrefixCache(pool, pool.block_size) if cfg.prefix_caching and role != "decode" else None
        self.device_blocks = cfg.device_blocks  # None: every block is on the GPU

    # -- blocks ------------------------------------------------------------------------------------
    def _room(self, n: int) -> bool:
        """Whether ``n`` blocks can be allocated now, evicting unreferenced prefix blocks first if needed."""
        free = self.pool.free
        if n <= free:
            return True
        if self.cache is None or n > free + self.cache.evictable():
            return False
        self.cache.reclaim(n - free)
        return n <= self.pool.free

    def _admission(self, rid: int, c: int, total: int, k: int) -> tuple[int, int, int, int]:
        """(cached tokens, prefix id, prefix depth, own blocks needed) of admitting ``rid`` with ``c`` cached
        and ``k`` tokens scheduled: a request with no KV of its own reuses its resident prefix blocks."""
        L, bs = self.L, self.pool.block_size
        pid, depth = -1, 0
        if self.cache is not None and c == 0 and L.prefix_id[rid] >= 0:
            depth = self.cache.hit_blocks(L.prefix_id[rid], L.prefix_len[rid], total)
            if depth:
                pid, c = L.prefix_id[rid], depth * bs
        end = (L.prompt[rid] + L.output[rid] - 1 + self.k) if self.reserve_full else min(c + k, total)
        return c, pid, depth, blocks_for(end, bs) - depth

    def _release_prefix(self, pid: int, depth: int, t: float) -> None:
        if self.cache is not None and pid >= 0:
            self.cache.release(int(pid), int(depth), t)

    def _admissible(self) -> bool:
        """Whether the first waiting request could be admitted now (prefill-first engines)."""
        if not self.waiting or self.dec.n + len(self.prefilling) >= self.max_seqs:
            return False
        L, rid = self.L, self.waiting[0]
        c, total = L.cached[rid], L.prompt[rid] + L.generated[rid]
        c, _, _, need = self._admission(rid, c, total, self.budget)
        k = min(total - c, self.budget)
        if not self.chunked and k < total - c:
            return False
        return need <= self.pool.free + (self.cache.evictable() if self.cache is not None else 0)

    # -- preemption --------------------------------------------------------------------------------
    def _newest(self):
        """('dec', column) or ('pre', index) of the most recently admitted running sequence."""
        d = self.dec
        j = int(np.argmax(d.admitted[:d.n])) if d.n else -1
        if self.prefilling and (j < 0 or self.prefilling[-1].admitted > d.admitted[j]):
            return "pre", len(self.prefilling) - 1
        return ("dec", j) if j >= 0 else (None, -1)

    def _evict(self, rid: int, cached: int, blocks: int, pid: int = -1, depth: int = 0) -> float:
        """Preempt ``rid`` holding ``cached`` tokens in ``blocks`` blocks (and ``depth`` blocks of prefix
        ``pid``); returns swap-out seconds (a swapped sequence comes back with all its blocks its own)."""
        L = self.L
        self.pool.release(blocks)
        self._release_prefix(pid, depth, self.last_end)
        L.preempts[rid] += 1
        self.preemptions += 1
        self.waiting.appendleft(rid)
        if self.preemption == "swap":
            L.cached[rid], L.host_blocks[rid] = cached, blocks + depth
            return (blocks + depth) * self.swap_s_per_block
        L.cached[rid], L.host_blocks[rid] = 0, 0
        return 0.0

    def _evict_decoder(self, j: int) -> float:
        d, L = self.dec, self.L
        rid = int(d.rid[j])
        L.generated[rid], L.last_s[rid] = int(d.generated[j]), d.last_of(j)
        swap = self._evict(rid, int(d.cached[j]), int(d.blocks[j]), int(d.pid[j]), int(d.depth[j]))
        d.remove(j)
        return swap

    def _evict_prefilling(self, i: int) -> float:
        e = self.prefilling.pop(i)
        return self._evict(e.rid, e.cached, e.blocks, e.pid, e.depth)

    def _decode_need(self) -> tuple[np.ndarray, int]:
        """(blocks each decoding sequence must add for this step's C + k + 1 tokens beyond the H = blocks +
        depth it holds, their sum): max(⌈(C + k + 1)/bs⌉ − H, 0). Without drafts (k = 0) and with H·bs >= C
        (its blocks hold its cached tokens) that is 1 where C >= H·bs and 0 elsewhere: the mask is the need."""
        d, n, bs = self.dec, self.dec.n, self.pool.block_size
        if not self.k:
            held = (d.blocks[:n] + d.depth[:n]) * bs if d.deep else d.blocks[:n] * bs  # (else every depth is 0)
            need = d.cached[:n] >= held
            return need, int(np.count_nonzero(need))
        want = np.ceil((d.cached[:n] + (1 + self.k)) / bs)
        want -= d.blocks[:n]
        want -= d.depth[:n]
        need = np.maximum(want, 0.0, out=want)
        return need, int(np.add.reduce(need))

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
            need, k = self._decode_need()
            while k > pool.free and not self._room(k):
                kind, j = self._newest()
                extra_s += self._evict_prefilling(j) if kind == "pre" else self._evict_decoder(j)
                preempted = True
                need, k = self._decode_need()
            if k:
                pool.free -= k  # BlockManager.allocate, the room just checked
                d.blocks[:d.n] += need
        n_dec = 0 if prefill_only else d.n
        left = self.budget - n_dec * (self.k + 1)
        # (2) continuing prefills
        chunks, sched = [], []
        i = 0
        while self.prefilling and i < len(self.prefilling) and left > 0:
            e = self.prefilling[i]
            k = min(e.total - e.cached, left)
            extra = max(blocks_for(e.cached + k, bs) - e.blocks - e.depth, 0)
            while not self._room(extra) and len(self.prefilling) - 1 > i:
                extra_s += self._evict_prefilling(len(self.prefilling) - 1)
                preempted = True
            if not self._room(extra):
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
                c, pid, depth, _ = self._admission(rid, c, total, left)
                k = min(total - c, left)
                if not self.chunked and k < total - c:
                    break
                _, _, _, need_b = self._admission(rid, L.cached[rid], total, k)
                if self.cache is not None:
                    self.cache.acquire(pid, depth, t)  # the hit's blocks are not evictable for our own room
                if not self._room(need_b):
                    self._release_prefix(pid, depth, t)
                    break
                self.waiting.popleft()
                pool.allocate(need_b)
                L.hit_tokens[rid] += c - L.cached[rid]
                L.computed_tokens[rid] += total - c
                if L.admit_s[rid] != L.admit_s[rid]:  # NaN: first admission
                    L.admit_s[rid] = t
                extra_s += L.host_blocks[rid] * self.swap_s_per_block
                L.host_blocks[rid] = 0
                self.admissions += 1
                if c > 0 and total - c == 1 and not depth and L.generated[rid] > 0:  # resumed decode (swapped in,
                    # or KV transferred here); a prefill evicted one token short of its prompt is not one
                    d.add(c, L.generated[rid], L.output[rid], need_b, rid, self.admissions, L.last_s[rid])
                else:
                    e = Prefilling(rid, c, total, need_b, self.admissions, pid, depth)
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
        run_s, watts = self.pricer.price(d.cached[:n_dec], chunks, mode)
        used = pool.num_blocks - pool.free
        if self.device_blocks is not None:  # the host tier's blocks in use are read back (offload.py)
            in_use = used - (self.cache.evictable() if self.cache is not None else 0)
            extra_s += self.pricer.host_seconds(in_use - self.device_blocks, run_s)
        dur = run_s + extra_s
        end = t + dur
        dec_tokens = n_dec * (self.k + 1) if self.k else n_dec
        L.record_step(t, dur, dec_tokens, self.budget - left - dec_tokens, len(self.waiting),
                      n_dec + len(self.prefilling), used, self.index, watts)
        self.busy_s += dur
        self.energy_j_per_gpu += watts * run_s + self.idle_w * extra_s  # copies: GPU near idle
        self.last_end = end
        finished, handoffs = self._apply_decodes(t, end, n_dec), []
        if sched:
            self._apply_chunks(end, sched, finished, handoffs)
        return end, finished, handoffs

    def _apply_decodes(self, start: float, end: float, n: int) -> list[int]:
        """Advance the ``n`` decoding sequences (all of them: n = dec.n, or 0) by this step's tokens."""
        if not n:
            return []
        d = self.dec
        if self.k:
            gained = np.minimum(self.pricer.produced(n), d.target[:n] - d.generated[:n])
        else:  # one token each: every decoding sequence has at least one to go (finished ones leave below)
            gained = 1.0
        d.cg[:, :n] += gained  # cached and generated
        if d.last_all == start:  # every one decoded in the step before (n = d.n: all of them decode)
            self.L.record_equal_gaps(end - start, n)
        else:
            self.L.record_gaps(end, d.lasts(), start)
        if self.k:
            got = int(np.add.reduce(gained))  # whole numbers: exact
            self.L.record_same_time(got - n)
            self.L.verify_passes += n
            self.L.verify_tokens += got
        d.set_last(end)
        if not self.k:  # each gained one token: none finished while the bound on what is left stays > 0
            d.due -= 1.0
            if d.due > 0:
                return []
        fin = d.generated[:n] >= d.target[:n]
        if not np.count_nonzero(fin):
            d.due = d.to_go()
            return []
        rids = d.rid[:n][fin].tolist()
        self.pool.release(int(np.add.reduce(d.blocks[:n][fin])))  # whole numbers: exact in any order
        if self.cache is not None:
            for pid, depth in zip(d.pid[:n][fin].tolist(), d.depth[:n][fin].tolist()):
                self._release_prefix(pid, depth, end)
        d.keep(~fin)
        d.due = d.to_go()
        for rid in rids:
            self.L.generated[rid] = self.L.output[rid]
            self.L.finish_s[rid] = end
        return rids

    def _apply_chunks(self, end: float, sched, finished: list[int], handoffs: list) -> None:
        L = self.L
        for e, k in sched:
            e.cached += k
            if self.cache is not None:
                self._fill_prefix(e, end)
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
                self._release_prefix(e.pid, e.depth, end)
                finished.append(rid)
            elif self.role == "prefill":
                L.cached[rid] = e.cached
                self._release_prefix(e.pid, e.depth, end)  # the decode replica gets the whole KV
                handoffs.append((rid, e.blocks))
            else:
                self.dec.add(e.cached, g, L.output[rid], e.blocks, rid, e.admitted, end, e.pid, e.depth)

    def _fill_prefix(self, e: Prefilling, t: float) -> None:
        """Once ``e`` has prefilled its prefix's whole blocks past what the cache holds, those blocks of
        its own become the cache's (sim/prefix.py)."""
        L, bs = self.L, self.pool.block_size
        pid = L.prefix_id[e.rid]
        if pid < 0 or e.pid not in (-1, pid):
            return
        target = min(L.prefix_len[e.rid], e.total - 1) // bs
        have = self.cache.blocks.get(pid, 0)
        if target <= have or e.cached < target * bs or e.depth > have:
            return
        give = target - have
        e.blocks -= give
        self.cache.give(pid, give, t)
        self._release_prefix(e.pid, e.depth, t)
        self.cache.acquire(pid, target, t)
        e.pid, e.depth = pid, target
