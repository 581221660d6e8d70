"""Paged KV cache (vLLM PagedAttention): a pool of fixed-size blocks per replica.

A sequence holding L cached tokens owns ceil(L / block_size) blocks (Kwon et al., "Efficient Memory
Management for Large Language Model Serving with PagedAttention", SOSP 2023). The pool holds what the
engine allocates for KV (runtime.kv_capacity_bytes: the engine's own rule) divided into blocks:

    block  = KV bytes of one block of one sequence on its GPU = kv_bytes_per_gpu(m, dt, par, 1, block_size)
    blocks = floor(capacity / block) per attention group, times the groups of the replica

Layers with a sliding or chunked window keep at most ``window`` tokens, so a long sequence needs fewer
bytes there than ``blocks · block``; the pool counts every layer as full (block_size <= window), which
is conservative: it never admits a sequence the real cache could not hold. With pipeline stages the
block is the heaviest stage's share (as memory.kv_bytes_per_gpu counts it). With speculative decoding a
block also carries the draft's own KV of its tokens (speculative.Drafter). A host KV tier
(``kv_offload=host``, offload.py) adds floor(K_host / block) blocks per attention group behind the
device's (``host_blocks``); the scheduler reads the blocks in use beyond the device's over the host link.
"""
from __future__ import annotations

from ..deploy.deployment import Deployment
from ..deploy.memory import kv_bytes_per_gpu
from ..deploy.offload import tier_of
from ..deploy.runtime import Runtime, kv_capacity_bytes
from ..deploy.speculative import drafter_of


def blocks_for(tokens: int, block_size: int) -> int:
    """Blocks that hold ``tokens`` cached tokens: ceil(tokens / block_size)."""
    return -(-int(tokens) // block_size)


def block_bytes_per_gpu(dep: Deployment, block_size: int, rt: Runtime | None = None) -> float:
    """Bytes one block (block_size tokens of one sequence, all layers counted full) takes on its GPU, the
    draft's KV of those tokens included under speculative decoding."""
    b = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, dep.par.attention_groups, block_size))
    dr = drafter_of(dep, rt or dep.runtime)
    if dr is not None and dr.model is not None:
        b += float(dr.kv_bytes_per_gpu(dep.par.attention_groups, block_size))
    return b


def host_blocks(dep: Deployment, rt: Runtime) -> int:
    """Blocks of one replica's host KV tier (0 without kv_offload=host)."""
    tier = tier_of(dep, rt)
    if tier is None:
        return 0
    return int(tier.capacity_bytes // block_bytes_per_gpu(dep, rt.block_size, rt)) * dep.par.attention_groups


def kv_capacity_blocks(dep: Deployment, rt: Runtime) -> int:
    """KV blocks one replica can hold (module docstring); ValueError when nothing is left for KV."""
    capacity = kv_capacity_bytes(dep, rt)
    blocks = int(capacity // block_bytes_per_gpu(dep, rt.block_size, rt)) * dep.par.attention_groups
    if blocks < 1:
        raise ValueError(f"deployment={dep.model.name} on {dep.label()} leaves no memory for KV blocks under "
                         f"{rt.label} ({capacity / 1e9:.2f} GB per GPU for KV); use more GPUs or a smaller dtype")
    return blocks


class BlockManager:
    """Counts free blocks of one replica's pool (which physical block is which does not matter here). Every
    change of the count goes through :meth:`allocate` and :meth:`release`; ``free`` is read directly."""

    __slots__ = ("num_blocks", "block_size", "free")

    def __init__(self, num_blocks: int, block_size: int):
        if int(num_blocks) < 1:
            raise ValueError(f"num_blocks={num_blocks!r} must be >= 1")
        if int(block_size) < 1:
            raise ValueError(f"block_size={block_size!r} must be >= 1")
        self.num_blocks = int(num_blocks)
        self.block_size = int(block_size)
        self.free = self.num_blocks

    def allocate(self, n: int) -> None:
        """Take ``n`` free blocks (RuntimeError when fewer are free)."""
        if n > self.free:
            raise RuntimeError(f"allocating {n} blocks with {self.free} free")
        self.free -= n

    def release(self, n: int) -> None:
        """Return ``n`` blocks to the pool (RuntimeError when that is more than were taken)."""
        self.free += n
        if self.free > self.num_blocks:
            raise RuntimeError(f"released more blocks than allocated ({self.free} > {self.num_blocks})")

    def used(self) -> int:
        """Blocks taken (by sequences and by the prefix cache)."""
        return self.num_blocks - self.free
