"""``inferbound estimate``, ``roofline`` and ``memory``: one deployment, explained.

Options are the declarations of options.py (DEPLOYMENT, ENGINE, STATIC and the scenario options
below), so the CLI and the JSON API take the same ones; the figures come from report.py and the
library, as the API's do.
"""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..faces.options import ESTIMATE as SCENARIO, ESTIMATE_OUTPUT, LENGTHS, STATIC, any_given
from .common import console, gb, labelled, ms, print_json, warn
from .params import DEPLOYMENT_AND_ENGINE, command, deployment_from


def lead_with_fit(fits: bool, reason: str) -> None:
    """When it does not fit, say so first: the figures that follow are hypothetical."""
    if not fits:
        console.print(labelled("DOES NOT FIT:", "bold red", f"{reason}; the figures below are hypothetical"),
                      highlight=False)


def strict_exit(o: dict, fits: bool) -> None:
    if o.get("strict") and not fits:
        import typer
        raise typer.Exit(3)


@command("estimate", "Static batch (default) or max-throughput operating point: TTFT, TPOT, latency, throughput, "
                     "energy, cost, memory and what binds each phase. Engine: --engine (default vLLM, engines.yaml).",
         DEPLOYMENT_AND_ENGINE, STATIC, SCENARIO, LENGTHS, ESTIMATE_OUTPUT)
def estimate(o: dict) -> None:
    from ..faces import report
    from ..workloads.static import estimate as run_estimate
    dep = deployment_from(o)
    lengths = _lengths(o)
    if o.get("images") and (o.get("prefill_layout") or o.get("decode_layout")):
        raise ValueError(f"images={o['images']} is priced on one deployment (static, max-throughput, serving), not "
                         f"on disaggregated pools; allowed: --images 0 with --prefill-layout/--decode-layout")
    if o.get("prefill_layout") or o.get("decode_layout"):
        return _disaggregated(o, dep, lengths)
    if o["scenario"] == "serving":
        return _serving(o, dep, lengths)
    if o["rate"] is not None or (o["concurrency"] is not None and o["scenario"] != "max-throughput"):
        raise ValueError(f"--rate/--concurrency apply to --scenario serving (--concurrency also to max-throughput: "
                         f"the requests in flight), not --scenario {o['scenario']}")
    if o["scenario"] == "max-throughput":
        from ..workloads.max_throughput import max_throughput
        from ..workloads.scenario_view import max_throughput_view
        from ..workloads.steady_state import as_mix
        from ..workloads.images import with_images
        images = o.get("images") or 0
        r = max_throughput(dep, input_len=o["input_len"], output_len=o["output_len"], num_requests=o["requests"],
                           lengths=lengths, concurrency=o["concurrency"], images=images)
        view = max_throughput_view(dep, r, with_images(dep.model, lengths or as_mix(o["input_len"], o["output_len"]),
                                                       images))
        if o["json"]:
            return print_json({**r.to_dict(), "engine": report.engine(dep), "warnings": dep.warnings, "view": view})
        show_max_throughput(r, dep.gpu, dep.label())
        show_view(view)
        for w in dep.warnings:
            warn(w)
        return
    if lengths is not None:
        raise ValueError("--input-dist/--output-dist/--trace/--dataset apply to --scenario max-throughput and serving; "
                         "a static batch has one prompt and one output length (--input, --output)")
    est = run_estimate(dep, batch=o["batch"], input_len=o["input_len"], output_len=o["output_len"],
                       images=o.get("images") or 0)
    if o["json"]:
        print_json({**est.to_dict(), "engine": report.engine(dep)})
    else:
        show_estimate(est)
    strict_exit(o, est.fits)


def _lengths(o: dict):
    """The length mix the options describe, or None for fixed --input/--output (a static estimate with
    no length option imports no workload module)."""
    if not any_given(o, LENGTHS):
        return None
    from ..workloads.lengths import from_options
    return from_options(o)


