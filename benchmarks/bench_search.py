"""Search speed: the default full search of Llama-3.1-70B over the whole catalog, and configurations/s.

Workload: the search defaults (1024 in / 256 out, token budget 8192, objective tok/s per GPU, every
catalog GPU, 1-8 GPUs, bf16/fp8/int4/fp4 where native, default calibration). A *configuration* is one
(layout, concurrency) pair with every figure (TTFT, TPOT, e2e, tok/s per GPU and per user, tok/J,
$/M tokens) computed; the count is the search's ``evaluated``.

Targets ("untie the core" issue, 2-core machine): >= 1,000,000 configurations evaluated per second cold
(every step-model table built), and a peak memory of the CLI search <= 4 GB (a fresh ``inferbound search``
process, its maximum resident set). The cold CLI search against one cold CLI estimate (<= 1.5x) is
benchmarks/bench_engine.py's.

Reported:
- cold: first search in this process (catalog parsed, every step-model table priced), on the local
  backend's default worker processes (data/search.yaml ``local``: this machine's CPUs);
- cold, one process: the same in a fresh process with ``workers=1``;
- warm: the same search again (step-model tables memoized by search/evaluate.py; forked workers
  inherit this process's tables but do not hand theirs back, so the warm figure is one process's);
- formulas only: the vectorized evaluation of every layout with its tables already built, i.e. the
  rate of the numpy formulas themselves (one process).
Each line also gives the CPU seconds of this process and its finished workers: on a loaded machine
(other processes sharing the cores) CPU time says what the work costs.

Run: .venv/bin/python benchmarks/bench_search.py [--no-plot]
Writes docs/img/search_frontier.png (frontier of the default search) unless --no-plot.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

MODEL = "meta-llama/Llama-3.1-70B"
TARGET_S, TARGET_RATE, TARGET_GB = 2.0, 1_000_000, 4.0
IMG = Path(__file__).resolve().parents[1] / "docs" / "img" / "search_frontier.png"


SERIAL = ("import time;from inferbound.search import search;t=time.perf_counter();"
          f"search({MODEL!r}, workers=1);print(time.perf_counter()-t)")


def cpu() -> float:
    """CPU seconds of this process and of its finished (joined) children: the forked workers."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main(plot: bool = True) -> None:
    t0 = time.perf_counter()
    from inferbound.search import search
    from inferbound.search.backends import evaluate_all
    from inferbound.search.space import build_space, resolve_gpus
    from inferbound.model import load_model
    imported = time.perf_counter() - t0

    from inferbound.search.backends import local_workers
    t0, c0 = time.perf_counter(), cpu()
    res = search(MODEL)
    cold, cold_cpu = time.perf_counter() - t0, cpu() - c0
    workers = local_workers(res.layouts)
    serial = float(subprocess.run([sys.executable, "-c", SERIAL], check=True, capture_output=True,
                                  text=True).stdout.split()[-1])
    search(MODEL, workers=1)  # this process's own tables (the workers keep theirs)
    t0, c0 = time.perf_counter(), cpu()
    again = search(MODEL, workers=1)
    warm, warm_cpu = time.perf_counter() - t0, cpu() - c0
    assert [r.to_dict() for r in again.table] == [r.to_dict() for r in res.table]

    space = build_space(load_model(MODEL), resolve_gpus(None), 8)
    t0, c0 = time.perf_counter(), cpu()
    evaluate_all(space.deployments, res.workload, workers=1)
    formulas, formulas_cpu = time.perf_counter() - t0, cpu() - c0

    n = res.evaluated
    print(f"default search: {MODEL}, whole catalog, 1-8 GPUs, {res.workload.input_len} in / "
          f"{res.workload.output_len} out, objective {res.objective}")
    print(f"layouts evaluated    {res.layouts:10,}   (skipped: {sum(res.skipped.values()):,}, by reason below)")
    print(f"configurations       {n:10,}   (layout x concurrency 1..D_max)")
    print(f"import               {imported:10.2f} s")
    print(f"cold wall time       {cold:10.2f} s   (target < {TARGET_S:g} s: {'met' if cold < TARGET_S else 'MISSED'})"
          f"   {n / cold:12,.0f} configurations/s   cpu {cold_cpu:.2f} s   ({workers} worker process(es))")
    print(f"cold, one process    {serial:10.2f} s   {n / serial:25,.0f} configurations/s")
    print(f"warm wall time       {warm:10.2f} s   {n / warm:25,.0f} configurations/s   cpu {warm_cpu:.2f} s")
    print(f"formulas only        {formulas:10.2f} s   {n / formulas:25,.0f} configurations/s   cpu {formulas_cpu:.2f} s")
    rate = n / cold
    print(f"configurations/s (cold, end to end): {rate:,.0f} (target >= {TARGET_RATE:,}: "
          f"{'met' if rate >= TARGET_RATE else 'MISSED'})")
    for reason, count in res.skipped.items():
        print(f"  skipped {count:6,}  {reason}")
    print(f"winner: {res.winner_reason}")
    cli = Path(sys.executable).parent / "inferbound"
    subprocess.run([str(cli), "search", MODEL], check=True, capture_output=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e9
    print(f"peak memory of a CLI search process {peak:.2f} GB (the largest child so far; target <= {TARGET_GB:g} GB: "
          f"{'met' if peak <= TARGET_GB else 'MISSED'})")
    if plot:
        from inferbound.search.plot import plot_png
        IMG.parent.mkdir(parents=True, exist_ok=True)
        plot_png(res, IMG)
        print(f"wrote {IMG}")


if __name__ == "__main__":
    main(plot="--no-plot" not in sys.argv[1:])
