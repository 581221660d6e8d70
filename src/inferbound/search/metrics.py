"""Every evaluated configuration (layout x concurrency) as flat arrays, and the figures derived from them.

A *unit* is what one layout deploys: a replica (aggregated) or a prefill+decode group
(disaggregated), with ``unit_gpus`` GPUs, ``tok_s`` output tokens/s and ``unit_watts``. With a target
request rate λ the fleet is ``replicas = ⌈λ / (tok_s/O)⌉`` units, else one unit. Per point:

    tpot_ms = 1e3·t           ttft_ms, e2e_ms = ttft + (O − 1)·t       tok_s_per_user = 1/t
    tok_s_per_gpu = tok_s / unit_gpus          requests_per_s = tok_s / O
    tokens_per_joule = tok_s / unit_watts      usd_per_mtok = 1e6 · price·unit_gpus/3600 / tok_s
    gpus = replicas·unit_gpus  watts = replicas·unit_watts  usd_per_hour = price·gpus  (fleet totals)
    gpus_for_rate = gpus (with a target rate)

Budgets (GPUs, $/h, W) bound the fleet totals. ``SENSE`` says whether a figure is better high (+1)
or low (−1); objectives and frontiers use it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

#: SENSE (+1: larger is better; -1: smaller is better) and OBJECTIVES (what search ranks by), defined in
#: base/choices.py so that the option declarations (faces/options.py) list them without importing search
from ..base.choices import OBJECTIVES, SENSE  # noqa: F401  (re-exported)
UNITS = {"tok_s_per_gpu": "tok/s/GPU", "tok_s_per_user": "tok/s/user", "tokens_per_joule": "tok/J",
         "usd_per_mtok": "$/M tok", "gpus_for_rate": "GPUs", "tok_s": "tok/s", "requests_per_s": "req/s",
         "ttft_ms": "ms", "tpot_ms": "ms", "e2e_ms": "ms", "gpus": "GPUs", "watts": "W", "usd_per_hour": "$/h",
         "concurrency": "seqs"}


def check_metric(name: str, field: str) -> str:
    if name not in SENSE:
        raise ValueError(f"{field}={name!r} unknown; allowed: {', '.join(SENSE)}")
    return name


@dataclass
class Points:
    """Flat arrays over every (layout, concurrency); per-layout scalars indexed by ``layout``."""

    layout: np.ndarray  # int: index into the layout lists
    concurrency: np.ndarray  # int: decode batch D
    step_s: np.ndarray
    ttft_s: np.ndarray
    tok_s: np.ndarray  # one unit
    unit_watts: np.ndarray
    unit_gpus: np.ndarray
    prefill_replicas: np.ndarray
    decode_replicas: np.ndarray
    concurrent_seqs: np.ndarray
    prefill_batch: np.ndarray  # disaggregated: prompts per prefill step (0 aggregated)
    price: np.ndarray  # per layout: $/GPU-hour (NaN without a price)
    output_len: float  # mean output tokens per request
    target_rate: float | None = None

    @classmethod
    def concat(cls, per_layout: list, price: np.ndarray, output_len: float, target_rate: float | None):
        """From LayoutPoints (None for a layout that holds no request) in layout order."""
        parts = [(i, p) for i, p in enumerate(per_layout) if p is not None]

        def cat(get, dtype=float):
            return np.concatenate([np.asarray(get(i, p), dtype=dtype) for i, p in parts]) if parts \
                else np.zeros(0, dtype=dtype)
        return cls(layout=cat(lambda i, p: np.full(len(p), i), np.int64),
                   concurrency=cat(lambda i, p: p.decode_batch, np.int64),
                   step_s=cat(lambda i, p: p.step_s), ttft_s=cat(lambda i, p: p.ttft_s),
                   tok_s=cat(lambda i, p: p.tok_s), unit_watts=cat(lambda i, p: p.watts),
                   unit_gpus=cat(lambda i, p: p.gpus, np.int64),
                   prefill_replicas=cat(lambda i, p: p.prefill_replicas, np.int64),
                   decode_replicas=cat(lambda i, p: p.decode_replicas, np.int64),
                   concurrent_seqs=cat(lambda i, p: p.concurrent_seqs, np.int64),
                   prefill_batch=cat(lambda i, p: p.prefill_batch, np.int64),
                   price=np.asarray(price, dtype=float), output_len=output_len, target_rate=target_rate)

    def __len__(self) -> int:
        return int(self.layout.size)

    @cached_property
    def replicas(self) -> np.ndarray:
        if self.target_rate is None:
            return np.ones(len(self), dtype=np.int64)
        return np.ceil(self.target_rate / self.metric("requests_per_s") - 1e-9).astype(np.int64)

    def metric(self, name: str, idx=slice(None)) -> np.ndarray:
        """Figure ``name`` (see module docstring) at points ``idx``."""
        o = self.output_len
        t = self.step_s[idx]
        if name == "concurrency":
            return self.concurrency[idx].astype(float)
        if name == "tpot_ms":
            return t * 1e3
        if name == "ttft_ms":
            return self.ttft_s[idx] * 1e3
        if name == "e2e_ms":
            return (self.ttft_s[idx] + (o - 1) * t) * 1e3
        if name == "tok_s_per_user":
            return 1.0 / t
        if name == "tok_s":
            return self.tok_s[idx]
        if name == "tok_s_per_gpu":
            return self.tok_s[idx] / self.unit_gpus[idx]
        if name == "requests_per_s":
            return self.tok_s[idx] / o
        if name == "tokens_per_joule":
            return self.tok_s[idx] / self.unit_watts[idx]
        if name == "usd_per_mtok":
            return 1e6 * self.price[self.layout[idx]] * self.unit_gpus[idx] / 3600.0 / self.tok_s[idx]
        reps = self.replicas[idx]
        if name in ("gpus", "gpus_for_rate"):
            if name == "gpus_for_rate" and self.target_rate is None:
                raise ValueError("gpus_for_rate needs target_rate (requests/s); e.g. --target-rate 10")
            return (reps * self.unit_gpus[idx]).astype(float)
        if name == "watts":
            return reps * self.unit_watts[idx]
        if name == "usd_per_hour":
            return reps * self.unit_gpus[idx] * self.price[self.layout[idx]]
        raise ValueError(f"metric={name!r} unknown; allowed: {', '.join(SENSE)}")


@dataclass(frozen=True)
class Constraint:
    metric: str
    limit: float

    @property
    def label(self) -> str:
        return f"{self.metric}<={self.limit:g}"


def constraints_from(slo_ttft_ms=None, slo_tpot_ms=None, slo_e2e_ms=None, max_dollars_per_hour=None,
                     max_watts=None, max_total_gpus=None) -> list[Constraint]:
    out = []
    for name, metric, v in (("slo_ttft_ms", "ttft_ms", slo_ttft_ms), ("slo_tpot_ms", "tpot_ms", slo_tpot_ms),
                            ("slo_e2e_ms", "e2e_ms", slo_e2e_ms), ("max_dollars_per_hour", "usd_per_hour",
                                                                   max_dollars_per_hour),
                            ("max_watts", "watts", max_watts), ("max_total_gpus", "gpus", max_total_gpus)):
        if v is None:
            continue
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{name}={v} must be a positive number")
        out.append(Constraint(metric, float(v)))
    return out


def violation(points: Points, constraints: list[Constraint]) -> np.ndarray:
    """max over constraints of value/limit per point (<= 1: all met; NaN value, e.g. no price: inf)."""
    worst = np.zeros(len(points))
    for c in constraints:
        with np.errstate(over="ignore"):  # a tiny limit makes a huge ratio: inf is the right answer
            v = points.metric(c.metric) / c.limit
        worst = np.maximum(worst, np.where(np.isnan(v), np.inf, v))
    return worst
