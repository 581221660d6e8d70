"""The issue-19 targets, computed from scored rows: closed-loop sweeps, open-loop Poisson runs, held-out
static / max-throughput rows. Pure functions over ``validation.predict.Prediction`` lists (each a row and
its predicted value), so a test can hand them rows with known predictions.

Row classes (the validation schema, ../shared/validation/README.md and benchmarks/data/README.md):
- closed loop: ``scenario == "serving"`` with a ``concurrency`` (N clients; a serving row's batch_size is
  read as its concurrency by validation/dataset.py);
- open loop (Poisson): ``scenario == "serving"``, a finite ``request_rate`` and no concurrency;
- static / max-throughput: ``scenario`` in (static_batch, max_throughput).

Figures, with e_i = (predicted − measured) / measured over the covered rows of a class:
- coverage = covered rows / readable rows of the class;
- MAPE = mean |e_i|; median APE = median |e_i|; signed median = median e_i;
- band coverage = share of covered rows whose |e_i| <= the row's band (rows without a band left out).
Latency families: a metric belongs to family F (``ttft``, ``itl``, ``e2e``, ``tpot``) when it is
``F_ms`` (mean) or ``F_ms_p50`` (median); p90/p99 tails are not scored against these targets.

Targets (issue 19, "Targets"): closed-loop sweeps >= 95 % covered, MAPE <= 20 %, TTFT MAPE <= 30 %;
vLLM Poisson runs median APE E2E <= 10 %, TTFT <= 20 %, ITL <= 10 % (the same bars are printed for the
other engines' Poisson runs, marked as not the issue's own target); held-out static and max-throughput
rows MAPE <= 15 %, bands >= 80 %.

Why, per row (``python benchmarks/serving_targets.py [FILE.csv]``, default the public file): every
closed-loop and Poisson row (engine, version, GPU, model, clients or rate, lengths, metric, measured,
predicted, error), then per class the error grouped by engine, by engine version and GPU, by clients
(``concurrency_class``) and by metric (``metric_class``): n, MAPE, signed median and the group's share of the
summed |e_i| (what moves the class's MAPE most), largest share first.
"""
from __future__ import annotations

import math

import numpy as np

FAMILIES = ("ttft", "itl", "e2e", "tpot")
#: engine family by the first keyword found in a row's framework text (lower-cased), in this order
ENGINE_KEYWORDS = (("sglang", "SGLang"), ("vllm", "vLLM"), ("tensorrt", "TensorRT-LLM"), ("trt", "TensorRT-LLM"),
                   ("nim", "NIM"), ("atom", "ATOM"))
POISSON_TARGETS = (("e2e", 0.10), ("ttft", 0.20), ("itl", 0.10))


def family(metric: str) -> str | None:
    """``ttft_ms`` / ``ttft_ms_p50`` -> ``ttft``; other metrics (throughputs, p90/p99 tails) -> None."""
    for f in FAMILIES:
        if metric in (f"{f}_ms", f"{f}_ms_p50"):
            return f
    return None


def engine_family(framework: str | None) -> str:
    text = (framework or "").lower()
    for key, name in ENGINE_KEYWORDS:
        if key in text:
            return name
    return framework or "(not stated)"


def is_closed_loop(row) -> bool:
    return row.scenario == "serving" and row.concurrency is not None


def is_poisson(row) -> bool:
    return (row.scenario == "serving" and row.concurrency is None and row.request_rate is not None
            and math.isfinite(row.request_rate))


def _errors(preds) -> np.ndarray:
    return np.asarray([p.error for p in preds if p.covered], dtype=float)


def _line(name, required, n, value, limit=None, at_least=False, fmt="pct"):
    met = None if value is None or limit is None else (value >= limit if at_least else value <= limit)
    return {"name": name, "required": required, "n": n, "value": value, "met": met, "fmt": fmt}


