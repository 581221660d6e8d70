"""``inferbound validate`` and ``inferbound calibrate``: score predictions on measured data, refit factors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.table import Table
from rich.text import Text

from ..faces.options import CALIBRATE, VALIDATE, by_name
from . import app
from .common import console, labelled, print_json, run
from .output import Writes, check_file
from .params import annotation, declared

V, C = by_name(VALIDATE), by_name(CALIBRATE)  # the declared options of each command (faces/options.py)


@app.command()
@declared
def validate(file: annotation(V["file"]), out: annotation(V["out"]), plot_file: annotation(V["plot"]),
             calibration: annotation(V["calibration"]), gpu_file: annotation(V["gpu_file"]),
             scenario: annotation(V["scenario"]), engine: annotation(V["engine"]), json: annotation(V["json"])) -> None:
    """Predict every row of a measured CSV and report the error per source, scenario and metric."""
    def body():
        from ..calibration import resolve
        from ..validation import predict_rows, read_csv
        from ..validation.dataset import SCENARIOS
        from ..validation.report import plot, row_records, summary, write_rows
        if scenario is not None and scenario not in SCENARIOS:
            raise ValueError(f"scenario={scenario!r} unknown; allowed: {', '.join(SCENARIOS)}")
        out_csv = check_file(out, "--out", ".csv")  # output paths checked before the predictions, not after
        plot_png = check_file(plot_file, "--plot", ".png")
        if engine is not None:
            from ..deploy.runtime import profile_of
            profile_of(engine)  # an unknown engine: one line now
        cal = resolve(calibration)  # a bad path fails here, once, with exit code 2
        calib = cal if cal is not None else "none"
        if gpu_file:
            from ..hardware import load_catalog
            load_catalog(gpu_file)  # a bad hardware file: one error now, not one "not covered" per row
        rows, bad = data_rows(file)
        if scenario:
            kept = [r for r in rows if r.scenario == scenario]
            if not kept:
                have = ", ".join(sorted({r.scenario for r in rows}))
                raise ValueError(f"scenario={scenario!r}: no rows of this scenario in {file}; allowed: {have}")
            rows = kept
        if json or len(rows) < 50:
            preds = predict_rows(rows, calibration=calib, gpu_files=gpu_file, engine=engine)
        else:
            from rich.progress import Progress
            with Progress(transient=True, console=console) as prog:
                task = prog.add_task("predicting", total=1)
                preds = predict_rows(rows, calibration=calib, gpu_files=gpu_file, engine=engine,
                                     progress=lambda d, n: prog.update(task, completed=d, total=n))
        s = summary(preds, bad, cal, gpu_files=gpu_file)
        files = Writes()  # a write that fails now: the summary first, then the error line
        files.write("--out", out_csv, lambda p: write_rows(p, row_records(preds, bad, cal, gpu_file)))
        files.write("--plot", plot_png, lambda p: plot(preds, p))
        if json:
            print_json(s)
            return files.finish()
        show_summary(s)
        files.finish()
    run(body)


def data_rows(file: Path):
    """read_csv's (rows, unreadable), refusing a file without a single readable row (exit 2, one line)."""
    from ..validation import read_csv
    rows, bad = read_csv(file)
    if not rows and not bad:
        raise ValueError(f"file={str(file)!r} has no rows under its header; allowed: a CSV with at least one "
                         f"measured row (docs/accuracy.md)")
    if not rows:
        first = bad[0]
        raise ValueError(f"file={str(file)!r}: none of its {len(bad)} row(s) is readable; first: case "
                         f"{first.case!r}: {first.reason}")
    return rows, bad


def show_summary(s: dict) -> None:
    t = Table(title=f"Error per source, scenario and metric ({s['covered']} of {s['rows']} rows covered)")
    for c in ("source", "scenario", "metric", "n", "MAPE", "median APE", "within ±25%", "bias", "not covered"):
        t.add_column(c, justify="left" if c in ("source", "scenario", "metric") else "right")
    for g in s["by_source_scenario_metric"]:
        t.add_row(Text(str(g["source"])), Text(str(g["scenario"])), Text(str(g["metric"])), str(g["n"]),  # CSV text
                  *(("-",) * 4 if not g["n"] else (f"{g['mape']:.1%}", f"{g['median_ape']:.1%}",
                                                    f"{g['within_25']:.0%}", f"{g['bias']:+.1%}")),
                  str(g["not_covered"]))
    for name in ("throughput", "latency", "all"):
        g = s[name]
        if g["n"]:
            t.add_row(f"[bold]{name.upper()}[/bold]", "", "", str(g["n"]), f"{g['mape']:.1%}", f"{g['median_ape']:.1%}",
                      f"{g['within_25']:.0%}", f"{g['bias']:+.1%}", "")
    console.print(t)
    bc = s.get("band_coverage", {}).get("all", {})
    if bc.get("n"):
        console.print(f"error bands hold the truth on {bc['coverage']:.0%} of {bc['n']} covered rows")
    for r in s["not_covered_rows"]:
        console.print(labelled("not covered", "yellow", f"{r['case']} {r['metric']}: {r['reason']}"), highlight=False)


