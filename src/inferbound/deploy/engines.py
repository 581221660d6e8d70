"""Serving-engine runtime policies (vLLM, SGLang, TensorRT-LLM, static engines) as cited data.

``data/engines.yaml`` holds one profile per engine *version family*; every default there carries the
engine file (at a version) or docs page it was read from. This module types that file, merges a
version's overrides over its family's profile, and finds the profile a name, a version or a row's
framework text names (``get_engine``, ``default_engine``, ``engine_for_framework``). The rules that are
functions of the hardware rather than constants (KV capacity per GPU, SGLang's memory fraction, vLLM's
memory tiers, CUDA-graph caps, trtllm-bench's limits) live in ``engine_rules.py``.

The lead's code uses a profile for: the KV rule and fraction (memory.py), ``block_tokens`` (block
rounding), token budget and max running sequences (workloads, simulator), ``kv_reservation``
(``max_output`` = reserve prompt + max new tokens; ``prompt_on_admission`` / ``on_demand`` = grow and
preempt; ``estimated_output`` = SGLang's decaying new_token_ratio, then retract), the CUDA-graph cap
(decode steps above it pay eager launch overhead), the DP scope of the limits (``per_rank`` or
``total`` divided by the engine) and ``flags`` for emitted launch commands.
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects, not as
# strings to compile and evaluate when each model class is defined, at every import)

import copy
import re
from functools import lru_cache
from typing import Generic, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..base.datafiles import data_yaml

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
    """SGLang admission: running requests hold ratio*min(remaining max_new_tokens, clip) tokens."""
    init_ratio: float
    min_ratio_factor: float
    decay_steps: int
    clip_tokens: int
    source: str = Field(min_length=10)
    quote: Optional[str] = None


class KvSizing(_Frozen):
    rule: Literal["total_fraction", "static_fraction", "free_fraction", "static_max_len"]
    fraction: Optional[Cited[float]] = None  # None: automatic (see ``auto``) or not applicable
    fraction_flag: Optional[str] = None
    graphs_in_fraction: Optional[Cited[bool]] = None
    profiled_at: Optional[str] = None  # token count of the profiling pass that sets A
    auto: Optional[SglangAuto] = None


class CudaGraphs(_Frozen):
    mode: Cited[Literal["none", "decode_only", "piecewise_tokens", "full_and_piecewise", "decode_and_breakable_prefill"]]
    cap_rule: Literal["tiers", "seqs_padded", "twice_seqs_capped", "fixed", "batch"]  # batch: static engines
    max_batch: Optional[Tiered] = None     # cap_rule tiers: the cap by GPU memory (and TP)
    cap: Optional[Cited[int]] = None       # fixed cap, or the ceiling of twice_seqs_capped / seqs_padded
    cap_blackwell: Optional[Cited[int]] = None
    max_context: Optional[Cited[int]] = None  # longest context a captured decode graph admits


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
    prefix_caching: Optional[Cited[bool]] = None
    kv_offload: Optional[Cited[bool]] = None
    sliding_window: Optional[Cited[bool]] = None   # false: the engine ignores the model's sliding windows
    dp_max_seqs_scope: Optional[Cited[Literal["per_rank", "total"]]] = None
    dp_token_budget_scope: Optional[Cited[Literal["per_rank", "total"]]] = None
    flags: Optional[Flags] = None
    quantization: dict[str, Cited[str]] = {}
    trtllm_bench: Optional[TrtBench] = None
    notes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"


class FrameworkRule(_Frozen):
    pattern: str  # regex, case-insensitive, searched in the validation row's framework text
    engine: str
    version: Optional[str] = None  # None: the version written after the match, else fallback_version
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


_LEAF_KEYS = ("value", "tiers", "kind", "min")  # cited value, tier table, rule, range: replaced whole


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        nested = isinstance(v, dict) and isinstance(out.get(k), dict) and not any(x in v for x in _LEAF_KEYS)
        out[k] = _merge(out[k], v) if nested else copy.deepcopy(v)
    return out


@lru_cache(maxsize=None)
def load_engines() -> EngineCatalog:
    """Parse and validate data/engines.yaml (``inherits: name@version`` copies a profile, then overrides)."""
    raw = data_yaml("engines.yaml")
    done: dict[str, dict] = {}
    for p in raw["profiles"]:
        p = dict(p)
        parent = p.pop("inherits", None)
        if parent is not None:
            if parent not in done:
                raise ValueError(f"inherits={parent!r} unknown; allowed: an earlier profile ({', '.join(done)})")
            base = {k: v for k, v in done[parent].items() if k != "default"}
            p = _merge(base, p)
            p["notes"] = [f"fields not overridden here were read from {parent}"] + list(p.get("notes", []))
        done[f"{p['name']}@{p['version']}"] = p
    return EngineCatalog(default=raw["default"], profiles=tuple(done.values()), frameworks=raw["frameworks"])


def _vtuple(v: str) -> tuple[int, ...]:
    m = re.match(r"v?(\d+(?:\.\d+)*)", v.strip().lower())
    if m is None:
        raise ValueError(f"engine_version={v!r} not a version; allowed: digits and dots such as 0.6.3")
    return tuple(int(x) for x in m.group(1).split("."))


def _in_range(v: tuple[int, ...], r: VersionRange) -> bool:
    return _vtuple(r.min) <= v and (r.below is None or v < _vtuple(r.below))


def get_engine(name: str, version: Optional[str] = None) -> EngineProfile:
    """The profile of ``name`` covering ``version`` (exact id, else the range that contains it)."""
    cat = load_engines()
    names = sorted({p.name for p in cat.profiles})
    key = name.strip().lower()
    mine = [p for p in cat.profiles if p.name == key]
    if not mine:
        raise ValueError(f"engine={name!r} unknown; allowed: {', '.join(names)}")
    if version is None:
        return next(p for p in mine if p.default)
    for p in mine:
        if p.version == version.strip().lstrip("v"):
            return p
    v = _vtuple(version)
    for p in mine:
        if _in_range(v, p.covers):
            return p
    spans = ", ".join(f"{p.covers.min}-{p.covers.below or 'newest'} ({p.version})" for p in mine)
    raise ValueError(f"engine_version={version!r} not covered for {key}; allowed: {spans}")


def default_engine() -> tuple[str, str]:
    d = load_engines().default
    return d.engine, d.version


def engine_for_framework(text: str) -> tuple[str, str]:
    """(engine, profile version) for a validation row's ``framework`` text, by the first matching rule."""
    for r in load_engines().frameworks:
        m = re.search(r.pattern, text, flags=re.IGNORECASE)
        if m is None:
            continue
        if r.version is not None:
            return r.engine, get_engine(r.engine, r.version).version
        found = re.search(r"v?(\d+\.\d+(?:\.\d+)?|\d+\.x)", text[m.end():])
        v = found.group(1).replace(".x", ".0") if found else r.fallback_version
        return r.engine, get_engine(r.engine, v).version
    allowed = ", ".join(r.pattern for r in load_engines().frameworks)
    raise ValueError(f"framework={text!r} matches no engine rule; allowed patterns: {allowed}")


def profile_of(engine: str | None = None, version: str | None = None) -> EngineProfile:
    """The engine profile named (``vllm``, ``vllm@0.6.3``, ``sglang``, ``trtllm``; None: the default)."""
    if engine is None:
        engine, version = default_engine()
    if "@" in engine:
        engine, version = engine.split("@", 1)
    return get_engine(engine, version)


def profile_for_framework(text: str) -> EngineProfile:
    """The profile a validation row's ``framework`` text names (engines.yaml ``frameworks``)."""
    return get_engine(*engine_for_framework(text))
