"""Workloads beyond the static batch: the offline max-throughput operating point (``max_throughput``),
the continuous-batching steady state, length mixes, analytic serving and engine features.

``max_throughput`` is imported eagerly: the submodule of that name would otherwise shadow the function
on the package once anything imports it (``from inferbound.workloads import max_throughput`` must give
the function)."""
from .max_throughput import MaxThroughput, max_throughput

__all__ = ["MaxThroughput", "max_throughput"]