def _serving(o: dict, dep, lengths) -> None:
    from ..faces import report
    from ..workloads.serving import serving
    if (o["rate"] is None) == (o["concurrency"] is None):
        raise ValueError("--scenario serving needs exactly one of --rate (requests/s) or --concurrency (clients)")
    from ..workloads.images import with_images
    from ..workloads.scenario_view import serving_view
    from ..workloads.steady_state import as_mix
    given = o["requests"] != next(x for x in SCENARIO if x.name == "requests").default  # else closed_loop.yaml's
    images = o.get("images") or 0
    r = serving(dep, rate=o["rate"], concurrency=o["concurrency"], think_time=o["think_time"],
                input_len=o["input_len"], output_len=o["output_len"], lengths=lengths,
                requests=o["requests"] if given else None, images=images)
    view = serving_view(dep, r, with_images(dep.model, lengths or as_mix(o["input_len"], o["output_len"]), images))
    if o["json"]:
        return print_json({**r.to_dict(), "engine": report.engine(dep), "warnings": dep.warnings, "view": view})
    show_serving(r, dep.gpu, dep.label())
    show_view(view)


def _disaggregated(o: dict, dep, lengths) -> None:
    """--prefill-layout/--decode-layout: the analytic pair of pools (workloads/disagg.py), at capacity
    (max-throughput) or at --rate (serving)."""
    from ..workloads.disagg import disaggregated
    if o["scenario"] == "static" or o["concurrency"] is not None or lengths is not None:
        raise ValueError(f"--prefill-layout/--decode-layout apply to --scenario max-throughput (the pair's capacity) "
                         f"or serving --rate R with fixed --input/--output, not scenario={o['scenario']}"
                         f"{' with --concurrency' if o['concurrency'] is not None else ''}"
                         f"{' with a length mix' if lengths is not None else ''}")
    if o["scenario"] == "serving" and o["rate"] is None:
        raise ValueError("--scenario serving with --prefill-layout/--decode-layout needs --rate (requests/s)")
    r = disaggregated(dep, o.get("prefill_layout"), o.get("decode_layout"), o["input_len"], o["output_len"],
                      rate=o["rate"] if o["scenario"] == "serving" else None)
    if o["json"]:
        return print_json({**r.to_dict(), "warnings": dep.warnings})
    tr = r.transfer
    t = Table(title=Text(f"Disaggregated pools: {dep.model.name}, {o['input_len']} in / {o['output_len']} out, "
                         f"{r.rate:,.3g} req/s ({'capacity, set by ' + r.limit if o['rate'] is None else 'given'})"))
    for c in ("pool", "layout", "step", "batch/step", "capacity tok/s", "per node", "per GPU", "load", "bound"):
        t.add_column(c, justify="left" if c in ("pool", "layout", "bound") else "right")
    for ph, busy, cap in ((r.prefill, r.prefill_busy, r.prefill.tok_s), (r.decode, r.decode_busy,
                                                                          r.decode_capacity_tok_s)):
        t.add_row(ph.role, ph.layout, ms(ph.step_s), f"{ph.batch:,.1f}", f"{cap:,.0f}", f"{cap / ph.nodes:,.0f}",
                  f"{cap / ph.gpus:,.1f}", f"{busy:.0%}", ph.bound)
    console.print(t)
    console.print(f"KV transfer: {tr.kv_bytes / 1e9:,.3f} GB per prompt (GB = 1e9 B), {tr.send_bytes_per_gpu / 1e9:,.3f} "
                  f"GB sent per GPU over {tr.link} at {tr.link_bw / 1e9:,.1f} GB/s: {ms(tr.alone_s)} alone; lanes "
                  f"{tr.send_lanes} -> {tr.recv_lanes}, utilization rho {tr.rho:.3f} ({tr.discipline}): "
                  f"{ms(tr.sojourn_s) if tr.sojourn_s != float('inf') else 'unbounded'} per transfer; links carry "
                  f"{tr.max_rate:,.3g} req/s", highlight=False)
    console.print(f"TPOT {ms(r.decode.step_s)}; first gap after the first token {ms(r.first_itl_s)} (decode step + "
                  f"transfer); capacity {r.max_rate:,.3g} req/s ({r.limit})", highlight=False)
    for w in [*r.notes, *dep.warnings]:
        warn(w)


