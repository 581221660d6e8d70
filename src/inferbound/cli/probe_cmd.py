"""``inferbound probe``: measure this machine, write its hardware entry and rows, score the predictions."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from ..faces.options import PROBE, by_name
from ..probe import TORCH_MISSING, torch_available
from . import app
from .common import console, err_console, parse_sets, print_json, run, warn
from .output import check_folder
from .params import annotation, declared

P = by_name(PROBE)  # the declared options of probe (faces/options.py)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1%}"


@app.command("probe")
@declared
def probe(model: annotation(P["model"]), set: annotation(P["model_overrides"]), quick: annotation(P["quick"]),
          out: annotation(P["out"]), dtype: annotation(P["dtype"]), threads: annotation(P["threads"]),
          json: annotation(P["json"])) -> None:
    """Measure this machine (matmul FLOP/s, bandwidth, a real prefill/decode of a model with random
    weights) and score the predictions made from the measured hardware entry (gpu id `local`)."""
    if not torch_available():
        err_console.print(f"error: {TORCH_MISSING}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)

    def body() -> None:
        from ..probe import probe as run_probe
        # arguments checked before any measurement (the probe's own checks of dtype, threads and the
        # model also come before its first benchmark)
        if threads is not None and threads < 1:
            raise ValueError(f"threads={threads} must be an integer >= 1 (CPU threads)")
        folder = check_folder(out, "--out")  # a folder files can be written into, or created, before measuring
        try:
            result = run_probe(model=model, quick=quick, out_dir=folder, overrides=parse_sets(set, "--set"),
                               dtype=dtype, threads=threads)
        except OSError as e:  # the files are written after the measurements, and scored from what was written
            if e.filename is None or not Path(e.filename).expanduser().is_relative_to(folder):
                raise
            raise ValueError(f"--out={str(out)!r}: could not write {str(e.filename)!r}: {e.strerror or e} (after "
                             f"the measurements: the predictions are scored from these files, so there is no "
                             f"result to show)") from None
        if json:
            return print_json(result.to_dict())
        show(result)
    run(body)


def show(r) -> None:
    """Tables: microbenchmarks, rows measured vs predicted, no-KV-cache steps, memory-bound and slope checks."""
    d = r.device
    console.print(f"{d['name']} ({d['kind']}, {d['threads']} threads, PyTorch {d['torch_version']}); "
                  f"model {r.model['name']} ({r.model['layers']} layers, {r.model['params'] / 1e6:,.1f} M params) "
                  f"in {r.model['dtype']}; {r.elapsed_s:.1f} s", highlight=False, markup=False)
    t = Table(title="Microbenchmarks (best of runs)")
    for c in ("what", "dtype", "shape / size", "seconds", "rate"):
        t.add_column(c, justify="left" if c in ("what", "dtype", "shape / size") else "right")
    for m in r.matmul:
        t.add_row(f"matmul ({m['layout']})", m["dtype"], f"{m['m']}x{m['k']}x{m['n']}", f"{m['seconds']:.4g}",
                  f"{m['flop_s'] / 1e9:,.1f} GFLOP/s")
    for b in (r.bandwidth, r.read_bandwidth):
        t.add_row(f"bandwidth ({b['kind']})", "fp32", f"{b['buffer_bytes'] / 2**20:,.0f} MiB", f"{b['seconds']:.4g}",
                  f"{b['bytes_per_s'] / 1e9:,.1f} GB/s")
    t.add_row("tiny op (x.add_)", "fp32", "8 elements", f"{r.tiny_op_s:.3g}", "per call")
    o = r.overheads
    t.add_row("overhead per predictor operator", r.model["dtype"], "tiny decoder", f"{o['kernel_overhead_s']:.3g}", "")
    t.add_row("overhead per step", r.model["dtype"], "tiny decoder", f"{o['step_overhead_s']:.3g}", "")
    console.print(t)

    t = Table(title=Text(f"Measured vs predicted ({r.files['rows']}); error = (predicted - measured) / measured"))
    for c in ("case", "batch", "input", "output", "metric", "measured", "predicted", "error"):
        t.add_column(c, justify="left" if c in ("case", "metric") else "right")
    for x in r.rows:
        t.add_row(x["case"], str(x["batch"]), str(x["input_len"]), str(x["output_len"]), x["metric"],
                  f"{x['measured']:,.2f}", "n/a" if x["predicted"] is None else f"{x['predicted']:,.2f}",
                  _pct(x["error"]) if x["covered"] else x["reason"])
    console.print(t)
    for s in r.summary:
        if s["n"]:
            console.print(f"  {s['metric']:16} n={s['n']:2}  MAPE {s['mape']:6.1%}  median APE {s['median_ape']:6.1%}  "
                          f"bias {s['bias']:+6.1%}  not covered {s['not_covered']}", highlight=False)

    t = Table(title="Decode without KV cache (step j recomputes the prefix; vs estimate.no_kv_cache_decode_time)")
    for c in ("batch", "context", "measured step", "predicted step", "tok/s error", "cache speed-up meas.", "pred."):
        t.add_column(c, justify="right")
    for x in r.no_cache:
        t.add_row(str(x["batch"]), str(x["context"]), f"{x['measured_step_s'] * 1e3:,.1f} ms",
                  f"{x['predicted_step_s'] * 1e3:,.1f} ms", _pct(x["error"]),
                  "n/a" if x["measured_speedup"] is None else f"{x['measured_speedup']:,.1f}x",
                  "n/a" if x["predicted_speedup"] is None else f"{x['predicted_speedup']:,.1f}x")
    console.print(t)

    mb = r.memory_bound
    t = Table(title=f"Decode memory-bound? predicted at every setup: {'yes' if mb['all_memory_bound'] else 'NO'}")
    for c in ("batch", "context", "predicted bound", "measured step", "predicted step", "bytes/step",
              "achieved / measured bandwidth"):
        t.add_column(c, justify="right")
    for x in mb["setups"]:
        t.add_row(str(x["batch"]), str(x["context"]), x["bound"], f"{x['measured_step_s'] * 1e3:,.2f} ms",
                  f"{x['predicted_step_s'] * 1e3:,.2f} ms", f"{x['bytes_per_step'] / 1e6:,.1f} MB",
                  f"{x['achieved_fraction_of_bandwidth']:.0%}")
    console.print(t)

    t = Table(title="Decode step growth with context (s per cached token)")
    for c in ("batch", "contexts", "grows", "measured slope", "KV-read slope", "predictor slope", "measured / KV-read"):
        t.add_column(c, justify="right")
    for x in r.slope:
        t.add_row(str(x["batch"]), ", ".join(f"{c:.0f}" for c in x["contexts"]), "yes" if x["grows"] else "NO",
                  f"{x['measured_slope_s_per_token']:.3g}", f"{x['kv_read_slope_s_per_token']:.3g}",
                  f"{x['predictor_slope_s_per_token']:.3g}", f"{x['ratio_measured_to_kv_read']:.2f}")
    console.print(t)
    console.print(f"files: {r.files['hardware']}, {r.files['rows']}, {r.files['no_cache_rows']}", highlight=False,
                  markup=False)
    for w in r.warnings:
        warn(w)
