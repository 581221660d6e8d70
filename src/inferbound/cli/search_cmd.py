"""``inferbound search``: sweep GPUs, layouts, dtypes and concurrency; rank, explain, plot, emit launch commands."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from ..search import BACKENDS, ENGINES, OBJECTIVES, SENSE, emit_command, search as run_search
from ..search.result import SearchResult, fmt, unit_label
from . import app
from .common import Input, Json, Model, Output, console, print_json, run

Opt = typer.Option


def _list(text: str | None, field: str) -> list[str] | None:
    if text is None:
        return None
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise ValueError(f"{field}={text!r} is empty; allowed: a comma-separated list")
    return items


def _pair(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    parts = [x.strip() for x in text.split(",")]
    if len(parts) != 2 or any(p not in SENSE for p in parts):
        raise ValueError(f"--pareto={text!r} must name two figures X,Y; allowed: {', '.join(SENSE)}")
    return parts[0], parts[1]


@app.command("search")
def search(model: Model = "llama-3.1-8b",
           gpus: Annotated[str | None, Opt("--gpus", help="GPU ids, comma-separated (default: all)")] = None,
           max_gpus: Annotated[int | None, Opt("--max-gpus", help="largest layout in GPUs (default 8)")] = None,
           objective: Annotated[str, Opt("--objective", help=" | ".join(OBJECTIVES))] = "tok_s_per_gpu",
           slo_ttft_ms: Annotated[float | None, Opt("--slo-ttft-ms", help="time-to-first-token SLO (ms)")] = None,
           slo_tpot_ms: Annotated[float | None, Opt("--slo-tpot-ms", help="TPOT / ITL SLO (ms)")] = None,
           slo_e2e_ms: Annotated[float | None, Opt("--slo-e2e-ms", help="end-to-end latency SLO (ms)")] = None,
           max_dollars_per_hour: Annotated[float | None, Opt("--max-dollars-per-hour", help="fleet $/h")] = None,
           max_watts: Annotated[float | None, Opt("--max-watts", help="budget: watts of the fleet")] = None,
           gpu_budget: Annotated[int | None, Opt("--gpu-budget", help="budget: GPUs of the fleet")] = None,
           target_rate: Annotated[float | None, Opt("--target-rate", help="requests/s the fleet must serve")] = None,
           input: Input = 1024, output: Output = 256,
           disaggregated: Annotated[bool, Opt("--disaggregated", help="separate prefill and decode pools")] = False,
           both_modes: Annotated[bool, Opt("--both-modes", help="sweep aggregated and disaggregated serving, "
                                                              "ranked together")] = False,
           dtypes: Annotated[str | None, Opt("--dtypes", help="dtype combinations: bf16,fp8,int4,fp4")] = None,
           all_layouts: Annotated[bool, Opt("--all-layouts", help="also PP inside NVLink islands, partial EP")] = False,
           token_budget: Annotated[int | None, Opt("--token-budget", help="tokens per step (default 8192)")] = None,
           top: Annotated[int, Opt("--top", help="rows of the ranked table")] = 10,
           pareto: Annotated[str | None, Opt("--pareto", help="another frontier X,Y: tokens_per_joule,ttft_ms")] = None,
           plot: Annotated[Path | None, Opt("--plot", help="write the frontier(s) to FILE.png")] = None,
           html: Annotated[Path | None, Opt("--html", help="write the frontier(s) to an offline FILE.html")] = None,
           csv: Annotated[Path | None, Opt("--csv", help="write the ranked table to FILE.csv")] = None,
           emit: Annotated[str | None, Opt("--emit", help="print a launch command: " + " | ".join(ENGINES))] = None,
           emit_rank: Annotated[int, Opt("--emit-rank", help="row whose launch command --emit prints")] = 1,
           backend: Annotated[str, Opt("--backend", help=" | ".join(BACKENDS))] = "local",
           ray_address: Annotated[str | None, Opt("--ray-address", help="Ray cluster (default: a local one)")] = None,
           calibration: Annotated[str | None, Opt("--calibration", help="file, 'none' or 'default'")] = None,
           json: Json = False) -> None:
    """Search GPU types, GPU counts, TP/PP/EP layouts, dtypes, concurrency and prefill/decode disaggregation
    for the best deployment under SLOs and budgets: ranked table, why the winner wins, Pareto frontiers."""
    def body():
        pair = _pair(pareto)
        if emit is not None and emit not in ENGINES:
            raise ValueError(f"--emit={emit!r} unknown; allowed: {', '.join(ENGINES)}")
        for field, path, suffix in (("--plot", plot, ".png"), ("--html", html, ".html"), ("--csv", csv, ".csv")):
            if path is not None and path.suffix.lower() != suffix:
                raise ValueError(f"{field}={str(path)!r} must end in {suffix}")
        kwargs = dict(gpus=_list(gpus, "--gpus"), max_gpus=max_gpus, objective=objective, slo_ttft_ms=slo_ttft_ms,
                      slo_tpot_ms=slo_tpot_ms, slo_e2e_ms=slo_e2e_ms, max_dollars_per_hour=max_dollars_per_hour,
                      max_watts=max_watts, max_total_gpus=gpu_budget, target_rate=target_rate, input_len=input,
                      output_len=output, disaggregated="both" if both_modes else disaggregated, backend=backend, ray_address=ray_address,
                      calibration=calibration, dtypes=_list(dtypes, "--dtypes"), all_layouts=all_layouts,
                      top=top, token_budget=token_budget)
        res = run_search(model, **kwargs) if json else _with_progress(model, kwargs)
        pairs = [res.default_frontier] + ([pair] if pair and pair != tuple(res.default_frontier) else [])
        if not 1 <= emit_rank <= len(res.table):
            raise ValueError(f"--emit-rank={emit_rank} must be between 1 and {len(res.table)} (rows of the table)")
        command = emit_command(emit, res.model, res.table[emit_rank - 1]) if emit else None
        written = _write_files(res, pairs, plot, html, csv)
        if json:
            out = res.to_dict(pairs)
            out["files"] = [str(p) for p in written]
            if command is not None:
                out["launch_command"] = {"engine": emit, "rank": emit_rank, "text": command}
            return print_json(out)
        show(res, pairs)
        for p in written:
            console.print(f"wrote {p}", highlight=False)
        if command is not None:
            console.print(command, highlight=False, markup=False, soft_wrap=True)
    run(body)


def _with_progress(model: str, kwargs: dict) -> SearchResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("searching layouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True, console=console) as bar:
        task = bar.add_task("layouts", total=None)
        return run_search(model, progress=lambda done, total: bar.update(task, completed=done, total=total),
                          **kwargs)


def _write_files(res: SearchResult, pairs, plot: Path | None, html: Path | None, csv: Path | None) -> list[Path]:
    from ..search.plot import plot_html, plot_png
    written = []
    if plot is not None:
        written.append(plot_png(res, plot, pairs))
    if html is not None:
        written.append(plot_html(res, html, pairs))
    if csv is not None:
        csv.write_text(res.to_csv())
        written.append(csv)
    return written


COLUMNS = (("tok/s/GPU", "tok_s_per_gpu"), ("tok/s/user", "tok_s_per_user"), ("TTFT ms", "ttft_ms"),
           ("TPOT ms", "tpot_ms"), ("tok/J", "tokens_per_joule"), ("$/M tok", "usd_per_mtok"))


def _n(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 100 else (f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}")


def show(res: SearchResult, pairs) -> None:
    w = res.workload
    slo = ", ".join(c.label for c in res.constraints) or "none"
    t = Table(title=f"{res.model}: best deployments for {res.objective} ({w.input_len} in / {w.output_len} out, "
                    f"{' + '.join(res.modes)}; constraints: {slo})")
    heads = dict((k, h) for h, k in COLUMNS) | {"gpus_for_rate": "GPUs for rate"}
    for c in ("#", "configuration", "conc.", heads[res.objective], *(h for h, k in COLUMNS if k != res.objective),
              "stops at", "bound"):
        t.add_column(c, justify="left" if c in ("configuration", "stops at", "bound") else "right")
    for r in res.table:
        fleet = f" x{r.replicas}" if r.replicas > 1 else ""
        t.add_row(str(r.rank), unit_label(r) + fleet, str(r.concurrency), _n(r.objective_value),
                  *(_n(r.metrics.get(k)) for h, k in COLUMNS if k != res.objective), r.limit, r.bound)
    console.print(t)
    console.print(f"[bold]Why:[/bold] {res.winner_reason}", highlight=False)
    for x, y in pairs:
        front = res.frontier(x, y)
        ft = Table(title=f"Pareto frontier: {y} vs {x} ({len(front):,} points; a sample shown)")
        for c in ("configuration", "conc.", x, y):
            ft.add_column(c, justify="left" if c == "configuration" else "right")
        for i in np.unique(np.linspace(0, len(front) - 1, min(len(front), 8)).round().astype(int)):
            f = front[int(i)]
            unit = f["layout"] if not f["prefill_replicas"] else \
                f"{f['prefill_replicas']}P+{f['decode_replicas']}D x ({f['layout']})"
            ft.add_row(unit, str(f["concurrency"]), fmt(x, f[x]), fmt(y, f[y]))
        console.print(ft)
    console.print(f"evaluated {res.evaluated:,} configurations ({res.layouts:,} layouts x concurrency), "
                  f"{int(np.count_nonzero(res.feasible)):,} meet the constraints, in {res.elapsed_s:.2f} s "
                  f"({res.backend})", highlight=False)
    if res.skipped:
        console.print("skipped: " + "; ".join(f"{k}: {v:,}" for k, v in res.skipped.items()), highlight=False)
    for n in res.notes:
        console.print(f"note: {n}", highlight=False)
