"""Validation outputs: per-row CSV, summary tables (JSON-able) and the predicted-vs-measured plot.

With a calibration each covered row carries its error band (``band``: the relative error the
calibration expects for that row's scenario and metric kind, widened where the row's deployment
extrapolates beyond the fit: deploy/bands.py, the lookup every face uses), and the summary says on how
many covered rows the truth lies inside it (``band_coverage``: |error| <= band). A latency row of an open-loop
(rate-driven) serving run carries its band through the operating point (deploy/operating_band.py): the same
predictor re-priced at rate/(1 ± b), b the deployment's serving throughput (capacity) band; ``inf`` when the
analytic steady state (workloads/serving.py) says rate/(1 − b) reaches its capacity. Closed-loop rows keep theirs.
"""
from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..deploy.bands import band_for, kind_of
from ..deploy.operating_band import is_overload, operating_bands
from ..workloads.serving import serving
from .dataset import LATENCY_METRICS, Unreadable
from .metrics import group_summary, summarize
from .predict import Prediction, deployment_for, predict_serving, row_lengths

ROW_FIELDS = ("case", "source", "scenario", "model", "gpu", "metric", "measured", "predicted", "error", "abs_error",
              "band", "bound", "covered", "reason")


def row_bands(preds: list[Prediction], calibration=None, gpu_files=None) -> list[float | None]:
    """Each prediction's relative error band under ``calibration`` (None: not covered, or no bands)."""
    if calibration is None or not getattr(calibration, "bands", None):
        return [None] * len(preds)
    deps: dict = {}
    priced: dict = {}  # (setup, offered rate) -> (it reaches capacity, the re-priced figures)
    out = []
    for p in preds:
        if not p.covered:
            out.append(None)
            continue
        r = p.row
        if r.setup_key not in deps:
            try:
                deps[r.setup_key] = deployment_for(r, calibration=calibration, gpu_files=gpu_files)
            except (ValueError, KeyError):
                deps[r.setup_key] = None
        d = deps[r.setup_key]
        b = None if d is None else band_for(calibration, d, r.scenario, kind_of(r.metric), p.bound)
        if b is not None and kind_of(r.metric) == "latency" and open_loop(r):
            b = _through_operating_point(calibration, d, p, b, priced)
        out.append(b)
    return out


def open_loop(row) -> bool:
    """A serving row driven at a finite offered rate, predicted by the simulator (no concurrency, no replayed
    benchmark command; ``request_rate=inf``, every prompt at once, has no operating point on the rate axis)."""
    return row.scenario == "serving" and row.request_rate is not None and math.isfinite(row.request_rate) \
        and row.concurrency is None and row.bench_command is None


def _repriced(dep, row, rate: float) -> tuple[bool, dict]:
    """(whether the analytic steady state says ``rate`` reaches the deployment's capacity: its overload
    error, the row's predictor at offered ``rate``: predict_serving, the simulator's finite run)."""
    try:
        serving(dep, rate=rate, lengths=row_lengths(row), operating_band=False)
        over = False
    except ValueError as e:
        if not is_overload(e):
            raise
        over = True
    return over, predict_serving(dep, replace(row, request_rate=rate))


def _through_operating_point(cal, dep, p: Prediction, own: float, priced: dict) -> float:
    """``own`` carried through the capacity band (deploy/operating_band.py); the re-priced runs are shared
    by a setup's rows (``priced``). A setup whose re-pricing fails keeps ``own``."""
    r = p.row

    def price(rate):
        key = (r.setup_key, rate)
        if key not in priced:
            try:
                priced[key] = _repriced(dep, r, rate)
            except (ValueError, KeyError):
                priced[key] = (False, {})  # no re-priced figures: the row keeps its own band
        return priced[key]
    cap = band_for(cal, dep, "serving", "throughput")
    return operating_bands({r.metric: own}, {r.metric: p.predicted}, cap, r.request_rate, price)[r.metric]


