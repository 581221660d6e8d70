"""Request bodies of the JSON API: pydantic models whose field constraints are the server's work caps.

Every numeric field has an upper bound, so one request cannot ask for unbounded work (the caps are
the module constants below and appear in the OpenAPI schema). A deployment names its model either by
catalog name (``model``: an alias such as ``llama-3.1-8b`` or a catalog HF id) or by a pasted
``config`` (the config.json object) — exactly one of the two. Server files are never named: there is
no field for a path, a hardware file or a calibration file.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..dtypes import DType

#: caps on the work one request may ask for
MAX_GPUS = 4096
MAX_BATCH = 4096
MAX_TOKENS = 1_000_000            # prompt or output tokens of one request
MAX_OFFLINE_REQUESTS = 1_000_000  # max-throughput: requests issued at once (closed form, cheap)
MAX_TOKEN_BUDGET = 1 << 20
MAX_SIM_REQUESTS = 20_000
MAX_SIM_OUTPUT = 131_072          # output tokens of one simulated request
MAX_SIM_OUTPUT_TOKENS = 1_000_000  # output tokens of all simulated requests together
MAX_SIM_REPLICAS = 64
MAX_CSV_CHARS = 1_000_000
MAX_OVERRIDES = 64
MAX_CONFIG_LAYERS = 1024          # num_hidden_layers of a pasted config
MAX_CONFIG_NUMBER = 1e12          # any number in a pasted config or override
MAX_SEARCH_GPUS = 72              # largest layout a search sweeps (one NVL72 rack)
MAX_SEARCH_SIZE = 256             # GPU types x max_gpus of one search (x4 with all_layouts)
MAX_FRONTIER_POINTS = 2000

Scenario = Literal["static", "max-throughput"]
#: inferbound.search's objectives and frontier metrics (tests check these against the library)
Objective = Literal["tok_s_per_gpu", "tok_s_per_user", "tokens_per_joule", "usd_per_mtok", "gpus_for_rate"]
Metric = Literal["tok_s_per_gpu", "tok_s_per_user", "tokens_per_joule", "usd_per_mtok", "gpus_for_rate", "tok_s",
                 "requests_per_s", "ttft_ms", "tpot_ms", "e2e_ms", "gpus", "watts", "usd_per_hour", "concurrency"]
SearchDtype = Literal["bf16", "fp8", "int4", "fp4"]
CollectiveAlgo = Literal["auto", "ring", "tree", "oneshot", "twoshot", "nvls"]
Scalar = float | int | bool | str | None
GPU_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,99})?$"
GpuId = Annotated[str, Field(pattern=GPU_PATTERN)]
DIST_PATTERN = r"^(fixed|uniform:[0-9.eE+]+:[0-9.eE+]+|normal:[0-9.eE+]+:[0-9.eE+]+|exponential(:[0-9.eE+]+)?)$"


def check_numbers(value: Any, where: str, depth: int = 0) -> None:
    """Every number inside ``value`` is finite and at most MAX_CONFIG_NUMBER in size; nesting <= 16."""
    if depth > 16:
        raise ValueError(f"{where} is nested more than 16 levels deep")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or abs(value) > MAX_CONFIG_NUMBER:
            raise ValueError(f"{where}={value!r} must be a finite number of magnitude <= {MAX_CONFIG_NUMBER:g}")
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        check_numbers(v, f"{where}.{k}", depth + 1)


class Strict(BaseModel):
    """Unknown fields are errors; NaN and infinity are not numbers here."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, protected_namespaces=())


class ModelIn(Strict):
    """A model by catalog name or pasted config.json (exactly one), optional overrides, the calibration."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["model"]}, {"required": ["config"]}]})

    model: str | None = Field(None, pattern=MODEL_PATTERN, max_length=201,
                              description="catalog alias or HF id from GET /api/models (never a path)",
                              examples=["llama-3.1-8b"])
    config: dict[str, Any] | None = Field(None, description="a pasted HuggingFace config.json (instead of model)")
    model_overrides: dict[str, Scalar] | None = Field(None, max_length=MAX_OVERRIDES,
                                                      description="config.json keys or ModelSpec fields to set")
    calibration: Literal["default", "none"] = Field(
        "default", description="'default': the server's calibration ($INFERBOUND_CALIBRATION or the packaged "
                               "fit); 'none': catalog priors")

    @field_validator("config", "model_overrides")
    @classmethod
    def _finite(cls, v, info):
        if v is not None:
            check_numbers(v, info.field_name)
        return v

    @property
    def calibration_arg(self) -> str | None:
        """The library's argument: None resolves $INFERBOUND_CALIBRATION, then the packaged fit."""
        return None if self.calibration == "default" else self.calibration

    @model_validator(mode="after")
    def _one_model(self):
        if (self.model is None) == (self.config is None):
            raise ValueError("give exactly one of 'model' (a catalog name) or 'config' (a pasted config.json)")
        return self