def closed_loop_lines(preds) -> list[dict]:
    rows = [p for p in preds if is_closed_loop(p.row)]
    cov = [p for p in rows if p.covered]
    e = _errors(cov)
    ttft = _errors([p for p in cov if family(p.row.metric) == "ttft"])
    thr = _errors([p for p in cov if family(p.row.metric) is None and not p.row.metric.endswith(("_p90", "_p99"))])
    lat = _errors([p for p in cov if family(p.row.metric) is not None])
    return [
        _line("closed-loop sweeps: share of rows covered", ">= 95 %", len(rows),
              len(cov) / len(rows) if rows else None, 0.95, at_least=True),
        _line("closed-loop sweeps: MAPE (all covered metrics)", "<= 20 %", e.size,
              float(np.abs(e).mean()) if e.size else None, 0.20),
        _line("closed-loop sweeps: TTFT MAPE", "<= 30 %", ttft.size,
              float(np.abs(ttft).mean()) if ttft.size else None, 0.30),
        _line("closed-loop sweeps: signed median TTFT error", "no target (issue's held-out: -79 %)", ttft.size,
              float(np.median(ttft)) if ttft.size else None, fmt="signed"),
        _line("closed-loop sweeps: throughput MAPE", "no target (issue's held-out: 34 %)", thr.size,
              float(np.abs(thr).mean()) if thr.size else None),
        _line("closed-loop sweeps: latency MAPE (mean/median TTFT, ITL, TPOT, E2E)",
              "no target (issue's held-out: 56 %)", lat.size, float(np.abs(lat).mean()) if lat.size else None),
    ]


def poisson_lines(preds) -> list[dict]:
    rows = [p for p in preds if is_poisson(p.row)]
    out = []
    for eng in sorted({engine_family(p.row.framework) for p in rows}):
        mine = [p for p in rows if engine_family(p.row.framework) == eng]
        cov = sum(p.covered for p in mine)
        out.append(_line(f"Poisson runs, {eng}: share of rows covered", "no target", len(mine),
                         cov / len(mine) if mine else None))
        for fam, lim in POISSON_TARGETS:
            e = _errors([p for p in mine if p.covered and family(p.row.metric) == fam])
            req = f"<= {lim:.0%}".replace("%", " %") + ("" if eng == "vLLM" else " (vLLM's bar; not an issue target)")
            out.append(_line(f"Poisson runs, {eng}: median APE {fam.upper()}", req, e.size,
                             float(np.median(np.abs(e))) if e.size else None, lim if eng == "vLLM" else None))
    return out


def held_out_lines(preds, bands) -> list[dict]:
    """Static and max-throughput rows of a file never fitted on: MAPE and band coverage."""
    pairs = [(p, b) for p, b in zip(preds, bands) if p.row.scenario in ("static_batch", "max_throughput")]
    e = _errors([p for p, _ in pairs])
    inside = [abs(p.error) <= b for p, b in pairs if p.covered and b is not None]
    return [
        _line("held-out static + max-throughput rows: MAPE", "<= 15 %", e.size,
              float(np.abs(e).mean()) if e.size else None, 0.15),
        _line("held-out static + max-throughput rows: bands hold the truth", ">= 80 %", len(inside),
              sum(inside) / len(inside) if inside else None, 0.80, at_least=True),
    ]


def target_lines(preds, bands=None) -> list[dict]:
    bands = bands if bands is not None else [None] * len(preds)
    return closed_loop_lines(preds) + poisson_lines(preds) + held_out_lines(preds, bands)


def format_lines(lines) -> str:
    out = ["| target | required | n | figure | met |", "|---|---|---|---|---|"]
    for ln in lines:
        v = ln["value"]
        fig = "–" if v is None else (f"{v:+.1%}" if ln["fmt"] == "signed" else f"{v:.1%}")
        met = "–" if ln["met"] is None else ("yes" if ln["met"] else "**no**")
        out.append(f"| {ln['name']} | {ln['required']} | {ln['n']} | {fig} | {met} |")
    return "\n".join(out)


