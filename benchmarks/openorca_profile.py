"""Recompute the ``mlperf_llama2_70b_openorca`` profile of data/datasets.yaml from its shipped length file.

    python benchmarks/openorca_profile.py [benchmarks/data/mlperf_llama2_70b_openorca_lengths.csv]

Source: openshift-psap/performance-dashboard @ 7cd1065d1e2c53ee745cbda08e2a8f13a42c93bb,
mlperf-data/summaries/llama2-70b-99.csv (Apache-2.0, benchmarks/data/LICENSE.performance-dashboard), written by
that repository's mlperf-data/original/generate_dataset_summaries.py from MLCommons'
open_orca_gpt4_tokenized_llama.sampled_24576.pkl.gz: ``input_length`` = the pickle's ``tok_input_length`` (the
Llama-2 token ids the benchmark harnesses send, e.g. NVIDIA's preprocess_data.py asserts len(tok_input) ==
tok_input_length), ``output_length`` = ``tok_output_length``, the tokenized GPT-4 reference answer of OpenOrca,
not what Llama-2-70B generates (its mean is MLPerf's 294.45 reference tokens per sample). The copy is byte-identical.

Printed, each with its formula:
- count n (24,576 = MLPerf's performance_sample_count), means  mean(x) = Σx / n, population spreads
  std(x) = sqrt(Σ(x − mean)² / n)  (numpy, ddof=0), percentiles p50 / p90 / p99 (numpy's linear interpolation),
  for the prompts and, for the record only, the GPT-4 reference answers;
- the ``classes:`` block: 16 equal-count classes of the prompts sorted by length (a stable sort; numpy
  array_split, so every class holds 1,536 samples), each at its members' mean prompt length and at the
  reference output mean 294.45 (the spread of the generated lengths is not published).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

DEFAULT = Path(__file__).resolve().parent / "data" / "mlperf_llama2_70b_openorca_lengths.csv"
REFERENCE_OUTPUT = 294.45  # mlcommons/inference language/llama2-70b/README.md @ 00bf834: tokens per sample
CLASSES = 16


def read(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(prompt, reference answer) token counts of the file's input_length / output_length columns."""
    lines = path.read_text().split()
    if lines[0] != "input_length,output_length":
        raise ValueError(f"{path}: header {lines[0]!r}; allowed: input_length,output_length")
    rows = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    return rows[:, 0], rows[:, 1]


def stats(i: np.ndarray, o: np.ndarray) -> dict:
    return {"n": int(i.size), "input_mean": float(i.mean()), "input_std": float(i.std()),
            "input_pct": [float(x) for x in np.percentile(i, [50, 90, 99])],
            "input_min": float(i.min()), "input_max": float(i.max()),
            "reference_mean": float(o.mean()), "reference_std": float(o.std()),
            "reference_pct": [float(x) for x in np.percentile(o, [50, 90, 99])]}


def input_classes(i: np.ndarray, classes: int = CLASSES) -> list[tuple[float, float]]:
    """(share, mean prompt tokens) of ``classes`` equal-count classes of the prompts sorted by length."""
    parts = np.array_split(np.argsort(i, kind="stable"), classes)
    return [(p.size / i.size, float(i[p].mean())) for p in parts]


def main(path: Path = DEFAULT) -> None:
    i, o = read(path)
    s = stats(i, o)
    print(f"    # {s['n']:,} samples; prompt {s['input_mean']:.1f} ± {s['input_std']:.1f} (min {s['input_min']:g}, "
          f"max {s['input_max']:g}), p50 {s['input_pct'][0]:g} / p90 {s['input_pct'][1]:g} / p99 {s['input_pct'][2]:g}")
    print(f"    # GPT-4 reference answers (not the generated lengths): {s['reference_mean']:.1f} ± "
          f"{s['reference_std']:.1f}, p50 {s['reference_pct'][0]:g} / p90 {s['reference_pct'][1]:g} / "
          f"p99 {s['reference_pct'][2]:g}")
    print(f"    input_mean: {s['input_mean']:.1f}")
    print(f"    input_std: {s['input_std']:.1f}")
    print("    classes:")
    for w, a in input_classes(i):
        print(f"      - [{w:.6f}, {a:.1f}, {REFERENCE_OUTPUT}]")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