def _tag(gpu) -> str:
    """' (--price)' / ' (Crusoe on-demand, 2026-09-20)': where a cost's $/GPU-hour comes from (hardware/prices.py)."""
    from ..hardware.prices import price_tag
    return "" if gpu is None else price_tag(gpu)


def _band(bands: dict, figure: str) -> str:
    """' (±24%)': the result's error band of one figure (deploy/bands.py), '' without one."""
    from ..deploy.operating_band import describe
    return describe((bands or {}).get(figure))


def show_serving(r, gpu=None, layout: str | None = None) -> None:
    def band(figure: str) -> str:
        return _band(r.error_bands, figure)
    load = (f"{r.concurrency:,} clients" + (f", think {r.think_time_s:g} s" if r.think_time_s else "")
            if r.mode == "concurrency" else f"{r.request_rate:g} req/s (Poisson)")
    console.print(f"engine: {r.engine_settings}", highlight=False)
    t = Table(title=Text(f"Serving: {r.model} on {layout or f'{r.num_gpus}x {r.gpu}'}, {load}, {r.lengths}"))
    for c in ("metric", "mean", "p50", "p90", "p99"):
        t.add_column(c, justify="left" if c == "metric" else "right")
    for name, stats, figure in (("TTFT", r.ttft_s, "ttft"), ("end-to-end", r.e2e_s, "e2e")):
        t.add_row(name + band(figure), *(ms(stats[k]) for k in ("mean", "p50", "p90", "p99")))
    if abs(r.itl_s - r.tpot_s) <= 1e-12 * max(r.tpot_s, 1e-30):
        t.add_row("ITL = TPOT (after the first token)" + band("tpot"), ms(r.itl_s), "", "", "")
    else:  # multi-step scheduling: tokens stream in chunks (workloads/multistep.py)
        t.add_row("ITL (gap between streamed chunks)" + band("itl"), ms(r.itl_s), "", "", "")
        t.add_row("TPOT (after the first token)" + band("tpot"), ms(r.tpot_s), "", "", "")
    console.print(t)
    f = Table(title="Throughput, load, energy, cost")
    f.add_column("metric")
    f.add_column("value", justify="right")
    for k, v in (("requests/s", f"{r.requests_per_s:,.2f}" + band("throughput")),
                 ("output tok/s (total)", f"{r.output_tok_s:,.0f}" + band("throughput")),
                 ("output tok/s per GPU", f"{r.output_tok_s_per_gpu:,.0f}" + band("throughput")),
                 ("tok/s per user", f"{r.tok_s_per_user:,.1f}"),
                 ("requests in service / queued (per replica)", f"{r.in_service:,.1f} / {r.queued:,.1f}"),
                 ("decode batch while busy", f"{r.decode_batch:,.1f}"), ("engine busy", f"{r.busy_share:.0%}"),
                 ("Little's law: req/s x (E2E + think) / in system", f"{r.littles_law:.4f}"),
                 ("limited by", r.limited_by), ("decode step bound", r.bound),
                 ("KV capacity per GPU", gb(r.kv_capacity_bytes_per_gpu)),
                 ("power per GPU", f"{r.power_per_gpu_w:,.0f} W"), ("J per output token", f"{r.joules_per_output_token:.4f}"),
                 ("$ per M output tokens", "n/a (no price)" if r.usd_per_million_output_tokens is None
                  else f"${r.usd_per_million_output_tokens:,.3f}" + _tag(gpu))):
        f.add_row(k, v)
    console.print(f)
    console.print(f"percentiles: {r.percentiles}", highlight=False)
    for n in r.notes:
        warn(n)


