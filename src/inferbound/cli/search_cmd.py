"""``inferbound search``: sweep GPUs, layouts, dtypes and concurrency; rank, explain, plot, emit launch commands."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.table import Table
from rich.text import Text

from ..faces.options import ENGINE, LENGTHS, SEARCH, SEARCH_OUTPUT
from ..faces.options import MAX_SEARCH_GPUS
from .common import console, err_console, labelled, print_json, warn
from .output import Writes, check_file
from .params import LONG_CONTEXT_FLAG, command


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
         SEARCH, LENGTHS, ENGINE, SEARCH_OUTPUT)
def search(o: dict) -> None:
    from ..faces.api import search as run_search  # the typed search: one path for the CLI and the Python API
    from ..faces.groups import SearchQuery
    from ..search import emit_command
    pair = _pair(o["pareto"])
    plot, html, csv = (check_file(o[k], f"--{k}", suffix) for k, suffix in  # checked before the sweep, not after it
                       (("plot", ".png"), ("html", ".html"), ("csv", ".csv")))
    check_max_gpus(o["max_gpus"], o["no_cap"])
    engine, emit = o["engine"], o["emit"]
    if emit is not None and engine is not None and engine.split("@")[0] != emit:
        raise ValueError(f"--emit={emit!r} differs from --engine={engine!r}: the launch command must be the engine "
                         f"the search modelled; allowed: the same engine, or --emit alone")
    # the typed query (faces/groups.py) of the parsed options; the search models the --emit engine when no
    # --engine is given
    query = SearchQuery.pick({**o, "engine": engine or emit})
    run = dict(backend=o["backend"], ray_address=o["ray_address"], workers=o["workers"],
               on_size=size_check(o["max_gpus"], o["no_cap"]),  # refused over the memory budget, before the sweep
               long_context_flag=LONG_CONTEXT_FLAG)
    res = run_search(o["model"], query, **run) if o["json"] else _with_progress(o["model"], query, run)
    pairs = [res.default_frontier] + ([pair] if pair and pair != tuple(res.default_frontier) else [])
    emit_rank = o["emit_rank"]
    if not 1 <= emit_rank <= len(res.table):
        raise ValueError(f"--emit-rank={emit_rank} must be between 1 and {len(res.table)} (rows of the table)")
    launch = emit_command(emit, res.model, res.table[emit_rank - 1]) if emit else None
    files = _write_files(res, pairs, plot, html, csv)  # a write that fails: the result first, then the error
    written = files.written
    if o["json"]:
        out = res.to_dict(pairs)
        warnings = out.pop("warnings", None)  # last, after what the CLI adds
        out["files"] = [str(p) for p in written]
        if launch is not None:
            out["launch_command"] = {"engine": emit, "rank": emit_rank, "text": launch}
        if warnings:
            out["warnings"] = warnings
        print_json(out)
        return files.finish()
    show(res, pairs)
    for w in res.warnings:  # a long context allowed (faces/api.py)
        warn(w)
    for p in written:
        console.print(f"wrote {p}", highlight=False)
    if launch is not None:
        console.print(launch, highlight=False, markup=False, soft_wrap=True)
    files.finish()


def check_max_gpus(max_gpus: int | None, no_cap: bool) -> None:
    """The JSON API's cap on the largest layout (options.MAX_SEARCH_GPUS), on the CLI unless --no-cap."""
    if max_gpus is not None and max_gpus > MAX_SEARCH_GPUS and not no_cap:
        raise ValueError(f"max_gpus={max_gpus} exceeds the cap of {MAX_SEARCH_GPUS} GPUs per layout (one NVL72 rack, "
                         f"the JSON API's cap); allowed: 1..{MAX_SEARCH_GPUS}, or --no-cap to lift it")


def size_check(max_gpus: int | None, no_cap: bool):
    """search's ``on_size``: a search estimated over the memory budget (data/search.yaml limits) refused in
    one line unless --no-cap; the estimate of a large one printed to stderr before it starts."""
    def check(size) -> None:
        if size.over_budget and not no_cap:
            from ..search.space import search_limits
            raise ValueError(f"max_gpus={max_gpus}: this search is estimated at {size.describe()}, over the "
                             f"budget of {float(search_limits()['memory_budget_gb']):g} GB (data/search.yaml "
                             f"limits.memory_budget_gb); allowed: fewer --gpus, a smaller --max-gpus, one serving "
                             f"mode or no --all-layouts, or --no-cap to run it anyway")
        if size.worth_announcing:
            err_console.print(labelled("search size (estimate):", "bold", size.describe()), highlight=False,
                              soft_wrap=True)
    return check


def _with_progress(model: str, query, run: dict):
    from ..faces.api import search as run_search
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("searching layouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=True, console=console)
    task = bar.add_task("layouts", total=None)
    started = []

    def on_size(size) -> None:  # the space is built: the bar starts once the checks before the sweep have passed
        run["on_size"](size)
        bar.start()
        started.append(True)
    try:
        return run_search(model, query, **{**run, "on_size": on_size},
                          progress=lambda done, total: bar.update(task, completed=done, total=total))
    finally:
        if started:  # (stopping a bar that never started still prints a line)
            bar.stop()


def _write_files(res, pairs, plot: Path | None, html: Path | None, csv: Path | None) -> Writes:
    from ..search.plot import plot_html, plot_png
    files = Writes()
    files.write("--plot", plot, lambda p: plot_png(res, p, pairs))
    files.write("--html", html, lambda p: plot_html(res, p, pairs))
    files.write("--csv", csv, lambda p: p.write_text(res.to_csv()))
    return files


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
