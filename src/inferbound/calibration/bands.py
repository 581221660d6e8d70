"""Error bands, offline: computed from cross-validated residuals and written into a calibration's ``bands``
(``inferbound calibrate``, ``benchmarks/accuracy_report.py --write-bands``). The run-time lookup (the band
of one prediction, widened where it extrapolates) is deploy/bands.py.

Base band (``base_bands``): the Q = 0.8 quantile of |out-of-fold relative error| per scenario and metric
kind (throughput, latency), taken for the leave-one-GPU-out and the leave-one-source-out fits apart and
the larger kept, so it holds the truth on at least 80 % of the out-of-fold rows of either scheme; keys
``<scenario>/<kind>``, ``*/<kind>``, ``*`` (groups of at least MIN_ROWS).

Widening (``extrapolation``), the factor deploy/bands.py multiplies in for each way a prediction leaves
the fit's data:

- ``gpu``: the GPU had no row in the fit: q80(|e| leave-one-GPU-out) / q80(|e| leave-one-source-out);
- ``prior_curves``: the GPU's kernel curves are priors derived from a measured GPU of its vendor
  (kernels.yaml ``priors``): q80 of the leave-one-GPU-out errors on such GPUs over the others' (GH200 in
  the shared rows), where at least MIN_ROWS exist, else ASSUMED;
- ``cross_vendor``: priors from another vendor's template, or no curves at all (AMD, Gaudi, TPU,
  Trainium): ASSUMED (the kernel fit's across-architecture leave-one-GPU-out is 20-55 % against
  12-13 % within an architecture, docs/kernels.md);
- ``engine``: the engine profile had no row in the fit: q80 of the leave-one-source-out errors of
  sources whose engine no other source has, over the rest's, where at least MIN_ROWS exist, else ASSUMED;
- ``dtype``, ``family``: a compute format or model family absent from the fit: ASSUMED.

Every factor is >= 1. ``coverage`` lists what the fit saw (GPUs, engines, formats, families).
"""
from __future__ import annotations

import numpy as np

from ..deploy.bands import curve_source, kind_of
from ..validation.predict import deployment_for

Q = 0.8
MIN_ROWS = 5
#: widening where no out-of-fold data measures it: [assumption] (module docstring)
ASSUMED = {"prior_curves": 1.3, "cross_vendor": 2.0, "engine": 1.3, "dtype": 1.4, "family": 1.25}


def _kind(row) -> str:
    return kind_of(row.metric)


def _q(values) -> float:
    return float(np.quantile(np.abs(np.asarray(values, dtype=float)), Q))


def base_bands(rows, rel_errors, q: float = Q, scenario_keys_only: bool = True) -> dict:
    """{"<scenario>/<kind>": quantile q of |error|} (and ``*/<kind>``, ``*`` unless scenario_keys_only)."""
    groups: dict[str, list[float]] = {}
    for r, e in zip(rows, rel_errors):
        if not np.isfinite(e):
            continue
        keys = [f"{r.scenario}/{_kind(r)}"] + ([] if scenario_keys_only else [f"*/{_kind(r)}", "*"])
        for key in keys:
            groups.setdefault(key, []).append(abs(float(e)))
    return {k: round(float(np.quantile(v, q)), 4) for k, v in sorted(groups.items()) if len(v) >= MIN_ROWS}


def _ratio(num, den) -> float | None:
    num, den = [x for x in num if np.isfinite(x)], [x for x in den if np.isfinite(x)]
    if len(num) < MIN_ROWS or len(den) < MIN_ROWS or _q(den) <= 0:
        return None
    return max(1.0, _q(num) / _q(den))


def row_features(rows) -> list[dict | None]:
    """Per row: engine profile, GPU, compute and weight formats, model family, MoE, TP, batch > 1 and source of
    its deployment at the catalog priors (None: the row names no deployment); calibration/fit.py fits on them."""
    out, cache = [], {}
    for r in rows:
        if r.setup_key not in cache:
            try:
                d = deployment_for(r, calibration="none")
                cache[r.setup_key] = {"engine": d.engine, "gpu": d.gpu.id, "dtype": d.compute_dtype,
                                      "weight": d.dtypes.weight, "family": d.model.family, "moe": d.model.moe is not None,
                                      "tp": d.par.tp * d.par.attention_groups, "many": (r.batch_size or 2) > 1,
                                      "source": r.source}
            except (ValueError, KeyError):
                cache[r.setup_key] = None
        out.append(cache[r.setup_key])
    return out


#: what the widening compares against the fit's coverage
SETUP_KEYS = ("engine", "gpu", "dtype", "weight", "family", "source")


def row_setups(rows) -> list[dict | None]:
    """Per row, the ``SETUP_KEYS`` of :func:`row_features` (None where the row names no deployment)."""
    return [None if f is None else {k: f[k] for k in SETUP_KEYS} for f in row_features(rows)]


def bands_from(rows, oof: dict, fitted) -> dict:
    """The calibration's ``bands`` from out-of-fold errors ``oof`` ({'gpu': errors, 'source': errors, ...},
    arrays aligned with ``rows``) and the fitted predictions (in-sample, used where no CV ran)."""
    schemes = [list(oof[k]) for k in ("gpu", "source") if k in oof]
    if not schemes:  # no cross-validation: in-sample errors (narrower than they should be; said in 'basis')
        schemes = [[p.error if p.covered else np.nan for p in fitted]]
    out: dict = {}
    for errs in schemes:
        for k, v in base_bands(rows, errs, scenario_keys_only=False).items():
            out[k] = max(out.get(k, 0.0), v)
    feats = row_setups(rows)
    ext = dict(ASSUMED)
    e_g, e_s = oof.get("gpu"), oof.get("source")
    if e_g is not None and e_s is not None:
        r = _ratio(e_g, e_s)
        ext["gpu"] = r if r is not None else ASSUMED["engine"]
        prior = [bool(f and (curve_source(f["gpu"]) is None or curve_source(f["gpu"])[0] == "prior")) for f in feats]
        r = _ratio([e for e, p in zip(e_g, prior) if p], [e for e, p in zip(e_g, prior) if not p])
        if r is not None:
            ext["prior_curves"] = r
    if e_s is not None:
        engines_by_source: dict = {}
        for f in feats:
            if f:
                engines_by_source.setdefault(f["engine"], set()).add(f["source"])
        alone = [bool(f and len(engines_by_source[f["engine"]]) == 1) for f in feats]
        r = _ratio([e for e, a in zip(e_s, alone) if a], [e for e, a in zip(e_s, alone) if not a])
        if r is not None:
            ext["engine"] = r
    ext.setdefault("gpu", ASSUMED["engine"])
    out["extrapolation"] = {k: round(float(v), 4) for k, v in sorted(ext.items())}
    ok = [f for f in feats if f]
    out["coverage"] = {"gpus": sorted({f["gpu"] for f in ok}), "engines": sorted({f["engine"] for f in ok}),
                       "dtypes": sorted({f["dtype"] for f in ok} | {f["weight"] for f in ok}),
                       "families": sorted({f["family"] for f in ok})}
    out["basis"] = (f"q{Q:.0%} of |out-of-fold error| ({', '.join(k for k in ('gpu', 'source') if k in oof)} folds)"
                    if any(k in oof for k in ("gpu", "source")) else "in-sample errors (no cross-validation)")
    return out
