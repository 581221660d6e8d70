"""The typed schema of data/engines.yaml: one cited profile per engine version family (engines.py loads it).

Every default is a :class:`Cited` value (``value``, ``source`` = engine, version and file or URL, ``quote``)
or a :class:`Tiered` table stepping with device memory; ``VersionRange`` gives the versions a profile
stands for, ``[min, below)``; ``FrameworkRule`` maps a validation row's framework text to an engine;
``Platform`` carries the cited departures of an engine on another vendor's GPUs (ROCm).
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects, not as
# strings to compile and evaluate when each model class is defined, at every import)

from typing import Generic, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

GIB = 2**30
MIB = 2**20
T = TypeVar("T")


class _Frozen(BaseModel):
    # defer_build: a model's validator is built when it first validates (load_engines builds the
    # catalog's, nested models included), not when the class is defined (import time)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

class Cited(_Frozen, Generic[T]):
    """A default and where it was read: ``source`` = engine, version, file path or URL."""
    value: T
    source: str = Field(min_length=10)
    quote: Optional[str] = None


class Tier(_Frozen):
    """``value`` applies when device memory >= ``min_total_gib`` GiB (``value_tp4`` when TP >= 4)."""
    min_total_gib: float = Field(ge=0)
    value: int = Field(gt=0)
    value_tp4: Optional[int] = Field(default=None, gt=0)
    exclude_names: tuple[str, ...] = ()  # device-name substrings that skip this tier (vLLM: "a100")


class Tiered(_Frozen):
    """A default that steps with device memory; ``rule`` says how the engine applies the value."""
    tiers: tuple[Tier, ...] = Field(min_length=1)
    source: str = Field(min_length=10)
    rule: Optional[str] = None
    quote: Optional[str] = None
    at_least_max_model_len: bool = False  # vLLM V0 without chunked prefill: max(max_model_len, value)

    @field_validator("tiers")
    @classmethod
    def _ascending(cls, v):
        mins = [t.min_total_gib for t in v]
        if mins[0] != 0 or mins != sorted(mins):
            raise ValueError(f"tiers min_total_gib={mins}; allowed: ascending, first 0")
        return v


class VersionRange(_Frozen):
    min: str  # inclusive
    below: Optional[str] = None  # exclusive; None = no upper bound


class SglangAuto(_Frozen):
    """SGLang's automatic mem_fraction_static (python/sglang/srt/server_args.py, _handle_gpu_memory_settings)."""
    kind: Literal["tp_table", "reserve_gib_table", "reserve_formula"]
    source: str = Field(min_length=10)
    tp_table: tuple[tuple[int, float], ...] = ()        # (min tp, fraction), descending tp
    gib_table: tuple[tuple[float, float, float], ...] = ()  # (min GiB, base GiB, GiB per tp*pp rank)
    base_mib: float = 0.0
    mib_per_prefill_token: float = 0.0
    min_prefill_tokens: int = 0
    mib_per_decode_graph_bs: float = 0.0
    mib_per_rank: float = 0.0                            # times tp*pp
    floor_mib: float = 0.0
    floor_above_gib: float = 0.0
    mib_per_prefill_graph: float = 0.0                   # times the number of captured prefill sizes
    prefill_graph_ranges: tuple[tuple[int, Optional[int], int], ...] = ()  # (start, stop|None=budget, step), inclusive


class ReqPool(_Frozen):
    """SGLang automatic max_running_requests: min(clamp(KV tokens/context*scale, lo, hi), KV tokens*cap)."""
    scale: float
    lo: int
    hi: int
    token_share: float
    source: str = Field(min_length=10)
    quote: Optional[str] = None


class OutputEstimate(_Frozen):
    """SGLang admission: running requests hold ratio*min(remaining max_new_tokens, clip) tokens; the ratio
    starts at min(init_ratio * schedule_conservativeness, 1), decays over decay_steps to init*min_ratio_factor
    (conservativeness times ``dp_attention_conservativeness`` with DP attention; None: not read)."""
    init_ratio: float
    min_ratio_factor: float
    decay_steps: int
    clip_tokens: int
    schedule_conservativeness: Optional[float] = None
    dp_attention_conservativeness: Optional[float] = None
    source: str = Field(min_length=10)
    quote: Optional[str] = None


class KvSizing(_Frozen):
    rule: Literal["total_fraction", "static_fraction", "free_fraction", "static_max_len"]
    fraction: Optional[Cited[float]] = None  # None: automatic (see ``auto``) or not applicable
    fraction_flag: Optional[str] = None
    graphs_in_fraction: Optional[Cited[bool]] = None
    profiled_at: Optional[str] = None  # token count of the profiling pass that sets A
    auto: Optional[SglangAuto] = None
    reserve_fraction: Optional[Cited[float]] = None  # share of the device total kept outside the KV pool (ATOM: 0.02)


class CudaGraphs(_Frozen):
    mode: Cited[Literal["none", "decode_only", "piecewise_tokens", "full_and_piecewise", "decode_and_breakable_prefill"]]
    cap_rule: Literal["tiers", "seqs_padded", "twice_seqs_capped", "fixed", "batch"]  # batch: static engines
    max_batch: Optional[Tiered] = None     # cap_rule tiers: the cap by GPU memory (and TP)
    cap: Optional[Cited[int]] = None       # fixed cap, or the ceiling of twice_seqs_capped / seqs_padded
    cap_blackwell: Optional[Cited[int]] = None
    max_context: Optional[Cited[int]] = None  # longest context a captured decode graph admits


