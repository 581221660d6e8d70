"""GPU (accelerator) specification: datasheet peaks, links, power, price and efficiency factors.

All fields are SI: FLOP/s, bytes, bytes/s, watts. The catalog (``data/hardware.yaml``) stores vendor
units (TFLOP/s, GB, TB/s, GB/s, Gb/s); ``catalog.py`` converts them once, at load time.
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects, not as
# strings to compile and evaluate when each model class is defined, at every import)

from pydantic import BaseModel, ConfigDict, Field, field_validator

from inferbound.base.dtypes import DTYPES


class Efficiency(BaseModel):
    """Achievable fractions of datasheet peaks and fixed overheads (sources in data/efficiency.yaml)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # no inf/NaN peaks, prices

    compute: float = Field(gt=0, le=1, description="achievable fraction of dense peak FLOP/s for GEMMs")
    memory: float = Field(gt=0, le=1, description="achievable fraction of peak HBM bandwidth")
    kernel_overhead_s: float = Field(ge=0, description="fixed time added per operator priced by the scalar roofline "
                                                       "(kernel launch, tail); curve-priced kernels carry their own")
    step_overhead_s: float = Field(ge=0, description="fixed time added per forward step beyond the engine's host work "
                                                     "(engines.yaml pricing.host)")
    collective: float = Field(gt=0, le=1, description="achievable fraction of link bandwidth (bus bandwidth)")
    link_latency_s: float = Field(ge=0, description="latency per collective step (alpha)")
    moe_imbalance: float = Field(ge=1, description="busiest-GPU expert load over the mean under EP")
    compute_by_dtype: dict[str, float] = Field(
        default_factory=dict, description="per-dtype compute fraction where it differs from `compute` (e.g. fp8)")
    kv_memory: float | None = Field(
        default=None, gt=0, le=1, description="achievable HBM fraction for attention's KV-cache reads (paged, "
                                              "gathered); None = same as `memory`")
    kernel_curves: bool = Field(default=True, description="price GEMMs, MoE, attention and collectives from the "
                                                          "measured kernel curves (data/kernels.yaml) where the GPU has "
                                                          "them; False: the scalar roofline only")
    host_factor: float = Field(default=1.0, ge=0, description="the engines' host work (engines.yaml pricing.host) on "
                                                            "this machine's CPU relative to the x86 hosts those "
                                                            "figures come from; 0: no host work")
    gemm_spread: float = Field(default=0.0, ge=0, lt=1, description="relative spread of a GEMM's row count M over "
                                                                    "which curve-priced GEMM times are averaged "
                                                                    "(tile padding and waves, kernels.gemm.soft_ceil)")
    moe_routing_skew: float = Field(default=1.0, ge=1, description="fused-MoE GEMM time under real routing over "
                                                                   "balanced routing, inside one GPU")

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
    """Power model: idle + a dynamic share that grows with utilization and saturates towards TDP
    (pricing/energy.py; coefficients fitted in data/efficiency.yaml)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # no inf/NaN peaks, prices

    tdp_w: float = Field(gt=0)
    idle_w: float = Field(ge=0)
    compute_w: float = Field(ge=0, description="watts per unit compute utilization at low load (dP/du_c at 0)")
    memory_w: float = Field(ge=0, description="watts per unit HBM-bandwidth utilization at low load (dP/du_m at 0)")


class Price(BaseModel):
    """Where a GPU's $/GPU-hour comes from (catalog.py reads and checks it): a cited list price of
    data/hardware.yaml ``price:`` (provider, instance, kind, source URL, the date the source read it), the
    user's own figure (``by``: --price, --gpu-set, a hardware file), or, with no figure, why there is none."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    usd_per_gpu_hour: float | None = Field(default=None, ge=0, description="USD per GPU-hour; None: no price")
    by: str = Field(default="catalog", description="catalog | --price | --gpu-set | hardware file")
    provider: str | None = None
    instance: str | None = Field(default=None, description="the offer priced, as the provider names it")
    kind: str | None = Field(default=None, description="on-demand | reserved | spot | committed")
    source: str | None = Field(default=None, description="the provider's pricing page (or the user's file)")
    as_of: str | None = Field(default=None, description="YYYY-MM-DD the source read or published the price")
    via: str | None = Field(default=None, description="the dated transcription of the page the figure was read from")
    note: str | None = None
    reason: str | None = Field(default=None, description="why there is no price (usd_per_gpu_hour None)")


class GPU(BaseModel):
    """One accelerator type. ``peak_flops`` maps a dtype name to dense FLOP/s (missing = unsupported)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # no inf/NaN peaks, prices

    id: str
    name: str
    vendor: str = ""
    peak_flops: dict[str, float] = Field(description="dense FLOP/s by dtype: fp32 bf16 fp16 fp8 int8 fp4")
    hbm_bytes: float = Field(gt=0, description="device memory as the engines read it (CUDA/HIP total), bytes")
    hbm_datasheet_bytes: float | None = Field(default=None, gt=0,
                                              description="the datasheet figure where hbm_bytes is a device total")
    hbm_bw: float = Field(gt=0, description="peak HBM bandwidth, bytes/s")
    scaleup_bw: float = Field(ge=0, description="per-GPU unidirectional scale-up bandwidth, bytes/s")
    scaleup_domain: int = Field(ge=1, description="GPUs in one scale-up domain (NVLink island)")
    scaleup_tech: str = ""
    nvlink: bool = Field(description="False for PCIe-only cards (no NVLink/xGMI/ICI switch fabric)")
    nvls: bool = Field(default=False, description="NVLink SHARP in-switch reductions (NVSwitch gen3+)")
    scaleout_bw: float = Field(ge=0, description="per-GPU scale-out NIC bandwidth, bytes/s (0 = none)")
    pcie_bw: float = Field(ge=0, description="per-GPU unidirectional PCIe bandwidth, bytes/s")
    price_per_hour: float | None = Field(default=None, ge=0, description="USD per GPU-hour (see `price`)")
    price: Price | None = Field(default=None, description="where price_per_hour comes from, or why there is none")
    efficiency: Efficiency
    power: Power
    sources: list[str] = Field(default_factory=list)
    derived_from: str | None = Field(default=None, description="what-if GPUs: the catalog GPU scaled (whatif.py)")
    scales: dict[str, float] = Field(default_factory=dict, description="what-if GPUs: the factors applied")

    @field_validator("peak_flops")
    @classmethod
    def _peaks(cls, v: dict[str, float]) -> dict[str, float]:
        for dtype, flops in v.items():
            if dtype not in DTYPES:
                raise ValueError(f"peak_flops key {dtype!r} is not a dtype; allowed: {', '.join(DTYPES)}")
            if flops is not None and not flops >= 0:
                raise ValueError(f"peak_flops.{dtype}={flops!r} must be a FLOP/s figure >= 0")
        return v

    def supports(self, dtype: str) -> bool:
        """True if the tensor cores run ``dtype`` natively."""
        return self.peak_flops.get(dtype) is not None and self.peak_flops.get(dtype, 0) > 0
