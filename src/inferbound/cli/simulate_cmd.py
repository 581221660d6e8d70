"""``inferbound simulate``: discrete-event serving simulation (inferbound.sim) from the command line."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..faces.groups import DeploymentOptions, EngineSettings, ServingLoad
from ..faces.options import SIMULATE_OUTPUT
from .common import console, labelled, print_json, warn
from .output import Writes, check_file
from .params import LONG_CONTEXT_FLAG, command

PROGRESS_ABOVE = 2000  # requests; shorter runs finish in about a second, a bar would only flicker


def check_requests(requests: int, cap: int) -> None:
    """The CLI's cap on simulated requests (the API's is options.MAX_SIM_REQUESTS), raised by --max-requests."""
    if requests > cap:
        raise ValueError(f"requests={requests} exceeds the cap of {cap:,} simulated requests (memory and time grow "
                         f"with each one); allowed: 1..{cap:,}, or raise the cap with --max-requests {requests}")


@command("simulate", "Serving simulation: arrivals at a rate, a trace, or closed-loop clients (--concurrency); "
                     "continuous batching, chunked prefill, preemption under the engine's rules (--engine); latency "
                     "percentiles, throughput, goodput, energy and cost.",
         DeploymentOptions, EngineSettings, ServingLoad, SIMULATE_OUTPUT)  # the typed groups' declarations
def simulate(o: dict) -> None:
    from ..faces.api import simulate as run_simulation  # one path for the CLI and the Python API
    check_requests(o["requests"], o["max_requests"])
    plot = check_file(o["plot"], "--plot", ".png")  # checked before the run, not after it
    if o["trace"] is not None and not o["trace"].is_file():
        raise ValueError(f"trace={str(o['trace'])!r} is not a file; allowed: a CSV or JSONL trace file")
    # the typed groups (faces/groups.py) of the parsed options, simulated by the typed API (faces/api.py)
    res = run_simulation(DeploymentOptions.pick(o), ServingLoad.pick(o), engine=EngineSettings.pick(o),
                         progress=not o["json"] and (o["trace"] is not None or o["requests"] > PROGRESS_ABOVE),
                         long_context_flag=LONG_CONTEXT_FLAG)
    dep = res.deployment  # its notes hold the long-context warning, when allowed
    files = Writes()  # a plot that fails now: the figures first, then the error line
    if plot is not None:
        from ..sim.plot import plot_run
        plot = files.write("--plot", plot, lambda p: plot_run(res, p))
    if o["json"]:
        out = res.to_dict()
        print_json({**out, "warnings": list(dict.fromkeys([*out.get("warnings", []), *dep.warnings]))})
        return files.finish()
    show(res, plot)
    for w in dep.warnings:
        warn(w)
    for n in res.summary.get("notes") or []:  # dataset lengths, draws below 1 set to 1, prefixes (sim.simulate)
        console.print(labelled("note:", "cyan", n), highlight=False, soft_wrap=True)
    files.finish()


def _price_tag(gpu) -> str:
    from ..hardware.prices import price_tag  # ' (--price)' or ' (provider kind, date)' (hardware/prices.py)
    return price_tag(gpu)


def _f(v, fmt: str = ",.2f") -> str:
    return "n/a" if v is None else format(v, fmt)


def show(res, plot: Path | None) -> None:
    s = res.summary
    mode = (f"{s['prefill_replicas']} prefill + {s['decode_replicas']} decode replicas"
            if s["mode"] == "disaggregated" else f"{s['replicas']} replica(s)")
    if s.get("decode_layout"):  # pools with their own layouts (deploy/pools.py)
        mode = (f"{s['prefill_replicas']} prefill replica(s) of {s['prefill_layout']} + {s['decode_replicas']} "
                f"decode replica(s) of {s['decode_layout']}")
    load = (f"{s['concurrency']} closed-loop clients" if s.get("concurrency") else "open-loop arrivals")
    console.print(Text(f"engine: {s['engine']}"), highlight=False)
    t = Table(title=Text(f"Simulated serving: {res.deployment.model.name} on {res.deployment.label()}, {mode}, "
                         f"{load}, {s['completed']}/{s['submitted']} requests in {s['duration_s']:,.1f} s"))
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
                                              f"{_f(s['usd_per_million_input_tokens'], ',.3f')}"
                                              f"{_price_tag(res.deployment.gpu)}")]
    if s.get("concurrency"):  # the interactive response-time law N = X·(R + Z) (Little's law on the loop)
        n_law = s["requests_per_s"] * (s["e2e_ms_mean"] / 1e3 + s["think_time_s_mean"])  # Z: the run's draws
        rows.append(("closed loop: requests/s × (E2E + think) vs clients",
                     f"{n_law:,.2f} vs {s['concurrency']}"))
    if s["mode"] == "disaggregated":
        rows.append(("KV transfer (ms, mean)", f"{_f(s['kv_transfer_ms_mean'])} over {s['kv_link']} (fair share)"))
    from .features_view import simulate_rows
    rows += simulate_rows(s)  # prefix cache, speculative decoding, KV offload (docs/features/)
    for r in rows:
        u.add_row(*r)
    console.print(u)
    if plot is not None:
        console.print(f"plot written to {plot}", highlight=False, markup=False)
