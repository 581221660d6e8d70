"""The fleet file (``inferbound fleet FILE.yaml``): traffic, pools, router, SLO, optional autoscaling and
sessions, as pydantic v2 models (extra keys refused; every error one line naming the key).

Durations are seconds or a string with a unit: ``500ms``, ``60s``, ``10m``, ``24h``, ``1d``. A pool takes
``name``, ``replicas`` and any option of ``make_deployment`` (model, gpu, tp, engine, weight_dtype, ...) or of
the simulator's engine overrides (``preemption``, ``block_size``, ``max_num_batched_tokens``, ``max_num_seqs``,
``num_blocks``, ``memory_fraction``), as ``simulate`` takes them.
"""
from __future__ import annotations

import inspect
import math
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..base.datafiles import load_yaml
from ..deploy.deployment import make_deployment
from ..deploy.runtime import FEATURES

ROUTERS = ("round-robin", "least-outstanding", "least-kv", "power-of-two", "prefix-affinity", "session-affinity")
METRICS = ("concurrency", "queue", "kv", "ttft")
#: the simulator's engine overrides a pool may carry (sim.simulate's keywords, sim/config.py runtime_with)
SIM_KEYS = ("preemption", "block_size", "max_num_batched_tokens", "max_num_seqs", "num_blocks", "memory_fraction")
#: make_deployment's keywords (and Parallelism fields it passes on)
DEPLOY_KEYS = tuple(p for p in inspect.signature(make_deployment).parameters if p != "parallel_options") + (
    "sequence_parallel", "pp_split", "microbatches", "collective_algo", "comm_overlap")
#: the engine features a pool may state as keys of its own, as simulate's options (deploy/runtime.py FEATURES:
#: prefix_hit_rate, shared_prefix_len, prefix_groups, speculative, kv_offload, ...), passed as engine_options
FEATURE_KEYS = FEATURES
_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def seconds(value, key: str) -> float:
    """A duration in seconds from a number or ``<number><unit>`` (units: ms, s, m, min, h, d)."""
    if isinstance(value, bool):
        raise ValueError(f"{key}={value!r} must be a duration: seconds or NUMBER with a unit ({', '.join(_UNITS)})")
    if isinstance(value, (int, float)):
        v = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([a-z]*)\s*", str(value).lower())
        if not m or m.group(2) not in {**_UNITS, "": 1.0}:
            raise ValueError(f"{key}={value!r} must be a duration: seconds or NUMBER with a unit "
                             f"({', '.join(_UNITS)}), e.g. 10m")
        v = float(m.group(1)) * _UNITS.get(m.group(2), 1.0)
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{key}={value!r} must be a duration >= 0")
    return v


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Rate(_M):
    """Diurnal Poisson arrivals (traffic.py): mean req/s, peak/mean, the period of the sine."""
    mean: float = Field(gt=0)
    peak_to_mean: float = Field(1.0, ge=1.0, le=2.0)
    period: float = 86400.0

    @field_validator("period", mode="before")
    @classmethod
    def _period(cls, v):
        v = seconds(v, "traffic.rate.period")
        if v <= 0:
            raise ValueError(f"traffic.rate.period={v!r} must be > 0")
        return v


class Traffic(_M):
    rate: Rate | None = None
    trace: Path | None = None
    format: str | None = None  # the trace's format (fleet/traces.py); None: from its name and columns
    duration: float | None = None
    dataset: str | None = None
    input_len: int | None = Field(None, ge=1)
    output_len: int | None = Field(None, ge=1)

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, v):
        return None if v is None else seconds(v, "traffic.duration")

    @model_validator(mode="after")
    def _one_source(self):
        if (self.rate is None) == (self.trace is None):
            raise ValueError("traffic: give exactly one of rate: {mean: ...} and trace: FILE")
        if self.rate is not None and not self.duration:
            raise ValueError("traffic.duration is required with traffic.rate (e.g. duration: 10m)")
        if self.dataset is not None and (self.input_len or self.output_len):
            raise ValueError("traffic: dataset and input_len/output_len given together; allowed: one of them")
        return self


class Slo(_M):
    """Per-request thresholds; a request attains the SLO when it meets every one given (ms)."""
    ttft_p99_ms: float | None = Field(None, gt=0)
    tpot_p99_ms: float | None = Field(None, gt=0)
    e2e_p99_ms: float | None = Field(None, gt=0)


class Autoscale(_M):
    metric: Literal["concurrency", "queue", "kv", "ttft"]
    target: float = Field(gt=0)
    min: int = Field(1, ge=0)
    max: int = Field(ge=1)
    interval: float | None = None
    startup: float | None = None  # seconds; None: priced from the weights (fleet/startup.py)
    source: str | None = None  # where a new replica reads its weights (fleet/startup.py; None: data/fleet.yaml)

    @field_validator("interval", "startup", mode="before")
    @classmethod
    def _dur(cls, v, info):
        return None if v is None else seconds(v, f"autoscale.{info.field_name}")

    @model_validator(mode="after")
    def _bounds(self):
        if self.min > self.max:
            raise ValueError(f"autoscale.min={self.min} must be <= autoscale.max={self.max}")
        if self.interval is not None and self.interval <= 0:
            raise ValueError(f"autoscale.interval={self.interval} must be > 0")
        return self


