"""KV offload tier as engines ship it: evicted prefixes kept in host memory and loaded back on reuse.

With ``kv_offload=host`` the engine keeps a second KV pool in CPU memory (vLLM's OffloadingConnector
``--kv-offloading-size``, LMCache ``LMCACHE_LOCAL_CPU``, SGLang HiCache ``--enable-hierarchical-cache``,
TensorRT-LLM ``host_cache_size``). What it holds are blocks evicted from the GPU's prefix cache; a later
request whose prefix is there loads those blocks back instead of recomputing them. The running
sequences' KV stays on the device: the tier raises the prefix hit rate (capacity, prefix.host_share),
it does not extend the running batch's KV (``capacity_bytes`` is 0: the room it adds to a batch).

Pool and link of a GPU (data/hardware.yaml and data/host_tier.yaml: ``cpu_memory_gb`` of CPU memory
shared by ``cpu_shared_by`` GPUs; NVLink-C2C where ``cpu_gpu_link_gbps_bidir`` is given, else PCIe x16):

    K_host = kv_offload_gb (given), else min(r·K_dev, M_host)      r: features.yaml host_pool_ratio
    M_host = cpu_memory_gb·1e9 / cpu_shared_by
    β_host = (C2C: cpu_gpu_link_gbps_bidir·1e9/2 / cpu_shared_by;  PCIe: pcie_bw) · e
    e      = features.yaml offload.pcie_h2d_efficiency (0.78: ~50 GB/s of 64 measured H2D on H100,
             vLLM blog 2025-12-29) or offload.c2c_efficiency

Cost of a host hit of P tokens (κ KV bytes per token per GPU): its blocks cross the link,

    t_load = P·κ / β_host                                   (``load_seconds``)

not a recompute. A device hit costs nothing extra (its blocks are already in HBM). In a step the loads
run on the copy engine beside the other requests' compute, so a step whose prompts load L bytes takes
t + max(0, L/β_host − ω·t) (``added_seconds``, ω = offload.overlap). The request itself waits for its
load before its first token unless the engine overlaps it layer by layer with its own prefill
(``request_wait``: max(0, t_load − ω_r·t_prefill), ω_r = offload.request_overlap per engine: vLLM and
TensorRT-LLM 0, SGLang HiCache 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.datafiles import data_yaml
from .kv_capacity import kv_capacity_bytes

MODES = ("none", "host")


def defaults() -> dict:
    return data_yaml("features.yaml")["offload"]


def _value(v):
    return v["value"] if isinstance(v, dict) else v


@dataclass(frozen=True)
class HostTier:
    """A GPU's host KV tier (module docstring): the prefix pool per GPU, link, bandwidth, overlaps."""

    pool_bytes: float  # K_host per GPU: evicted prefixes kept in host memory
    memory_bytes: float | None  # M_host per GPU (None: not in the catalog; the pool was given)
    link: str
    bandwidth: float  # β per GPU and direction, datasheet
    efficiency: float
    overlap: float  # ω: share of a step's compute the step's loads hide behind
    request_overlap: float = 0.0  # ω_r: share of a request's own prefill its load hides behind

    @property
    def capacity_bytes(self) -> float:
        """KV bytes per GPU the tier adds to the running batch's room: 0 (running KV stays on the device)."""
        return 0.0

    @property
    def effective_bw(self) -> float:
        return self.bandwidth * self.efficiency

    def describe(self) -> str:
        return (f"host tier {self.pool_bytes / 1e9:,.1f} GB per GPU of evicted prefixes over {self.link} "
                f"({self.effective_bw / 1e9:,.0f} GB/s effective)")


def _entry(gpu_id: str) -> dict | None:
    """The GPU's hardware.yaml entry with data/host_tier.yaml's host-memory fields added (the datasheet
    reference wins where both state one)."""
    extra = (data_yaml("host_tier.yaml").get("host_tier") or {}).get(gpu_id, {})
    for e in data_yaml("hardware.yaml")["accelerators"]:
        if e.get("id") == gpu_id:
            return {**extra, **e}
    return dict(extra) or None


