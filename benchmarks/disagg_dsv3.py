"""Published disaggregated deployments, predicted: per-node prefill and decode throughput against the
figures their authors measured (benchmarks/data/disagg_published.yaml: the URL, both pools' layouts, the
settings of the run).

Run:
    .venv/bin/python benchmarks/disagg_dsv3.py            # table: predicted vs published, ratio, within ±25 %
    .venv/bin/python benchmarks/disagg_dsv3.py --json     # the rows as JSON

Each phase is predicted as its authors measured it, alone with the other phase unlimited
(workloads/disagg.py): prefill steps of ``prefill_tokens_per_device`` tokens per attention-DP rank, decode
steps of ``decode_batch_per_device`` sequences (or the KV cap where none is published) at the published KV
length. SGLang's two-batch overlap, where the run enabled it, is the layout's comm_overlap
(data/disagg.yaml two_batch_overlap); DeepEP's normal all-to-all, where the prefill ran it, the layout's
``ep_a2a=deepep`` (pricing/comm.py). Rows are printed also without the overlap and, for prefill, with the
pairwise all-to-all, so each one's share of the figure shows.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from inferbound.base.datafiles import data_yaml  # noqa: E402
from inferbound.deploy.deployment import make_deployment  # noqa: E402
from inferbound.workloads.disagg import decode_phase, prefill_phase  # noqa: E402
from inferbound.deploy.pools import pool_deployment  # noqa: E402

POINTS = ROOT / "benchmarks" / "data" / "disagg_published.yaml"
BAND = 0.25


def _with_overlap(layout: str, on: bool) -> str:
    ov = float(data_yaml("disagg.yaml")["two_batch_overlap"]["comm_overlap"]["value"]) if on else 0.0
    return f"{layout},comm_overlap={ov:g}"


def rows() -> list[dict]:
    out = []
    for key, p in yaml.safe_load(POINTS.read_text()).items():
        base = make_deployment(model=p["model"], gpu=p["gpu"], engine=p["engine"], kv_dtype=p.get("kv_dtype"))
        for tbo in sorted({bool(p.get("two_batch_overlap")), False}, reverse=True):
            tag = "TBO" if tbo else "no overlap"
            ran = tbo == bool(p.get("two_batch_overlap"))  # the configuration the authors ran
            if "prefill" in p:
                layouts = [(tag, ran, _with_overlap(p["prefill_layout"], tbo))]
                if ran and "ep_a2a=deepep" in p["prefill_layout"]:  # the same run priced with pairwise all-to-all
                    layouts.append((tag + " pairwise", False, _with_overlap(
                        p["prefill_layout"].replace("ep_a2a=deepep", "ep_a2a=pairwise"), tbo)))
                for setting, as_ran, layout in layouts:
                    pre = pool_deployment(base, layout, "prefill_layout")
                    per_node = pre.num_gpus // pre.par.nodes
                    for inp, pub in p["prefill"].items():
                        ph = prefill_phase(pre, float(inp), p["prefill_tokens_per_device"])
                        out.append(dict(point=key, url=p["url"], phase="prefill", input_len=inp, setting=setting,
                                        ran=as_ran, layout=pre.label(), unit=f"input tok/s per node of {per_node}",
                                        predicted=ph.tok_s_per_node, published=float(pub), step_s=ph.step_s,
                                        bound=ph.bound))
            dec = pool_deployment(base, _with_overlap(p["decode_layout"], tbo), "decode_layout")
            per_node = dec.num_gpus // dec.par.nodes
            figures = p.get("decode") or p.get("decode_per_gpu")
            for inp, pub in figures.items():
                batch = p.get("decode_batch_per_device")
                ph = decode_phase(dec, float(inp), 100.0, context=float(p["decode_context"]), batch_per_group=batch)
                per_gpu = "decode_per_gpu" in p
                out.append(dict(point=key, url=p["url"], phase="decode", input_len=inp, setting=tag, ran=ran,
                                layout=dec.label(), unit="output tok/s per GPU" if per_gpu else
                                f"output tok/s per node of {per_node}",
                                predicted=ph.tok_s_per_gpu if per_gpu else ph.tok_s_per_node, published=float(pub),
                                step_s=ph.step_s, bound=ph.bound,
                                batch=f"{ph.batch / dec.par.attention_groups:g}/GPU ({ph.cap})"))
    for r in out:
        r["ratio"] = r["predicted"] / r["published"]
        r["within_25pct"] = abs(r["ratio"] - 1) <= BAND
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rs = rows()
    if a.json:
        print(json.dumps(rs, indent=1))
        return
    seen = set()
    for r in rs:
        if r["point"] not in seen:
            seen.add(r["point"])
            print(f"\n{r['point']}: {r['url']}")
        mark = "yes" if r["within_25pct"] else "NO"
        print(f"  {r['phase']:7s} in={r['input_len']:<5} {r['setting']:12s}{'*' if r['ran'] else ' '} "
              f"{r['layout']:55s} predicted {r['predicted']:>9,.0f}  published {r['published']:>9,.0f} "
              f"{r['unit']:28s} ratio {r['ratio']:.2f} (±25 %: {mark})  step {r['step_s'] * 1e3:,.1f} ms, "
              f"{r['bound']}{'  batch ' + r['batch'] if 'batch' in r else ''}")
    ran = [r for r in rs if r["ran"]]
    print(f"\n* the configuration the authors ran; within ±25 %: {sum(r['within_25pct'] for r in ran)} of {len(ran)}")


if __name__ == "__main__":
    main()
