"""Microbenchmarks: matmul FLOP/s by shape and dtype, memory bandwidth, and a tiny op's dispatch time.

- Matmul ``C[M,N] = A[M,K] · W``: FLOPs = 2·M·K·N (one multiply and one add per multiply-add);
  FLOP/s = FLOPs / t with t the *best* of ``repeats`` timed calls after ``warmup`` untimed ones
  (the achievable rate, as in stas00/ml-engineering's "Maximum Achievable Matmul FLOPS" benchmark,
  compute/accelerator/README.md). Layout ``linear``: ``F.linear(A, W[N,K])``, nn.Linear's [out, in]
  weights, as the probe's decoder and HF models store them; ``matmul``: ``A @ W[K,N]``. Square shapes
  reach the compute peak; M = 1 and M = 16 are decode GEMMs (matrix-vector), bound by memory: their
  weight bandwidth 4·K·N/t (fp32) is what a decode step gets.
- Bandwidth: ``dst.copy_(src)`` of a buffer much larger than the last-level cache reads and writes
  every byte once: bandwidth = 2·nbytes / t (bytes read + bytes written, the STREAM "copy" convention,
  McCalpin, https://www.cs.virginia.edu/stream/ref.html); best of ``repeats``. A read-only figure,
  ``src.sum()``: nbytes / t, is reported beside it.
- Tiny op: ``x.add_(1)`` on an 8-element tensor, called ``calls`` times: the per-operator dispatch
  (and, on CUDA, kernel-launch) time of eager PyTorch, in seconds per op.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from .device import TORCH_DTYPES, synchronize, time_calls

#: (M, K, N) matmul shapes per device and mode. Square: compute peak; M=512: a prefill-like GEMM;
#: M=1 and M=16: decode GEMMs. Sizes keep one call under ~0.3 s on a 2-core CPU (2048^3 fp32 at
#: ~60 GFLOP/s) and the default probe under a minute; CUDA shapes are large enough to fill an H100.
#: The M=1 shape is measured in both layouts: on CPU builds the two GEMV kernels differ (see docs/probe.md).
SHAPES: dict[tuple[str, bool], list[tuple[int, int, int, str]]] = {
    ("cpu", False): [(2048, 2048, 2048, "linear"), (512, 2048, 8192, "linear"), (16, 2048, 8192, "linear"),
                     (1, 2048, 8192, "linear"), (1, 2048, 8192, "matmul")],
    ("cpu", True): [(1024, 1024, 1024, "linear"), (1, 2048, 4096, "linear"), (1, 2048, 4096, "matmul")],
    ("cuda", False): [(8192, 8192, 8192, "linear"), (4096, 4096, 16384, "linear"), (16, 8192, 8192, "linear"),
                      (1, 8192, 8192, "linear"), (1, 8192, 8192, "matmul")],
    ("cuda", True): [(4096, 4096, 4096, "linear"), (1, 8192, 8192, "linear"), (1, 8192, 8192, "matmul")],
}
LAYOUTS = ("linear", "matmul")
#: bytes of each copy buffer: CPU 256 MiB (8x the 32 MiB L3 of the machine the docs were measured on,
#: and far above typical desktop/server L3 sizes), CUDA 1 GiB (far above the 50-60 MB L2 of Hopper).
COPY_BYTES = {"cpu": 256 * 2**20, "cuda": 2**30}
#: timed calls (best of) and untimed warm-up calls per measurement
REPEATS, WARMUP = 3, 1
BANDWIDTH_REPEATS = 5


@dataclass
class MatmulResult:
    dtype: str
    m: int
    k: int
    n: int
    layout: str       # "linear": F.linear(A, W[n,k]); "matmul": A @ W[k,n]
    flops: float      # 2·m·k·n
    seconds: float    # best of the timed calls
    flop_s: float     # flops / seconds

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Bandwidth:
    kind: str            # "copy" (read + write) or "read"
    buffer_bytes: int    # bytes of one buffer
    bytes_moved: float   # copy: 2·buffer_bytes; read: buffer_bytes
    seconds: float       # best of the timed calls
    bytes_per_s: float   # bytes_moved / seconds

    def to_dict(self) -> dict:
        return asdict(self)


def matmul(dtype: str, m: int, k: int, n: int, device: str, layout: str = "linear", repeats: int = REPEATS,
           warmup: int = WARMUP) -> MatmulResult:
    """Best-of-``repeats`` FLOP/s of an (m,k)·(k,n) product in ``dtype`` on ``device`` (``layout``: see above)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r} is not a matmul layout; allowed: {', '.join(LAYOUTS)}")
    tdt = TORCH_DTYPES[dtype]
    a = torch.randn(m, k, device=device).to(tdt)
    if layout == "linear":
        w = torch.randn(n, k, device=device).to(tdt)
        t = min(time_calls(lambda: F.linear(a, w), repeats, warmup, device))
    else:
        w = torch.randn(k, n, device=device).to(tdt)
        t = min(time_calls(lambda: torch.matmul(a, w), repeats, warmup, device))
    flops = 2.0 * m * k * n
    return MatmulResult(dtype, m, k, n, layout, flops, t, flops / t)


