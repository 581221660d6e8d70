"""Fit a few physical residual factors to measured rows by least squares on log error; cross-validate.

With the kernel curves carrying the per-shape efficiencies (kernel_pricing.py), what the measured rows
still inform is what no kernel table measures. The unknowns θ (log of each factor):

- per engine profile with at least MIN_ROWS_PER_ENGINE rows (the rows' ``framework``): its host work per
  step ``step_s`` and per sequence ``seq_s`` (the latter only where some row runs more than one
  sequence), and the speed of its kernels relative to the measured curves per kernel class (``gemm``,
  ``attention``; ``moe`` where MoE rows exist): the curves are TensorRT-LLM 1.3 / vLLM 0.24 / SGLang
  0.5 kernels, and an engine version's own kernels (TensorRT-LLM 0.9-0.17's) may run slower or faster;
- globally: a multiplier of the collective curves (``kernels.collective``, where some row runs TP > 1).

Not fitted: per-GPU efficiencies (the curves have them per GPU; a per-GPU scalar absorbs whatever the
model misses and does not transfer). Minimized:

    Σ_rows (log(pred_i(θ)/measured_i))² + Σ_j ((θ_j − θ_j⁰)/σ_j)²

with θ⁰ the priors (engines.yaml ``pricing.host``; 1 for the factors) and σ_j = PRIOR_SIGMA of the
parameter's kind (factors near 1 are held tighter than host costs, which no table measures); scipy's
trust-region least squares within PARAM_BOUNDS. A candidate θ is a :class:`Calibration` the engine
prices every row with, unchanged. Error bands: bands.py.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from ..pricing.kernel_pricing import host_cost
from ..validation.dataset import Row
from ..validation.predict import deployment_for, predict_rows
from ..deploy.calibration import Calibration
from .bands import base_bands, row_features

#: log-space prior widths by kind: a kernel-class factor 1.35x off costs as much as one row 2x off
PRIOR_SIGMA = {"kernel": 0.3, "step_s": 1.0, "seq_s": 1.5}
MIN_ROWS_PER_ENGINE = 8
PARAM_BOUNDS = {"kernel": (0.3, 4.0), "step_s": (1e-5, 0.02), "seq_s": (1e-8, 2e-4)}
SEQ_PRIOR_S = 2.0e-6    # per-sequence prior where engines.yaml gives none: [rule of thumb] a few us of
                        # sampling/bookkeeping per sequence per step (the fit moves it)
KERNEL_CLASSES = ("gemm", "attention", "moe")


@dataclass(frozen=True)
class Param:
    scope: str   # engine profile key (name@version) or "kernels" (global)
    field: str   # step_s, seq_s, gemm, attention, moe, collective
    prior: float

    @property
    def kind(self) -> str:
        return self.field if self.field in ("step_s", "seq_s") else "kernel"

    @property
    def bounds(self):
        return PARAM_BOUNDS[self.kind]

    @property
    def sigma(self) -> float:
        return PRIOR_SIGMA[self.kind]

    @property
    def name(self) -> str:
        return f"{'engines.' + self.scope if self.scope != 'kernels' else 'kernels'}.{self.field}"


def parameters(rows: list[Row]) -> list[Param]:
    """The unknowns the rows can inform (module docstring), with their priors."""
    feats = [f for f in row_features(rows) if f is not None]
    by_engine = Counter(f["engine"] for f in feats)
    params: list[Param] = []
    for key, n in sorted(by_engine.items()):
        if n < MIN_ROWS_PER_ENGINE:
            continue
        mine = [f for f in feats if f["engine"] == key]
        step_s, seq_s = host_cost(key)
        params.append(Param(key, "step_s", step_s))
        if any(f["many"] for f in mine):
            params.append(Param(key, "seq_s", seq_s if seq_s > 0 else SEQ_PRIOR_S))
        params.append(Param(key, "gemm", 1.0))
        if any(f["many"] for f in mine):
            params.append(Param(key, "attention", 1.0))
        if sum(f["moe"] for f in mine) >= MIN_ROWS_PER_ENGINE:
            params.append(Param(key, "moe", 1.0))
    if sum(f["tp"] > 1 for f in feats) >= MIN_ROWS_PER_ENGINE:
        params.append(Param("kernels", "collective", 1.0))
    return params


def family_host_parameters(rows: list[Row], family: str) -> list[Param]:
    """Host work of one engine family (``vllm``, ``sglang``: the part of the profile key before ``@``),
    shared by every version of it the rows run: ``step_s``, and ``seq_s`` where some row runs more than one
    sequence; priors engines.yaml ``pricing.host`` of the family. The fitted entry is keyed by the family,
    which kernel_pricing.host_cost falls back to for any version without its own entry. ``family`` may also
    be one profile key (``sglang@0.4.3``): then only that version's rows count and the entry is keyed by it."""
    mine = [f for f in row_features(rows) if f is not None and in_family(f["engine"], family)]
    if len(mine) < MIN_ROWS_PER_ENGINE:  # too few to inform it (as parameters()): the family keeps its priors
        return []
    step_s, seq_s = host_cost(family)
    params = [Param(family, "step_s", step_s)]
    if any(f["many"] for f in mine):
        params.append(Param(family, "seq_s", seq_s if seq_s > 0 else SEQ_PRIOR_S))
    return params