def row_records(preds: list[Prediction], unreadable: list[Unreadable] = (), calibration=None,
                gpu_files=None) -> list[dict]:
    out = []
    for p, band in zip(preds, row_bands(preds, calibration, gpu_files)):
        r = p.row
        out.append({"case": r.case, "source": r.source, "scenario": r.scenario, "model": r.model, "gpu": r.gpu,
                    "metric": r.metric, "measured": r.value, "predicted": p.predicted,
                    "error": p.error, "abs_error": None if p.error is None else abs(p.error), "band": band,
                    "bound": p.bound, "covered": p.covered, "reason": p.reason})
    for u in unreadable:
        out.append({"case": u.case, "source": u.raw.get("source", ""), "scenario": u.raw.get("scenario", ""),
                    "model": u.raw.get("model", ""), "gpu": u.raw.get("gpu", ""), "metric": u.metric,
                    "measured": u.raw.get("value"), "predicted": None, "error": None, "abs_error": None,
                    "band": None, "bound": None, "covered": False, "reason": u.reason})
    return out


def write_rows(path: str | Path, records: list[dict]) -> None:
    with Path(path).open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ROW_FIELDS)
        w.writeheader()
        for rec in records:
            w.writerow({k: ("" if rec.get(k) is None else rec.get(k)) for k in ROW_FIELDS})


def band_coverage(preds: list[Prediction], bands: list) -> dict:
    """Share of covered rows with a band whose |error| is within it, overall and by metric kind."""
    def share(sel):
        hits = [abs(p.error) <= b for p, b in sel]
        return {"n": len(hits), "coverage": (sum(hits) / len(hits)) if hits else None}
    pairs = [(p, b) for p, b in zip(preds, bands) if p.covered and b is not None]
    return {"all": share(pairs), "throughput": share([x for x in pairs if x[0].row.metric not in LATENCY_METRICS]),
            "latency": share([x for x in pairs if x[0].row.metric in LATENCY_METRICS])}


def summary(preds: list[Prediction], unreadable: list[Unreadable] = (), calibration=None, bands=None,
            gpu_files=None) -> dict:
    """Overall, per throughput/latency class, and per source × scenario × metric; plus not covered and, with
    a calibration (or ``bands`` per prediction), the band coverage."""
    covered = [p for p in preds if p.covered]
    thr = [p.error for p in covered if p.row.metric not in LATENCY_METRICS]
    lat = [p.error for p in covered if p.row.metric in LATENCY_METRICS]
    not_covered = [{"case": p.row.case, "metric": p.row.metric, "reason": p.reason} for p in preds if not p.covered]
    not_covered += [{"case": u.case, "metric": u.metric, "reason": u.reason} for u in unreadable]
    total = len(preds) + len(unreadable)
    return {"rows": total, "covered": len(covered), "not_covered": len(not_covered),
            "not_covered_share": len(not_covered) / total if total else 0.0,
            "all": summarize([p.error for p in covered]), "throughput": summarize(thr), "latency": summarize(lat),
            "by_source_scenario_metric": group_summary(preds), "by_model": group_summary(preds, ("model",)),
            "by_gpu": group_summary(preds, ("gpu",)), "not_covered_rows": not_covered,
            "band_coverage": band_coverage(preds, bands if bands is not None else
                                           row_bands(preds, calibration, gpu_files))}


def plot(preds: list[Prediction], path: str | Path, title: str = "inferbound: predicted vs measured") -> None:
    """Log-log scatter of predicted against measured, one colour per source, with the ±25 % band."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    covered = [p for p in preds if p.covered]
    fig, ax = plt.subplots(figsize=(7, 6), dpi=120)
    sources = sorted({p.row.source for p in covered})
    for i, src in enumerate(sources):
        pts = np.array([(p.row.value, p.predicted) for p in covered if p.row.source == src])
        ax.scatter(pts[:, 0], pts[:, 1], s=14, alpha=0.75, label=f"{src} ({len(pts)})", color=f"C{i}")
    if covered:
        lo = min(min(p.row.value, p.predicted) for p in covered) / 1.5
        hi = max(max(p.row.value, p.predicted) for p in covered) * 1.5
        xs = np.geomspace(lo, hi, 50)
        ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
        ax.fill_between(xs, xs * 0.75, xs * 1.25, color="grey", alpha=0.15, label="±25 %")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (metric units: tok/s, ms, GB/s)")
    ax.set_ylabel("predicted")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