class DeploymentIn(ModelIn):
    """Model + GPU + parallel layout + dtypes (the fields of ``inferbound.make_deployment``)."""

    gpu: str = Field("h100_sxm", pattern=GPU_PATTERN, description="GPU id from GET /api/gpus")
    num_gpus: int | None = Field(None, ge=1, le=MAX_GPUS, description="default tp*pp*dp")
    tp: int | None = Field(None, ge=1, le=MAX_GPUS, description="default num_gpus/(pp*dp), or 1")
    pp: int = Field(1, ge=1, le=MAX_GPUS)
    ep: int = Field(1, ge=1, le=MAX_GPUS)
    dp: int = Field(1, ge=1, le=MAX_GPUS)
    nodes: int = Field(1, ge=1, le=MAX_GPUS)
    attention_dp: bool = False
    weight_dtype: DType = "bf16"
    act_dtype: DType = "bf16"
    kv_dtype: DType | None = Field(None, description="default: as the activations")
    emulate: bool = Field(False, description="allow formats the GPU lacks (weight-only emulation)")
    sequence_parallel: bool = False
    pp_split: list[int] | None = Field(None, min_length=1, max_length=MAX_CONFIG_LAYERS,
                                       description="layers per pipeline stage")
    microbatches: int | None = Field(None, ge=1, le=MAX_BATCH)
    collective_algo: CollectiveAlgo = "auto"
    comm_overlap: float = Field(0.0, ge=0, le=1)
    sliding_window: bool = Field(True, description="false: the engine ignores the model's sliding windows")
    gpu_overrides: dict[str, float | int | bool | None] | None = Field(
        None, max_length=MAX_OVERRIDES, description="GPU fields to set, SI units ('hbm_bw', 'efficiency.compute')")

    @field_validator("pp_split")
    @classmethod
    def _split_sizes(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and any(not 1 <= x <= MAX_CONFIG_LAYERS for x in v):
            raise ValueError(f"every stage must hold 1..{MAX_CONFIG_LAYERS} layers")
        return v

    @field_validator("gpu_overrides")
    @classmethod
    def _finite_gpu(cls, v):
        if v is not None:
            check_numbers(v, "gpu_overrides")
        return v

    def deployment_kwargs(self) -> dict:
        """Keyword arguments of make_deployment except the model (resolved separately, see modelsource)."""
        return dict(gpu=self.gpu, num_gpus=self.num_gpus, tp=self.tp, pp=self.pp, ep=self.ep, dp=self.dp,
                    nodes=self.nodes, attention_dp=self.attention_dp, weight_dtype=self.weight_dtype,
                    act_dtype=self.act_dtype, kv_dtype=self.kv_dtype, emulate=self.emulate,
                    sequence_parallel=self.sequence_parallel,
                    pp_split=tuple(self.pp_split) if self.pp_split is not None else None,
                    microbatches=self.microbatches, collective_algo=self.collective_algo,
                    comm_overlap=self.comm_overlap, sliding_window=self.sliding_window,
                    gpu_overrides=self.gpu_overrides or None, calibration=self.calibration_arg)


class WorkloadIn(DeploymentIn):
    """A deployment and a static batch: ``batch`` prompts of ``input_len`` tokens, ``output_len`` generated."""

    batch: int = Field(8, ge=1, le=MAX_BATCH)
    input_len: int = Field(1024, ge=1, le=MAX_TOKENS)
    output_len: int = Field(256, ge=1, le=MAX_TOKENS)


class EstimateIn(WorkloadIn):
    """``static``: one batch (TTFT, TPOT, memory, energy, split); ``max-throughput``: offline operating point."""

    scenario: Scenario = "static"
    num_requests: int = Field(10_000, ge=1, le=MAX_OFFLINE_REQUESTS, description="max-throughput: requests issued")
    token_budget: int | None = Field(None, ge=1, le=MAX_TOKEN_BUDGET, description="max-throughput: tokens per step")
    kv_reservation: Literal["max", "average"] | None = None


class SimulateIn(DeploymentIn):
    """Serving simulation: Poisson arrivals at ``rate`` (or all at once), continuous batching."""

    rate: float | Literal["inf"] = Field(2.0, description="requests/s (> 0), or 'inf': all at t=0")
    requests: int = Field(200, ge=1, le=MAX_SIM_REQUESTS)
    input_len: int = Field(1024, ge=1, le=MAX_TOKENS)
    output_len: int = Field(256, ge=1, le=MAX_SIM_OUTPUT)
    input_dist: str | None = Field(None, pattern=DIST_PATTERN, max_length=64,
                                   description="fixed, uniform:LO:HI, normal:MEAN:STD, exponential[:MEAN]")
    output_dist: str | None = Field(None, pattern=DIST_PATTERN, max_length=64)
    seed: int = Field(0, ge=0, le=2**32 - 1)
    replicas: int | None = Field(None, ge=1, le=MAX_SIM_REPLICAS)
    prefill_replicas: int = Field(0, ge=0, le=MAX_SIM_REPLICAS)
    decode_replicas: int = Field(0, ge=0, le=MAX_SIM_REPLICAS)
    preemption: Literal["recompute", "swap"] | None = None
    block_size: int | None = Field(None, ge=1, le=1024)
    max_num_batched_tokens: int | None = Field(None, ge=1, le=MAX_TOKEN_BUDGET)
    max_num_seqs: int | None = Field(None, ge=1, le=MAX_BATCH)
    num_blocks: int | None = Field(None, ge=1, le=100_000_000)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    slo_ttft_ms: float | None = Field(None, gt=0, le=1e9)
    slo_tpot_ms: float | None = Field(None, gt=0, le=1e9)
    slo_e2e_ms: float | None = Field(None, gt=0, le=1e9)
    timeline: bool = Field(False, description="include per-step samples (thinned to 500 points)")

    @field_validator("rate")
    @classmethod
    def _rate(cls, v):
        if v != "inf" and not 0 < v <= 1e9:
            raise ValueError("rate must be > 0 and <= 1e9 requests/s, or 'inf'")
        return v


class ValidateIn(Strict):
    """Measured rows as CSV text (the schema of inferbound.validation.dataset), predicted and scored."""

    csv: str = Field(..., max_length=MAX_CSV_CHARS, description="CSV text with a header row")
    calibration: Literal["default", "none"] = "default"

    @property
    def calibration_arg(self) -> str | None:
        return None if self.calibration == "default" else self.calibration


class SearchIn(ModelIn):
    """Search GPU types x counts x layouts x dtypes x concurrency for ``objective`` under SLOs and budgets.

    Size cap: (GPU types searched) x max_gpus <= MAX_SEARCH_SIZE, a quarter of it with all_layouts;
    ``gpus`` null means the whole catalog. The frontier is thinned to ``max_points`` evenly along x.
    """

    gpus: list[GpuId] | None = Field(None, min_length=1, max_length=64, description="GPU ids (null: the whole catalog)")
    max_gpus: int = Field(8, ge=1, le=MAX_SEARCH_GPUS, description="largest layout (GPUs of one replica)")
    objective: Objective = "tok_s_per_gpu"
    input_len: int = Field(1024, ge=1, le=MAX_TOKENS)
    output_len: int = Field(256, ge=2, le=MAX_TOKENS)
    slo_ttft_ms: float | None = Field(None, gt=0, le=1e9)
    slo_tpot_ms: float | None = Field(None, gt=0, le=1e9)
    slo_e2e_ms: float | None = Field(None, gt=0, le=1e9)
    max_dollars_per_hour: float | None = Field(None, gt=0, le=1e9)
    max_watts: float | None = Field(None, gt=0, le=1e12)
    max_total_gpus: int | None = Field(None, ge=1, le=1_000_000)
    target_rate: float | None = Field(None, gt=0, le=1e9, description="requests/s the fleet must serve")
    disaggregated: bool = False
    dtypes: list[SearchDtype] | None = Field(None, min_length=1, max_length=4)
    all_layouts: bool = False
    top: int = Field(10, ge=1, le=100)
    token_budget: int | None = Field(None, ge=1, le=MAX_TOKEN_BUDGET)
    frontier_x: Metric = "tok_s_per_gpu"
    frontier_y: Metric = "tok_s_per_user"
    max_points: int = Field(500, ge=2, le=MAX_FRONTIER_POINTS)
