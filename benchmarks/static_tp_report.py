"""Issue 3 report: error on the static-batch rows with tp > 1 of the measured data.

Run: .venv/bin/python benchmarks/static_tp_report.py [CSV]   (default: ../shared/validation/measured.csv)
Prints one line per row (measured, predicted, error) and the summary per source and metric.
"""
from __future__ import annotations

import sys
from pathlib import Path

from inferbound.validation import group_summary, predict_rows, read_csv

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "validation" / "measured.csv"


def main(path: str | Path = DEFAULT) -> None:
    rows, bad = read_csv(path)
    rows = [r for r in rows if r.scenario == "static_batch" and r.tp > 1]
    preds = predict_rows(rows)
    print(f"{'case':7} {'model':30} {'gpu':14} {'tp':>2} {'batch':>5} {'in':>5} {'out':>5} {'metric':22} "
          f"{'measured':>10} {'predicted':>10} {'error':>7}")
    for p in preds:
        r = p.row
        pred = f"{p.predicted:10.1f}" if p.covered else f"{'n/a':>10}"
        err = f"{p.error:+7.1%}" if p.covered else f"  ({p.reason})"
        print(f"{r.case:7} {r.model[:30]:30} {r.gpu:14} {r.tp:>2} {r.batch_size:>5} {r.input_len:>5} "
              f"{r.output_len:>5} {r.metric:22} {r.value:10.1f} {pred} {err}")
    print("\nsummary (MAPE, median APE, share within 25%, bias):")
    for s in group_summary(preds, ("source", "metric")):
        if s["n"]:
            print(f"  {s['source']:28} {s['metric']:22} n={s['n']:3} MAPE {s['mape']:6.1%} median {s['median_ape']:6.1%} "
                  f"within25 {s['within_25']:5.0%} bias {s['bias']:+6.1%} not covered {s['not_covered']}")
    allc = [p.error for p in preds if p.covered]
    from inferbound.validation import summarize
    t = summarize(allc)
    print(f"  {'ALL':51} n={t['n']:3} MAPE {t['mape']:6.1%} median {t['median_ape']:6.1%} "
          f"within25 {t['within_25']:5.0%} bias {t['bias']:+6.1%} not covered {sum(not p.covered for p in preds)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
