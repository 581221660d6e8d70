"""``inferbound simulate``: discrete-event serving simulation (inferbound.sim) from the command line."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..deployment import make_deployment
from ..sim import simulate as run_simulation
from . import app
from .common import (Calibration, ActDtype, Ep, Gpu, GpuFile, GpuSet, Input, Json, KvDtype, Model, Nodes, NumGpus, Output, Pp,
                     Set, Tp, WeightDtype, console, parse_sets, print_json, run)

PROGRESS_ABOVE = 2000  # requests; shorter runs finish in about a second, a bar would only flicker

Rate = Annotated[float, typer.Option("--rate", help="Poisson arrival rate, requests/s ('inf': all at t=0)")]
Requests = Annotated[int, typer.Option("--requests", help="requests to simulate")]
Trace = Annotated[Path | None, typer.Option("--trace", help="CSV or JSONL trace: arrival_s (or timestamp), "
                                                            "input_len, output_len")]


@app.command("simulate")
def simulate(model: Model = "llama-3.1-8b", gpu: Gpu = "h100_sxm", num_gpus: NumGpus = None, tp: Tp = None,
             pp: Pp = 1, ep: Ep = 1, nodes: Nodes = 1,
             weight_dtype: WeightDtype = "bf16", act_dtype: ActDtype = "bf16", kv_dtype: KvDtype = None,
             rate: Rate = 1.0, requests: Requests = 1000, input: Input = 1024, output: Output = 256,
             input_dist: Annotated[str | None, typer.Option("--input-dist", help="prompt length distribution: "
                                   "fixed, uniform:LO:HI, normal:MEAN:STD, exponential[:MEAN]")] = None,
             output_dist: Annotated[str | None, typer.Option("--output-dist", help="output length distribution "
                                    "(as --input-dist)")] = None,
             trace: Trace = None, seed: Annotated[int, typer.Option("--seed", help="random seed")] = 0,
             replicas: Annotated[int | None, typer.Option("--replicas", help="aggregated replicas (default 1)")] = None,
             prefill_replicas: Annotated[int, typer.Option("--prefill-replicas", help="disaggregated: prefill replicas")] = 0,
             decode_replicas: Annotated[int, typer.Option("--decode-replicas", help="disaggregated: decode replicas")] = 0,
             preemption: Annotated[str | None, typer.Option("--preemption", help="recompute or swap "
                                                                                 "(default recompute)")] = None,
             block_size: Annotated[int | None, typer.Option("--block-size", help="KV block tokens (default 16)")] = None,
             max_batched_tokens: Annotated[int | None, typer.Option("--max-batched-tokens",
                                           help="token budget per step (default 8192)")] = None,
             max_seqs: Annotated[int | None, typer.Option("--max-seqs", help="running sequences (default 256)")] = None,
             num_blocks: Annotated[int | None, typer.Option("--num-blocks",
                                   help="KV blocks per replica (default: from memory)")] = None,
             slo_ttft_ms: Annotated[float | None, typer.Option("--slo-ttft-ms", help="goodput SLO on TTFT")] = None,
             slo_tpot_ms: Annotated[float | None, typer.Option("--slo-tpot-ms", help="goodput SLO on TPOT")] = None,
             slo_e2e_ms: Annotated[float | None, typer.Option("--slo-e2e-ms", help="goodput SLO on latency")] = None,
             plot: Annotated[Path | None, typer.Option("--plot", help="write queue/KV/TTFT plots to FILE.png")] = None,
             set: Set = None, gpu_set: GpuSet = None, gpu_file: GpuFile = None,
             calibration: Calibration = None, json: Json = False) -> None:
    """Serving simulation: arrivals, continuous batching, chunked prefill, preemption; latency percentiles,
    throughput, goodput, energy and cost."""
    def body():
        dep = make_deployment(model=model, gpu=gpu, num_gpus=num_gpus, tp=tp, pp=pp, ep=ep, nodes=nodes,
                              weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype,
                              model_overrides=parse_sets(set, "--set"),
                              gpu_overrides=parse_sets(gpu_set, "--gpu-set"), gpu_files=gpu_file,
                              calibration=calibration)
        if plot is not None and plot.suffix.lower() != ".png":
            raise ValueError(f"--plot={str(plot)!r} must end in .png")
        res = run_simulation(dep, rate=rate, requests=requests, input_len=input, output_len=output,
                             trace=trace, seed=seed, replicas=replicas, prefill_replicas=prefill_replicas,
                             decode_replicas=decode_replicas, preemption=preemption, block_size=block_size,
                             max_num_batched_tokens=max_batched_tokens, max_num_seqs=max_seqs,
                             num_blocks=num_blocks, input_dist=input_dist, output_dist=output_dist,
                             slo_ttft_ms=slo_ttft_ms, slo_tpot_ms=slo_tpot_ms, slo_e2e_ms=slo_e2e_ms,
                             progress=not json and (trace is not None or requests > PROGRESS_ABOVE))
        if plot is not None:
            from ..sim.plot import plot_run
            plot_run(res, plot)
        if json:
            return print_json(res.to_dict())
        show(res, plot)
    run(body)


def _f(v, fmt: str = ",.2f") -> str:
    return "n/a" if v is None else format(v, fmt)


def show(res, plot: Path | None) -> None:
    s = res.summary
    mode = (f"{s['prefill_replicas']} prefill + {s['decode_replicas']} decode replicas"
            if s["mode"] == "disaggregated" else f"{s['replicas']} replica(s)")
    t = Table(title=f"Simulated serving: {res.deployment.model.name} on {res.deployment.label()}, {mode}, "
                    f"{s['completed']}/{s['submitted']} requests in {s['duration_s']:,.1f} s")
    t.add_column("metric")
    for c in ("mean", "p50", "p90", "p99"):
        t.add_column(c, justify="right")
    for name, key in (("TTFT (ms)", "ttft"), ("ITL (ms)", "itl"), ("TPOT (ms)", "tpot"),
                      ("end-to-end (ms)", "e2e"), ("queue wait (ms)", "queue")):
        t.add_row(name, *(_f(s[f"{key}_ms_{q}"]) for q in ("mean", "p50", "p90", "p99")))
    console.print(t)
    u = Table(title="Throughput, load, energy, cost")
    u.add_column("metric")
    u.add_column("value", justify="right")
    rows = [("requests/s", _f(s["requests_per_s"])), ("output tok/s", _f(s["output_tok_s"], ",.1f")),
            ("output tok/s per GPU", _f(s["output_tok_s_per_gpu"], ",.1f")),
            ("total tok/s", _f(s["total_tok_s"], ",.1f")),
            ("goodput req/s (SLOs met)", f"{_f(s['goodput_rps'])} ({s['slo_met_fraction']:.0%})"),
            ("mean running / max waiting", f"{s['mean_running']:,.1f} / {s['max_waiting']}"),
            ("mean queue length", _f(s["mean_queue_length"])),
            ("KV use mean / max", f"{s['mean_kv_use']:.0%} / {s['max_kv_use']:.0%} of "
                                  f"{s['kv_blocks_per_replica']:,} blocks"),
            ("preemptions", f"{s['preemptions']} ({s['preemption']})"),
            ("Little's law L / (λW)", _f(s["little_ratio"], ".4f")),
            ("joules per output token", _f(s["joules_per_output_token"], ",.3f")),
            ("output tokens per joule", _f(s["output_tokens_per_joule"], ",.3f")),
            ("average power (W, all GPUs)", _f(s["average_power_w"], ",.0f")),
            ("$ per M output / input tokens", f"{_f(s['usd_per_million_output_tokens'])} / "
                                              f"{_f(s['usd_per_million_input_tokens'], ',.3f')}")]
    if s["mode"] == "disaggregated":
        rows.append(("KV transfer (ms, mean)", f"{_f(s['kv_transfer_ms_mean'])} over {s['kv_link']}"))
    for r in rows:
        u.add_row(*r)
    console.print(u)
    if plot is not None:
        console.print(f"plot written to {plot}", highlight=False)
