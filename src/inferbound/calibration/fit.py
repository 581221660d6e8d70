"""Fit efficiency factors to measured rows by least squares on log error; cross-validate; error bands.

Unknowns θ (log of each factor): per GPU with enough rows, the compute fraction of each compute dtype
in the data and the HBM fraction; globally (the serving stack, shared by all GPUs) the KV-read HBM
fraction, the per-step and per-kernel overheads and the collective efficiency. Minimized:

    Σ_rows (log(pred_i(θ)/measured_i))² + Σ_j ((θ_j − θ_j⁰)/σ)²

where θ⁰ are the catalog priors and σ = PRIOR_SIGMA keeps factors with little data near them
(scipy.optimize.least_squares, trust-region reflective, bounds from PARAM_BOUNDS). Predictions reuse
the engine unchanged: a candidate θ is a :class:`Calibration` applied to each row's GPU.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from ..hardware import get_gpu, load_catalog
from ..validation.dataset import LATENCY_METRICS, Row
from ..validation.predict import deployment_for, predict_rows
from .factors import Calibration

PRIOR_SIGMA = 0.7          # log-space prior width: a factor of ~2 moves cost as much as one row 2x off
MIN_ROWS_PER_GPU = 8       # fewer rows: the GPU keeps the global/prior factors
PARAM_BOUNDS = {"compute": (0.05, 1.0), "memory": (0.2, 1.0), "kv_memory": (0.05, 1.0),
                "step_overhead_s": (1e-6, 0.05), "kernel_overhead_s": (1e-8, 1e-4), "collective": (0.05, 1.0)}
GLOBAL_FIELDS = ("kv_memory", "step_overhead_s", "kernel_overhead_s", "collective")


@dataclass(frozen=True)
class Param:
    gpu: str | None  # None = global
    field: str       # Efficiency field, or compute_by_dtype.<dtype>
    prior: float

    @property
    def bounds(self):
        return PARAM_BOUNDS["compute" if self.field.startswith("compute") else self.field]

    @property
    def name(self) -> str:
        return f"{self.gpu or 'global'}.{self.field}"


def compute_dtype_of(row: Row) -> str:
    return deployment_for(row, calibration="none").compute_dtype


def parameters(rows: list[Row]) -> list[Param]:
    """The unknowns the rows can inform, with their catalog priors."""
    known = set(load_catalog())
    by_gpu = Counter(r.gpu for r in rows if r.gpu in known)  # rows of unknown GPUs are not covered anyway
    params: list[Param] = []
    ref = get_gpu(next(iter(by_gpu), "h100_sxm")).efficiency  # global priors: the efficiency.yaml defaults
    for f in GLOBAL_FIELDS:
        params.append(Param(None, f, float(getattr(ref, "kv_memory_fraction" if f == "kv_memory" else f))))
    for gpu_id, n in sorted(by_gpu.items()):
        if n < MIN_ROWS_PER_GPU:
            continue
        eff = get_gpu(gpu_id).efficiency
        dtypes = sorted({compute_dtype_of(r) for r in rows if r.gpu == gpu_id})
        for dt in dtypes:
            field = "compute" if dt in ("bf16", "fp16", "fp32") else f"compute_by_dtype.{dt}"
            if all(p.field != field or p.gpu != gpu_id for p in params):
                params.append(Param(gpu_id, field, eff.compute_for(dt)))
        params.append(Param(gpu_id, "memory", eff.memory))
    return params


def calibration_from(params: list[Param], values) -> Calibration:
    cal = Calibration(source="fit")
    for p, v in zip(params, values):
        v = float(v)
        if p.gpu is None:
            cal.global_factors[p.field] = v
        elif p.field.startswith("compute_by_dtype."):
            cal.gpus.setdefault(p.gpu, {}).setdefault("compute_by_dtype", {})[p.field.split(".", 1)[1]] = v
        else:
            cal.gpus.setdefault(p.gpu, {})[p.field] = v
    return cal


def log_errors(rows: list[Row], cal: Calibration | None) -> np.ndarray:
    """log(pred/measured) per row; rows not covered count as 0 (they carry no information)."""
    preds = predict_rows(rows, calibration=cal if cal is not None else "none")
    return np.array([math.log(p.predicted / p.row.value) if p.covered else 0.0 for p in preds])


def fit(rows: list[Row], max_evals: int = 400, progress=None, prior_sigma: float | None = PRIOR_SIGMA,
        params: list[Param] | None = None, start: dict | None = None) -> tuple[Calibration, dict]:
    """Least-squares fit (see module docstring); returns the calibration and a fit report.

    ``prior_sigma=None`` drops the prior term (pure least squares); ``params`` restricts the unknowns;
    ``start`` ({param name: value}, e.g. a previous fit) is the first guess — the prior stays the catalog's.
    """
    params = params if params is not None else parameters(rows)
    theta0 = np.log([p.prior for p in params])
    lo = np.log([p.bounds[0] for p in params])
    hi = np.log([p.bounds[1] for p in params])
    theta0 = np.clip(theta0, lo + 1e-9, hi - 1e-9)
    first = np.clip(np.log([(start or {}).get(p.name, p.prior) for p in params]), lo + 1e-9, hi - 1e-9)
    calls = [0]

    def residuals(theta):
        calls[0] += 1
        if progress:
            progress(calls[0], max_evals)
        cal = calibration_from(params, np.exp(theta))
        prior = (theta - theta0) / prior_sigma if prior_sigma else np.zeros(0)
        return np.concatenate([log_errors(rows, cal), prior])

    sol = least_squares(residuals, first, bounds=(lo, hi), x_scale=1.0, diff_step=1e-3, max_nfev=max_evals,
                        method="trf")
    cal = calibration_from(params, np.exp(sol.x))
    report = {"parameters": {p.name: {"prior": p.prior, "fitted": float(np.exp(x))} for p, x in zip(params, sol.x)},
              "rows": len(rows), "evaluations": calls[0], "cost": float(sol.cost), "status": int(sol.status)}
    return cal, report


def folds_by(rows: list[Row], key: str) -> dict[str, list[int]]:
    """Indices of the rows of each distinct value of ``key`` (model, gpu): leave-one-group-out folds."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[getattr(r, key)].append(i)
    return dict(groups)


