"""Host work per engine family (vLLM, SGLang) fitted on public rows, cross-validated leave-one-source-out.

    python benchmarks/fit_family_host.py vllm [--scenarios static_batch,max_throughput] [--out fit.yaml]

Fits calibration.fit.family_host_parameters (``step_s``, ``seq_s`` of the family) on the family's rows of
benchmarks/data/measured_public.csv, the shipped calibration's other factors fixed (``--calibration``);
prints in-sample and leave-one-source-out MAPE / median APE / bias against the unfitted priors
(engines.yaml ``pricing.host``), and the held-out serving rows (never fitted on) with and without the fit.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from inferbound.calibration import resolve  # noqa: E402
from inferbound.calibration.bands import row_features  # noqa: E402
from inferbound.calibration.fit import cross_validate, family_host_parameters, fit  # noqa: E402
from inferbound.validation.dataset import read_csv  # noqa: E402
from inferbound.validation.predict import predict_rows  # noqa: E402


def stats(err) -> dict:
    e = np.asarray([x for x in err if x == x], dtype=float)
    if not len(e):
        return {"n": 0}
    return {"n": int(len(e)), "mape": float(np.mean(np.abs(e))), "median_ape": float(np.median(np.abs(e))),
            "bias": float(np.median(e))}


def errors(rows, cal) -> list[float]:
    return [p.error if p.covered else float("nan") for p in predict_rows(rows, calibration=cal)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("family")
    ap.add_argument("--csv", default=str(ROOT / "benchmarks" / "data" / "measured_public.csv"))
    ap.add_argument("--scenarios", default="static_batch,max_throughput")
    ap.add_argument("--calibration", default="default")
    ap.add_argument("--max-evals", type=int, default=60)
    ap.add_argument("--held-out-serving", action="store_true", help="also score the family's serving rows")
    a = ap.parse_args()
    base = resolve(a.calibration)
    all_rows, _ = read_csv(a.csv)
    feats = row_features(all_rows)
    fam = [(r, f) for r, f in zip(all_rows, feats) if f is not None and f["engine"].split("@", 1)[0] == a.family]
    wanted = set(a.scenarios.split(","))
    rows = [r for r, _ in fam if r.scenario in wanted]
    params = family_host_parameters(rows, a.family)
    cal, rep = fit(rows, max_evals=a.max_evals, params=params, base=base)
    out = {"family": a.family, "rows": len(rows), "sources": sorted({r.source for r in rows}),
           "fit": rep["parameters"], "prior_in_sample": stats(errors(rows, base)),
           "fitted_in_sample": stats(errors(rows, cal))}
    start = {n: v["fitted"] for n, v in rep["parameters"].items()}
    oof = cross_validate(rows, "source", max_evals=a.max_evals, start=start,
                         params=lambda tr: family_host_parameters(tr, a.family), base=base)
    out["loso_held_out"] = stats(oof)
    out["loso_by_source"] = {s: {"prior": stats([e for r, e in zip(rows, errors(rows, base)) if r.source == s]),
                                 "held_out": stats([e for r, e in zip(rows, oof) if r.source == s])}
                             for s in out["sources"]}
    if a.held_out_serving:
        serving = [r for r, _ in fam if r.scenario == "serving"]
        out["serving_prior"] = stats(errors(serving, base))
        out["serving_fitted"] = stats(errors(serving, cal))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
