"""Workloads beyond the static batch: the offline max-throughput operating point."""
from .max_throughput import MaxThroughput, max_throughput

__all__ = ["MaxThroughput", "max_throughput"]