def show_view(view: dict) -> None:
    """The memory per GPU and time split of a steady state's own operating point (workloads/scenario_view.py,
    the same view the API's ``view`` and the page show)."""
    m, st = view["memory"], view["step"]
    kv_host = f"; host tier {gb(m['kv_host_pool'])} of evicted prefixes" if m.get("kv_host_pool") else ""
    console.print(f"memory per GPU at this point: {gb(m['total'])} of {gb(m['capacity'])} (weights / KV / "
                  f"activations / reserve: {' / '.join(gb(m[k]) for k in ('weights', 'kv_cache', 'activations', 'reserve'))}"
                  f"; KV on GPU {gb(m['kv_on_gpu'])} of {gb(m['kv_capacity'])}{kv_host}); {m['basis']}",
                  highlight=False, soft_wrap=True)
    if m.get("prefix_hits"):  # deploy/prefix.py, workloads/features.py
        p = m["prefix_hits"]
        console.print(f"prefix hits: {p['device_share']:.1%} of requests on the GPU, {p['host_share']:.1%} from the host "
                      f"tier; {p['cached_tokens']:,.0f} prompt tokens cached per request on average "
                      f"({p['host_tokens']:,.0f} of them loaded over the host link)", highlight=False, soft_wrap=True)
    console.print(f"{st['explanation']} ({ms(st['time_s'])} per output token, {st['prefill_step_share']:.0%} of "
                  f"steps carry prefill)", highlight=False, soft_wrap=True)


def show_max_throughput(r, gpu=None, layout: str | None = None) -> None:
    band = _band(r.error_bands, "throughput")  # = r.error_band
    console.print(f"engine: {r.engine_settings}", highlight=False)
    t = Table(title=Text(f"Max throughput: {r.model} on {layout or f'{r.num_gpus}x {r.gpu}'}, {r.lengths}"))
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in (("concurrency (sequences in flight)", f"{r.concurrency:,.0f}"), ("decode batch", f"{r.decode_batch:,.3g}" if r.decode_batch % 1 else f"{r.decode_batch:,.0f}"),
                 ("limited by", r.limited_by),
                 ("step time", ms(r.step_time_s) + _band(r.error_bands, "tpot")),
                 ("output tok/s (total)", f"{r.output_tok_s:,.0f}" + band),
                 ("output tok/s per GPU", f"{r.output_tok_s_per_gpu:,.0f}" + band),
                 (f"output tok/s over a run of {r.num_requests:,} requests (fill, drain)", f"{r.run_output_tok_s:,.0f}"),
                 ("tok/s per user", f"{r.tok_s_per_user:,.1f}"), ("requests/s", f"{r.requests_per_s:,.2f}"),
                 ("KV capacity per GPU", gb(r.kv_capacity_bytes_per_gpu)),
                 ("power per GPU", f"{r.power_per_gpu_w:,.0f} W"), ("J per output token", f"{r.joules_per_output_token:.4f}"),
                 ("output tokens per J", f"{r.output_tokens_per_joule:,.2f}"),
                 ("$ per M output tokens", "n/a (no price)" if r.usd_per_million_output_tokens is None
                  else f"${r.usd_per_million_output_tokens:,.3f}" + _tag(gpu))):
        t.add_row(k, v)
    from .features_view import max_throughput_rows
    for k, v in max_throughput_rows(r):  # speculative decoding, KV offload (docs/features/)
        t.add_row(k, v)
    if r.stated_concurrency is not None:
        t.add_row("stated concurrency (requests in flight, --concurrency)", f"{r.stated_concurrency:,}")
    console.print(t)
    for n in r.notes:
        warn(n)