def cross_validate(rows: list[Row], key: str, max_evals: int = 200, progress=None,
                   start: dict | None = None) -> np.ndarray:
    """Out-of-fold relative errors (pred/measured − 1) per row, leaving out one ``key`` group at a time.

    Each fold is fitted afresh on the other groups (warm-started from ``start``, e.g. the full fit);
    factors of a GPU left out fall back to the priors, as they would for a new GPU."""
    out = np.full(len(rows), np.nan)
    folds = folds_by(rows, key)
    for k, (name, test_idx) in enumerate(sorted(folds.items())):
        held = set(test_idx)
        train = [r for i, r in enumerate(rows) if i not in held]
        if not train:  # one group only: nothing to fit on without it; its rows stay uncovered (NaN)
            continue
        cal, _ = fit(train, max_evals=max_evals, start=start)
        test = [rows[i] for i in test_idx]
        preds = predict_rows(test, calibration=cal)
        for i, p in zip(test_idx, preds):
            out[i] = p.error if p.covered else np.nan
        if progress:
            progress(k + 1, len(folds))
    return out


def error_bands(rows: list[Row], rel_errors: np.ndarray, bounds: list[str | None], q: float = 0.68) -> dict:
    """68th percentile of |error| per scenario/metric-kind/bound (and coarser keys), from out-of-fold errors."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r, e, b in zip(rows, rel_errors, bounds):
        if not np.isfinite(e):
            continue
        kind = "latency" if r.metric in LATENCY_METRICS else "throughput"
        for key in (f"{r.scenario}/{kind}/{b}", f"{r.scenario}/{kind}", f"*/{kind}", "*"):
            groups[key].append(abs(float(e)))
    return {k: round(float(np.quantile(v, q)), 4) for k, v in sorted(groups.items()) if len(v) >= 5}


def fit_request_overhead(rows: list[Row], cal: Calibration) -> float:
    """Front-end latency per request (s): the median of measured − predicted TTFT over serving rows
    (predicted without it), floored at 0. One robust scalar: it does not change scheduling."""
    ttft = [r for r in rows if r.scenario == "serving" and r.metric == "ttft_ms"]
    if not ttft:
        return 0.0
    base = Calibration(cal.global_factors, cal.gpus, {}, {}, "fit")
    gaps = [(p.row.value - p.predicted) / 1e3 for p in predict_rows(ttft, calibration=base) if p.covered]
    return max(0.0, float(np.median(gaps))) if gaps else 0.0
