"""``inferbound estimate``, ``roofline`` and ``memory``: one deployment, explained."""
from __future__ import annotations

import inspect

import numpy as np
from rich.table import Table

from .. import step
from ..deployment import Deployment, make_deployment
from ..estimate import Estimate, decode_contexts, estimate as run_estimate
from ..memory import max_batch, max_context, memory_report
from ..roofline import ridge_point
from ..workloads import max_throughput
from . import app
from .common import (ActDtype, Calibration, AttentionDp, Batch, CollectiveAlgo, CommOverlap, Dp, Emulate, Ep, Gpu, GpuFile,
                     GpuSet, Input, Json, KvDtype, Microbatches, Model, Nodes, NumGpus, Output, Pp, PpSplit, BlockSize, KvFraction, TokenBudget,
                     Requests, Scenario, SequenceParallel, Set, Tp, WeightDtype, console, gb, ms, parse_sets, print_json, run)

DEFAULT_MODEL = "llama-3.1-8b"


DEPLOYMENT_OPTIONS: list[tuple[str, object, object]] = [
    ("model", Model, DEFAULT_MODEL), ("gpu", Gpu, "h100_sxm"), ("num_gpus", NumGpus, None), ("tp", Tp, None),
    ("pp", Pp, 1), ("ep", Ep, 1), ("dp", Dp, 1), ("nodes", Nodes, 1), ("attention_dp", AttentionDp, False),
    ("sequence_parallel", SequenceParallel, False), ("pp_split", PpSplit, None), ("microbatches", Microbatches, None),
    ("collective_algo", CollectiveAlgo, "auto"), ("comm_overlap", CommOverlap, 0.0),
    ("weight_dtype", WeightDtype, "bf16"), ("act_dtype", ActDtype, "bf16"), ("kv_dtype", KvDtype, None),
    ("emulate", Emulate, False), ("set", Set, None), ("gpu_set", GpuSet, None), ("gpu_file", GpuFile, None),
    ("calibration", Calibration, None),
]
WORKLOAD_OPTIONS = [("batch", Batch, 8), ("input", Input, 1024), ("output", Output, 256)]


def deployment_from(o: dict) -> Deployment:
    """Build the deployment from parsed CLI options (names as in DEPLOYMENT_OPTIONS)."""
    split = tuple(int(x) for x in o["pp_split"].split(",")) if o.get("pp_split") else None
    return make_deployment(
        model=o["model"], gpu=o["gpu"], num_gpus=o["num_gpus"], tp=o["tp"], pp=o["pp"], ep=o["ep"], dp=o["dp"],
        nodes=o["nodes"], attention_dp=o["attention_dp"], sequence_parallel=o["sequence_parallel"], pp_split=split,
        microbatches=o["microbatches"], collective_algo=o["collective_algo"], comm_overlap=o["comm_overlap"],
        weight_dtype=o["weight_dtype"], act_dtype=o["act_dtype"], kv_dtype=o["kv_dtype"], emulate=o["emulate"],
        model_overrides=parse_sets(o["set"], "--set"), gpu_overrides=parse_sets(o["gpu_set"], "--gpu-set"),
        gpu_files=o["gpu_file"], calibration=o["calibration"])


def deployment_command(name: str, doc: str, extra: list | None = None):
    """Register ``name`` with the shared deployment options, the workload options, ``extra`` options and
    --json; the decorated body receives (deployment, options dict)."""
    spec = DEPLOYMENT_OPTIONS + WORKLOAD_OPTIONS + (extra or []) + [("json", Json, False)]

    def register(body):
        def command(**options) -> None:
            run(lambda: body(deployment_from(options), options))
        command.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a) for n, a, d in spec])
        command.__doc__ = doc
        command.__name__ = name
        app.command(name)(command)
        return body
    return register


@deployment_command("estimate", "Static batch (default) or max-throughput operating point: TTFT, TPOT, latency, "
                                "throughput, energy, cost, memory and what binds each phase.",
                    extra=[("scenario", Scenario, "static"), ("requests", Requests, 10_000),
                           ("block_size", BlockSize, None), ("kv_fraction", KvFraction, None),
                           ("token_budget", TokenBudget, None)])
def estimate(dep: Deployment, o: dict) -> None:
    if o["scenario"] == "max-throughput":
        r = max_throughput(dep, input_len=o["input"], output_len=o["output"], num_requests=o["requests"],
                           block_size=o["block_size"], kv_fraction=o["kv_fraction"], token_budget=o["token_budget"])
        return print_json(r.to_dict()) if o["json"] else show_max_throughput(r)
    if o["scenario"] != "static":
        raise ValueError(f"scenario={o['scenario']!r} unknown; allowed: static, max-throughput")
    est = run_estimate(dep, batch=o["batch"], input_len=o["input"], output_len=o["output"])
    if o["json"]:
        return print_json(est.to_dict())
    show_estimate(est)


