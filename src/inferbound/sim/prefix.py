"""The prefix cache of one simulated replica: shared prompt prefixes kept in the KV block pool.

After vLLM's automatic prefix caching (docs "Automatic Prefix Caching"; KV blocks hashed by the tokens
they hold, freed blocks kept as cache and evicted least-recently-used): requests name their shared
prefix (``Request.prefix_id``, ``prefix_len``; prefix.request_prefix for ``--prefix-hit-rate`` and
``--shared-prefix-len``). Per prefix id the cache holds its first B whole blocks.

- Hit: a request admitted with no KV of its own reuses h = min(B, ⌊prefix_len/b⌋, ⌊(I − 1)/b⌋) blocks
  (at least one prompt token is computed), so it starts at C = h·b cached tokens and prefills only the
  rest; it references the prefix to depth h while it runs.
- Fill: when a request's prefill passes ⌊prefix_len/b⌋·b tokens and that is beyond B, its blocks past B
  become the cache's (B grows; the request now references the prefix to that depth).
- Residency: a block is evictable when no running request references it (depth above every running
  user's); under memory pressure, before any preemption, evictable blocks are freed from the tail of the
  least recently used prefix first. A prefix is thus a hit only while it is resident.
"""
from __future__ import annotations

from collections import Counter


class PrefixCache:
    """Cached prefix blocks of one replica's BlockManager (module docstring). Cache-owned blocks stay
    allocated in the pool until evicted."""

    __slots__ = ("pool", "bs", "blocks", "users", "last_use")

    def __init__(self, pool, block_size: int):
        self.pool, self.bs = pool, int(block_size)
        self.blocks: dict[int, int] = {}
        self.users: dict[int, Counter] = {}
        self.last_use: dict[int, float] = {}

    def hit_blocks(self, pid: int, prefix_len: int, total: int) -> int:
        """Blocks of prefix ``pid`` a request of ``total`` prompt tokens can reuse now."""
        if pid < 0:
            return 0
        usable = min(int(prefix_len) // self.bs, (int(total) - 1) // self.bs)
        return max(min(self.blocks.get(pid, 0), usable), 0)

    def acquire(self, pid: int, depth: int, t: float) -> None:
        if pid < 0 or depth <= 0:
            return
        self.users.setdefault(pid, Counter())[depth] += 1
        self.last_use[pid] = t

    def release(self, pid: int, depth: int, t: float) -> None:
        if pid < 0 or depth <= 0:
            return
        u = self.users[pid]
        u[depth] -= 1
        if u[depth] <= 0:
            del u[depth]
        self.last_use[pid] = t

    def protected(self, pid: int) -> int:
        u = self.users.get(pid)
        return max(u) if u else 0

    def evictable(self) -> int:
        return sum(b - self.protected(p) for p, b in self.blocks.items())

    def give(self, pid: int, n: int, t: float) -> None:
        """``n`` blocks of a request (already allocated in the pool) become prefix ``pid``'s."""
        self.blocks[pid] = self.blocks.get(pid, 0) + int(n)
        self.last_use[pid] = t

    def reclaim(self, n: int) -> int:
        """Free up to ``n`` evictable blocks into the pool, least recently used prefix first; the count freed."""
        freed = 0
        for pid in sorted(self.blocks, key=lambda p: self.last_use.get(p, 0.0)):
            if freed >= n:
                break
            take = min(n - freed, self.blocks[pid] - self.protected(pid))
            if take > 0:
                self.blocks[pid] -= take
                self.pool.release(take)
                freed += take
        return freed