def host_link(gpu) -> tuple[str, float, float, float | None]:
    """(link name, bytes/s per direction per GPU, efficiency, host memory bytes per GPU or None) of ``gpu``;
    ValueError naming kv_offload when it has no CPU link."""
    e = _entry(getattr(gpu, "derived_from", None) or gpu.id) or {}
    shared = float(e.get("cpu_shared_by") or 1)
    mem = e.get("cpu_memory_gb")
    mem_b = float(mem) * 1e9 / shared if mem is not None else None
    c2c = e.get("cpu_gpu_link_gbps_bidir")
    d = defaults()
    if c2c:
        return "NVLink-C2C", float(c2c) * 1e9 / 2 / shared, float(_value(d["c2c_efficiency"])), mem_b
    if gpu.pcie_bw > 0:
        return "PCIe", float(gpu.pcie_bw), float(_value(d["pcie_h2d_efficiency"])), mem_b
    raise ValueError(f"kv_offload='host': gpu={gpu.id!r} has no host tier (no PCIe or NVLink-C2C link to CPU "
                     f"memory in data/hardware.yaml or data/host_tier.yaml); allowed: kv_offload=none")


def request_overlap(engine: str) -> float:
    """ω_r of the engine (``vllm@0.11`` → vllm's): data/features.yaml offload.request_overlap."""
    table = defaults()["request_overlap"]
    name = str(engine).split("@", 1)[0].split()[0].lower()
    if name not in table:
        raise ValueError(f"engine={engine!r} has no offload.request_overlap in data/features.yaml; allowed: "
                         f"{', '.join(table)}")
    return float(_value(table[name]))


def host_tier(dep, rt, device_kv_bytes: float) -> HostTier | None:
    """The deployment's host tier under ``rt`` (None when kv_offload is none); one-line errors naming the
    field when the GPU has none or the pool does not fit its host memory."""
    if getattr(rt, "kv_offload", "none") != "host":
        return None
    name, bw, eff, mem = host_link(dep.gpu)
    d = defaults()
    given = getattr(rt, "kv_offload_bytes", None)
    if given:
        cap = float(given)
        if mem is not None and cap > mem:
            raise ValueError(f"kv_offload_gb={cap / 1e9:g} exceeds the {mem / 1e9:g} GB of host memory per GPU of "
                             f"{dep.gpu.id} (data/hardware.yaml cpu_memory_gb / cpu_shared_by); allowed: "
                             f"kv_offload_gb <= {mem / 1e9:g}")
    elif mem is None:
        raise ValueError(f"kv_offload='host': gpu={dep.gpu.id!r} has no host memory figure (cpu_memory_gb) in "
                         f"data/hardware.yaml or data/host_tier.yaml; allowed: give kv_offload_gb (host GB per GPU)")
    else:
        cap = min(float(_value(d["host_pool_ratio"])) * float(device_kv_bytes), mem)
    engine = getattr(rt, "engine", "vllm")
    return HostTier(cap, mem, name, bw, eff, float(_value(d["overlap"])), request_overlap(engine))


def load_seconds(tier: HostTier, load_bytes):
    """t_load = L / β_host for L bytes per GPU loaded from host memory (arrays allowed)."""
    return np.maximum(np.asarray(load_bytes, dtype=float), 0.0) / tier.effective_bw


#: the name the step code used for the same transfer time
read_seconds = load_seconds


def added_seconds(tier: HostTier, load_bytes, step_s):
    """max(0, t_load − ω·t): what a step of ``step_s`` seconds gains when its prompts load ``load_bytes``
    per GPU from the host tier (the copy runs beside the step's compute)."""
    return np.maximum(load_seconds(tier, load_bytes) - tier.overlap * np.asarray(step_s, dtype=float), 0.0)


def request_wait(tier: HostTier, load_bytes, prefill_s):
    """max(0, t_load − ω_r·t_prefill): what a request's own host-tier load adds to its TTFT."""
    return np.maximum(load_seconds(tier, load_bytes) - tier.request_overlap * np.asarray(prefill_s, dtype=float),
                      0.0)


def host_prefixes(tier: HostTier | None, prefix_bytes: float) -> float:
    """H = ⌊K_host/κ_P⌋: prefixes of ``prefix_bytes`` per GPU the tier holds (0 without a tier)."""
    if tier is None or prefix_bytes <= 0:
        return 0.0
    return float(np.floor(tier.pool_bytes / prefix_bytes))


def tier_of(dep, rt=None) -> HostTier | None:
    """The host tier of ``dep`` under its runtime (or ``rt``), its pool from the engine's KV rule."""
    rt = rt or dep.runtime
    if getattr(rt, "kv_offload", "none") != "host":
        return None
    return host_tier(dep, rt, kv_capacity_bytes(dep, rt))
