"""Host work per engine family (vLLM, SGLang, TensorRT-LLM) fitted on public rows, cross-validated
leave-one-source-out.

    python benchmarks/fit_family_host.py vllm [--scenarios static_batch,max_throughput] [--cv source]
    python benchmarks/fit_family_host.py sglang --scenarios serving --metrics tpot_ms,itl_ms,output_tok_s_per_gpu
    python benchmarks/fit_family_host.py trtllm --cv gpu      # one source only: leave-one-GPU-out instead
    python benchmarks/fit_family_host.py sglang --scenarios serving --metrics tpot_ms,itl_ms --grid 0.001,0.003,0.008

``--grid S1,S2,..``: no fit; the rows priced with the family's ``step_s`` at each value (``seq_s`` at its
prior), MAPE and signed median per (source, engine version): whether one family term can serve them all.

``family`` is an engine name (every version of it) or one profile key (``sglang@0.4.3``); rows whose
profile has its own calibration entry (``trtllm@0.17``) price with that entry, not the family's, and are
left out (said in the output). Cross-validation leaves one ``--cv`` group out (source, gpu or model); a
family whose rows come from one source cannot be cross-validated by source: the script says so and, with
``--cv source``, stops before fitting (pass ``--cv gpu`` or ``--cv model`` for that figure instead).

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
from inferbound.calibration.fit import (calibration_from, cross_validate, family_host_parameters, fit,  # noqa: E402
                                        in_family)
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


def grid(rows, params, steps, base) -> dict:
    """{step_s: {"source engine_version": stats}} with the family's other host term at its prior."""
    out = {}
    for step in steps:
        cal = calibration_from(params, [step] + [p.prior for p in params[1:]], base)
        groups: dict = {}
        for r, e in zip(rows, errors(rows, cal)):
            groups.setdefault(f"{r.source} {r.engine_version or ''}".strip(), []).append(e)
        out[str(step)] = {k: stats(v) for k, v in sorted(groups.items())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("family")
    ap.add_argument("--csv", default=str(ROOT / "benchmarks" / "data" / "measured_public.csv"))
    ap.add_argument("--scenarios", default="static_batch,max_throughput")
    ap.add_argument("--calibration", default="default")
    ap.add_argument("--max-evals", type=int, default=60)
    ap.add_argument("--cv", default="source", choices=("source", "gpu", "model"))
    ap.add_argument("--metrics", default="", help="comma-separated metrics to fit on (default: all)")
    ap.add_argument("--grid", default="", help="comma-separated step_s values to price the rows at (no fit)")
    ap.add_argument("--held-out-serving", action="store_true", help="also score the family's serving rows")
    a = ap.parse_args()
    base = resolve(a.calibration)
    all_rows, _ = read_csv(a.csv)
    feats = row_features(all_rows)
    fam = [(r, f) for r, f in zip(all_rows, feats) if f is not None and in_family(f["engine"], a.family)]
    own = sorted({f["engine"] for _, f in fam if f["engine"] in base.engines and f["engine"] != a.family}) if base else []
    fam = [(r, f) for r, f in fam if f["engine"] not in own]
    wanted, metrics = set(a.scenarios.split(",")), set(filter(None, a.metrics.split(",")))
    rows = [r for r, _ in fam if r.scenario in wanted and (not metrics or r.metric in metrics)]
    sources = sorted({r.source for r in rows})
    params = family_host_parameters(rows, a.family)
    if a.grid and params:
        print(json.dumps(grid(rows, params, [float(x) for x in a.grid.split(",")], base), indent=1))
        return
    if not params:
        sys.exit(f"family={a.family!r}: {len(rows)} rows of scenarios {sorted(wanted)}, fewer than the fit needs; nothing fitted")
    if a.cv == "source" and len(sources) < 2:
        sys.exit(f"family={a.family!r}: all {len(rows)} rows come from one source ({sources[0]}): "
                 "leave-one-source-out is impossible; nothing fitted (--cv gpu or --cv model gives that figure)")
    cal, rep = fit(rows, max_evals=a.max_evals, params=params, base=base)
    out = {"family": a.family, "rows": len(rows), "sources": sources, "left_out_own_entry": own, "cv": a.cv,
           "fit": rep["parameters"], "prior_in_sample": stats(errors(rows, base)),
           "fitted_in_sample": stats(errors(rows, cal))}
    start = {n: v["fitted"] for n, v in rep["parameters"].items()}
    oof = cross_validate(rows, a.cv, max_evals=a.max_evals, start=start,
                         params=lambda tr: family_host_parameters(tr, a.family), base=base)
    prior = errors(rows, base)
    out[f"leave_one_{a.cv}_out"] = stats(oof)
    out[f"by_{a.cv}"] = {g: {"prior": stats([e for r, e in zip(rows, prior) if getattr(r, a.cv) == g]),
                             "held_out": stats([e for r, e in zip(rows, oof) if getattr(r, a.cv) == g])}
                         for g in sorted({getattr(r, a.cv) for r in rows})}
    if a.held_out_serving:
        serving = [r for r, _ in fam if r.scenario == "serving"]
        out["serving_prior"] = stats(errors(serving, base))
        out["serving_fitted"] = stats(errors(serving, cal))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
