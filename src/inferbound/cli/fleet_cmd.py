"""``inferbound fleet FILE.yaml``: a day of traffic over pools of replicas (inferbound.fleet)."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..faces.options import FLEET
from .common import console, print_json, warn
from .output import Writes, check_file
from .params import command

HELP = """A day of traffic through a router over pools of replicas, with autoscaling: SLO attainment,
TTFT/TPOT/ITL/E2E percentiles, GPU-hours, cost and energy for the fleet and per pool, and a per-minute series;
--size-for-slo finds the fewest replicas (the cheapest mix) meeting the SLO. FILE.yaml (docs/fleet-example.yaml):

\b
  traffic:
    rate: {mean: 5, peak_to_mean: 2.0, period: 24h}   # or  trace: FILE (azure, burstgpt, mooncake)
    duration: 10m
    dataset: sharegpt
  pools:
    - {name: h100, model: llama-3.1-8b, gpu: h100_sxm, tp: 1, replicas: 2, engine: vllm}
    - {name: a100, model: llama-3.1-8b, gpu: a100_80gb_sxm, tp: 1, replicas: 2}
  router: least-outstanding
  slo: {ttft_p99_ms: 2000, tpot_p99_ms: 100}
  # optional: autoscale: {metric: concurrency|queue|kv|ttft, target, min, max, interval, startup}, sessions: {turns,
  # think_time}, seed, router_refresh
"""


def _f(v, fmt: str = ",.1f") -> str:
    return "n/a" if v is None else format(v, fmt)


@command("fleet", HELP, FLEET)
def fleet(o: dict) -> None:
    from ..fleet import build, size_for_slo
    from ..fleet.spec import read
    plot = check_file(o["plot"], "--plot", ".png")
    spec = read(o["file"])
    backend = {"backend": o["backend"], "workers": o["workers"], "ray_address": o["ray_address"]}
    files = Writes()
    if o["size_for_slo"]:
        answer = size_for_slo(spec, o["attainment"], **backend)
        result = answer["result"]
    else:
        answer, result = None, build(_run(spec, backend, bar=not o["json"]))
    if plot is not None:
        from ..fleet.plot import plot_day
        plot = files.write("--plot", plot, lambda p: plot_day(result, p))
    if o["json"]:
        print_json(result if answer is None else {k: v for k, v in answer.items()})
        return files.finish()
    if answer is not None:
        show_sizing(answer)
    show(result, plot)
    for n in result["notes"] + (answer["notes"] if answer else []):
        warn(n)
    files.finish()


def _run(spec, backend: dict, bar: bool):
    """run_fleet, with a progress bar of the requests simulated on runs of more than simulate's PROGRESS_ABOVE
    requests (fleet/run.py ``progress``)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..fleet import run_fleet
    from ..fleet.run import arrivals_of
    from .simulate_cmd import PROGRESS_ABOVE
    arrivals = arrivals_of(spec)
    if not bar or len(arrivals) <= PROGRESS_ABOVE:
        return run_fleet(spec, arrivals, **backend)
    prog = Progress(TextColumn("simulating the fleet"), BarColumn(), MofNCompleteColumn(), TextColumn("requests"),
                    TimeElapsedColumn(), transient=True, console=console)
    task = prog.add_task("requests", total=len(arrivals))
    with prog:
        return run_fleet(spec, arrivals, **backend, progress=lambda done, total: prog.update(task, completed=done,
                                                                                            total=total))


def show_sizing(a: dict) -> None:
    mix = ", ".join(f"{k}: {v}" for k, v in a["replicas"].items())
    console.print(Text(f"fewest replicas meeting the SLO at {a['attainment_target'] * 100:g} % attainment: {mix} "
                       f"(attainment {a['slo_attainment'] * 100:.2f} %, ${_f(a['cost_per_day_usd'], ',.2f')}/day; "
                       f"{a['runs']} fleet runs)"), highlight=False)
    for f in a["fewer"]:
        mix = ", ".join(f"{k}: {v}" for k, v in f["replicas"].items())
        att = "no replica left" if f["slo_attainment"] is None else f"attainment {f['slo_attainment'] * 100:.2f} %"
        console.print(Text(f"  one fewer in {f['pool']} ({mix}): {att}, misses the target "
                           f"(${_f(f['cost_per_day_usd'], ',.2f')}/day)"), highlight=False)


def show(r: dict, plot) -> None:
    t = Table(title=Text(f"Fleet: {r['requests']:,} requests ({r['traffic']}, {r['duration_s']:,.0f} s), router "
                         f"{r['router']}, {r['replicas_provisioned']} replicas provisioned"))
    for c in ("", "requests", "SLO att. %", "TTFT p99 ms", "TPOT p99 ms", "ITL p99 ms", "E2E p99 ms", "GPU-hours",
              "cost $", "energy kWh"):
        t.add_column(c, justify="right" if c else "left")
    rows = [(f"{p['name']} ({p['deployment']}, {p['replicas']} replicas)", p) for p in r["pools"]] + [("fleet", r)]
    for name, p in rows:
        att = None if p["slo_attainment"] is None else p["slo_attainment"] * 100
        t.add_row(name, f"{p['requests']:,}", _f(att, ".2f"), _f(p["ttft_ms_p99"]), _f(p["tpot_ms_p99"]),
                  _f(p["itl_ms_p99"]), _f(p["e2e_ms_p99"]), _f(p["gpu_hours"], ",.2f"), _f(p["cost_usd"], ",.2f"),
                  _f(p["energy_kwh"], ",.2f"))
    console.print(t)
    if plot is not None:
        console.print(Text(f"plot: {plot}"), highlight=False)
