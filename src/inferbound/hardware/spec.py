"""GPU (accelerator) specification: datasheet peaks, links, power, price and efficiency factors.

All fields are SI: FLOP/s, bytes, bytes/s, watts. The catalog (``data/hardware.yaml``) stores vendor
units (TFLOP/s, GB, TB/s, GB/s, Gb/s); ``catalog.py`` converts them once, at load time.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from inferbound.dtypes import DTYPES


class Efficiency(BaseModel):
    """Achievable fractions of datasheet peaks and fixed overheads (sources in data/efficiency.yaml)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compute: float = Field(gt=0, le=1, description="achievable fraction of dense peak FLOP/s for GEMMs")
    memory: float = Field(gt=0, le=1, description="achievable fraction of peak HBM bandwidth")
    kernel_overhead_s: float = Field(ge=0, description="fixed time added per operator (kernel launch, tail)")
    step_overhead_s: float = Field(ge=0, description="fixed time added per forward step (scheduler, sampling)")
    collective: float = Field(gt=0, le=1, description="achievable fraction of link bandwidth (bus bandwidth)")
    link_latency_s: float = Field(ge=0, description="latency per collective step (alpha)")
    moe_imbalance: float = Field(ge=1, description="busiest-GPU expert load over the mean under EP")
    compute_by_dtype: dict[str, float] = Field(
        default_factory=dict, description="per-dtype compute fraction where it differs from `compute` (e.g. fp8)")
    kv_memory: float | None = Field(
        default=None, gt=0, le=1, description="achievable HBM fraction for attention's KV-cache reads (paged, "
                                              "gathered); None = same as `memory`")

    @property
    def kv_memory_fraction(self) -> float:
        return self.memory if self.kv_memory is None else self.kv_memory

    @field_validator("compute_by_dtype")
    @classmethod
    def _fractions(cls, v: dict[str, float]) -> dict[str, float]:
        for dtype, frac in v.items():
            if dtype not in DTYPES:
                raise ValueError(f"compute_by_dtype key {dtype!r} is not a dtype; allowed: {', '.join(DTYPES)}")
            if not 0 < frac <= 1:
                raise ValueError(f"compute_by_dtype.{dtype}={frac!r} must be in (0, 1]")
        return v

    def compute_for(self, dtype: str) -> float:
        """Achievable compute fraction for GEMMs in ``dtype``: ``compute_by_dtype[dtype]`` else ``compute``."""
        return self.compute_by_dtype.get(dtype, self.compute)


class Power(BaseModel):
    """Power model: idle + dynamic share that grows with utilization, capped at TDP (data/efficiency.yaml)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tdp_w: float = Field(gt=0)
    idle_w: float = Field(ge=0)
    compute_w: float = Field(ge=0, description="watts above idle at 100% compute utilization")
    memory_w: float = Field(ge=0, description="watts above idle at 100% HBM bandwidth utilization")


class GPU(BaseModel):
    """One accelerator type. ``peak_flops`` maps a dtype name to dense FLOP/s (missing = unsupported)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    vendor: str = ""
    peak_flops: dict[str, float] = Field(description="dense FLOP/s by dtype: fp32 bf16 fp16 fp8 int8 fp4")
    hbm_bytes: float = Field(gt=0)
    hbm_bw: float = Field(gt=0, description="peak HBM bandwidth, bytes/s")
    scaleup_bw: float = Field(ge=0, description="per-GPU unidirectional scale-up bandwidth, bytes/s")
    scaleup_domain: int = Field(ge=1, description="GPUs in one scale-up domain (NVLink island)")
    scaleup_tech: str = ""
    nvlink: bool = Field(description="False for PCIe-only cards (no NVLink/xGMI/ICI switch fabric)")
    nvls: bool = Field(default=False, description="NVLink SHARP in-switch reductions (NVSwitch gen3+)")
    scaleout_bw: float = Field(ge=0, description="per-GPU scale-out NIC bandwidth, bytes/s (0 = none)")
    pcie_bw: float = Field(ge=0, description="per-GPU unidirectional PCIe bandwidth, bytes/s")
    price_per_hour: float | None = Field(default=None, description="USD per GPU-hour (approximate)")
    efficiency: Efficiency
    power: Power
    sources: list[str] = Field(default_factory=list)

    def supports(self, dtype: str) -> bool:
        """True if the tensor cores run ``dtype`` natively."""
        return self.peak_flops.get(dtype) is not None and self.peak_flops.get(dtype, 0) > 0
