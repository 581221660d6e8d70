"""Recompute the ``sharegpt_8k_sarathi`` profile of data/datasets.yaml from its shipped length file.

    python benchmarks/sharegpt_profile.py [benchmarks/data/sharegpt_8k_sarathi.csv]
    python benchmarks/sharegpt_profile.py --first-turns [FILE]   # vLLM's first-turn filter, against its means

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

``--first-turns``: the file's rows as vLLM's ShareGPT benchmarks would draw them, compared with the published
means of the ``sharegpt`` profile (data/datasets.yaml: 229.7 in / 203.1 out, Llama-3.1 tokenizer, vLLM PR #18566):
- first turns: row 0, and every row whose prompt is below the previous row's prompt + output (a row at or above
  it carries that history: the multi-turn rule above, negated); vLLM's ShareGPTDataset takes a conversation's
  first human turn and its reply;
- vLLM's filter, ``is_valid_sequence(prompt_len, output_len, min_len=4, max_prompt_len=1024,
  max_total_len=2048)`` (vllm/benchmarks/datasets.py @ f2e97ddaf5902a9727f48b70d001b6117b8b8b12): kept when
  prompt >= 4, output >= 4, prompt <= 1024 and prompt + output <= 2048 (the caps are the profile's
  ``input_cap`` / ``total_cap``);
- the verdict: the shape is taken as plausible for the vLLM profile when both means are within
  PLAUSIBLE (25 %) of the published ones before any rescaling (issue 21 task L); otherwise it is not shipped.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from inferbound.base.datafiles import data_yaml
from inferbound.workloads.lengths import from_pairs

DEFAULT = Path(__file__).resolve().parent / "data" / "sharegpt_8k_sarathi.csv"
#: vllm/benchmarks/datasets.py is_valid_sequence's min_len (commit f2e97dd): prompt and output >= 4 tokens
MIN_LEN = 4
#: the largest relative gap of a mean to the published one for the first turns to stand for `sharegpt`
PLAUSIBLE = 0.25


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


def first_turns(i: np.ndarray, o: np.ndarray) -> np.ndarray:
    """Rows that start a conversation: row 0 and each row with prompt < previous prompt + previous output."""
    keep = np.ones(i.size, dtype=bool)
    keep[1:] = i[1:] < (i + o)[:-1]
    return keep


def vllm_valid(i: np.ndarray, o: np.ndarray, max_prompt: float, max_total: float) -> np.ndarray:
    """vLLM's is_valid_sequence: prompt >= 4, output >= 4, prompt <= max_prompt, prompt + output <= max_total."""
    return (i >= MIN_LEN) & (o >= MIN_LEN) & (i <= max_prompt) & (i + o <= max_total)


def first_turn_check(i: np.ndarray, o: np.ndarray, published: dict) -> dict:
    """The first turns under vLLM's filter against ``published`` (the sharegpt profile: means and caps)."""
    first = first_turns(i, o)
    fi, fo = i[first], o[first]
    kept = vllm_valid(fi, fo, published["input_cap"], published["total_cap"])
    s = stats(fi[kept], fo[kept])
    gaps = {k: s[k] / published[k] - 1 for k in ("input_mean", "output_mean")}
    return {**s, "rows": int(i.size), "first_turns": int(first.sum()), "kept": int(kept.sum()), "gaps": gaps,
            "plausible": all(abs(g) <= PLAUSIBLE for g in gaps.values())}


def main_first_turns(path: Path = DEFAULT) -> dict:
    pub = data_yaml("datasets.yaml")["datasets"]["sharegpt"]
    i, o = read(path)
    c = first_turn_check(i, o, pub)
    print(f"{c['rows']:,} rows; first turns {c['first_turns']:,} ({100 * c['first_turns'] / c['rows']:.1f} %); "
          f"kept by vLLM's filter (>= {MIN_LEN}, prompt <= {pub['input_cap']}, total <= {pub['total_cap']}): "
          f"{c['kept']:,}")
    print(f"means {c['input_mean']:.1f} in / {c['output_mean']:.1f} out (std {c['input_std']:.1f} / "
          f"{c['output_std']:.1f}); published {pub['input_mean']} / {pub['output_mean']}: "
          f"{100 * c['gaps']['input_mean']:+.1f} % / {100 * c['gaps']['output_mean']:+.1f} %")
    print(f"prompt p50 {c['input_pct'][0]:g} / p90 {c['input_pct'][1]:g}, output p50 {c['output_pct'][0]:g} / "
          f"p90 {c['output_pct'][1]:g}")
    verdict = "yes" if c["plausible"] else "no: not shipped as sharegpt's classes"
    print(f"plausible (both means within {100 * PLAUSIBLE:g} %): {verdict}")
    return c


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
    args = sys.argv[1:]
    if args[:1] == ["--first-turns"]:
        main_first_turns(Path(args[1]) if len(args) > 1 else DEFAULT)
    else:
        main(Path(args[0]) if args else DEFAULT)
