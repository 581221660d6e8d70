"""Recompute the ``sharegpt_8k_sarathi`` profile of data/datasets.yaml from its shipped length file.

    python benchmarks/sharegpt_profile.py [benchmarks/data/sharegpt_8k_sarathi.csv]

Source: microsoft/sarathi-serve @ 72339db5b120614033b317880ad3a05a5e4c9415 (branch niyama_asplos2026),
data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv (Apache-2.0, benchmarks/data/
LICENSE.sarathi-serve): 30,731 requests, token counts with the Llama-2 tokenizer. The copy keeps its first
two columns (``cut -d, -f1,2``; the dropped ones are num_total_tokens = prefill + decode and their ratio).

Printed, each with its formula:
- count n, means  mean(x) = Σx / n, population spreads  std(x) = sqrt(Σ(x − mean)² / n)  (numpy, ddof=0);
- percentiles p50 / p90 / p99 (numpy's linear interpolation);
- the observed caps: max(prompt + output), max(output);
- the multi-turn share: rows whose prompt >= the previous row's prompt + output (a turn carrying its history);
- the ``classes:`` block, grouped as workloads/lengths.py ``from_pairs`` groups a trace (16 equal-count
  classes by output then prompt, each at its members' means), as benchmarks/data/length_classes.py prints it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from inferbound.workloads.lengths import from_pairs

DEFAULT = Path(__file__).resolve().parent / "data" / "sharegpt_8k_sarathi.csv"


def read(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(prompt, output) token counts of the file's num_prefill_tokens / num_decode_tokens columns."""
    lines = path.read_text().split()
    if lines[0] != "num_prefill_tokens,num_decode_tokens":
        raise ValueError(f"{path}: header {lines[0]!r}; allowed: num_prefill_tokens,num_decode_tokens")
    rows = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    return rows[:, 0], rows[:, 1]


def stats(i: np.ndarray, o: np.ndarray) -> dict:
    t = i + o
    return {
        "n": int(i.size), "input_mean": float(i.mean()), "output_mean": float(o.mean()),
        "input_std": float(i.std()), "output_std": float(o.std()),
        "input_pct": [float(x) for x in np.percentile(i, [50, 90, 99])],
        "output_pct": [float(x) for x in np.percentile(o, [50, 90, 99])],
        "max_total": float(t.max()), "max_output": float(o.max()),
        "multi_turn_share": float(np.mean(i[1:] >= t[:-1])),
    }


def main(path: Path = DEFAULT) -> None:
    i, o = read(path)
    s = stats(i, o)
    print(f"    # {s['n']:,} requests; prompt p50 {s['input_pct'][0]:g} / p90 {s['input_pct'][1]:g} / "
          f"p99 {s['input_pct'][2]:.1f}, output p50 {s['output_pct'][0]:g} / p90 {s['output_pct'][1]:g} / "
          f"p99 {s['output_pct'][2]:.1f}")
    print(f"    # max prompt + output {s['max_total']:g}, max output {s['max_output']:g}; "
          f"multi-turn rows {100 * s['multi_turn_share']:.1f} %")
    print(f"    input_mean: {s['input_mean']:.1f}")
    print(f"    output_mean: {s['output_mean']:.1f}")
    print(f"    input_std: {s['input_std']:.1f}")
    print(f"    output_std: {s['output_std']:.1f}")
    print("    classes:  # [share of requests, mean prompt tokens, mean output tokens]")
    mix = from_pairs(i, o, str(path))
    for w, a, b in zip(mix.weights, mix.inputs, mix.outputs):
        print(f"      - [{w:.6f}, {a:.1f}, {b:.1f}]")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
