"""Speed of ``workloads.steady_state.prompt_steps``: the steps that carry one long prompt, chunk by chunk.

The smoke sweep (task P1) found ``inferbound estimate llama-3.1-8b --input 131072 --token-budget 1 --scenario
serving --rate 0.1 --allow-long-context`` running for about an hour: prompt_steps priced one chunk per
Python iteration (131,072 iterations per call, ~0.6 ms each, tens of calls), and ``--token-budget 64`` took 9 s.
Now the full chunks of every row are priced as one array over (D, chunk index) (``PROMPT_CELLS`` cells per
call) and the partial chunk once.

Cases, each on Llama-3.1-8B on one h100_sxm (vLLM 0.33 defaults but the token budget B), one prompt of
I = 131,072 tokens beside D decodes at a mean context of 5,000 tokens, chunks of max(B − D, 1) tokens:
- ``B=64, 48 rows``: D over 48 values in [0.001, 0.9] (the serving solver's bracket): 2,048 full chunks
  a row; the chunk-by-chunk loop (the reference, written out below) beside the vectorized path;
- ``B=1, 48 rows``: 131,072 chunks a row, the vectorized path only (the loop takes ~80 s a call here);
- the CLI command above, end to end (``--token-budget 1`` and ``64``): wall time of ``estimate``.

Run: .venv/bin/python benchmarks/bench_prompt_steps.py [--no-cli]
Prints wall and CPU seconds (the machine is shared: wall includes waiting for a core), cells priced per
CPU second, peak resident memory (GB = 1e9 bytes) and whether the loop and the vectorized path agree
exactly (they must: tests/test_prompt_steps.py).
"""
from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from inferbound.deploy.deployment import make_deployment
from inferbound.pricing.energy import power_w
from inferbound.step.contract import uniform
from inferbound.step.table import StepModel
from inferbound.workloads import steady_state
from inferbound.workloads.max_throughput import MAX_THROUGHPUT_GRID

PROMPT, CONTEXT, ROWS = 131072.0, 5000.0, 48


def loop_steps(sm, decode, context, chunk, prompt, cached=0.0):
    """The reference: one step priced per Python iteration (prompt_steps before task P1, no features)."""
    dec = np.asarray(decode, dtype=float)
    rest = np.full(np.broadcast(dec, chunk).shape, float(prompt))
    past = np.full_like(rest, float(cached))
    secs, joules = np.zeros_like(rest), np.zeros_like(rest)
    dep = sm.dep
    while np.any(rest > 0):
        c = np.minimum(chunk, rest)
        on = c > 0
        cost = sm.price(uniform(dep.model, decode=dec, context=context, prompts=on.astype(float), new=c, past=past))
        watts = power_w(dep.gpu, dep.compute_dtype, cost.flops, cost.bytes, cost.time)
        secs += np.where(on, cost.time, 0.0)
        joules += np.where(on, cost.time * watts, 0.0)
        past, rest = past + c, rest - c
    return secs, joules


def timed(fn, *args):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


def case(budget: int, with_loop: bool) -> None:
    dep = make_deployment("llama-3.1-8b", "h100_sxm", engine_options={"token_budget": budget})
    sm = StepModel(dep, budget + 1, grid_points=MAX_THROUGHPUT_GRID)
    dec = np.linspace(0.001, 0.9, ROWS)
    chunk = np.maximum(budget - dec, 1.0)
    cells = float(np.sum(np.ceil(PROMPT / chunk)))
    (s, j), wall, cpu = timed(steady_state.prompt_steps, sm, dec, CONTEXT, chunk, PROMPT)
    print(f"B={budget:<3d} {ROWS} rows, {cells:,.0f} chunks: vectorized {wall:6.2f} s wall {cpu:6.2f} s CPU "
          f"({cells / cpu:,.0f} cells per CPU s); prefill of row 0 {s[0]:.4f} s, {j[0]:.1f} J")
    if with_loop:
        (s0, j0), wall0, cpu0 = timed(loop_steps, sm, dec, CONTEXT, chunk, PROMPT)
        same = np.array_equal(s0, s) and np.array_equal(j0, j)
        print(f"      loop {wall0:6.2f} s wall {cpu0:6.2f} s CPU: {cpu0 / cpu:.0f}x the CPU; equal floats: {same}")


def cli(budget: int) -> None:
    cmd = [str(Path(sys.executable).with_name("inferbound")), "estimate", "llama-3.1-8b", "--input", "131072",
           "--token-budget", str(budget), "--scenario", "serving", "--rate", "0.1", "--allow-long-context"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    last = (r.stderr or r.stdout).strip().splitlines()[-1] if (r.stderr or r.stdout).strip() else ""
    print(f"CLI --token-budget {budget}: {time.perf_counter() - t0:.1f} s wall, exit {r.returncode}: {last[:110]}")


def main(argv: list[str]) -> None:
    print(f"PROMPT_CELLS = {steady_state.PROMPT_CELLS}")
    case(64, with_loop=True)
    case(1, with_loop=False)
    print(f"peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9:.2f} GB")
    if "--no-cli" not in argv:
        cli(64)
        cli(1)


if __name__ == "__main__":
    main(sys.argv[1:])
