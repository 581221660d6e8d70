"""What binds a step and why, in one line; the error band a prediction carries.

A priced step (``roofline.StepCost``) splits its time into compute, weight reads, KV reads, activation
traffic, communication (by collective kind), launch/step overhead and pipeline bubble. Its bound is
the largest of compute, memory (weights + KV + activations) and communication; the explanation lists
every share of at least 1 %: 'decode at batch 64, context ~2179 on 4x h100_sxm TP4: HBM-bound,
weights 52%, KV 29%, all-reduce 9%'. Every workload (static batch, max throughput, search, serving)
explains its steps with :func:`phase`.

Error bands (``band``, ``band_reasons``, ``error_bands``, re-exported here for the workloads) are
deploy/bands.py's: the calibration's quantile of cross-validated relative errors for the scenario and
metric kind, widened for each way the deployment extrapolates beyond the fit; empty without one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..deploy.bands import band, band_reasons, error_bands  # noqa: F401  (the one band lookup, re-exported)

BOUND_WORDS = {"compute": "compute-bound", "memory": "HBM-bound", "communication": "communication-bound"}
SPLIT_WORDS = {"compute": "matmul/attention compute", "weights": "weights", "kv": "KV", "activations":
               "activations", "overhead": "launch/step overhead", "bubble": "pipeline bubble"}
_add = np.add.reduce
COMM_WORDS = {"all_reduce": "all-reduce", "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
              "all_to_all": "all-to-all", "p2p": "pipeline sends"}


@dataclass
class Phase:
    """One phase's time, bound, split (seconds by kind) and a one-line explanation."""

    time_s: float
    bound: str
    split: dict
    explanation: str
    comm_kinds: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"time_s": self.time_s, "bound": self.bound,
                "split_s": {k: float(v) for k, v in self.split.items()},
                "communication_s": dict(self.comm_kinds), "explanation": self.explanation}


def bound_of(split: dict) -> str:
    """compute, memory or communication: the largest of the three shares."""
    mem = split.get("weights", 0.0) + split.get("kv", 0.0) + split.get("activations", 0.0)
    return str(max(("compute", split.get("compute", 0.0)), ("memory", mem),
                   ("communication", split.get("communication", 0.0)), key=lambda kv: kv[1])[0])


def explain(label: str, bound: str, split: dict, time: float, comm_kinds: dict | None = None) -> str:
    """'<label>: HBM-bound, weights 58%, KV 27%, all-reduce 15%' (shares of the phase time)."""
    items = {SPLIT_WORDS[k]: v for k, v in split.items() if k != "communication" and v > 0}
    items.update({COMM_WORDS.get(k, k): v for k, v in (comm_kinds or {}).items() if v > 0})
    parts = sorted(((v / time, k) for k, v in items.items()), reverse=True)
    shares = ", ".join(f"{k} {f:.0%}" for f, k in parts if f >= 0.01)
    return f"{label}: {BOUND_WORDS[bound]}, {shares}"


def phase(cost, label: str, index=None) -> Phase:
    """The :class:`Phase` of a priced step (its mean over array elements, or element ``index``)."""
    def pick(v):
        if isinstance(v, float):
            return v
        a = np.asarray(v, dtype=float)
        if a.ndim == 0:
            return float(a)
        # the mean as numpy takes it (its pairwise sum over the elements, over their count)
        return float(_add(a, axis=None)) / a.size if index is None else float(a[index])
    split = {k: x for k, x in ((k, pick(v)) for k, v in cost.split.items()) if x > 0}
    kinds = {k: x for k, x in ((k, pick(v)) for k, v in cost.comm_kinds.items()) if x > 0}
    time = pick(cost.time)
    bound = bound_of(split)
    return Phase(time, bound, split, explain(label, bound, split, time, kinds), kinds)
