"""The figures of docs/accuracy.md: the issue-11 targets, error tables and two other estimators side by side.

Run:
    .venv/bin/python benchmarks/accuracy_report.py                # targets + tables (~1 min)
    .venv/bin/python benchmarks/accuracy_report.py --cv           # first refresh the cross-validated
                                                                  # residuals (~25 min, 2 cores)
    .venv/bin/python benchmarks/accuracy_report.py --no-baselines # skip llm-analysis / AIConfigurator
    .venv/bin/python benchmarks/accuracy_report.py --issue19-only # only the issue-19 serving targets on
                                                                  # measured_public.csv (fast: one file)

Data: ``../shared/validation/measured.csv`` (the calibration is fitted on its static-batch and
max-throughput rows) and ``benchmarks/data/measured_public.csv`` (never fitted on: scored only).
Cross-validated figures come from ``benchmarks/data/cv_oof.csv``: per fitted row, the relative error
of the fit without that row's GPU (``e_gpu``) and without its source (``e_source``), written by
``--cv`` (calibration.fit.cross_validate, warm-started from the shipped calibration). Bands: the shipped
calibration's (deploy/bands.py); on out-of-fold rows the band the held-out fit would print (GPU
left out: the ``gpu`` widening; source left out: the ``engine`` widening if no other source has the
row's engine). Writes docs/img/accuracy.png and docs/img/accuracy_rows.csv (measured.csv, shipped
calibration).
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from inferbound.calibration import resolve  # noqa: E402
from inferbound.validation import predict_rows, read_csv  # noqa: E402
from inferbound.validation.dataset import LATENCY_METRICS  # noqa: E402
from inferbound.validation.metrics import summarize  # noqa: E402
from inferbound.validation.report import plot, row_bands, row_records, summary, write_rows  # noqa: E402
from serving_targets import format_lines, target_lines  # noqa: E402

SHARED = ROOT.parent / "shared" / "validation" / "measured.csv"
PUBLIC = ROOT / "benchmarks" / "data" / "measured_public.csv"
INFERENCEX = ROOT / "benchmarks" / "data" / "measured_inferencex.csv"
OOF = ROOT / "benchmarks" / "data" / "cv_oof.csv"
FIT_SCENARIOS = ("static_batch", "max_throughput")
MOE = ("mixtral", "qwen3-30b", "qwen3-235b", "deepseek", "maverick", "scout", "gpt-oss")


def pct(x):
    return "–" if x is None else f"{x:.1%}"


def table(groups, keys):
    lines = ["| " + " | ".join(keys) + " | n | MAPE | median APE | within ±25 % | bias |", "|" + "---|" * (len(keys) + 5)]
    for g in groups:
        lines.append("| " + " | ".join(str(g[k]) for k in keys) + f" | {g['n']} | {pct(g['mape'])} | "
                     f"{pct(g['median_ape'])} | {pct(g['within_25'])} | "
                     f"{'–' if g['bias'] is None else format(g['bias'], '+.1%')} |")
    return "\n".join(lines)


def is_moe(model: str) -> bool:
    return any(k in model.lower() for k in MOE)


def thr(preds, sel=lambda p: True):
    return summarize([p.error for p in preds if p.covered and p.row.metric not in LATENCY_METRICS and sel(p)])


def lat(preds, sel=lambda p: True):
    return summarize([p.error for p in preds if p.covered and p.row.metric in LATENCY_METRICS and sel(p)])


def coverage(errors, bands) -> tuple[int, float | None]:
    pairs = [(e, b) for e, b in zip(errors, bands) if e is not None and b is not None and np.isfinite(e)]
    return len(pairs), (sum(abs(e) <= b for e, b in pairs) / len(pairs)) if pairs else None


# ----------------------------------------------------------------- cross-validated residuals
def refresh_oof(cal, rows) -> None:
    from inferbound.calibration.fit import cross_validate
    start = {name: v["fitted"] for name, v in (cal.meta.get("fit", {}).get("parameters") or {}).items()}
    e_g = cross_validate(rows, "gpu", max_evals=60, start=start, progress=lambda d, n: print(f"gpu fold {d}/{n}", flush=True))
    e_s = cross_validate(rows, "source", max_evals=60, start=start,
                         progress=lambda d, n: print(f"source fold {d}/{n}", flush=True))
    with OOF.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "metric", "e_gpu", "e_source"])
        for r, a, b in zip(rows, e_g, e_s):
            w.writerow([r.case, r.metric, "" if not np.isfinite(a) else f"{a:.6g}", "" if not np.isfinite(b) else f"{b:.6g}"])
    print(f"wrote {OOF}")


def read_oof() -> dict:
    if not OOF.is_file():
        return {}
    with OOF.open() as f:
        return {(r["case"], r["metric"]): (float(r["e_gpu"]) if r["e_gpu"] else None,
                                           float(r["e_source"]) if r["e_source"] else None) for r in csv.DictReader(f)}


def write_bands(cal, fit_rows) -> None:
    """The calibration's bands from the cross-validated residuals of cv_oof.csv (calibration/bands.py
    ``bands_from``, as `inferbound calibrate` computes them); the serving keys (in-sample, one fitted
    scalar) are kept. Writes the packaged data/calibration.yaml."""
    from inferbound.calibration.bands import bands_from
    oof = read_oof()
    missing = [r.case for r in fit_rows if (r.case, r.metric) not in oof]
    if missing:
        raise SystemExit(f"cv_oof.csv lacks {len(missing)} fitted rows (e.g. {missing[0]}): run --cv first")
    e_g = np.array([np.nan if oof[(r.case, r.metric)][0] is None else oof[(r.case, r.metric)][0] for r in fit_rows])
    e_s = np.array([np.nan if oof[(r.case, r.metric)][1] is None else oof[(r.case, r.metric)][1] for r in fit_rows])
    serving = {k: v for k, v in cal.bands.items() if k.startswith("serving/")}
    cal.bands = {**bands_from(fit_rows, {"gpu": e_g, "source": e_s}, []), **serving}
    out = ROOT / "src" / "inferbound" / "data" / "calibration.yaml"
    cal.save(out)
    print(f"wrote the bands of {out.name} from {OOF.name}")


def oof_bands(cal, preds, fitted_bands):
    """Bands the held-out fits would print: the shipped band of the row, divided by the widening that no
    longer applies... i.e. (base band) x gpu widening for GPU folds, x engine widening for source folds
    whose engine no other source has."""
    ext = (cal.bands or {}).get("extrapolation") or {}
    engines_by_source: dict = {}
    deps = {}
    from inferbound.validation.predict import deployment_for
    for p in preds:
        if p.row.setup_key not in deps:
            try:
                deps[p.row.setup_key] = deployment_for(p.row, calibration=cal).engine
            except (ValueError, KeyError):
                deps[p.row.setup_key] = None
        engines_by_source.setdefault(deps[p.row.setup_key], set()).add(p.row.source)
    g_b, s_b = [], []
    for p in preds:
        kind = "latency" if p.row.metric in LATENCY_METRICS else "throughput"
        base = cal.band(p.row.scenario, kind, p.bound)
        alone = len(engines_by_source.get(deps[p.row.setup_key], ())) == 1
        g_b.append(None if base is None else base * ext.get("gpu", 1.0))
        s_b.append(None if base is None else base * (ext.get("engine", 1.0) if alone else 1.0))
    return g_b, s_b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default=str(SHARED))
    ap.add_argument("--public", default=str(PUBLIC))
    ap.add_argument("--inferencex", default=str(INFERENCEX),
                    help="InferenceX's closed-loop sweeps (benchmarks/inferencex_import.py), scored like the public file")
    ap.add_argument("--calibration", default="default")
    ap.add_argument("--cv", action="store_true", help="recompute the cross-validated residuals (slow)")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--issue19-only", action="store_true",
                    help="print only the issue-19 target lines (serving_targets.py) on the public file, then stop")
    ap.add_argument("--write-bands", action="store_true",
                    help="recompute the packaged calibration's bands from cv_oof.csv (what `inferbound calibrate` "
                         "does after its own cross-validation) and write them to data/calibration.yaml")
    a = ap.parse_args()
    cal = resolve(a.calibration)
    if a.issue19_only:
        pub_rows, pub_bad = read_csv(a.public)
        pub = predict_rows(pub_rows, calibration=cal if cal is not None else "none")
        print_issue19(pub, row_bands(pub, cal), Path(a.public).name, len(pub_bad))
        return
    rows, bad = read_csv(a.csv)
    fit_rows = [r for r in rows if r.scenario in FIT_SCENARIOS]
    if a.cv:
        refresh_oof(cal, fit_rows)
    if a.write_bands:
        write_bands(cal, fit_rows)
    preds = predict_rows(rows, calibration=cal if cal is not None else "none")
    bands = row_bands(preds, cal)
    none = predict_rows(rows, calibration="none")
    s = summary(preds, bad, bands=bands)
    (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
    plot(preds, ROOT / "docs" / "img" / "accuracy.png",
         title=f"predicted vs measured ({'calibration: ' + cal.source if cal else 'no calibration'})")
    write_rows(ROOT / "docs" / "img" / "accuracy_rows.csv", row_records(preds, bad, cal))
    pub_rows, pub_bad = read_csv(a.public) if Path(a.public).is_file() else ([], [])
    pub = predict_rows(pub_rows, calibration=cal if cal is not None else "none")
    pub_none = predict_rows(pub_rows, calibration="none")
    pub_bands = row_bands(pub, cal)

    oof = read_oof()
    fit_preds = [p for p in preds if p.row.scenario in FIT_SCENARIOS]
    e_g = [oof.get((p.row.case, p.row.metric), (None, None))[0] for p in fit_preds]
    e_s = [oof.get((p.row.case, p.row.metric), (None, None))[1] for p in fit_preds]

    def sel_summary(errs, pick):
        return summarize([e for e, p in zip(errs, fit_preds) if e is not None and pick(p)])
    thr_pick = (lambda p: p.row.metric not in LATENCY_METRICS)
    g_thr, s_thr = sel_summary(e_g, thr_pick), sel_summary(e_s, thr_pick)
    moe_oof = sel_summary(e_s, lambda p: thr_pick(p) and is_moe(p.row.model))
    lat_oof = sel_summary(e_s, lambda p: p.row.metric in LATENCY_METRICS)
    fp4 = thr(pub, lambda p: (p.row.weight_dtype or "") == "fp4")
    moe_pub = thr(pub, lambda p: is_moe(p.row.model))
    g_b, s_b = oof_bands(cal, fit_preds, bands) if cal is not None else ([None] * len(fit_preds),) * 2
    n_g, c_g = coverage(e_g, g_b)
    n_s, c_s = coverage(e_s, s_b)
    n_p, c_p = coverage([p.error if p.covered else None for p in pub], pub_bands)

    print(f"# inferbound accuracy ({cal.source if cal else 'no calibration'})\n")
    print(f"{Path(a.csv).name}: {s['rows']} rows, {s['covered']} covered; {Path(a.public).name}: {len(pub_rows) + len(pub_bad)} "
          f"rows, {sum(p.covered for p in pub)} covered (not fitted on){'' if oof else '; no ' + OOF.name + ': run --cv'}\n")
    targets = [
        ("leave-one-GPU-out throughput MAPE (measured.csv)", "<= 15 %", g_thr),
        ("leave-one-source-out throughput MAPE (measured.csv)", "<= 15 %", s_thr),
        ("fp4 rows throughput MAPE (public, B200/GB200 NVFP4)", "<= 15 %", fp4),
        ("MoE rows throughput MAPE, out-of-fold (measured.csv: Mixtral)", "<= 15 %", moe_oof),
        ("MoE rows throughput MAPE (public)", "<= 15 %", moe_pub),
        ("latency (TTFT, ITL) MAPE, out-of-fold static rows (measured.csv)", "<= 20 %", lat_oof),
        ("latency MAPE, all measured.csv rows (serving in-sample)", "<= 20 %", s["latency"]),
        ("latency MAPE (public)", "<= 20 %", lat(pub)),
        ("--calibration none: throughput MAPE (measured.csv)", "<= 25 %", thr(none)),
        ("--calibration none: throughput MAPE (public)", "<= 25 %", thr(pub_none)),
    ]
    print("| target | required | n | MAPE | median APE | met |\n|---|---|---|---|---|---|")
    for name, req, g in targets:
        lim = float(req.split()[1]) / 100
        met = "–" if g["mape"] is None else ("yes" if g["mape"] <= lim else "**no**")
        print(f"| {name} | {req} | {g['n']} | {pct(g['mape'])} | {pct(g['median_ape'])} | {met} |")
    for name, n, c in (("bands hold the truth: leave-one-GPU-out rows", n_g, c_g),
                       ("bands hold the truth: leave-one-source-out rows", n_s, c_s),
                       ("bands hold the truth: public rows (never fitted)", n_p, c_p)):
        print(f"| {name} | >= 80 % | {n} | coverage {pct(c)} |  | {'–' if c is None else ('yes' if c >= 0.8 else '**no**')} |")
    print()
    print_issue19(pub, pub_bands, Path(a.public).name, len(pub_bad))
    if Path(a.inferencex).exists():  # InferenceX's closed-loop DeepSeek-R1 sweeps (scored, never fitted)
        ix_rows, ix_bad = read_csv(a.inferencex)
        ix = predict_rows(ix_rows, calibration=cal if cal is not None else "none")
        print_issue19(ix, row_bands(ix, cal), Path(a.inferencex).name, len(ix_bad))
    print("## measured.csv, shipped calibration\n")
    print(table([s["throughput"] | {"class": "throughput"}, s["latency"] | {"class": "latency"},
                 s["all"] | {"class": "all"}], ["class"]))
    print()
    print(table(s["by_source_scenario_metric"], ["source", "scenario", "metric"]))
    print()
    print(table(s["by_gpu"], ["gpu"]))
    print()
    print(table(s["by_model"], ["model"]))
    for key, errs in (("gpu", e_g), ("source", e_s)):
        groups = sorted({getattr(p.row, key) for p in fit_preds})
        print(f"\nLeave-one-{key}-out (fit without that {key}; throughput rows):\n")
        print(table([{key: g, **sel_summary(errs, lambda p, g=g: thr_pick(p) and getattr(p.row, key) == g)}
                     for g in groups] + [{key: "THROUGHPUT", **sel_summary(errs, thr_pick)},
                                         {key: "LATENCY", **sel_summary(errs, lambda p: not thr_pick(p))}], [key]))
    ps = summary(pub, pub_bad, bands=pub_bands)
    print("\n## measured_public.csv (never fitted on), shipped calibration\n")
    print(table([ps["throughput"] | {"class": "throughput"}, ps["latency"] | {"class": "latency"}], ["class"]))
    print()
    print(table(ps["by_source_scenario_metric"], ["source", "scenario", "metric"]))
    print()
    print(table(ps["by_model"], ["model"]))
    if not a.no_baselines:
        baselines(rows, preds, pub_rows, pub)
    worst = sorted((p for p in preds + pub if p.covered), key=lambda p: -abs(p.error))[:15]
    print("\nWorst rows (both files):\n\n| case | source | model | gpu | scenario | metric | measured | predicted | error |\n"
          "|---|---|---|---|---|---|---|---|---|")
    for p in worst:
        r = p.row
        print(f"| {r.case} | {r.source} | {r.model} | {r.gpu} | {r.scenario} | {r.metric} | {r.value:g} | "
              f"{p.predicted:.4g} | {p.error:+.0%} |")


def print_issue19(preds, bands, name, n_bad) -> None:
    """The issue-19 targets (serving_targets.py) on a file never fitted on."""
    print(f"## Issue-19 targets on {name} (never fitted on; {n_bad} unreadable rows not counted)\n")
    print(format_lines(target_lines(preds, bands)))
    print()


def baselines(rows, preds, pub_rows, pub) -> None:
    from baselines import aiconfigurator_predictions, llm_analysis_prediction
    print("\n## Side by side on the rows each estimator covers (throughput and latency metrics)\n")
    print("| estimator | rows | n | its MAPE | its median APE | inferbound MAPE | inferbound median APE |\n|---|---|---|---|---|---|---|")
    for label, rs, ps in (("measured.csv", rows, preds), ("public", pub_rows, pub)):
        pairs = []
        for r, p in zip(rs, ps):
            v = llm_analysis_prediction(r) if p.covered else None
            if v is not None and v > 0:
                pairs.append((v / r.value - 1, p.error))
        _side("llm-analysis 0.x (its defaults)", label, pairs)
    aic = aiconfigurator_predictions()
    pairs = [(aic[(p.row.case, p.row.metric)] / p.row.value - 1, p.error) for p in pub
             if p.covered and (p.row.case, p.row.metric) in aic]
    _side("AIConfigurator 0.12.0 SILICON", "public", pairs)
    for src in sorted({p.row.source for p in pub if (p.row.case, p.row.metric) in aic}):
        sp = [(aic[(p.row.case, p.row.metric)] / p.row.value - 1, p.error) for p in pub
              if p.covered and p.row.source == src and (p.row.case, p.row.metric) in aic]
        _side("AIConfigurator 0.12.0 SILICON", src, sp)


def _side(name, label, pairs) -> None:
    if not pairs:
        print(f"| {name} | {label} | 0 | – | – | – | – |")
        return
    b, i = np.abs([x for x, _ in pairs]), np.abs([y for _, y in pairs])
    print(f"| {name} | {label} | {len(pairs)} | {b.mean():.1%} | {np.median(b):.1%} | {i.mean():.1%} | {np.median(i):.1%} |")


if __name__ == "__main__":
    main()
