"""Where a group of GPUs sits: one scale-up island, one machine over PCIe, or several machines.

Ranks of a replica are laid out innermost-first: TP (consecutive ranks), then EP/DP, then PP stages.
A group of n consecutive ranks stays on the fastest fabric that holds it:

- island: GPUs joined by NVLink/NVSwitch (xGMI, ICI): ``island = min(scaleup_domain, gpus_per_node)``
  for board-scale domains (HGX 8), or ``scaleup_domain`` for rack-scale ones (NVL72) that span trays;
- PCIe: GPUs in one machine without a switch fabric between them (L40S, RTX 4090, or beyond a bridge);
- network: the scale-out NIC of each GPU (``scaleout_bw``), for groups that span machines.
"""
from __future__ import annotations

from dataclasses import dataclass


from ..base.datafiles import data_yaml
from .config import Parallelism
from ..hardware import GPU


def link_defaults() -> dict:
    return data_yaml("links.yaml")


@dataclass(frozen=True)
class Link:
    """One link class: per-GPU bandwidth per direction (bytes/s), efficiency, latency per step (s)."""

    name: str
    bw: float
    efficiency: float
    latency: float

    @property
    def effective_bw(self) -> float:
        return self.bw * self.efficiency


def gpus_per_node(par: Parallelism) -> int:
    return par.num_gpus // par.nodes


def island_size(gpu: GPU, par: Parallelism) -> int:
    """GPUs of this deployment that share one NVLink-class island."""
    if not gpu.nvlink:
        return 1
    rack_scale = gpu.scaleup_domain > link_defaults()["max_gpus_per_node"]
    return gpu.scaleup_domain if rack_scale else min(gpu.scaleup_domain, gpus_per_node(par))


def scaleup_link(gpu: GPU) -> Link:
    return Link("NVLink" if gpu.vendor.startswith("NVIDIA") else "scale-up", gpu.scaleup_bw,
                gpu.efficiency.collective, gpu.efficiency.link_latency_s)


def pcie_link(gpu: GPU) -> Link:
    d = link_defaults()["pcie"]
    bw = gpu.pcie_bw or gpu.scaleup_bw
    if bw <= 0:
        raise ValueError(f"gpu={gpu.id!r} has neither a PCIe nor a scale-up bandwidth figure; "
                         f"set one with --gpu-set pcie_bw=BYTES_PER_S")
    return Link("PCIe", bw, d["efficiency"], d["latency_s"])


def network_link(gpu: GPU) -> Link:
    d = link_defaults()["network"]
    if gpu.scaleout_bw <= 0:
        raise ValueError(f"gpu={gpu.id!r} has no scale-out NIC figure, so a group cannot span nodes; "
                         f"set --gpu-set scaleout_bw=BYTES_PER_S or use --nodes 1")
    return Link("network", gpu.scaleout_bw, d["efficiency"], d["latency_s"])


def check_nodes(gpu: GPU, par: Parallelism) -> None:
    """Machines must hold the GPUs given to them."""
    per_node = gpus_per_node(par)
    limit = link_defaults()["max_gpus_per_node"]
    if par.num_gpus % par.nodes:
        raise ValueError(f"nodes={par.nodes} must divide the GPU count {par.num_gpus}")
    if par.nodes > 1 and gpu.scaleout_bw <= 0:
        raise ValueError(f"nodes={par.nodes} needs a scale-out network, but {gpu.id} has no NIC figure in the "
                         f"catalog; use --nodes 1 or set --gpu-set scaleout_bw=BYTES_PER_S")
    if per_node > max(limit, gpu.scaleup_domain):
        raise ValueError(f"nodes={par.nodes} puts {per_node} GPUs in one machine; a {gpu.id} machine holds at "
                         f"most {max(limit, gpu.scaleup_domain)}: use --nodes {-(-par.num_gpus // limit)} or more")


@dataclass(frozen=True)
class Placement:
    """How a group of ``size`` consecutive ranks splits: ``local`` ranks per island/machine, ``spans`` of them."""

    size: int
    local: int
    spans: int
    inner: Link  # link inside a span (NVLink island or PCIe)
    outer: Link | None  # link between spans (PCIe between islands of one machine, or network)


def place(gpu: GPU, par: Parallelism, size: int, stride: int = 1) -> Placement:
    """Placement of a group of ``size`` ranks spaced ``stride`` apart (TP: stride 1; PP neighbours: tp)."""
    island = island_size(gpu, par)
    node = gpus_per_node(par)
    span = size * stride
    if size <= 1:
        return Placement(size, 1, 1, scaleup_link(gpu) if gpu.nvlink else pcie_link(gpu), None)
    if span <= island and gpu.nvlink:
        return Placement(size, size, 1, scaleup_link(gpu), None)
    if span <= node:  # one machine, but beyond the NVLink island (or no NVLink at all)
        if gpu.nvlink and island >= stride and island > 1:
            local = max(1, island // stride)
            return Placement(size, local, size // local, scaleup_link(gpu), pcie_link(gpu))
        return Placement(size, size, 1, pcie_link(gpu), None)
    local = max(1, min(island if gpu.nvlink else node, node) // stride)
    inner = scaleup_link(gpu) if gpu.nvlink and island >= stride and island > 1 else pcie_link(gpu)
    return Placement(size, local, max(1, size // local), inner, network_link(gpu))
