"""KV offload tier: KV blocks in host memory behind the GPU's own KV cache, read back over the host link.

With ``kv_offload=host`` the engine keeps a second KV pool in CPU memory (SGLang HiCache
``--enable-hierarchical-cache``, vLLM ``--kv-offloading-size``, TensorRT-LLM ``host_cache_size``). The
sequences in flight may then hold up to K_dev + K_host bytes of KV per GPU, K_dev the engine's device
allocation (runtime.kv_capacity_bytes) and

    K_host = kv_offload_gb (given), else min(r·K_dev, M_host)      r: data/features.yaml (SGLang's
                                                                   hicache_ratio default), M_host the
                                                                   host memory per GPU (catalog)

Host tier of a GPU (data/hardware.yaml): ``cpu_memory_gb`` of CPU memory and the CPU link, shared by
``cpu_shared_by`` GPUs (default 1): NVLink-C2C where the entry gives ``cpu_gpu_link_gbps_bidir`` (GH200,
GB200: bidirectional GB/s, half per direction), else the GPU's PCIe x16 link (``pcie_gen``). Per GPU:

    M_host = cpu_memory_gb·1e9 / cpu_shared_by
    β_host = (C2C: cpu_gpu_link_gbps_bidir·1e9/2 / cpu_shared_by;  PCIe: pcie_bw) · e_link

(e_link: links.yaml ``pcie.efficiency`` for PCIe, data/features.yaml ``offload.c2c_efficiency`` for C2C).

Cost. Every step reads each running sequence's whole context; the part beyond the device pool lives in
host memory and crosses the link each step, layer by layer (the blocks of layer i + 1 load while layer
i computes: SGLang HiCache's layer-wise compute-transfer overlap). With H bytes per GPU beyond K_dev
and a step of t seconds on the GPU:

    t_host = H / β_host          t_step = t + max(0, t_host − ω·t)

ω (data/features.yaml ``offload.overlap``) the share of the GPU's step the transfer can hide behind (1:
the step is max(t, t_host)). The added seconds are reported as communication (collective kind
``host_kv``). The transfer's writes into HBM are not priced (the attention kernels' reads of those
bytes already are).

Engines' host tiers today mostly hold evicted and prefix-cached blocks and load them back before a
sequence runs; streaming a running sequence's blocks each step, as here, is the upper bound on what the
tier adds to the concurrency cap and its price per step (FlexGen-style offload).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.datafiles import data_yaml
from .kv_capacity import kv_capacity_bytes
from .topology import link_defaults

MODES = ("none", "host")


def defaults() -> dict:
    return data_yaml("features.yaml")["offload"]


def _value(v):
    return v["value"] if isinstance(v, dict) else v


@dataclass(frozen=True)
class HostTier:
    """A GPU's host KV tier (module docstring): pool bytes per GPU, link, bandwidth, overlap."""

    capacity_bytes: float  # K_host per GPU
    memory_bytes: float | None  # M_host per GPU (None: not in the catalog; the pool was given)
    link: str
    bandwidth: float  # β per GPU and direction, datasheet
    efficiency: float
    overlap: float

    @property
    def effective_bw(self) -> float:
        return self.bandwidth * self.efficiency

    def describe(self) -> str:
        return (f"host KV tier {self.capacity_bytes / 1e9:,.1f} GB per GPU over {self.link} "
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
        return "PCIe", float(gpu.pcie_bw), float(link_defaults()["pcie"]["efficiency"]), mem_b
    raise ValueError(f"kv_offload='host': gpu={gpu.id!r} has no host tier (no PCIe or NVLink-C2C link to CPU "
                     f"memory in data/hardware.yaml or data/host_tier.yaml); allowed: kv_offload=none")


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
                         f"data/hardware.yaml; allowed: give kv_offload_gb (host GB per GPU for KV)")
    else:
        cap = min(float(_value(d["host_pool_ratio"])) * float(device_kv_bytes), mem)
    return HostTier(cap, mem, name, bw, eff, float(_value(d["overlap"])))


def read_seconds(tier: HostTier, host_bytes):
    """t_host = H / β_host for H bytes per GPU read from host memory (arrays allowed)."""
    return np.maximum(np.asarray(host_bytes, dtype=float), 0.0) / tier.effective_bw


def added_seconds(tier: HostTier, host_bytes, step_s):
    """max(0, t_host − ω·t): what a step of ``step_s`` seconds gains when it reads ``host_bytes`` per GPU."""
    return np.maximum(read_seconds(tier, host_bytes) - tier.overlap * np.asarray(step_s, dtype=float), 0.0)


def tier_of(dep, rt=None) -> HostTier | None:
    """The host tier of ``dep`` under its runtime (or ``rt``), its device pool from the engine's KV rule."""
    rt = rt or dep.runtime
    if getattr(rt, "kv_offload", "none") != "host":
        return None
    return host_tier(dep, rt, kv_capacity_bytes(dep, rt))
