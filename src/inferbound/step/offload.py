"""KV offload, its step cost: the host-tier loads of prefix hits a step waits for (the tier: deploy/offload.py).

    t_step' = t_step + max(0, t_load − ω·t_step),   t_load = bytes loaded / (link bandwidth · efficiency)

(``deploy.offload.added_seconds``: the part of the copies that the step's own compute does not hide; the
loaded bytes are the host hits of the prompts the step carries, not the running sequences' KV.)
"""
from __future__ import annotations

from ..deploy.offload import HostTier, added_seconds
from .contract import with_time


def with_host_reads(cost, tier: HostTier | None, load_bytes):
    """The priced step ``cost`` with the host-tier loads of ``load_bytes`` per GPU (module docstring);
    ``cost`` if no tier. Reported as communication, collective kind ``host_kv``."""
    if tier is None:
        return cost
    return with_time(cost, added_seconds(tier, load_bytes, cost.time), "communication", "host_kv")
