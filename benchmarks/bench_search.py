"""Search speed: the default full search of Llama-3.1-70B over the whole catalog, and configurations/s.

Workload: the search defaults (1024 in / 256 out, token budget 8192, objective tok/s per GPU, every
catalog GPU, 1-8 GPUs, bf16/fp8/int4/fp4 where native, default calibration). A *configuration* is one
(layout, concurrency) pair with every figure (TTFT, TPOT, e2e, tok/s per GPU and per user, tok/J,
$/M tokens) computed; the count is the search's ``evaluated``.

Targets (2-core machine): default full search under 2 s of wall time in a fresh process (cold: every
step-model table built), and >= 200,000 configurations evaluated per second.

Reported:
- cold: first search in this process (catalog parsed, every step-model table priced);
- warm: the same search again (step-model tables memoized by search/evaluate.py);
- formulas only: the vectorized evaluation of every layout with its tables already built, i.e. the
  rate of the numpy formulas themselves.
Each line also gives the process CPU seconds: the search is single-threaded, so on a loaded machine
(other processes sharing the cores) CPU time is what the wall time would be on an idle one.

Run: .venv/bin/python benchmarks/bench_search.py [--no-plot]
Writes docs/img/search_frontier.png (frontier of the default search) unless --no-plot.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

MODEL = "meta-llama/Llama-3.1-70B"
TARGET_S, TARGET_RATE = 2.0, 200_000
IMG = Path(__file__).resolve().parents[1] / "docs" / "img" / "search_frontier.png"


def main(plot: bool = True) -> None:
    t0 = time.perf_counter()
    from inferbound.search import search
    from inferbound.search.backends import evaluate_all
    from inferbound.search.space import build_space, resolve_gpus
    from inferbound.model import load_model
    imported = time.perf_counter() - t0

    t0, c0 = time.perf_counter(), time.process_time()
    res = search(MODEL)
    cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    again = search(MODEL)
    warm, warm_cpu = time.perf_counter() - t0, time.process_time() - c0
    assert [r.to_dict() for r in again.table] == [r.to_dict() for r in res.table]

    space = build_space(load_model(MODEL), resolve_gpus(None), 8)
    t0, c0 = time.perf_counter(), time.process_time()
    evaluate_all(space.deployments, res.workload)
    formulas, formulas_cpu = time.perf_counter() - t0, time.process_time() - c0

    n = res.evaluated
    print(f"default search: {MODEL}, whole catalog, 1-8 GPUs, {res.workload.input_len} in / "
          f"{res.workload.output_len} out, objective {res.objective}")
    print(f"layouts evaluated    {res.layouts:10,}   (skipped: {sum(res.skipped.values()):,}, by reason below)")
    print(f"configurations       {n:10,}   (layout x concurrency 1..D_max)")
    print(f"import               {imported:10.2f} s")
    print(f"cold wall time       {cold:10.2f} s   (target < {TARGET_S:g} s: {'met' if cold < TARGET_S else 'MISSED'})"
          f"   {n / cold:12,.0f} configurations/s   cpu {cold_cpu:.2f} s")
    print(f"warm wall time       {warm:10.2f} s   {n / warm:25,.0f} configurations/s   cpu {warm_cpu:.2f} s")
    print(f"formulas only        {formulas:10.2f} s   {n / formulas:25,.0f} configurations/s   cpu {formulas_cpu:.2f} s")
    rate = n / cold
    print(f"configurations/s (cold, end to end): {rate:,.0f} (target >= {TARGET_RATE:,}: "
          f"{'met' if rate >= TARGET_RATE else 'MISSED'})")
    for reason, count in res.skipped.items():
        print(f"  skipped {count:6,}  {reason}")
    print(f"winner: {res.winner_reason}")
    if plot:
        from inferbound.search.plot import plot_png
        IMG.parent.mkdir(parents=True, exist_ok=True)
        plot_png(res, IMG)
        print(f"wrote {IMG}")


if __name__ == "__main__":
    main(plot="--no-plot" not in sys.argv[1:])
