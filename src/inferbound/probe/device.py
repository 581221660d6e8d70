"""The machine the probe runs on: which torch device, its name, memory, threads, and a step timer.

A CUDA device is used when ``torch.cuda.is_available()`` (the model then runs in bf16, the format
serving engines use on GPUs); otherwise the CPU, in fp32: on CPUs PyTorch's bf16 matrix-vector
products (the decode GEMMs) run several times slower than fp32 ones (see the microbenchmark's bf16
GEMV row), so fp32 is what a CPU user would run. Timing: wall clock (``time.perf_counter``) around
one call, the device synchronized before and after (CUDA kernels are asynchronous).
"""
from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch

#: probe dtypes -> torch dtypes (the model's weights, activations and KV cache all use one)
TORCH_DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16}

#: [placeholder] TDP written for a CPU: a desktop-class CPU package power (common 65 W TDP class of
#: AMD Ryzen / Intel Core desktop parts). Not measured: the probe cannot read power on a CPU, and the
#: catalog's power model needs a TDP > 0. Energy figures for gpu `local` are therefore not meaningful.
CPU_TDP_PLACEHOLDER_W = 65.0
#: [placeholder] TDP for a CUDA device when ``nvidia-smi`` does not report its power limit: a mid-range
#: data-center board (the PCIe cards of hardware.yaml run 300-350 W: A100 PCIe 300 W, H100 PCIe 350 W).
GPU_TDP_PLACEHOLDER_W = 350.0


@dataclass
class DeviceInfo:
    """What the probe ran on. ``memory_bytes``: system RAM (CPU) or device memory (CUDA)."""

    kind: str                 # "cpu" | "cuda"
    name: str
    vendor: str
    dtype: str                # probe dtype of the model run
    threads: int
    memory_bytes: float
    tdp_w: float
    tdp_source: str
    torch_version: str
    load_average: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def available_cores() -> int:
    """CPU cores this process may run on (affinity mask where the OS has one, else cpu_count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _cpu_name() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else platform.processor()."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _cpu_vendor(name: str) -> str:
    low = name.lower()
    for key, vendor in (("amd", "AMD"), ("intel", "Intel"), ("apple", "Apple"), ("arm", "Arm")):
        if key in low:
            return vendor
    return platform.machine() or "unknown"


def _system_ram() -> float:
    """Physical memory in bytes (POSIX sysconf); 0 where unknown."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0.0


def _nvidia_power_limit() -> float | None:
    """Board power limit in W from ``nvidia-smi`` (first GPU), None if it cannot be read."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=power.limit", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        return float(out.splitlines()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def detect(dtype: str | None = None, threads: int | None = None) -> DeviceInfo:
    """The device to measure (CUDA if present, else CPU) and the probe dtype (default: bf16 / fp32).

    ``dtype`` must be one of TORCH_DTYPES; ``threads`` (CPU threads, default: all available cores) >= 1.
    """
    if dtype is not None and dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype={dtype!r} is not supported by probe; allowed: {', '.join(TORCH_DTYPES)}")
    if threads is not None and threads < 1:
        raise ValueError(f"threads={threads} must be >= 1")
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else []
    nthreads = threads or available_cores()
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        limit = _nvidia_power_limit()
        return DeviceInfo("cuda", torch.cuda.get_device_name(0), "AMD" if torch.version.hip else "NVIDIA",
                          dtype or "bf16", nthreads, float(props.total_memory),
                          limit or GPU_TDP_PLACEHOLDER_W,
                          "nvidia-smi power.limit" if limit else "placeholder (see GPU_TDP_PLACEHOLDER_W)",
                          torch.__version__, load)
    name = _cpu_name()
    return DeviceInfo("cpu", name, _cpu_vendor(name), dtype or "fp32", nthreads, _system_ram(),
                      CPU_TDP_PLACEHOLDER_W, "placeholder: desktop-class 65 W, not measured",
                      torch.__version__, load)


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn: Callable[[], object], repeats: int, warmup: int, device: str) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``fn`` after ``warmup`` untimed ones (device synchronized)."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        out.append(time.perf_counter() - t0)
    return out


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