# -- why, per row: the rows behind the closed-loop and Poisson figures, grouped ------------------------------
def concurrency_class(n) -> str:
    """Closed-loop clients in classes of powers of 4: 1, 2–4, 5–16, 17–64, 65–256, > 256."""
    if n is None:
        return "open loop"
    for hi in (1, 4, 16, 64, 256):
        if n <= hi:
            return f"<= {hi}"
    return "> 256"


def metric_class(metric: str) -> str:
    """A latency family (``ttft``, ``itl``, ``e2e``, ``tpot``), ``throughput`` or ``tail`` (p90/p99)."""
    if metric.endswith(("_p90", "_p99")):
        return "tail"
    return family(metric) or "throughput"


def group_errors(preds, key) -> list[dict]:
    """Per value of ``key(prediction)``: n covered, MAPE = mean |e|, signed median e (module docstring's e_i),
    sorted by the group's share of the summed |e| (what moves the MAPE most first)."""
    groups: dict = {}
    for p in preds:
        if p.covered:
            groups.setdefault(key(p), []).append(p.error)
    total = sum(abs(e) for es in groups.values() for e in es) or 1.0
    out = [{"group": g, "n": len(es), "mape": float(np.abs(es).mean()), "signed_median": float(np.median(es)),
            "share": float(np.abs(es).sum()) / total} for g, es in groups.items()]
    return sorted(out, key=lambda d: -d["share"])


def format_groups(title: str, groups) -> str:
    out = [f"| {title} | n | MAPE | signed median | share of summed abs error |", "|---|---|---|---|---|"]
    out += [f"| {g['group']} | {g['n']} | {g['mape']:.1%} | {g['signed_median']:+.1%} | {g['share']:.1%} |"
            for g in groups]
    return "\n".join(out)


def format_rows(preds) -> str:
    """One line per closed-loop or Poisson row: engine, GPU, model, clients or rate, lengths, metric,
    measured, predicted, error."""
    out = ["| case | engine | version | GPU | model | N / rate | I/O | metric | measured | predicted | error |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in preds:
        r = p.row
        if not (is_closed_loop(r) or is_poisson(r)):
            continue
        load = f"N={r.concurrency}" if r.concurrency is not None else f"{r.request_rate:g}/s"
        io = "–" if r.input_len is None else f"{r.input_len:g}/{r.output_len:g}"
        pred = "–" if p.predicted is None else f"{p.predicted:.4g}"
        err = "–" if p.error is None else f"{p.error:+.0%}"
        out.append(f"| {r.case} | {engine_family(r.framework)} | {r.engine_version or ''} | {r.gpu}x{r.num_gpus} | "
                   f"{r.model.split('/')[-1]} | {load} | {io} | {r.metric} | {r.value:.4g} | {pred} | {err} |")
    return "\n".join(out)


def why_report(preds) -> str:
    """The rows and their error grouped by engine, by clients and by metric, per row class."""
    parts = [format_rows(preds)]
    for name, pick in (("closed loop", is_closed_loop), ("Poisson", is_poisson)):
        mine = [p for p in preds if pick(p.row)]
        parts.append(f"\n### {name}\n")
        parts.append(format_groups("engine", group_errors(mine, lambda p: engine_family(p.row.framework))))
        parts.append(format_groups("engine, GPU", group_errors(
            mine, lambda p: f"{engine_family(p.row.framework)} {p.row.engine_version or ''}, {p.row.gpu}")))
        parts.append(format_groups("clients", group_errors(mine, lambda p: concurrency_class(p.row.concurrency))))
        parts.append(format_groups("metric", group_errors(mine, lambda p: metric_class(p.row.metric))))
    return "\n\n".join(parts)


if __name__ == "__main__":  # the rows behind the issue-19 serving figures: python benchmarks/serving_targets.py
    import sys
    from pathlib import Path

    from inferbound.calibration import resolve
    from inferbound.validation import predict_rows, read_csv

    path = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parent / "data" / "measured_public.csv")
    rows, _ = read_csv(path)
    rows = [r for r in rows if is_closed_loop(r) or is_poisson(r)]
    cal = resolve("default")
    print(why_report(predict_rows(rows, calibration=cal if cal is not None else "none")))
