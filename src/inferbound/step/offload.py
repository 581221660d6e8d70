"""KV offload, its step cost: the host-tier reads a step waits for (the tier itself: deploy/offload.py).

    t_step' = t_step + max(0, t_host − ω·t_step),   t_host = host bytes / (link bandwidth · efficiency)

(``deploy.offload.added_seconds``: the part of the reads that the step's own work does not hide.)
"""
from __future__ import annotations

from ..deploy.offload import HostTier, added_seconds
from .contract import with_time


def with_host_reads(cost, tier: HostTier | None, host_bytes):
    """The priced step ``cost`` with its host-memory KV reads (module docstring); ``cost`` if no tier."""
    if tier is None:
        return cost
    return with_time(cost, added_seconds(tier, host_bytes, cost.time), "communication", "host_kv")
