"""``inferbound search``: sweep GPUs, layouts, dtypes and concurrency; rank, explain, plot, emit launch commands."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.table import Table
from rich.text import Text

from ..faces.options import BACKENDS, ENGINE, ENGINE_NAMES as ENGINES, LENGTHS, SEARCH, Opt, engine_options
from .common import console, labelled, print_json, warn, writable_file
from .params import command

OUTPUT = (Opt("pareto", "str", None, "another frontier X,Y: tokens_per_joule,ttft_ms"),
          Opt("plot", "path1", None, "write the frontier(s) to FILE.png"),
          Opt("html", "path1", None, "write the frontier(s) to an offline FILE.html"),
          Opt("csv", "path1", None, "write the ranked table to FILE.csv"),
          Opt("emit", "str", None, "print a launch command for this engine (the search then models it)",
              choices=ENGINES),
          Opt("emit_rank", "int", 1, "row whose launch command --emit prints", ge=1),
          Opt("backend", "str", "local", "where layouts are evaluated", choices=BACKENDS),
          Opt("ray_address", "str", None, "Ray cluster (default: a local one)"),
          Opt("workers", "int", None, "processes of the local backend (default: this machine's CPUs)", ge=1),
          Opt("gpu_set", "kv", None, "override a field of every searched GPU, KEY=VALUE (SI units)"),
          Opt("gpu_file", "path", None, "extra hardware YAML file(s)"),
          Opt("json", "bool", False, "print JSON instead of tables"))


def _lengths(o: dict):
    from ..workloads.lengths import from_options  # late: the CLI imports the library lazily
    return from_options(o)


def _pair(text: str | None) -> tuple[str, str] | None:
    from ..search import SENSE
    if text is None:
        return None
    parts = [x.strip() for x in text.split(",")]
    if len(parts) != 2 or any(p not in SENSE for p in parts):
        raise ValueError(f"--pareto={text!r} must name two figures X,Y; allowed: {', '.join(SENSE)}")
    return parts[0], parts[1]


@command("search", "Search GPU types, GPU counts, TP/PP/EP layouts, dtypes, concurrency and prefill/decode "
                   "disaggregation for the best deployment under SLOs and budgets, under one serving engine "
                   "(--engine, default the engines.yaml default): ranked table, why the winner wins, Pareto frontiers.",
         SEARCH, LENGTHS, ENGINE, OUTPUT)
def search(o: dict) -> None:
    from ..search import emit_command, search as run_search
    pair = _pair(o["pareto"])
    for field, path, suffix in (("--plot", o["plot"], ".png"), ("--html", o["html"], ".html"), ("--csv", o["csv"], ".csv")):
        writable_file(path, field, suffix)  # suffix and folder checked before the sweep
    engine, emit = o["engine"], o["emit"]
    if engine is not None:
        from ..deploy.runtime import profile_of
        profile_of(engine)  # an unknown engine or version: one line now, not after the sweep
    if emit is not None and engine is not None and engine.split("@")[0] != emit:
        raise ValueError(f"--emit={emit!r} differs from --engine={engine!r}: the launch command must be the engine "
                         f"the search modelled; allowed: the same engine, or --emit alone")
    kwargs = dict(gpus=o["gpus"], max_gpus=o["max_gpus"], objective=o["objective"], slo_ttft_ms=o["slo_ttft_ms"],
                  slo_tpot_ms=o["slo_tpot_ms"], slo_e2e_ms=o["slo_e2e_ms"],
                  max_dollars_per_hour=o["max_dollars_per_hour"], max_watts=o["max_watts"],
                  max_total_gpus=o["max_total_gpus"], target_rate=o["target_rate"], input_len=o["input_len"],
                  output_len=o["output_len"], disaggregated="both" if o["both_modes"] else o["disaggregated"],
                  backend=o["backend"], ray_address=o["ray_address"], workers=o["workers"], calibration=o["calibration"],
                  dtypes=o["dtypes"], all_layouts=o["all_layouts"], top=o["top"], engine=engine or emit,
                  engine_options=engine_options(o), gpu_overrides=o["gpu_set"], gpu_files=o["gpu_file"],
                  prices=o["prices"],
                  lengths=_lengths(o), gpu_scale=o["gpu_scale"])
    from ..deploy.contextlen import context_note
    from ..model import load_model
    model = load_model(o["model"])  # input_len + output_len checked against its context before the sweep
    long_context = None if kwargs["lengths"] is not None else \
        context_note(model, o["input_len"], o["output_len"], o["allow_long_context"])  # a mix: its lengths vary
    res = run_search(model, **kwargs) if o["json"] else _with_progress(model, kwargs)
    pairs = [res.default_frontier] + ([pair] if pair and pair != tuple(res.default_frontier) else [])
    emit_rank = o["emit_rank"]
    if not 1 <= emit_rank <= len(res.table):
        raise ValueError(f"--emit-rank={emit_rank} must be between 1 and {len(res.table)} (rows of the table)")
    launch = emit_command(emit, res.model, res.table[emit_rank - 1]) if emit else None
    written = _write_files(res, pairs, o["plot"], o["html"], o["csv"])
    if o["json"]:
        out = res.to_dict(pairs)
        out["files"] = [str(p) for p in written]
        if launch is not None:
            out["launch_command"] = {"engine": emit, "rank": emit_rank, "text": launch}
        if long_context:
            out["warnings"] = [*out.get("warnings", []), long_context]
        return print_json(out)
    show(res, pairs)
    if long_context:
        warn(long_context)
    for p in written:
        console.print(f"wrote {p}", highlight=False)
    if launch is not None:
        console.print(launch, highlight=False, markup=False, soft_wrap=True)


def _with_progress(model: str, kwargs: dict):
    from ..search import search as run_search
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("searching layouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True, console=console) as bar:
        task = bar.add_task("layouts", total=None)
        return run_search(model, progress=lambda done, total: bar.update(task, completed=done, total=total),
                          **kwargs)


def _write_files(res, pairs, plot: Path | None, html: Path | None, csv: Path | None) -> list[Path]:
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


def show(res, pairs) -> None:
    from ..search.result import fmt, unit_label
    w = res.workload
    slo = ", ".join(c.label for c in res.constraints) or "none"
    console.print(f"engine: {res.engine}", highlight=False)
    t = Table(title=Text(f"{res.model}: best deployments for {res.objective} ({w.input_len} in / {w.output_len} out, "
                    f"{' + '.join(res.modes)}; constraints: {slo})"))
    heads = dict((k, h) for h, k in COLUMNS) | {"gpus_for_rate": "GPUs for rate"}
    for c in ("#", "configuration", "conc.", heads[res.objective], *(h for h, k in COLUMNS if k != res.objective),
              "stops at", "bound"):
        t.add_column(c, justify="left" if c in ("configuration", "stops at", "bound") else "right")
    for r in res.table:
        fleet = f" x{r.replicas}" if r.replicas > 1 else ""
        t.add_row(str(r.rank), unit_label(r) + fleet, str(r.concurrency), _n(r.objective_value),
                  *(_n(r.metrics.get(k)) for h, k in COLUMNS if k != res.objective), r.limit, r.bound)
    console.print(t)
    console.print(labelled("Why:", "bold", res.winner_reason), highlight=False)
    for x, y in pairs:
        front = res.frontier(x, y)
        ft = Table(title=Text(f"Pareto frontier: {y} vs {x} ({len(front):,} points; a sample shown)"))
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