def show_estimate(e) -> None:
    lead_with_fit(e.fits, e.memory.reason)
    t = Table(title=Text(f"{e.model} on {e.deployment.label()}, "
                    f"batch {e.batch}, {e.input_len} in / {e.output_len} out, "
                    f"weights {e.dtypes.weight}, compute {e.compute_dtype}, KV {e.dtypes.kv_dtype}"))
    console.print(f"engine: {e.deployment.runtime.describe()}", highlight=False)
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
            ("$ per M output tokens", "n/a (no price in catalog)" if usd is None else
             f"${usd:,.3f}{_tag(e.deployment.gpu)}"),
            ("memory per GPU", f"{gb(e.memory.total)} of {gb(e.memory.capacity)}, KV on GPU {gb(e.memory.kv_cache)} of "
                               f"{gb(e.memory.kv_capacity)} ({'fits' if e.memory.fits else 'DOES NOT FIT'})"
                               + (f"; host tier {gb(e.features['kv_offload']['host_pool_bytes_per_gpu'])} of evicted "
                                  f"prefixes" if "kv_offload" in e.features else "")),
            ("  weights / KV / activations / reserve",
             " / ".join(gb(x) for x in (e.memory.weights, e.memory.kv_cache, e.memory.activations, e.memory.reserve))),
            ("max batch at this context", str(e.max_batch_at_context)),
            ("decode GEMMs compute-bound from batch", str(e.decode_gemm_compute_bound_batch or "never (<=65536)")),
            ("whole decode step compute-bound from batch", str(e.decode_compute_bound_batch or "never (<=65536)")),
            ("decode without KV cache", f"{ms(e.decode_without_kv_cache_s)} "
                                        f"({e.decode_without_kv_cache_s / max((e.output_len - 1) * e.tpot_s, 1e-12):,.0f}x)")]
    from .features_view import estimate_rows
    rows += estimate_rows(e)  # speculative decoding, prefix cache, KV offload (docs/features/)
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
        warn(w)
    if not e.bands:
        console.print("no error band: running without a calibration (--calibration none)", highlight=False)


@command("roofline", "Per-operator roofline of the prefill step and a mid-generation decode step, collectives "
                     "beside the operators.", DEPLOYMENT_AND_ENGINE, STATIC, ESTIMATE_OUTPUT)
def roofline(o: dict) -> None:
    from ..faces import report
    dep = deployment_from(o)
    batch, input = o["batch"], o["input_len"]
    out = report.roofline(dep, batch, input, o["output_len"])
    if o["json"]:
        return print_json({**out, "warnings": out.get("warnings", dep.warnings)})
    ctx, ridge = out["decode_context"], out["ridge_flop_per_byte"]
    for name, rows in out["phases"].items():
        if name == "prefill":
            console.print(f"engine: {out['engine']['settings']}", highlight=False)
        t = Table(title=Text(f"{name} on {dep.label()} (batch {batch}"
                        f"{', context %d' % ctx if name == 'decode' else ', %d tokens each' % input}); "
                        f"ridge {ridge:,.0f} FLOP/B at {dep.compute_dtype}"))
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
    for w in dep.warnings:
        warn(w)


@command("memory", "Memory per GPU (weights, KV, activations, reserve), fit under the engine's KV allocation, "
                   "max batch and max context.", DEPLOYMENT_AND_ENGINE, STATIC, ESTIMATE_OUTPUT)
def memory(o: dict) -> None:
    from ..faces import report
    dep = deployment_from(o)
    out = report.memory(dep, o["batch"], o["input_len"], o["output_len"])
    if o["json"]:
        print_json(out)
        return strict_exit(o, out["fits"])
    lead_with_fit(out["fits"], out["reason"])
    batch, ctx = out["batch"], out["context"]
    console.print(f"engine: {out['engine']['settings']}", highlight=False)
    t = Table(title=Text(f"Memory per GPU: {dep.model.name} on {dep.label()}, batch {batch} x {ctx} tokens"))
    t.add_column("part")
    t.add_column("GB (1e9 B)", justify="right")
    t.add_column("GiB (2^30 B)", justify="right")
    for k in ("weights", "kv_cache", "activations", "reserve", "unused", "total", "kv_capacity", "capacity"):
        t.add_row(k, f"{out[k] / 1e9:,.2f}", f"{out[k] / 2**30:,.2f}")
    console.print(t)
    console.print(f"{'fits' if out['fits'] else 'DOES NOT FIT'}; max batch at {ctx} tokens: "
                  f"{out['max_batch_at_context']}; max context at batch {batch}: {out['max_context_at_batch']:,} tokens",
                  highlight=False)
    for w in dep.warnings:
        warn(w)
    strict_exit(o, out["fits"])
