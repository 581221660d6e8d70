"""Simulator speed: 10,000 requests of Llama-3.1-70B on 4x H100 SXM (TP4) at 8 requests/s.

Workload choices: Poisson arrivals at 8 req/s, seed 0, every prompt 1024 tokens and every output 256
tokens (the estimate command's defaults), engine defaults from data/serving.yaml (block 16, budget
8192 tokens, 256 sequences, recompute preemption). Target: under 5 s of wall time on a 2-core machine.

Run: .venv/bin/python benchmarks/bench_simulate.py [REQUESTS]
Prints the wall time (deployment set-up, step-model tables and the simulation itself), simulated
requests per wall second, simulated steps per wall second, and the main metrics.
"""
from __future__ import annotations

import sys
import time

from inferbound.deploy.deployment import make_deployment
from inferbound.sim import simulate

MODEL, GPU, TP, RATE, INPUT, OUTPUT = "meta-llama/Llama-3.1-70B", "h100_sxm", 4, 8.0, 1024, 256
TARGET_S = 5.0


def main(requests: int = 10_000) -> float:
    t0 = time.perf_counter()
    dep = make_deployment(model=MODEL, gpu=GPU, tp=TP)
    res = simulate(dep, rate=RATE, requests=requests, input_len=INPUT, output_len=OUTPUT, seed=0)
    wall = time.perf_counter() - t0
    s = res.summary
    print(f"{requests:,} requests of {MODEL} on {dep.label()} at {RATE:g} req/s, {INPUT} in / {OUTPUT} out")
    print(f"wall time           {wall:8.2f} s   (target < {TARGET_S:g} s: {'met' if wall < TARGET_S else 'MISSED'})")
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
    main(*(int(a) for a in sys.argv[1:]))