@app.command()
@declared
def calibrate(file: annotation(C["file"]), out: annotation(C["out"]), scenarios: annotation(C["scenarios"]),
              cv: annotation(C["cv"]), max_evals: annotation(C["max_evals"]), json: annotation(C["json"])) -> None:
    """Fit efficiency factors (least squares on log error), cross-validate by model and GPU, write a calibration."""
    def body():
        from ..calibration.bands import bands_from
        from ..calibration.fit import cross_validate, error_bands, fit, fit_request_overhead
        from ..validation import predict_rows
        from ..validation.dataset import SCENARIOS
        from ..validation.report import summary
        # every argument is checked before the fit (minutes), not after it
        if max_evals < 1:
            raise ValueError(f"max_evals={max_evals} must be an integer >= 1 (model evaluations per fit)")
        out_yaml = check_file(out, "--out", (".yaml", ".yml"))  # a calibration YAML
        wanted = {s.strip() for s in scenarios.split(",") if s.strip()}
        unknown = sorted(wanted - set(SCENARIOS))
        if unknown or not wanted:
            raise ValueError(f"scenarios={scenarios!r}: {unknown[0] + ' is unknown' if unknown else 'empty'}; "
                             f"allowed: comma-separated {', '.join(SCENARIOS)}")
        keys = [] if cv == "none" else [k.strip() for k in cv.split(",") if k.strip()]
        for k in keys or ([] if cv == "none" else [""]):
            if k not in ("model", "gpu", "source"):
                raise ValueError(f"cv={cv!r}: allowed keys are gpu, source, model (comma-separated) or none")
        all_rows, bad = data_rows(file)
        rows = [r for r in all_rows if r.scenario in wanted]
        if not rows:
            raise ValueError(f"scenarios={scenarios!r}: no rows of these scenarios in {file}")
        from rich.progress import Progress
        with Progress(console=console, disable=json) as prog:
            task = prog.add_task("fitting on all rows", total=max_evals)
            cal, report = fit(rows, max_evals=max_evals, progress=lambda d, n: prog.update(task, completed=d))
            oof = {}
            for k in keys:
                t2 = prog.add_task(f"leave-one-{k}-out", total=1)
                start = {name: v["fitted"] for name, v in report["parameters"].items()}
                oof[k] = cross_validate(rows, k, max_evals=max_evals, start=start,
                                        progress=lambda d, n, t2=t2: prog.update(t2, completed=d, total=n))
        cal.serving = {"request_overhead_s": round(fit_request_overhead(all_rows, cal), 6)}
        fitted = predict_rows(rows, calibration=cal)
        bounds = [p.bound for p in fitted]
        cal.bands = bands_from(rows, oof, fitted)
        serving = [r for r in all_rows if r.scenario == "serving"]
        if serving and "serving" not in wanted:  # serving bands: in-sample (one fitted scalar, no CV)
            sp = predict_rows(serving, calibration=cal)
            cal.bands.update(error_bands(serving, np.array([p.error if p.covered else np.nan for p in sp]),
                                         [p.bound for p in sp]))
        cv_report = {k: cv_summary(rows, e, k) for k, e in oof.items()}
        cal.meta = {"fitted_on": {"file": Path(file).name, "rows": len(rows), "scenarios": sorted(wanted)},
                    "fit": report, "in_sample": summary(fitted)["throughput"] | {"latency": summary(fitted)["latency"]},
                    "cross_validation": cv_report}
        files = Writes()  # a write that fails now: the fit first, then the error line
        saved = files.write("--out", out_yaml, lambda p: cal.save(p))
        if json:
            print_json({"calibration": None if saved is None else str(out), **cal.meta, "bands": cal.bands})
            return files.finish()
        t = Table(title=Text(f"Fitted factors ({'not written' if saved is None else f'written to {out}'})"))
        for c in ("parameter", "prior", "fitted"):
            t.add_column(c, justify="left" if c == "parameter" else "right")
        for name, v in report["parameters"].items():
            t.add_row(name, f"{v['prior']:.4g}", f"{v['fitted']:.4g}")
        console.print(t)
        for k, rep in cv_report.items():
            ct = Table(title=f"Leave-one-{k}-out cross-validated error (factors fitted without that {k})")
            for c in (k, "n", "MAPE", "median APE", "within ±25%", "bias"):
                ct.add_column(c, justify="left" if c == k else "right")
            for g in rep["groups"] + [rep["throughput"] | {k: "THROUGHPUT"}, rep["latency"] | {k: "LATENCY"}]:
                if g["n"]:
                    ct.add_row(Text(str(g[k])), str(g["n"]), f"{g['mape']:.1%}", f"{g['median_ape']:.1%}",
                               f"{g['within_25']:.0%}", f"{g['bias']:+.1%}")
            console.print(ct)
        files.finish()
    run(body)


def cv_summary(rows, errors, key: str) -> dict:
    from ..validation.dataset import LATENCY_METRICS
    from ..validation.metrics import summarize
    groups = sorted({getattr(r, key) for r in rows})
    out = [{key: g, **summarize([e for r, e in zip(rows, errors) if getattr(r, key) == g and np.isfinite(e)])}
           for g in groups]
    thr = [e for r, e in zip(rows, errors) if np.isfinite(e) and r.metric not in LATENCY_METRICS]
    lat = [e for r, e in zip(rows, errors) if np.isfinite(e) and r.metric in LATENCY_METRICS]
    return {"groups": out, "throughput": summarize(thr), "latency": summarize(lat)}
