"""Simulator speed: REQUESTS requests of Llama-3.1-70B on 4x H100 SXM (TP4) at 8 requests/s.

Workload choices: Poisson arrivals at 8 req/s, seed 0, every prompt 1024 tokens and every output 256
tokens (the estimate command's defaults), engine defaults from data/serving.yaml (block 16, budget
8192 tokens, 256 sequences, recompute preemption). Targets (issue 18, "Speed"): 10,000 requests in
<= 0.5 s, 1,000,000 requests in <= 60 s and <= 2 GB peak memory (resident set, GB = 1e9 bytes).

Run: .venv/bin/python benchmarks/bench_simulate.py [REQUESTS] [--step-by-step] [--both] [--repeat=N]
Prints the wall time (deployment set-up, step-model tables and the simulation itself), the process's
CPU time over the same span (the machine is shared: wall time includes waiting for a core), simulated
requests and steps per wall second, peak resident memory and the main metrics. ``--step-by-step`` plans
every step one by one (``SimConfig.decode_runs`` off: the reference path); ``--both`` runs the
reference and the default (runs of decode-only steps at once, sim/decode_run.py) side by side.
``--repeat=N`` runs it N times in this process and prints the fastest wall and CPU times too (on a
shared machine the minimum is the least disturbed run; later runs reuse the step model's cached
operator lists, a few ms).
"""
from __future__ import annotations

import resource
import sys
import time
from dataclasses import replace

import inferbound.sim as sim
from inferbound.deploy.deployment import make_deployment

MODEL, GPU, TP, RATE, INPUT, OUTPUT = "meta-llama/Llama-3.1-70B", "h100_sxm", 4, 8.0, 1024, 256
TARGETS_S = {10_000: 0.5, 1_000_000: 60.0}
TARGET_PEAK_GB = 2.0  # for 1,000,000 requests


def main(requests: int = 10_000, decode_runs: bool = True, repeat: int = 1) -> float:
    real = sim.sim_config
    sim.sim_config = lambda *a, **k: replace(real(*a, **k), decode_runs=decode_runs)
    walls, cpus = [], []
    try:
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            dep = make_deployment(model=MODEL, gpu=GPU, tp=TP)
            res = sim.simulate(dep, rate=RATE, requests=requests, input_len=INPUT, output_len=OUTPUT, seed=0)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    finally:
        sim.sim_config = real
    wall, cpu = walls[0], cpus[0]
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1e3 / 1e9  # ru_maxrss: KiB on Linux
    s = res.summary
    path = "runs of decode-only steps" if decode_runs else "step by step"
    target = TARGETS_S.get(requests)
    verdict = "" if target is None else f"   (target <= {target:g} s: {'met' if wall <= target else 'MISSED'})"
    print(f"{requests:,} requests of {MODEL} on {dep.label()} at {RATE:g} req/s, {INPUT} in / {OUTPUT} out, {path}")
    print(f"wall time           {wall:8.2f} s{verdict}")
    print(f"CPU time            {cpu:8.2f} s   (this process, same span)")
    if repeat > 1:
        print(f"fastest of {repeat}       {min(walls):8.2f} s wall, {min(cpus):.2f} s CPU   (CPU each: "
              + ", ".join(f"{c:.2f}" for c in cpus) + ")")
    print(f"peak memory         {peak_gb:8.2f} GB  (resident, 1e9 bytes"
          + (f"; target <= {TARGET_PEAK_GB:g} GB: {'met' if peak_gb <= TARGET_PEAK_GB else 'MISSED'})"
             if requests >= 1_000_000 else ")"))
    print(f"simulated req/s     {requests / wall:8.0f}   (requests / wall time)")
    print(f"simulated steps/s   {s['steps'] / wall:8.0f}   ({s['steps']:,} steps)")
    print(f"simulated span      {s['duration_s']:8.1f} s   completed {s['completed']:,}, preemptions {s['preemptions']}")
    print(f"TTFT ms  mean/p50/p99  {s['ttft_ms_mean']:.1f} / {s['ttft_ms_p50']:.1f} / {s['ttft_ms_p99']:.1f}")
    print(f"ITL ms   mean/p50/p99  {s['itl_ms_mean']:.2f} / {s['itl_ms_p50']:.2f} / {s['itl_ms_p99']:.2f}")
    print(f"TPOT ms  p50/p99       {s['tpot_ms_p50']:.2f} / {s['tpot_ms_p99']:.2f}")
    print(f"E2E ms   p50/p99       {s['e2e_ms_p50']:.0f} / {s['e2e_ms_p99']:.0f}")
    print(f"output tok/s {s['output_tok_s']:,.0f} ({s['output_tok_s_per_gpu']:,.0f} per GPU), mean batch "
          f"{s['mean_running']:.1f}, KV use max {s['max_kv_use']:.0%}")
    print(f"energy {s['joules_per_output_token']:.3f} J/output token, {s['average_power_w']:,.0f} W average, "
          f"${s['usd_per_million_output_tokens']:.2f} per M output tokens")
    return wall


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 10_000
    reps = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--repeat=")), 1)
    if reps < 1:
        sys.exit(f"--repeat={reps}: must be >= 1")
    if "--both" in sys.argv:
        main(n, decode_runs=False, repeat=reps)
        print()
        main(n, decode_runs=True, repeat=reps)
    else:
        main(n, decode_runs="--step-by-step" not in sys.argv, repeat=reps)
