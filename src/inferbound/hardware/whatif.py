"""What-if hardware: a catalog GPU with some of its figures scaled (``--gpu-scale hbm_bw=2,flops=1.5``).

Scales multiply datasheet figures; everything else (efficiency fractions, kernel curves, power model,
price) is the base GPU's, so a derived GPU is an extrapolation and says so: its id names the base and
the scales (``h100_sxm+hbm_bw*2+flops*1.5``), ``derived_from`` names the base, and a deployment on it
carries a note that its error bands are extrapolated.

    hbm_bw   HBM bandwidth, bytes/s              flops    every peak_flops entry (all dtypes)
    hbm_gb   HBM capacity                        link_bw  scale-up (NVLink), scale-out (NIC) and PCIe bandwidth
    scaleup_bw, scaleout_bw, pcie_bw: one link each

A scaled link moves what runs over it: the alpha-beta model (pricing/comm.py) reads the scaled catalog
links, and the measured intra-node collective curves (pricing/collectives.py, keyed by the base GPU) have
their bandwidth terms multiplied by :func:`link_scale` (the NVLink factor, or PCIe's on a machine without
NVLink) while their latency terms stay the base's: t(S) = min((√α + √(S·f/(s·β)))², α_b + S·f/(s·β_b)).
"""
from __future__ import annotations

import math
from typing import Any

from .spec import GPU

SCALES: dict[str, tuple[str, ...]] = {
    "hbm_bw": ("hbm_bw",), "flops": ("peak_flops",), "hbm_gb": ("hbm_bytes", "hbm_datasheet_bytes"),
    "link_bw": ("scaleup_bw", "scaleout_bw", "pcie_bw"), "scaleup_bw": ("scaleup_bw",),
    "scaleout_bw": ("scaleout_bw",), "pcie_bw": ("pcie_bw",),
}


def parse_scales(spec: str | dict[str, Any] | None, field: str = "gpu_scale") -> dict[str, float]:
    """{name: factor} from ``"hbm_bw=2,flops=1.5"`` or a mapping (whose values may still hold ``,k=v``
    tails, as a repeated CLI KEY=VALUE option gives them). Factors must be finite and > 0."""
    if not spec:
        return {}
    items: list[tuple[str, Any]] = []
    if isinstance(spec, str):
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            if "=" not in part:
                raise ValueError(f"{field}={spec!r}: {part!r} must look like NAME=FACTOR; allowed: "
                                 f"{', '.join(SCALES)}")
            k, v = part.split("=", 1)
            items.append((k.strip(), v.strip()))
    else:
        for k, v in spec.items():
            if isinstance(v, str) and "," in v:
                head, tail = v.split(",", 1)
                items.append((k, head))
                items += list(parse_scales(tail, field).items())
            else:
                items.append((k, v))
    out: dict[str, float] = {}
    for k, v in items:
        if k not in SCALES:
            raise ValueError(f"{field} {k!r} unknown; allowed: {', '.join(SCALES)}")
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{field} {k}={v!r} must be a factor > 0") from None
        if not (math.isfinite(f) and f > 0):
            raise ValueError(f"{field} {k}={v!r} must be a finite factor > 0")
        out[k] = f
    return out


def derived_id(base: str, scales: dict[str, float]) -> str:
    return base + "".join(f"+{k}*{v:g}" for k, v in scales.items())


def scale_gpu(gpu: GPU, scales: dict[str, float]) -> GPU:
    """A copy of ``gpu`` with the named figures multiplied (module docstring); ``scales`` empty: ``gpu``."""
    if not scales:
        return gpu
    data = gpu.model_dump()
    for name, factor in scales.items():
        for fld in SCALES[name]:
            if fld == "peak_flops":
                data[fld] = {k: (None if v is None else v * factor) for k, v in data[fld].items()}
            elif data[fld] is not None:   # hbm_datasheet_bytes is None where hbm_bytes is the datasheet's
                data[fld] = data[fld] * factor
    base = gpu.derived_from or gpu.id
    prior = dict(gpu.scales)
    for k, v in scales.items():
        prior[k] = prior.get(k, 1.0) * v
    text = ", ".join(f"{k} x{v:g}" for k, v in prior.items())
    data.update(id=derived_id(base, prior), name=f"{gpu.name} (what-if: {text})", derived_from=base, scales=prior)
    return GPU.model_validate(data)


def link_scale(gpu: GPU) -> float:
    """Factor on the intra-node link of a what-if GPU: scaleup_bw's (link_bw x scaleup_bw) where the GPUs
    talk over NVLink, else pcie_bw's (link_bw x pcie_bw); 1.0 for a catalog GPU."""
    s = gpu.scales
    return s.get("link_bw", 1.0) * s.get("scaleup_bw" if gpu.nvlink else "pcie_bw", 1.0)


def note(gpu: GPU) -> str:
    """The printed note of a derived GPU."""
    text = ", ".join(f"{k} x{v:g}" for k, v in gpu.scales.items())
    return (f"what-if GPU {gpu.id}: {gpu.derived_from} with {text}; efficiencies, kernel curves (their link "
            f"bandwidth scaled), power and price are {gpu.derived_from}'s, so its figures and error bands are "
            f"extrapolated")
