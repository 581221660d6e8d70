"""A layout cell the source leaves unstated ("not stated") makes the row unpredicted with that reason, instead of
the schema default tp = num_gpus (benchmarks/data/README.md, MLPerf v5.0 row 0022)."""
import csv
import io
from pathlib import Path

from inferbound.validation.dataset import read_csv

PUBLIC = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "measured_public.csv"


def test_not_stated_tp_is_unreadable_with_its_reason(tmp_path):
    text = PUBLIC.read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    row = next(r for r in rows if r["case"] == "p-mlperf50-0022")
    assert row["tp"] == "not stated"
    out = tmp_path / "one.csv"
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerow(row)
        w.writerow({**row, "case": "same-with-tp-1", "tp": "1"})
    parsed, unreadable = read_csv(out)
    assert [u.case for u in unreadable] == ["p-mlperf50-0022"]
    assert "tp not stated by the source" in unreadable[0].reason
    assert [r.case for r in parsed] == ["same-with-tp-1"] and parsed[0].tp == 1