def in_family(engine_key: str, family: str) -> bool:
    """``engine_key`` (``name@version``) is ``family`` itself (a profile key) or one of its versions (a name)."""
    return engine_key == family if "@" in family else engine_key.split("@", 1)[0] == family


def calibration_from(params: list[Param], values, base: Calibration | None = None) -> Calibration:
    """The calibration of fitted ``values``, layered over a copy of ``base`` (its other factors kept)."""
    cal = Calibration(source="fit")
    if base is not None:
        cal = Calibration(dict(base.global_factors), dict(base.gpus), {}, {}, "fit", dict(base.serving),
                          dict(base.kernel_factors), {k: dict(v) for k, v in base.engines.items()})
    for p, v in zip(params, values):
        if p.scope == "kernels":
            cal.kernel_factors[p.field] = float(v)
        else:
            cal.engines.setdefault(p.scope, {})[p.field] = float(v)
    for key, e in cal.engines.items():  # host costs not fitted keep their prior; the pricer needs both
        step_s, seq_s = host_cost(key)
        e.setdefault("step_s", step_s)
        e.setdefault("seq_s", seq_s)
    return cal


def log_errors(rows: list[Row], cal: Calibration | None) -> np.ndarray:
    """log(pred/measured) per row; rows not covered count as 0 (they carry no information)."""
    preds = predict_rows(rows, calibration=cal if cal is not None else "none")
    return np.array([math.log(p.predicted / p.row.value) if p.covered else 0.0 for p in preds])


