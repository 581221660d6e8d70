"""``inferbound probe``: measure the machine it runs on and check the predictor there.

Published numbers cover other people's hardware. The probe measures this machine — matmul FLOP/s
by shape and dtype, memory bandwidth, per-operator dispatch overhead — and writes them as a
hardware entry (gpu id ``local``); it then runs a real prefill and decode of a catalog model with
random weights (PyTorch; CPU, or CUDA where present) at a few batch sizes and contexts with the KV
cache on and off, writes the timings as validation-schema rows, and scores the predictions made
from the measured entry: is decode memory-bound, and does its time grow with context as the KV
reads predict? See docs/probe.md.

PyTorch is the optional extra ``probe`` (the CPU wheel is enough); this package imports it only
when :func:`probe` runs, so ``import inferbound.probe`` works without it.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import Plan, ProbeResult

#: the one line shown when PyTorch is missing
TORCH_MISSING = "probe needs PyTorch: pip install 'inferbound[probe]'"


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def probe(model: str | dict = "smollm2-135m", quick: bool = False, out_dir: str | Path = "probe-out",
          overrides: dict | None = None, dtype: str | None = None, threads: int | None = None,
          plan: "Plan | None" = None) -> "ProbeResult":
    """Measure this machine and score the predictor on it; see :func:`inferbound.probe.report.probe`.

    Raises ImportError with :data:`TORCH_MISSING` when PyTorch is not installed.
    """
    if not torch_available():
        raise ImportError(TORCH_MISSING)
    from .report import probe as run
    return run(model=model, quick=quick, out_dir=out_dir, overrides=overrides, dtype=dtype, threads=threads,
               plan=plan)


__all__ = ["TORCH_MISSING", "probe", "torch_available"]