def matmuls(device: str, quick: bool, dtypes: tuple[str, ...] = ("fp32", "bf16")) -> list[MatmulResult]:
    """Every shape of SHAPES[(device, quick)] in every dtype."""
    return [matmul(dt, m, k, n, device, layout) for dt in dtypes for (m, k, n, layout) in SHAPES[(device, quick)]]


def peak_flop_s(results: list[MatmulResult]) -> dict[str, float]:
    """Highest measured FLOP/s per dtype (the achievable peak the hardware entry records)."""
    out: dict[str, float] = {}
    for r in results:
        out[r.dtype] = max(out.get(r.dtype, 0.0), r.flop_s)
    return out


def gemv_bandwidth(results: list[MatmulResult], dtype: str, layout: str = "linear") -> float | None:
    """Weight bytes per second of the best M=1 matmul (decode GEMV) in ``dtype`` and ``layout``:
    K·N·(bytes per element) / t; None when no such shape was measured."""
    elem = torch.empty(0, dtype=TORCH_DTYPES[dtype]).element_size()
    rates = [r.k * r.n * elem / r.seconds for r in results if r.m == 1 and r.dtype == dtype and r.layout == layout]
    return max(rates) if rates else None


def copy_bandwidth(device: str, buffer_bytes: int | None = None, repeats: int = BANDWIDTH_REPEATS) -> Bandwidth:
    """``dst.copy_(src)`` of float32 buffers: (2·nbytes) / best time."""
    nbytes = buffer_bytes or COPY_BYTES[device]
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.zeros_like(src)
    t = min(time_calls(lambda: dst.copy_(src), repeats, 1, device))
    moved = 2.0 * src.numel() * src.element_size()
    return Bandwidth("copy", src.numel() * src.element_size(), moved, t, moved / t)


def read_bandwidth(device: str, buffer_bytes: int | None = None, repeats: int = BANDWIDTH_REPEATS) -> Bandwidth:
    """``src.sum()`` of a float32 buffer: nbytes / best time (reads only)."""
    nbytes = buffer_bytes or COPY_BYTES[device]
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    t = min(time_calls(lambda: src.sum(), repeats, 1, device))
    moved = float(src.numel() * src.element_size())
    return Bandwidth("read", int(moved), moved, t, moved / t)


def tiny_op_seconds(device: str, calls: int = 1000, repeats: int = 3) -> float:
    """Seconds per eager ``x.add_(1)`` on 8 elements: best of ``repeats`` loops of ``calls`` calls."""
    x = torch.zeros(8, device=device)
    times = []
    for _ in range(repeats + 1):
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(calls):
            x.add_(1)
        synchronize(device)
        times.append((time.perf_counter() - t0) / calls)
    return min(times[1:])   # the first loop is the warm-up