def fit(rows: list[Row], max_evals: int = 400, progress=None, prior_sigma: float | None | str = "default",
        params: list[Param] | None = None, start: dict | None = None,
        base: Calibration | None = None) -> tuple[Calibration, dict]:
    """Least-squares fit (see module docstring); returns the calibration and a fit report.

    ``prior_sigma=None`` drops the prior term (pure least squares); ``params`` restricts the unknowns;
    ``start`` ({param name: value}, e.g. a previous fit) is the first guess; the prior stays the data's;
    ``base``: a calibration whose other factors stay fixed under the fitted ones (calibration_from).
    """
    params = params if params is not None else parameters(rows)
    if not params:
        return calibration_from([], [], base), {"parameters": {}, "rows": len(rows), "evaluations": 0, "cost": 0.0,
                                           "status": 0}
    theta0 = np.log([p.prior for p in params])
    lo = np.log([p.bounds[0] for p in params])
    hi = np.log([p.bounds[1] for p in params])
    theta0 = np.clip(theta0, lo + 1e-9, hi - 1e-9)
    first = np.clip(np.log([(start or {}).get(p.name, p.prior) for p in params]), lo + 1e-9, hi - 1e-9)
    sigma = None if prior_sigma is None else np.array([p.sigma for p in params])
    calls = [0]

    def residuals(theta):
        calls[0] += 1
        if progress:
            progress(calls[0], max_evals)
        cal = calibration_from(params, np.exp(theta), base)
        prior = (theta - theta0) / sigma if sigma is not None else np.zeros(0)
        return np.concatenate([log_errors(rows, cal), prior])

    sol = least_squares(residuals, first, bounds=(lo, hi), x_scale=1.0, diff_step=1e-3, max_nfev=max_evals,
                        method="trf")
    cal = calibration_from(params, np.exp(sol.x), base)
    report = {"parameters": {p.name: {"prior": p.prior, "fitted": float(np.exp(x))} for p, x in zip(params, sol.x)},
              "rows": len(rows), "evaluations": calls[0], "cost": float(sol.cost), "status": int(sol.status)}
    return cal, report


CV_KEYS = ("gpu", "source", "model")


def folds_by(rows: list[Row], key: str) -> dict[str, list[int]]:
    """Indices of the rows of each distinct value of ``key`` (gpu, source, model): leave-one-group-out folds."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[getattr(r, key)].append(i)
    return dict(groups)


def cross_validate(rows: list[Row], key: str, max_evals: int = 200, progress=None,
                   start: dict | None = None, params=None, base: Calibration | None = None) -> np.ndarray:
    """Out-of-fold relative errors (pred/measured − 1) per row, leaving out one ``key`` group at a time.

    Each fold is fitted afresh on the other groups (warm-started from ``start``, e.g. the full fit); an
    engine left out with its only source keeps its priors, as a new engine would. ``params``: a function
    of the training rows giving the unknowns (default :func:`parameters`); ``base``: as in :func:`fit`."""
    if key not in CV_KEYS:
        raise ValueError(f"cv key={key!r} unknown; allowed: {', '.join(CV_KEYS)}")
    out = np.full(len(rows), np.nan)
    folds = folds_by(rows, key)
    for k, (name, test_idx) in enumerate(sorted(folds.items())):
        held = set(test_idx)
        train = [r for i, r in enumerate(rows) if i not in held]
        if not train:  # one group only: nothing to fit on without it; its rows stay uncovered (NaN)
            continue
        cal, _ = fit(train, max_evals=max_evals, start=start, params=None if params is None else params(train),
                     base=base)
        preds = predict_rows([rows[i] for i in test_idx], calibration=cal)
        for i, p in zip(test_idx, preds):
            out[i] = p.error if p.covered else np.nan
        if progress:
            progress(k + 1, len(folds))
    return out


def fit_request_overhead(rows: list[Row], cal: Calibration) -> float:
    """Front-end latency per request (s): the median of measured − predicted TTFT over serving rows
    (predicted without it), floored at 0. One robust scalar: it does not change scheduling."""
    ttft = [r for r in rows if r.scenario == "serving" and r.metric == "ttft_ms"]
    if not ttft:
        return 0.0
    base = Calibration(cal.global_factors, cal.gpus, {}, {}, "fit", {}, dict(cal.kernel_factors), dict(cal.engines))
    gaps = [(p.row.value - p.predicted) / 1e3 for p in predict_rows(ttft, calibration=base) if p.covered]
    return max(0.0, float(np.median(gaps))) if gaps else 0.0


def error_bands(rows: list[Row], rel_errors, bounds, q: float = 0.8) -> dict:
    """Bands of one set of out-of-fold errors (bands.py ``base_bands``); kept for callers of the old API."""
    return base_bands(rows, np.asarray(rel_errors, dtype=float), q)