class Sessions(_M):
    turns: int = Field(ge=1)
    think_time: float = 0.0
    sync: float | None = None  # closed loop: the longest the replicas run without reporting completions

    @field_validator("think_time", mode="before")
    @classmethod
    def _think(cls, v):
        return seconds(v, "sessions.think_time")

    @field_validator("sync", mode="before")
    @classmethod
    def _sync(cls, v):
        if v is None:
            return None
        s = seconds(v, "sessions.sync")
        if s <= 0:
            raise ValueError(f"sessions.sync={v!r} must be > 0 (seconds)")
        return s


class Pool(_M):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: str
    replicas: int = Field(1, ge=0)

    @model_validator(mode="after")
    def _known(self):
        keys = DEPLOY_KEYS + SIM_KEYS + FEATURE_KEYS
        bad = [k for k in (self.model_extra or {}) if k not in keys]
        if bad:
            raise ValueError(f"pools[{self.name}].{bad[0]} unknown; allowed: name, replicas, {', '.join(keys)}")
        return self

    def options(self) -> dict:
        return dict(self.model_extra or {})

    def deploy_kwargs(self) -> dict:
        """make_deployment's keywords; the feature keys join ``engine_options`` (one key given both ways with
        two values is an error)."""
        opts = self.options()
        out = {k: v for k, v in opts.items() if k in DEPLOY_KEYS}
        features = {k: v for k, v in opts.items() if k in FEATURE_KEYS}
        if features:
            given = dict(out.get("engine_options") or {})
            for k, v in features.items():
                if k in given and given[k] != v:
                    raise ValueError(f"pools[{self.name}].{k}={v!r}: engine_options.{k}={given[k]!r} differs; "
                                     f"allowed: one of the two")
            out["engine_options"] = {**given, **features}
        return out

    def sim_kwargs(self) -> dict:
        return {k: v for k, v in self.options().items() if k in SIM_KEYS}


class FleetSpec(_M):
    traffic: Traffic
    pools: list[Pool] = Field(min_length=1)
    router: Literal["round-robin", "least-outstanding", "least-kv", "power-of-two", "prefix-affinity",
                    "session-affinity"] = "round-robin"
    slo: Slo = Slo()
    autoscale: Autoscale | None = None
    sessions: Sessions | None = None
    seed: int = 0
    router_refresh: float | None = None  # Δ of the in-step windows (s); None: data/fleet_sync.yaml

    @field_validator("router_refresh", mode="before")
    @classmethod
    def _refresh(cls, v):
        if v is None:
            return None
        return seconds(v, "router_refresh")  # 0: the state at each arrival instant (run.py)

    @model_validator(mode="after")
    def _names(self):
        names = [p.name for p in self.pools]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ValueError(f"pools: name {dup!r} given twice; allowed: distinct names")
        if self.sessions is not None and self.traffic.trace is not None:
            raise ValueError("sessions: only with traffic.rate (a trace carries its own sessions)")
        return self


def _one_line(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"] if p not in ("function-after", "function-before"))
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return f"{loc} unknown key"
    if err["type"] == "literal_error":
        return f"{loc}={err.get('input')!r} unknown; {msg.replace('Input should be', 'allowed:')}"
    if msg.startswith(loc.split(".")[-1] + "=") or msg.startswith(loc) or "=" in msg.split(" ")[0]:
        return msg
    return f"{loc}={err.get('input')!r}: {msg}" if loc else msg


def parse(data: dict, where: str = "fleet file") -> FleetSpec:
    """A FleetSpec of a parsed mapping; ValueError (one line naming the key) when it is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: must be a mapping with traffic: and pools:")
    try:
        return FleetSpec.model_validate(data)
    except ValidationError as e:
        raise ValueError(f"{where}: {_one_line(e)}") from None


def read(path: str | Path) -> FleetSpec:
    """Read and check a fleet YAML file; a relative trace path is taken from the file's folder."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"file={str(p)!r} is not a file; allowed: a fleet YAML file")
    try:
        data = load_yaml(p.read_text("utf-8"))
    except Exception as e:  # the YAML parser's own message, first line
        raise ValueError(f"file={str(p)!r}: not YAML: {str(e).splitlines()[0]}") from None
    spec = parse(data, str(p))
    t = spec.traffic
    if t.trace is not None and not t.trace.is_absolute():
        spec = spec.model_copy(update={"traffic": t.model_copy(update={"trace": p.parent / t.trace})})
    return spec
