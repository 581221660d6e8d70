"""Blocks, admission and preemption of one replica's scheduler (scheduler.py, after vLLM V1's scheduler).

What a step may take from the replica's :class:`~inferbound.sim.blocks.BlockManager`, and what it gives
back when it preempts:

- room: ``n`` blocks can be taken when n <= free, or when the prefix cache's evictable blocks make up
  the difference (they are then freed, least recently used first: sim/prefix.py);
- admission: a request with no KV of its own starts at the resident blocks of its prefix (a hit) and
  needs ⌈min(C + chunk, K)/bs⌉ − depth blocks of its own for its first chunk, or under ``reserve_full``
  (TensorRT-LLM's GUARANTEED_NO_EVICT) ⌈(prompt + output − 1 + k)/bs⌉ − depth at once;
- a decode needs max(⌈(C + k + 1)/bs⌉ − H, 0) more blocks (H = blocks + prefix depth it holds);
- preemption (vLLM docs, "Preemption") takes the most recently admitted running sequence: ``recompute``
  frees its blocks and requeues it at the front with C = 0; ``swap`` parks its blocks in host memory,
  blocks · block bytes per GPU / PCIe bandwidth seconds each way.

:class:`BlockRules` is the part of :class:`~inferbound.sim.scheduler.Replica` that applies these rules;
it reads the replica's ``pool``, ``cache``, ``ledger``, ``dec``, ``prefilling``, ``waiting`` and settings.
Every block taken or returned goes through ``pool.allocate`` / ``pool.release``.
"""
from __future__ import annotations

import numpy as np

from .blocks import blocks_for


class BlockRules:
    """Room, admission needs and preemption of a :class:`~inferbound.sim.scheduler.Replica` (module
    docstring)."""

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

    def _admission(self, rid: int, cached: int, total: int, tokens: int) -> tuple[int, int, int, int]:
        """(cached tokens, prefix id, prefix depth, own blocks needed) of admitting ``rid`` with ``cached``
        tokens in its KV and ``tokens`` scheduled: a request with no KV of its own reuses its resident
        prefix blocks."""
        ledger, bs = self.ledger, self.pool.block_size
        pid, depth = -1, 0
        if self.cache is not None and cached == 0 and ledger.prefix_id[rid] >= 0:
            depth = self.cache.hit_blocks(ledger.prefix_id[rid], ledger.prefix_len[rid], total)
            if depth:
                pid, cached = ledger.prefix_id[rid], depth * bs
        if self.reserve_full:  # blocks for the prompt and every output token, taken at once
            end = ledger.prompt[rid] + ledger.output[rid] - 1 + self.spec_k
        else:
            end = min(cached + tokens, total)
        return cached, pid, depth, blocks_for(end, bs) - depth

    def _release_prefix(self, pid: int, depth: int, t: float) -> None:
        if self.cache is not None and pid >= 0:
            self.cache.release(int(pid), int(depth), t)

    def _admissible(self) -> bool:
        """Whether the first waiting request could be admitted now (prefill-first engines)."""
        if not self.waiting or self.dec.n + len(self.prefilling) >= self.max_seqs:
            return False
        ledger, rid = self.ledger, self.waiting[0]
        total = ledger.prompt[rid] + ledger.generated[rid]
        cached, _, _, need = self._admission(rid, ledger.cached[rid], total, self.budget)
        chunk = min(total - cached, self.budget)
        if not self.chunked and chunk < total - cached:
            return False
        return need <= self.pool.free + (self.cache.evictable() if self.cache is not None else 0)

    def _decode_need(self) -> tuple[np.ndarray, int]:
        """(blocks each decoding sequence must add for this step's C + k + 1 tokens beyond the H = blocks +
        depth it holds, their sum): max(⌈(C + k + 1)/bs⌉ − H, 0). Without drafts (k = 0) and with H·bs >= C
        (its blocks hold its cached tokens) that is 1 where C >= H·bs and 0 elsewhere: the mask is the need."""
        dec, n, bs = self.dec, self.dec.n, self.pool.block_size
        if not self.spec_k:
            held = (dec.blocks[:n] + dec.depth[:n]) * bs if dec.deep else dec.blocks[:n] * bs  # (else depth 0)
            need = dec.cached[:n] >= held
            return need, int(np.count_nonzero(need))
        want = np.ceil((dec.cached[:n] + (1 + self.spec_k)) / bs)
        want -= dec.blocks[:n]
        want -= dec.depth[:n]
        need = np.maximum(want, 0.0, out=want)
        return need, int(np.add.reduce(need))

    # -- preemption --------------------------------------------------------------------------------
    def _newest(self):
        """('dec', column) or ('pre', index) of the most recently admitted running sequence."""
        dec = self.dec
        j = int(np.argmax(dec.admitted[:dec.n])) if dec.n else -1
        if self.prefilling and (j < 0 or self.prefilling[-1].admitted > dec.admitted[j]):
            return "pre", len(self.prefilling) - 1
        return ("dec", j) if j >= 0 else (None, -1)

    def _evict(self, rid: int, cached: int, blocks: int, pid: int = -1, depth: int = 0) -> float:
        """Preempt ``rid`` holding ``cached`` tokens in ``blocks`` blocks (and ``depth`` blocks of prefix
        ``pid``); returns swap-out seconds (a swapped sequence comes back with all its blocks its own)."""
        ledger = self.ledger
        self.pool.release(blocks)
        self._release_prefix(pid, depth, self.last_end)
        ledger.preempts[rid] += 1
        self.preemptions += 1
        self.waiting.appendleft(rid)
        if self.preemption == "swap":
            ledger.cached[rid], ledger.host_blocks[rid] = cached, blocks + depth
            return (blocks + depth) * self.swap_s_per_block
        ledger.cached[rid], ledger.host_blocks[rid] = 0, 0
        return 0.0

    def _evict_decoder(self, j: int) -> float:
        dec, ledger = self.dec, self.ledger
        rid = int(dec.rid[j])
        ledger.generated[rid], ledger.last_s[rid] = int(dec.generated[j]), dec.last_of(j)
        swap = self._evict(rid, int(dec.cached[j]), dec.blocks_of(j), int(dec.pid[j]), int(dec.depth[j]))
        dec.remove(j)
        return swap

    def _evict_prefilling(self, i: int) -> float:
        entry = self.prefilling.pop(i)
        return self._evict(entry.rid, entry.cached, entry.blocks, entry.pid, entry.depth)
