"""Workloads beyond the static batch: the offline max-throughput operating point (``max_throughput``),
the continuous-batching steady state, length mixes, analytic serving and engine features. Names load
on first use, so importing a submodule (``workloads.lengths``) does not import the others."""
from __future__ import annotations

import importlib

_EXPORTS = {"MaxThroughput": "max_throughput", "max_throughput": "max_throughput"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'inferbound.workloads' has no attribute {name!r}")
