"""Issue 20's targets on the published points of the engine features, printed by one script, offline.

    .venv/bin/python benchmarks/feature_targets.py                       # every group, Markdown
    .venv/bin/python benchmarks/feature_targets.py --groups speculative  # some groups
    .venv/bin/python benchmarks/feature_targets.py --limit 2             # the first 2 points of each group

Points: benchmarks/data/feature_points.yaml (speculative, prefix caching, KV offload: each with its URL and
the quote it was read from), the held-out rows of src/inferbound/data/power_measured.csv (energy) and
benchmarks/data/disagg_published.yaml (disaggregated; the configurations the authors ran). For each point:

    error e = predicted / published − 1      (a published range [lo, hi] is scored at (lo + hi)/2)
    within  = |e| ≤ 0.25
    share of a group = #within / #points                            target ≥ 70 % in every group
    wrong side of 1 (speculative speed-ups) = #{(predicted − 1)·(published − 1) < 0}   target 0
    energy median error = median over the held-out rows of |e| of J/token         target ≤ 20 %

Predictions: speculative speed-up at batch B = τ·t_decode(B)/t_step(B) (step/speculative.step_cost), and
measured rows of a validation CSV as ``inferbound validate`` predicts them (validation/predict.py);
prefix caching, the prefill stream's rate with host hits over the rate without
(workloads/prefix_stream.stream_rate), or one prompt's TTFT recomputed over its TTFT as a full GPU hit
(`hit: gpu`); KV offload, one prompt's TTFT recomputed over its TTFT as a full host hit
(prefix_stream.single_ttft); energy, J/token = GPUs·P·t/B of the row's steady step priced by the
step contract, P the packaged power model (pricing/energy.step_power_w), the steady step as
benchmarks/fit_power.py builds it; disaggregated, each phase alone (workloads/disagg.py, via
benchmarks/disagg_dsv3.rows).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from inferbound.deploy.calibration import packaged  # noqa: E402
from inferbound.deploy.deployment import make_deployment  # noqa: E402
from inferbound.pricing.energy import step_power_w  # noqa: E402
from inferbound.step import contract as C  # noqa: E402
from inferbound.step import speculative as S  # noqa: E402
from inferbound.workloads.prefix_stream import single_ttft, stream_rate  # noqa: E402

POINTS = ROOT / "benchmarks" / "data" / "feature_points.yaml"
GROUPS = ("speculative", "prefix_caching", "kv_offload", "energy", "disaggregated")
BAND = 0.25
SHARE_TARGET = 0.70
ENERGY_TARGET = 0.20


def published_value(p) -> float:
    """A published figure, or the midpoint of a published range [lo, hi]."""
    return (float(p[0]) + float(p[1])) / 2 if isinstance(p, (list, tuple)) else float(p)


def _row(group, label, url, predicted, published, unit) -> dict:
    pub = published_value(published)
    e = predicted / pub - 1.0
    return dict(group=group, label=label, url=url, predicted=float(predicted), published=pub, unit=unit,
                error=e, within=abs(e) <= BAND)


def _dep(kw: dict):
    return make_deployment(**kw)


def measured_rows(group: str, p: dict) -> list[dict]:
    """The named rows of a CSV in the validation schema, predicted as ``inferbound validate`` does."""
    from inferbound.validation.dataset import read_csv
    from inferbound.validation.predict import predict_rows
    rows, _ = read_csv(ROOT / p["file"])
    rows = [r for r in rows if r.case in set(p["cases"])]
    if len(rows) != len(p["cases"]):
        raise ValueError(f"cases={p['cases']!r} in {POINTS.name}: {len(rows)} found in {p['file']}")
    out = []
    for pr in predict_rows(rows):
        r = pr.row
        if pr.predicted is None:
            raise ValueError(f"case={r.case!r} is not covered: {pr.reason}")
        out.append(_row(group, f"{r.model} {r.num_gpus}x {r.gpu} {r.metric} ({r.case})", p["url"],
                        pr.predicted, r.value, r.metric))
    return out


def speculative_rows(points: list[dict]) -> list[dict]:
    out = []
    for p in points:
        if p.get("kind") == "measured_rows":
            out += measured_rows("speculative", p)
            continue
        dep, b, ctx = _dep(p["deployment"]), float(p["batch"]), float(p["context"])
        cost, tau = S.step_cost(dep, b, ctx)
        speed = tau * float(C.decode(dep, b, ctx).time) / float(cost.time)
        out.append(_row("speculative", p["label"], p["url"], speed, p["published"], "speed-up x"))
    return out


def stream_rows(group: str, points: list[dict]) -> list[dict]:
    out = []
    for p in points:
        dep, n = _dep(p["deployment"]), int(p["input_len"])
        if p["kind"] == "stream_ratio":
            pred = stream_rate(dep, n, s_host=float(p["host_hit"]))["rate"] / stream_rate(dep, n)["rate"]
            unit = "prefill rate x"
        elif p["kind"] == "ttft_ratio":
            where = p.get("hit", "host")  # the tier the hit is served from: host (default) or gpu
            if where not in ("host", "gpu"):
                raise ValueError(f"hit={where!r} in {POINTS.name} ({p['label']}); allowed: host, gpu")
            pred = single_ttft(dep, n) / single_ttft(dep, n, where)
            unit = f"TTFT recompute / {where} hit"
        else:
            raise ValueError(f"kind={p['kind']!r} in {POINTS.name}; allowed: stream_ratio, ttft_ratio")
        out.append(_row(group, p["label"], p["url"], pred, p["published"], unit))
    return out


def energy_rows(spec: dict, limit: int | None = None) -> list[dict]:
    """J/token of the held-out power rows: the steady step of benchmarks/fit_power.py, the packaged power."""
    text = (ROOT / spec["file"]).read_text("utf-8")
    rows = [r for r in csv.DictReader(ln for ln in text.splitlines() if ln and not ln.startswith("#"))
            if r["split"] == spec["split"]]
    i_len = float(spec["input_len"])
    out = []
    for r in rows[:limit]:
        dep = make_deployment(model=r["model"], gpu=r["gpu"], tp=int(r["tp"]), engine=r["engine"],
                              calibration=packaged(), engine_options={  # the requests' sampling (deploy/sampling.py)
                                  "top_p": float(r["top_p"]), "repetition_penalty": float(r["repetition_penalty"])})
        b, o = float(r["batch"]), float(r["output_len"])
        load = C.uniform(dep.model, decode=b, context=i_len + float(r["output_len_m2_m1"]) / 2,
                         prompts=b / o, new=i_len)
        cost = C.price(dep, load, "stream")
        watts = float(step_power_w(dep.gpu, dep.compute_dtype, cost))
        j = dep.num_gpus * watts * float(cost.time) / b
        out.append(_row("energy", f"{r['model']} {dep.num_gpus}x {r['gpu']} batch {b:.0f} ({watts:.0f} W/GPU)",
                        r["source"], j, float(r["j_per_token"]), "J/token"))
    return out


def disagg_rows(limit: int | None = None) -> list[dict]:
    import disagg_dsv3  # benchmarks/disagg_dsv3.py: the phases as the authors ran them
    out = []
    for r in [r for r in disagg_dsv3.rows() if r["ran"]][:limit]:
        out.append(_row("disaggregated", f"{r['point']} {r['phase']} in={r['input_len']} {r['layout']}", r["url"],
                        r["predicted"], r["published"], r["unit"]))
    return out


def collect(groups=GROUPS, limit: int | None = None) -> list[dict]:
    pts = yaml.safe_load(POINTS.read_text("utf-8"))
    out = []
    for g in groups:
        if g not in GROUPS:
            raise ValueError(f"group={g!r}; allowed: {', '.join(GROUPS)}")
        if g == "speculative":
            out += speculative_rows(pts[g][:limit])
        elif g in ("prefix_caching", "kv_offload"):
            out += stream_rows(g, pts[g][:limit])
        elif g == "energy":
            out += energy_rows(pts[g], limit)
        else:
            out += disagg_rows(limit)
    return out


def summarize(rows: list[dict]) -> dict:
    """Per group: points, within ±25 %, the share; the speculative wrong-side count; energy median |error|."""
    groups: dict[str, dict] = {}
    for r in rows:
        g = groups.setdefault(r["group"], dict(points=0, within=0))
        g["points"] += 1
        g["within"] += bool(r["within"])
    for g in groups.values():
        g["share"] = g["within"] / g["points"]
        g["meets"] = g["share"] >= SHARE_TARGET
    spec = [r for r in rows if r["group"] == "speculative" and r["unit"] == "speed-up x"]
    wrong = sum((r["predicted"] - 1.0) * (r["published"] - 1.0) < 0 for r in spec)
    energy = [abs(r["error"]) for r in rows if r["group"] == "energy"]
    return dict(groups=groups, wrong_side=wrong if spec else None,
                energy_median=statistics.median(energy) if energy else None)


def render(rows: list[dict], summ: dict) -> str:
    lines = ["| group | point | predicted | published | unit | error | within ±25 % |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['group']} | {r['label']} | {r['predicted']:,.4g} | {r['published']:,.4g} | {r['unit']} "
                     f"| {r['error']:+.1%} | {'yes' if r['within'] else 'NO'} |")
    lines += ["", "| group | points | within ±25 % | share | target ≥ 70 % |", "|---|---|---|---|---|"]
    for name, g in summ["groups"].items():
        lines.append(f"| {name} | {g['points']} | {g['within']} | {g['share']:.0%} | {'met' if g['meets'] else 'NOT met'} |")
    if summ["wrong_side"] is not None:
        lines.append(f"\nspeculative speed-ups on the wrong side of 1: {summ['wrong_side']} (target 0)")
    if summ["energy_median"] is not None:
        ok = "met" if summ["energy_median"] <= ENERGY_TARGET else "NOT met"
        lines.append(f"energy per token, median |error| over the held-out rows: {summ['energy_median']:.1%} "
                     f"(target ≤ 20 %: {ok})")
    urls = sorted({r["url"] for r in rows if r["group"] != "energy"})
    lines += ["", "sources: " + "; ".join(urls)]
    if any(r["group"] == "energy" for r in rows):
        lines.append("energy rows: each row's `source` in src/inferbound/data/power_measured.csv (ML.ENERGY Leaderboard v3.0)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", default=",".join(GROUPS), help=f"comma list of {', '.join(GROUPS)}")
    ap.add_argument("--limit", type=int, default=None, help="the first N points of each group")
    a = ap.parse_args(argv)
    try:
        rows = collect(tuple(g.strip() for g in a.groups.split(",") if g.strip()), a.limit)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(render(rows, summarize(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