def show_max_throughput(r) -> None:
    band = f" (±{r.error_band:.0%})" if r.error_band is not None else ""
    t = Table(title=f"Max throughput: {r.model} on {r.num_gpus}x {r.gpu}, {r.input_len} in / {r.output_len} out")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in (("concurrency (sequences in flight)", f"{r.concurrency:,.0f}"), ("decode batch", f"{r.decode_batch:,}"),
                 ("limited by", r.limited_by), ("step time", ms(r.step_time_s)),
                 ("output tok/s (total)", f"{r.output_tok_s:,.0f}" + band),
                 ("output tok/s per GPU", f"{r.output_tok_s_per_gpu:,.0f}" + band),
                 ("tok/s per user", f"{r.tok_s_per_user:,.1f}"), ("requests/s", f"{r.requests_per_s:,.2f}"),
                 ("KV capacity per GPU", gb(r.kv_capacity_bytes_per_gpu)),
                 ("power per GPU", f"{r.power_per_gpu_w:,.0f} W"), ("J per output token", f"{r.joules_per_output_token:.4f}"),
                 ("output tokens per J", f"{r.output_tokens_per_joule:,.2f}"),
                 ("$ per M output tokens", "n/a (no price)" if r.usd_per_million_output_tokens is None
                  else f"${r.usd_per_million_output_tokens:,.3f}")):
        t.add_row(k, v)
    console.print(t)


def show_estimate(e: Estimate) -> None:
    t = Table(title=f"{e.model} on {e.num_gpus}x {e.gpu} (TP{e.parallelism.tp}), "
                    f"batch {e.batch}, {e.input_len} in / {e.output_len} out, "
                    f"weights {e.dtypes.weight}, compute {e.compute_dtype}, KV {e.dtypes.kv_dtype}")
    t.add_column("metric")
    t.add_column("value", justify="right")
    def band(kind: str) -> str:
        b = e.bands.get(kind)
        return f" (±{b:.0%})" if b is not None else ""
    en = e.energy
    usd = en.get("usd_per_million_output_tokens")
    rows = [("TTFT", ms(e.ttft_s) + band("ttft")), ("TPOT", ms(e.tpot_s) + band("tpot")), ("end-to-end", ms(e.e2e_s)),
            ("output tok/s (total)", f"{e.output_tok_s:,.1f}" + band("throughput")),
            ("output tok/s per GPU", f"{e.output_tok_s_per_gpu:,.1f}" + band("throughput")),
            ("tok/s per user", f"{e.tok_s_per_user:,.1f}" + band("tpot")), ("prefill tok/s", f"{e.prefill_tok_s:,.0f}"),
            ("energy per output token", f"{en['joules_per_output_token']:.4f} J ({en['output_tokens_per_joule']:.2f} tok/J)"),
            ("average power", f"{en['average_power_w']:,.0f} W for {e.num_gpus} GPU(s)"),
            ("$ per M output tokens", "n/a (no price in catalog)" if usd is None else f"${usd:,.3f}"),
            ("memory per GPU", f"{gb(e.memory.total)} of {gb(e.memory.capacity)}"
                               f" ({'fits' if e.memory.fits else 'DOES NOT FIT'})"),
            ("  weights / KV / activations / reserve",
             " / ".join(gb(x) for x in (e.memory.weights, e.memory.kv_cache, e.memory.activations, e.memory.reserve))),
            ("max batch at this context", str(e.max_batch_at_context)),
            ("decode GEMMs compute-bound from batch", str(e.decode_gemm_compute_bound_batch or "never (<=65536)")),
            ("whole decode step compute-bound from batch", str(e.decode_compute_bound_batch or "never (<=65536)")),
            ("decode without KV cache", f"{ms(e.decode_without_kv_cache_s)} "
                                        f"({e.decode_without_kv_cache_s / max((e.output_len - 1) * e.tpot_s, 1e-12):,.0f}x)")]
    for r in rows:
        t.add_row(*r)
    console.print(t)
    split = Table(title="Time split per phase (share of phase time)")
    for c in ("phase", "time", "bound", "compute", "weights", "KV", "activations", "comm", "overhead", "bubble"):
        split.add_column(c, justify="left" if c in ("phase", "bound") else "right")
    for name, ph in (("prefill", e.prefill), ("decode step", e.decode)):
        f = {k: v / ph.time_s for k, v in ph.split.items()}
        split.add_row(name, ms(ph.time_s), ph.bound, *(f"{f.get(k, 0):.0%}" for k in
                      ("compute", "weights", "kv", "activations", "communication", "overhead", "bubble")))
    console.print(split)
    console.print(e.prefill.explanation, highlight=False)
    console.print(e.decode.explanation, highlight=False)
    for w in e.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
    if not e.bands:
        console.print("no error band: running without a calibration (--calibration none)", highlight=False)


