"""Write the numbers of docs/accuracy.md: validate the shipped calibration on the measured data.

Run: .venv/bin/python benchmarks/accuracy_report.py [CSV] [--calibration FILE]
Prints markdown tables (per source/scenario/metric, throughput/latency totals, cross-validation from
the calibration file, worst rows) and writes docs/img/accuracy.png and docs/img/accuracy_rows.csv.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from inferbound.calibration import resolve
from inferbound.validation import predict_rows, read_csv
from inferbound.validation.report import plot, row_records, summary, write_rows

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "validation" / "measured.csv"


def pct(x):
    return "–" if x is None else f"{x:.1%}"


def bias(x):
    return "–" if x is None else f"{x:+.1%}"


def table(groups, keys):
    head = "| " + " | ".join(keys) + " | n | MAPE | median APE | within ±25 % | bias | not covered |"
    lines = [head, "|" + "---|" * (len(keys) + 6)]
    for g in groups:
        lines.append("| " + " | ".join(str(g[k]) for k in keys) + f" | {g['n']} | {pct(g['mape'])} | "
                     f"{pct(g['median_ape'])} | {pct(g['within_25'])} | "
                     f"{bias(g['bias'])} | "
                     f"{g.get('not_covered', '')} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default=str(DEFAULT))
    ap.add_argument("--calibration", default="default")
    a = ap.parse_args()
    cal = resolve(a.calibration)
    rows, bad = read_csv(a.csv)
    preds = predict_rows(rows, calibration=cal if cal is not None else "none")
    s = summary(preds, bad)
    (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
    plot(preds, ROOT / "docs" / "img" / "accuracy.png",
         title=f"predicted vs measured ({'calibration: ' + cal.source if cal else 'catalog priors'})")
    write_rows(ROOT / "docs" / "img" / "accuracy_rows.csv", row_records(preds, bad))
    print(f"rows {s['rows']}, covered {s['covered']}, not covered {s['not_covered']} ({s['not_covered_share']:.1%})\n")
    print(table([s["throughput"] | {"class": "throughput"}, s["latency"] | {"class": "latency"},
                 s["all"] | {"class": "all"}], ["class"]))
    print()
    print(table(s["by_source_scenario_metric"], ["source", "scenario", "metric"]))
    print()
    print(table(s["by_gpu"], ["gpu"]))
    print()
    print(table(s["by_model"], ["model"]))
    if cal is not None and cal.meta.get("cross_validation"):
        for key, rep in cal.meta["cross_validation"].items():
            print(f"\nLeave-one-{key}-out (fit without that {key}):\n")
            print(table(rep["groups"] + [rep["throughput"] | {key: "THROUGHPUT"}, rep["latency"] | {key: "LATENCY"}], [key]))
    worst = sorted((p for p in preds if p.covered), key=lambda p: -abs(p.error))[:15]
    print("\nWorst rows:\n\n| case | source | model | gpu | scenario | metric | measured | predicted | error |\n|---|---|---|---|---|---|---|---|---|")
    for p in worst:
        r = p.row
        print(f"| {r.case} | {r.source} | {r.model} | {r.gpu} | {r.scenario} | {r.metric} | {r.value:g} | "
              f"{p.predicted:.4g} | {p.error:+.0%} |")


if __name__ == "__main__":
    main()
