"""The InferenceX SGLang 0.5.7 DeepSeek-R1 rows (benchmarks/data/measured_public.csv, source
InferenceX_issue870_SGLang_0.5.7_H200) read as the thread states them and agree with each other by hand:
a closed-loop client's E2E = TTFT + (output tokens − 1) · TPOT, and N clients each finishing a request of
``output_len`` tokens every E2E give N · output_len / E2E tokens/s over 8 GPUs."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from inferbound.validation import read_csv

CSV = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "measured_public.csv"
SOURCE = "InferenceX_issue870_SGLang_0.5.7_H200"


@pytest.fixture(scope="module")
def runs():
    rows, _ = read_csv(CSV)
    out: dict = {}
    for r in rows:
        if r.source == SOURCE:
            out.setdefault((r.concurrency, r.input_len, r.output_len), {})[r.metric] = r
    return out


def test_rows_as_stated(runs):
    assert len(runs) == 6 and all(len(m) == 4 for m in runs.values())
    # conc 8, 1k/1k: the thread's table column conc=8 (TTFT 330.6 ms, TPOT 12.8 ms, E2E 12.22 s, 74.6 tok/s/GPU)
    c8 = runs[(8, 921.6, 921.6)]
    assert (c8["ttft_ms"].value, c8["tpot_ms"].value, c8["e2e_ms"].value, c8["output_tok_s_per_gpu"].value) == \
        (330.6, 12.8, 12220.0, 74.6)
    r = c8["tpot_ms"]
    assert (r.gpu, r.num_gpus, r.tp, r.scenario, r.num_requests, r.framework) == ("h200_sxm", 8, 8, "serving", 80,
                                                                                   "SGLang")
    with CSV.open(newline="") as fh:
        urls = {row["source_url"] for row in csv.DictReader(fh) if row["source"] == SOURCE}
    assert urls == {"https://github.com/SemiAnalysisAI/InferenceX/issues/870"}


def test_e2e_is_ttft_plus_tpot_per_token(runs):
    """conc 8: 0.3306 + 920.6 · 0.0128 = 12.115 s vs 12.22 s measured; every run within 5 %."""
    for m in runs.values():
        n = m["tpot_ms"].output_len
        e2e = m["ttft_ms"].value + (n - 1) * m["tpot_ms"].value
        assert e2e == pytest.approx(m["e2e_ms"].value, rel=0.05)


def test_throughput_is_clients_times_tokens_over_e2e(runs):
    """conc 8: 8 · 921.6 / 12.22 s / 8 GPUs = 75.4 tok/s/GPU vs 74.6 stated; every run within 5 %."""
    for (conc, _, out), m in runs.items():
        per_gpu = conc * out / (m["e2e_ms"].value / 1e3) / 8
        assert per_gpu == pytest.approx(m["output_tok_s_per_gpu"].value, rel=0.05)