@deployment_command("roofline", "Per-operator roofline of the prefill step and a mid-generation decode step, "
                                "collectives beside the operators.")
def roofline(dep: Deployment, o: dict) -> None:
    batch, input, output, json = o["batch"], o["input"], o["output"], o["json"]
    ctxs = decode_contexts(input, output)
    ctx = float(ctxs[len(ctxs) // 2])
    phases = {"prefill": step.prefill(dep, batch, max(input, 1)), "decode": step.decode(dep, batch, ctx)}
    ridge = ridge_point(dep.gpu, dep.compute_dtype)
    out = {"ridge_flop_per_byte": ridge, "decode_context": ctx, "compute_dtype": dep.compute_dtype,
           "phases": {k: operator_rows(c) for k, c in phases.items()}}
    if json:
        return print_json(out)
    for name, rows in out["phases"].items():
        t = Table(title=f"{name} on {dep.label()} (batch {batch}"
                        f"{', context %d' % ctx if name == 'decode' else ', %d tokens each' % input}); "
                        f"ridge {ridge:,.0f} FLOP/B at {dep.compute_dtype}")
        for c in ("operator", "group", "x", "GFLOP", "weights MB", "KV MB", "act/msg MB", "FLOP/B", "time",
                  "share", "bound", "how"):
            t.add_column(c, justify="left" if c in ("operator", "group", "bound", "how") else "right")
        total = sum(r["time_s"] for r in rows)
        for r in rows:
            msg = r["comm"]["bytes"] * r["count"] if "comm" in r else r["act_bytes"]
            t.add_row(r["name"], r["group"], str(r["count"]), f"{r['flops'] / 1e9:,.2f}",
                      f"{r['weight_bytes'] / 1e6:,.1f}", f"{r['kv_bytes'] / 1e6:,.1f}", f"{msg / 1e6:,.2f}",
                      f"{r['intensity']:,.1f}", ms(r["time_s"]), f"{r['time_s'] / total:.0%}", r["bound"],
                      r.get("algorithm", ""))
        console.print(t)


def operator_rows(cost) -> list[dict]:
    """Per-operator totals (all instances) of a priced step, for tables and JSON."""
    rows = []
    for p in cost.ops:
        o = p.op
        rows.append({"name": o.name, "kind": o.kind, "group": o.group, "count": o.count,
                     "flops": float(np.sum(o.flops)) * o.count, "weight_bytes": float(np.sum(o.weight_bytes)) * o.count,
                     "kv_bytes": float(np.sum(o.kv_bytes)) * o.count, "act_bytes": float(np.sum(o.act_bytes)) * o.count,
                     "intensity": float(np.sum(o.flops) / max(float(np.sum(o.bytes)), 1e-30)) if o.kind != "collective" else 0.0,
                     "time_s": float(np.sum(p.total)),
                     "bound": "communication" if o.kind == "collective" else
                     ("compute" if bool(np.all(p.compute_bound)) else "memory"),
                     **({"comm": {**o.comm, "bytes": float(np.sum(o.comm["bytes"]))}, "algorithm": p.detail}
                        if o.comm else {})})
    return rows


@deployment_command("memory", "Memory per GPU (weights, KV, activations, reserve), fit, max batch and max context.")
def memory(dep: Deployment, o: dict) -> None:
    batch, input, output, json = o["batch"], o["input"], o["output"], o["json"]
    ctx = input + output
    rep = memory_report(dep.model, dep.gpu, dep.dtypes, dep.par, batch, ctx, step_tokens=batch * input)
    out = {**rep.to_dict(), "batch": batch, "context": ctx,
           "max_batch_at_context": int(max_batch(dep.model, dep.gpu, dep.dtypes, dep.par, ctx)),
           "max_context_at_batch": max_context(dep.model, dep.gpu, dep.dtypes, dep.par, batch)}
    if json:
        return print_json(out)
    t = Table(title=f"Memory per GPU: {dep.model.name} on {dep.label()}, batch {batch} x {ctx} tokens")
    t.add_column("part")
    t.add_column("GB (1e9 B)", justify="right")
    t.add_column("GiB (2^30 B)", justify="right")
    for k in ("weights", "kv_cache", "activations", "reserve", "total", "capacity"):
        t.add_row(k, f"{out[k] / 1e9:,.2f}", f"{out[k] / 2**30:,.2f}")
    console.print(t)
    console.print(f"{'fits' if out['fits'] else 'DOES NOT FIT'}; max batch at {ctx} tokens: "
                  f"{out['max_batch_at_context']}; max context at batch {batch}: {out['max_context_at_batch']:,} tokens",
                  highlight=False)
