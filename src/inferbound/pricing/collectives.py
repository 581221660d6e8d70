"""Price the collective operators of a step on the deployment's topology and engine.

Inside one NVLink island (or one PCIe machine) a collective of S bytes over n GPUs is priced by the
measured curves of kernels.yaml (kernels/comm.py: nccl-tests bus-bandwidth convention, pipelined
alpha-beta envelope; NVLS is inside the measured NCCL curves where the system has it), so a link keeps
its physical bandwidth and small messages their measured latency. The all-reduce is the one the engine
runs (engines.yaml ``pricing.custom_all_reduce``):

    fastest (TensorRT-LLM AUTO):  t = min(t_custom(S), t_nccl(S))
    below (vLLM, SGLang):         t = t_custom(S) if S <= max_bytes and n in world_sizes (NVLink), else t_nccl(S)
    none:                         t = t_nccl(S)

On a PCIe machine (no NVLink) a group of n > 2 GPUs uses the measured two-GPU curve (its bus bandwidth,
α·log2(n)): the measured 8x L40S box's bus bandwidth collapses at n = 4 and 8 (0.16 and 0.05 of the
PCIe rate; docs/kernels.md), which is that box's host-bridge topology (no peer-to-peer path between the
CPU sockets), not the link's; a PCIe switch with peer-to-peer runs the ring at about the pair's rate.
A calibration's ``kernel_factors["collective"]`` multiplies curve times. A what-if GPU's scaled link
(``--gpu-scale link_bw=4``) multiplies the curves' bus bandwidths β, β_b (hardware/whatif.link_scale); α stays. Groups spanning islands or
machines, forced algorithms (``collective_algo``), p2p sends and GPUs without collective curves use the
alpha-beta model of comm.py on the catalog's links.
"""
from __future__ import annotations

import numpy as np

from .comm import collective_time
from ..deploy.config import Parallelism
from ..hardware import GPU
from ..hardware.whatif import link_scale
from .kernels import comm as _kc
from ..deploy.deployment import gpu_key
from ..deploy.engines import profile_of
from ..deploy.topology import place
from ..base.caches import cache
from .kernel_pricing import KernelPricer, pricing_data

#: inferbound collective kind -> kernels.yaml kind
_KINDS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
          "all_to_all": "alltoall"}


def _custom_policy(engine_key: str) -> dict:
    table = pricing_data().get("custom_all_reduce", {})
    return table.get(engine_key.split("@", 1)[0], {"policy": "none"})


class CommPricer:
    """Prices a deployment's collectives (module docstring); ``kernels`` is its KernelPricer, which the
    pricing engine (roofline.price_ops) uses for the other kernels. Placements are built once."""

    def __init__(self, gpu: GPU, par: Parallelism, engine: str | None = None, calibration=None):
        key = profile_of(engine).key if engine is None or "@" not in engine else engine
        self.gpu, self.par = gpu, par
        self.kernels = KernelPricer(gpu, key, calibration)
        self.curves = self.kernels.curves
        self.factor = float((calibration.kernel_factors if calibration is not None else {}).get("collective", 1.0))
        self.custom = _custom_policy(key)
        self.engine = self.kernels.engine
        self.link_scale = link_scale(gpu)   # what-if link: the curves' bandwidth terms scaled (whatif.py)
        self._cache: dict = {}

    def placement(self, group: str, size: int):
        key = (group, size)
        if key not in self._cache:
            self._cache[key] = place(self.gpu, self.par, size, 1)
        return self._cache[key]

    def _curve(self, kind: str, algo: str, n: int):
        by_algo = (self.curves.collectives.get(_KINDS[kind]) or {}) if self.curves is not None else {}
        by_n = by_algo.get(algo)
        if by_n and not self.gpu.nvlink and n > 2 and 2 in by_n:   # PCIe: the pair's curve (docstring)
            by_n = {2: by_n[2]}
        if not by_n:
            return None
        p, alpha, extrapolated = _kc.pick_curve(by_n, n)
        if self.link_scale != 1.0:
            p = {**p, "busbw": p["busbw"] * self.link_scale, "busbw_b": p["busbw_b"] * self.link_scale}
        return p, alpha, extrapolated

    def curve_time(self, kind: str, nbytes, pl):
        """(seconds, algorithm) from the measured curves, or None where they do not apply."""
        if (self.curves is None or kind not in _KINDS or pl.spans != 1 or pl.size < 2
                or (self.gpu.nvlink and pl.inner.name == "PCIe")):
            return None
        nccl = self._curve(kind, "nccl", pl.size)
        if nccl is None:
            return None
        ck = _KINDS[kind]
        t = _kc.line_time(nccl[0], ck, nbytes, pl.size, nccl[1])
        name = "nccl"
        if kind == "all_reduce":
            policy = self.custom.get("policy", "none")
            custom = self._curve(kind, self.engine, pl.size) if policy != "none" else None
            if custom is not None and policy == "fastest":
                tc = _kc.line_time(custom[0], ck, nbytes, pl.size, custom[1])
                name = f"{self.engine} custom/nccl (fastest)"
                t = np.minimum(t, tc)
            elif custom is not None and policy == "below" and self.gpu.nvlink and \
                    pl.size in self.custom.get("world_sizes", (pl.size,)):
                tc = _kc.line_time(custom[0], ck, nbytes, pl.size, custom[1])
                small = np.asarray(nbytes) <= float(self.custom.get("max_bytes", np.inf))
                name = f"{self.engine} custom below {float(self.custom.get('max_bytes', 0)) / 2**20:g} MiB, else nccl"
                t = np.where(small, tc, t)
        return t * self.factor, name

    def __call__(self, op):
        c = op.comm
        pl = self.placement(c["group"], c["size"])
        links = pl.inner.name + (f"+{pl.outer.name}" if pl.outer else "")
        forced = c["kind"] == "all_reduce" and self.par.collective_algo != "auto"
        hit = None if forced else self.curve_time(c["kind"], c["bytes"], pl)
        if hit is not None:
            return hit[0], f"{hit[1]} (measured curve) over {links} ({c['group']}={c['size']})"
        algo = self.par.collective_algo if c["kind"] == "all_reduce" else "auto"
        t, name = collective_time(c["kind"], c["bytes"], pl, self.gpu, algo, c.get("node_dedup"))
        return t, f"{name} over {links} ({c['group']}={c['size']})"


def comm_pricer(gpu: GPU, par: Parallelism, engine: str | None = None, calibration=None) -> CommPricer:
    """A function op -> (seconds, "algorithm over links") for ``price_step``, carrying the deployment's
    kernel pricer (``.kernels``) for its engine (None: the default engine)."""
    return CommPricer(gpu, par, engine, calibration)


_PRICERS = cache("collective pricers", 256)
_BY_DEPLOYMENT = cache("collective pricer per deployment", 1024)


def comm_pricer_of(dep) -> CommPricer:
    """The collective pricer of the deployment's GPU, layout, engine and calibration: one per distinct
    four (deployments that differ only in model or formats share it), found by deployment first."""
    def shared():
        key = (gpu_key(dep.gpu), dep.par, dep.engine, dep.calibration_key)
        return _PRICERS.get_or(key, lambda: CommPricer(dep.gpu, dep.par, dep.engine, dep.calibration))
    return _BY_DEPLOYMENT.get_or(dep, shared)
