"""``inferbound compare FILE.yaml``: deployments side by side under one workload (compare.py)."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..faces.options import COMPARE
from .common import console, print_json, warn
from .output import Writes, check_file
from .params import command

_HEAD = {"ttft_ms": "TTFT ms", "tpot_ms": "TPOT ms", "tok_s_per_gpu": "tok/s/GPU", "tok_s_per_user": "tok/s/user",
         "joules_per_token": "J/token", "usd_per_mtok": "$/M tok"}


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 100 else (f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.3g}")


HELP = """Deployments side by side under one workload: TTFT, TPOT, tok/s per GPU and per user, J/token,
$/M tokens, fit, bound, and each figure's ratio to the first deployment. A deployment that does not fit is
a row marked NO; rows are named by their layout and whatever else differs (formats, engine, options).

FILE.yaml has a workload: mapping and a deployments: list; keys are the CLI option names (dashes or
underscores), a deployment may carry a label: (example: docs/deployments.yaml in the source tree):

\b
  workload: {scenario: serving, concurrency: 16, input_len: 1024, output_len: 256}
  deployments:
    - {model: llama-3.1-70b, gpu: h100_sxm, tp: 4}
    - {model: llama-3.1-70b, gpu: h100_sxm, tp: 4, engine: sglang}
    - {model: llama-3.1-70b, gpu: h200_sxm, tp: 2, weight_dtype: fp8, label: "H200 fp8"}
"""


@command("compare", HELP, COMPARE)
def compare(o: dict) -> None:
    from ..faces import compare as cmp
    if o["file"] is None:
        raise ValueError("file is missing; allowed: a comparison YAML file (inferbound compare FILE.yaml)")
    csv, plot = check_file(o["csv"], "--csv", ".csv"), check_file(o["plot"], "--plot", ".png")  # before the work
    workload, deployments = cmp.load(o["file"])
    rows = cmp.compare(workload, deployments)
    files = Writes()  # a write that fails now: the table first, then the error line
    files.write("--csv", csv, lambda p: p.write_text(cmp.to_csv(rows)))
    files.write("--plot", plot, lambda p: cmp.plot(rows, p))
    written = files.written
    if o["json"]:
        print_json({"workload": workload, "rows": [r.to_dict() for r in rows], "files": [str(p) for p in written]})
        return files.finish()
    t = Table(title=Text(f"compare: {workload.get('scenario', 'static')} "
                         + ", ".join(f"{k}={v}" for k, v in workload.items() if k != "scenario")))
    t.add_column("deployment")
    for m in cmp.METRICS:
        t.add_column(_HEAD[m], justify="right")
    t.add_column("fits")
    t.add_column("bound")
    for r in rows:
        cells = [_fmt(r.metrics.get(m)) + ("" if r is rows[0] or r.ratio.get(m) is None else f" ({r.ratio[m]:.2f}x)")
                 for m in cmp.METRICS]
        t.add_row(r.label, *cells, "yes" if r.fits else "NO", r.bound)
    console.print(t)
    console.print("ratios: each figure / the first deployment's", highlight=False)
    for r in rows:
        for w in r.warnings:
            warn(f"{r.label}: {w}")
    for p in written:
        console.print(f"wrote {p}", highlight=False)
    files.finish()
