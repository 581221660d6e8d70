"""Print the ``classes:`` block of a data/datasets.yaml profile from a per-request length table.

    python benchmarks/data/length_classes.py FILE.csv PREFILL_COLUMN DECODE_COLUMN

The requests' (prompt, output) token counts are grouped as workloads/lengths.py ``from_pairs`` groups a
trace: 16 equal-count classes sorted by output then prompt length, each at its members' mean lengths.
Shares are printed to 6 decimals and lengths to 0.1 token; the file's exact means and count go beside.
"""
from __future__ import annotations

import csv
import sys

import numpy as np

from inferbound.workloads.lengths import from_pairs


def main(path: str, prefill: str, decode: str) -> None:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    i = np.array([float(r[prefill]) for r in rows])
    o = np.array([float(r[decode]) for r in rows])
    mix = from_pairs(i, o, path)
    print(f"    # {len(rows):,} requests; means {i.mean():.1f} in / {o.mean():.1f} out")
    print(f"    input_mean: {i.mean():.1f}")
    print(f"    output_mean: {o.mean():.1f}")
    print("    classes:  # [share of requests, mean prompt tokens, mean output tokens]")
    for w, a, b in zip(mix.weights, mix.inputs, mix.outputs):
        print(f"      - [{w:.6f}, {a:.1f}, {b:.1f}]")


if __name__ == "__main__":
    main(*sys.argv[1:4])
