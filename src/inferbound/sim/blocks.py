"""Paged KV cache (vLLM PagedAttention): a pool of fixed-size blocks per replica.

A sequence holding L cached tokens owns ceil(L / block_size) blocks (Kwon et al., "Efficient Memory
Management for Large Language Model Serving with PagedAttention", SOSP 2023). The pool size follows
vLLM's profiling rule (vLLM ``Worker.determine_num_available_blocks``), per GPU:

    free  = HBM · gpu_memory_utilization − weights − activations(token budget) − runtime reserve
    block = KV bytes of one block of one sequence on this GPU = kv_bytes_per_gpu(m, dt, par, 1, block_size)
    blocks = floor(free / block)

Layers with a sliding or chunked window keep at most ``window`` tokens, so a long sequence needs fewer
bytes there than ``blocks · block``; the pool counts every layer as full (block_size <= window), which
is conservative: it never admits a sequence the real cache could not hold. With pipeline stages the
block is the heaviest stage's share, and with attention data parallel an average over the attention
groups (both as memory.kv_bytes_per_gpu and weight_bytes_per_gpu count them).
"""
from __future__ import annotations

from ..deployment import Deployment
from ..memory import activation_bytes, kv_bytes_per_gpu, runtime_defaults, weight_bytes_per_gpu


def blocks_for(tokens: int, block_size: int) -> int:
    """Blocks that hold ``tokens`` cached tokens: ceil(tokens / block_size)."""
    return -(-int(tokens) // block_size)


def block_bytes_per_gpu(dep: Deployment, block_size: int) -> float:
    """Bytes one block (block_size tokens of one sequence, all layers counted full) takes on one GPU."""
    return float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, block_size))


def kv_capacity_blocks(dep: Deployment, block_size: int, token_budget: int, max_num_seqs: int,
                       gpu_memory_utilization: float) -> int:
    """KV blocks one replica can hold (module docstring); ValueError when nothing is left for KV."""
    m, dt, par, g = dep.model, dep.dtypes, dep.par, dep.gpu
    reserve = runtime_defaults()["memory"]["runtime_reserve_bytes"]
    weights = weight_bytes_per_gpu(m, dt, par)
    act = float(activation_bytes(m, dt, par, token_budget, min(max_num_seqs, token_budget)))
    free = g.hbm_bytes * gpu_memory_utilization - weights - act - reserve
    blocks = int(free // block_bytes_per_gpu(dep, block_size)) if free > 0 else 0
    if blocks < 1:
        raise ValueError(f"deployment={dep.model.name} on {dep.label()} leaves no memory for KV blocks "
                         f"({free / 1e9:.2f} GB free per GPU after weights {weights / 1e9:.2f} GB, "
                         f"activations {act / 1e9:.2f} GB, reserve {reserve / 1e9:.2f} GB at "
                         f"gpu_memory_utilization={gpu_memory_utilization}); use more GPUs or a smaller dtype")
    return blocks


class BlockManager:
    """Counts free blocks of one replica's pool (which physical block is which does not matter here)."""

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
        if n > self.free:
            raise RuntimeError(f"allocating {n} blocks with {self.free} free")
        self.free -= n

    def release(self, n: int) -> None:
        self.free += n
        if self.free > self.num_blocks:
            raise RuntimeError(f"released more blocks than allocated ({self.free} > {self.num_blocks})")
