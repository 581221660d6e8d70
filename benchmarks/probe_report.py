"""Probe report: run the full `inferbound probe` on this machine and print its tables and error summary.

Run: .venv/bin/python benchmarks/probe_report.py [--out DIR] [--model MODEL] [--threads N] [--quick] [--json FILE]
(default: SmolLM2-135M, fp32 on CPU / bf16 on CUDA, files in ./probe-out). Needs the `probe` extra (PyTorch).
This is the measurement docs/probe.md and docs/accuracy.md cite; rerun it on a quiet machine: other
processes on the cores show up as contention in every timing (the report warns when the load is high).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from inferbound.cli.common import to_jsonable
from inferbound.cli.probe_cmd import show
from inferbound.probe import probe


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("probe-out"))
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="also write the full result as JSON here")
    a = ap.parse_args(argv)
    r = probe(model=a.model, quick=a.quick, out_dir=a.out, threads=a.threads)
    show(r)
    o = r.overall
    print(f"\nall rows: n={o['n']} MAPE {o['mape']:.1%} median APE {o['median_ape']:.1%} "
          f"within 25% {o['within_25']:.0%} bias {o['bias']:+.1%} not covered {o['not_covered']}")
    print(f"decode predicted memory-bound at every setup: {r.memory_bound['all_memory_bound']}")
    for s in r.slope:
        print(f"batch {s['batch']}: decode grows with context: {s['grows']}; measured slope "
              f"{s['measured_slope_s_per_token']:.3g} s/token = {s['ratio_measured_to_kv_read']:.2f} x the KV-read slope "
              f"{s['kv_read_slope_s_per_token']:.3g} s/token")
    print("phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in r.phase_s.items()) + f"; total {r.elapsed_s:.1f}")
    if a.json:
        a.json.write_text(json.dumps(to_jsonable(r.to_dict()), indent=2) + "\n")


if __name__ == "__main__":
    main()
