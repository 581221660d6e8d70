"""Fleet simulator speed and memory against issue 22's targets: 1,000,000 requests over 32 replicas in a
24-hour diurnal day, on 2 cores, in <= 3 minutes and <= 4 GB; growth linear in requests; a speed-up from a
second worker.

    .venv/bin/python benchmarks/bench_fleet.py                      # scaled runs + the extrapolation
    .venv/bin/python benchmarks/bench_fleet.py --sizes 1000000      # the full day (long: see the printed rate)

Each run: 32 replicas of llama-3.1-8b on one H100 (vLLM default engine), ShareGPT mean lengths, round-robin
(routed up front: the replicas run independently) or a state-reading router in windows of --refresh s. A
scaled run keeps the full day's per-replica load: N requests over N / 1e6 of a day, the diurnal period
compressed alike (mean rate 1e6 / 86400 = 11.574 req/s, peak/mean 2). Printed per run: requests, workers,
wall seconds, seconds per 1,000 requests, peak resident memory of this process and of its largest worker (GB,
1e9 bytes, ru_maxrss), the round trips, the CPU seconds of this process and of its workers (on a loaded
machine the wall time hides the split: with w workers on w free cores the wall time is about the main
process's CPU plus the workers' CPU / w, the replicas being spread evenly); then the 1,000,000-request
time extrapolated from the largest run at the largest worker count (linear in requests, as the runs show),
and from CPU time: the CPU per request between the smallest and largest runs, the set-up counted once, and the
wall time that CPU would take on as many free cores as workers (what a loaded machine's wall time hides).
"""
from __future__ import annotations

import argparse
import resource
import time

from inferbound.fleet import build, parse, run_fleet

DAY_REQUESTS = 1_000_000
DAY_S = 86400.0


def spec(n: int, router: str, refresh: float | None, replicas: int):
    duration = DAY_S * n / DAY_REQUESTS
    d = {"traffic": {"rate": {"mean": DAY_REQUESTS / DAY_S, "peak_to_mean": 2.0, "period": duration},
                     "duration": duration, "dataset": "sharegpt"},
         "pools": [{"name": "h100", "model": "llama-3.1-8b", "gpu": "h100_sxm", "replicas": replicas}],
         "router": router, "slo": {"ttft_p99_ms": 2000, "tpot_p99_ms": 100}, "seed": 0}
    if refresh is not None:
        d["router_refresh"] = refresh
    return parse(d)


def gb(kb: int) -> float:
    return kb * 1024 / 1e9  # ru_maxrss is in KiB on Linux


def one(n: int, workers: int, router: str, refresh: float | None, replicas: int) -> dict:
    s = spec(n, router, refresh, replicas)
    me0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    fr = run_fleet(s, workers=workers)
    d = build(fr)
    wall = time.perf_counter() - t0
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_me = me.ru_utime + me.ru_stime - me0.ru_utime - me0.ru_stime
    cpu_kids = kids.ru_utime + kids.ru_stime - kids0.ru_utime - kids0.ru_stime
    return {"requests": d["requests"], "workers": workers, "router": router, "wall_s": wall,
            "s_per_1k": wall / d["requests"] * 1e3, "rss_gb": gb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss),
            "worker_rss_gb": gb(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), "trips": fr.windows,
            "attainment": d["slo_attainment"], "cpu_main": cpu_me, "cpu_workers": cpu_kids}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4000,8000,16000", help="requests per run, comma-separated")
    ap.add_argument("--workers", default="1,2", help="local worker counts, comma-separated")
    ap.add_argument("--router", default="round-robin")
    ap.add_argument("--refresh", type=float, default=None, help="Δ of the in-step windows (state-reading routers)")
    ap.add_argument("--replicas", type=int, default=32)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    workers = [int(x) for x in a.workers.split(",")]
    rows = []
    print(f"{'requests':>9} {'workers':>7} {'wall s':>8} {'s/1k req':>8} {'RSS GB':>7} {'worker GB':>9} {'trips':>7} "
          f"{'attain.':>7} {'CPU s main':>10} {'CPU s workers':>13}")
    for w in workers:
        for n in sizes:
            r = one(n, w, a.router, a.refresh, a.replicas)
            rows.append(r)
            print(f"{r['requests']:>9,} {w:>7} {r['wall_s']:>8.1f} {r['s_per_1k']:>8.2f} {r['rss_gb']:>7.2f} "
                  f"{r['worker_rss_gb']:>9.2f} {r['trips']:>7} {r['attainment']:>7.4f} {r['cpu_main']:>10.1f} "
                  f"{r['cpu_workers']:>13.1f}", flush=True)
    big = max(sizes)
    by = {r["workers"]: r for r in rows
          if r["requests"] == max(x["requests"] for x in rows if x["workers"] == r["workers"])}
    if len(by) > 1:
        lo, hi = by[min(by)], by[max(by)]
        print(f"speed-up from {min(by)} to {max(by)} workers at {big:,} requests: {lo['wall_s'] / hi['wall_s']:.2f}x")
    best = by[max(by)]
    mine = [r for r in rows if r["workers"] == max(by)]
    if len(mine) > 1:
        print("linearity (s per 1k requests by size): " + ", ".join(f"{r['requests']:,}: {r['s_per_1k']:.2f}"
                                                                     for r in mine))
    est = best["s_per_1k"] * DAY_REQUESTS / 1e3
    print(f"1,000,000 requests over {a.replicas} replicas, {max(by)} workers, extrapolated: {est:,.0f} s "
          f"({est / 60:,.1f} min; target <= 180 s)")
    if len(mine) > 1:  # from CPU time, which a loaded machine does not inflate as it does wall time
        lo, hi = min(mine, key=lambda r: r["requests"]), max(mine, key=lambda r: r["requests"])
        dn = hi["requests"] - lo["requests"]
        main_per = (hi["cpu_main"] - lo["cpu_main"]) / dn  # CPU s per request, beyond the fixed set-up
        work_per = (hi["cpu_workers"] - lo["cpu_workers"]) / dn
        w = max(by)
        c_main = hi["cpu_main"] + main_per * (DAY_REQUESTS - hi["requests"])
        c_work = hi["cpu_workers"] + work_per * (DAY_REQUESTS - hi["requests"])
        free = c_main + c_work / w if w > 1 else c_main + c_work
        print(f"CPU per request beyond set-up ({lo['requests']:,} -> {hi['requests']:,}): "
              f"{(main_per + work_per) * 1e3:.3f} ms; 1,000,000 requests extrapolated: {c_main + c_work:,.0f} CPU s, "
              f"{free:,.0f} s wall on {max(w, 1)} free core(s) (main's CPU + workers' CPU / {w}; target <= 180 s)")


if __name__ == "__main__":
    main()