class StreamInterval(_Frozen):
    """Tokens per streamed chunk (SGLang ``--stream-interval k``, TensorRT-LLM ``stream_interval: k``;
    deploy/engine_modes.py, workloads/streaming.py). ``value``: the default k; ``first``: when the first chunk
    leaves: ``at_once`` (token 1 alone, then every k tokens: tokens 1, k + 1, 2k + 1, ...), ``at_multiple`` (a
    chunk when the output length is a multiple of k: the first token waits k − 1 decode steps) or
    ``at_once_then_multiple`` (token 1 alone, then tokens k, 2k, ...); a finished request sends its last chunk
    either way."""
    value: int = Field(ge=1)
    first: Literal["at_once", "at_multiple", "at_once_then_multiple"]
    flag: str
    source: str = Field(min_length=10)
    quote: Optional[str] = None


class Flags(_Frozen):
    """Launch option names (checked against the argument parser of the profile's version)."""
    source: str = Field(min_length=10)
    launch: str
    tp: Optional[str] = None
    pp: Optional[str] = None
    dp: Optional[str] = None
    ep: Optional[str] = None
    attention_dp: Optional[str] = None
    max_seqs: Optional[str] = None
    token_budget: Optional[str] = None
    memory_fraction: Optional[str] = None
    block_size: Optional[str] = None
    kv_dtype_fp8: Optional[str] = None
    chunked_prefill: Optional[str] = None
    prefix_caching: Optional[str] = None
    cuda_graph_max: Optional[str] = None
    kv_offload: Optional[str] = None
    speculative: Optional[str] = None
    disaggregation: Optional[str] = None
    config_file: Optional[str] = None


class TrtBench(_Frozen):
    """trtllm-bench defaults and its max_batch_size / max_num_tokens heuristic (bench/build/tuning.py)."""
    kv_fraction_flag_default: Cited[float]
    heuristic_kv_fraction: Cited[float]
    scheduler_policy: Cited[str]
    chunked_context: Cited[bool]
    bs_cap: int
    tokens_cap: int
    min_bs: int
    min_tokens: int
    source: str = Field(min_length=10)


class Platform(_Frozen):
    """An engine on another vendor's GPUs (``vendor`` as data/hardware.yaml writes it, e.g. AMD): the
    defaults that stay or change there, read from the engine's platform file at ``source``."""
    vendor: str
    source: str = Field(min_length=10)
    notes: tuple[str, ...] = Field(min_length=1)


class EngineProfile(_Frozen):
    name: str
    version: str
    label: str
    backend: Optional[str] = None
    default: bool = False  # the version get_engine(name) returns
    covers: VersionRange
    continuous_batching: Cited[bool]
    kv_sizing: KvSizing
    block_tokens: Optional[Cited[int]] = None
    token_budget: Optional[Tiered] = None          # online server default (vllm serve, trtllm-serve, launch_server)
    token_budget_offline: Optional[Tiered] = None  # offline LLM class, where it differs
    chunked_token_budget: Optional[Cited[int]] = None
    max_seqs: Optional[Tiered] = None
    max_seqs_auto: Optional[ReqPool] = None
    chunked_prefill: Optional[Cited[bool]] = None
    mixed_batches: Optional[Cited[bool]] = None    # prefill chunks and decodes in one step
    schedule: Optional[Cited[str]] = None
    kv_reservation: Optional[Cited[Literal["on_demand", "prompt_on_admission", "estimated_output", "max_output", "static"]]] = None
    preemption: Optional[Cited[Literal["recompute", "swap", "retract", "none"]]] = None
    output_estimate: Optional[OutputEstimate] = None
    cuda_graphs: Optional[CudaGraphs] = None
    scheduler_steps: Optional[Cited[int]] = None   # vLLM V0 multi-step: decode steps per scheduler call (None: not in this engine)
    stream_interval: Optional[StreamInterval] = None  # tokens per streamed chunk (None: not modelled for this engine)
    recv_interval: Optional[Cited[int]] = None  # SGLang --scheduler-recv-interval default (None: not in this engine)
    prefix_caching: Optional[Cited[bool]] = None
    kv_offload: Optional[Cited[bool]] = None
    sliding_window: Optional[Cited[bool]] = None   # false: the engine ignores the model's sliding windows
    dp_max_seqs_scope: Optional[Cited[Literal["per_rank", "total"]]] = None
    dp_token_budget_scope: Optional[Cited[Literal["per_rank", "total"]]] = None
    flags: Optional[Flags] = None
    quantization: dict[str, Cited[str]] = {}
    trtllm_bench: Optional[TrtBench] = None
    platforms: dict[str, Optional[Platform]] = {}  # e.g. rocm; None: not checked for this version
    notes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"


class FrameworkRule(_Frozen):
    pattern: str  # regex, case-insensitive, searched in the validation row's framework text
    engine: str
    version: Optional[str] = None  # None: the version written right after ``names``, else fallback_version
    names: Optional[str] = None  # regex of the engine's name as written before its version (None: ``pattern``)
    fallback_version: Optional[str] = None  # None: the engine's default profile
    note: str


class DefaultEngine(_Frozen):
    engine: str
    version: str
    reason: str


class EngineCatalog(_Frozen):
    default: DefaultEngine
    profiles: tuple[EngineProfile, ...]
    frameworks: tuple[FrameworkRule, ...]

    @model_validator(mode="after")
    def _one_default_each(self):
        for name in {p.name for p in self.profiles}:
            n = sum(p.default for p in self.profiles if p.name == name)
            if n != 1:
                raise ValueError(f"engine={name!r} has {n} default profiles; allowed: exactly 1")
        return self
