"""The public measured rows (benchmarks/data/measured_public.csv) and the issue-19 target lines that
benchmarks/accuracy_report.py prints from them (benchmarks/serving_targets.py).

Rows: every row added for issue 19 is read by the validation reader (validation/dataset.py) without
being refused, names an http(s) source_url, and states its load (a finite rate and a prompt count, or
a concurrency). Target lines: on a tiny hand-made CSV whose predictions are set by hand, every figure
equals the hand computation written out below.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from inferbound.validation import read_csv
from inferbound.validation.predict import Prediction

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from serving_targets import engine_family, family, format_lines, target_lines  # noqa: E402

PUBLIC = ROOT / "benchmarks" / "data" / "measured_public.csv"
#: sources appended for issue 19 (benchmarks/data/README.md, "Sources")
NEW_SOURCES = ("SGLang_benchmark_dsv3_v0.4.1", "dstack_DeepSeek-R1_H200_MI300X_2025-03")


def _raw_rows():
    with PUBLIC.open(newline="") as f:
        return list(csv.DictReader(f))


def test_new_sources_present_and_urls_http():
    raw = _raw_rows()
    for src in NEW_SOURCES:
        assert any(r["source"] == src for r in raw), src
    bad = [r["case"] for r in raw if not r["source_url"].startswith(("http://", "https://"))]
    assert bad == []


def test_new_rows_parse_and_state_their_load():
    rows, unreadable = read_csv(PUBLIC)
    new_cases = {r["case"] for r in _raw_rows() if r["source"] in NEW_SOURCES}
    assert [u.case for u in unreadable if u.case in new_cases] == []
    parsed = [r for r in rows if r.case in new_cases]
    assert len(parsed) == len(new_cases) > 0
    for r in parsed:
        assert r.value > 0
        if r.scenario == "serving":
            assert r.concurrency is not None or (r.request_rate is not None and r.num_requests), r.case
        assert r.input_len is not None or r.dataset is not None, r.case


def test_dsv3_rows_read_as_stated():
    """Spot check against the source table (benchmark_dsv3/README.md, 8xH200 FP8, RPS 4, 1200 prompts):
    median TTFT 865.26 ms, fp8 weights and KV, TP 8, fixed 1024/1024 lengths."""
    rows, _ = read_csv(PUBLIC)
    hit = [r for r in rows if r.source == "SGLang_benchmark_dsv3_v0.4.1" and r.metric == "ttft_ms_p50"
           and r.request_rate == 4 and r.tp == 8 and r.weight_dtype == "fp8"]
    assert len(hit) == 1
    r = hit[0]
    assert (r.value, r.num_requests, r.input_len, r.output_len, r.kv_dtype) == (865.26, 1200, 1024, 1024, "fp8")


def test_dstack_rows_read_as_stated():
    """Spot check against the raw file (dstackai/benchmarks Deepseek-R1/raw_data/online_results.csv @ 7f37e66,
    row h200,vllm,random,max_concurrency 4, 3200/800): mean_ttft_ms 975.6508477, mean_tpot_ms 25.72997376."""
    rows, _ = read_csv(PUBLIC)
    hit = {r.metric: r for r in rows if r.source == "dstack_DeepSeek-R1_H200_MI300X_2025-03" and r.gpu == "h200_sxm"
           and r.framework == "vLLM" and r.concurrency == 4 and r.output_len == 800}
    assert sorted(hit) == ["e2e_ms", "output_tok_s", "tpot_ms", "ttft_ms"]
    assert (hit["ttft_ms"].value, hit["tpot_ms"].value) == (975.6508477, 25.72997376)
    assert (hit["ttft_ms"].num_requests, hit["ttft_ms"].input_len, hit["ttft_ms"].request_rate) == (500, 3200, None)


HEADER = ("case,source,model,gpu,num_gpus,tp,scenario,batch_size,request_rate,num_requests,concurrency,"
          "input_len,output_len,framework,metric,value,source_url")
M, G, U = "meta-llama/Llama-3.1-8B-Instruct", "h100_sxm", "https://example.org/t"
TINY = [
    # closed loop (4 rows: 3 covered)
    f"c1,s,{M},{G},1,1,serving,,,40,8,1000,100,vLLM,ttft_ms,100,{U}",
    f"c2,s,{M},{G},1,1,serving,,,40,8,1000,100,vLLM,itl_ms,20,{U}",
    f"c3,s,{M},{G},1,1,serving,,,40,8,1000,100,vLLM,output_tok_s,1000,{U}",
    f"c4,s,{M},{G},1,1,serving,,,40,64,1000,100,vLLM,ttft_ms,200,{U}",
    # vLLM Poisson runs
    f"p1,s,{M},{G},1,1,serving,,4,200,,1000,100,vLLM 0.6.0,e2e_ms_p50,1000,{U}",
    f"p2,s,{M},{G},1,1,serving,,4,200,,1000,100,vLLM 0.6.0,e2e_ms,2000,{U}",
    f"p3,s,{M},{G},1,1,serving,,4,200,,1000,100,vLLM 0.6.0,e2e_ms_p99,5000,{U}",
    f"p4,s,{M},{G},1,1,serving,,4,200,,1000,100,vLLM 0.6.0,ttft_ms,50,{U}",
    f"p5,s,{M},{G},1,1,serving,,4,200,,1000,100,vLLM 0.6.0,itl_ms_p50,10,{U}",
    # an SGLang Poisson run; a rate-inf serving row (neither open nor closed loop)
    f"q1,s,{M},{G},1,1,serving,,8,400,,1000,100,SGLang,ttft_ms,100,{U}",
    f"i1,s,{M},{G},1,1,serving,,inf,400,,1000,100,vLLM,ttft_ms,100,{U}",
    # held-out static / max-throughput rows
    f"h1,s,{M},{G},1,1,static_batch,8,,,,1000,100,vLLM,output_tok_s,100,{U}",
    f"h2,s,{M},{G},1,1,max_throughput,,inf,1000,,1000,100,vLLM,output_tok_s,200,{U}",
]
PREDICTED = {"c1": 120, "c2": 15, "c3": None, "c4": 150, "p1": 1050, "p2": 2400, "p3": 100, "p4": 60, "p5": 10.5,
             "q1": 130, "i1": 1000, "h1": 110, "h2": 260}
BANDS = {"h1": 0.15, "h2": 0.20}


@pytest.fixture
def lines(tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_text(HEADER + "\n" + "\n".join(TINY) + "\n")
    rows, bad = read_csv(path)
    assert bad == [] and len(rows) == len(TINY)
    preds = [Prediction(row=r, predicted=PREDICTED[r.case]) for r in rows]
    out = target_lines(preds, [BANDS.get(r.case) for r in rows])
    return {ln["name"]: ln for ln in out}


def test_closed_loop_lines_equal_hand_computation(lines):
    cov = lines["closed-loop sweeps: share of rows covered"]
    assert (cov["n"], cov["value"], cov["met"]) == (4, 3 / 4, False)           # 3 of 4 < 95 %
    # errors: c1 (120-100)/100 = +0.20, c2 (15-20)/20 = -0.25, c4 (150-200)/200 = -0.25
    mape = lines["closed-loop sweeps: MAPE (all covered metrics)"]
    assert mape["n"] == 3 and mape["value"] == pytest.approx((0.20 + 0.25 + 0.25) / 3) and mape["met"] is False
    ttft = lines["closed-loop sweeps: TTFT MAPE"]
    assert ttft["value"] == pytest.approx((0.20 + 0.25) / 2) and ttft["met"] is True        # 22.5 % <= 30 %
    assert lines["closed-loop sweeps: signed median TTFT error"]["value"] == pytest.approx((0.20 - 0.25) / 2)
    assert lines["closed-loop sweeps: signed median TTFT error"]["met"] is None              # no target


def test_poisson_lines_equal_hand_computation(lines):
    # E2E: p1 +0.05, p2 +0.20 (p3 is a p99 tail, not scored) -> median 0.125 > 10 %
    e2e = lines["Poisson runs, vLLM: median APE E2E"]
    assert e2e["n"] == 2 and e2e["value"] == pytest.approx(0.125) and e2e["met"] is False
    ttft = lines["Poisson runs, vLLM: median APE TTFT"]                                     # p4: 60/50 - 1
    assert ttft["n"] == 1 and ttft["value"] == pytest.approx(0.20) and ttft["met"] is True
    itl = lines["Poisson runs, vLLM: median APE ITL"]                                       # p5: 10.5/10 - 1
    assert itl["value"] == pytest.approx(0.05) and itl["met"] is True
    # the rate-inf row i1 is in no class; SGLang's line carries a figure but no target
    assert lines["Poisson runs, vLLM: share of rows covered"]["n"] == 5
    sgl = lines["Poisson runs, SGLang: median APE TTFT"]
    assert sgl["value"] == pytest.approx(0.30) and sgl["met"] is None


def test_held_out_lines_equal_hand_computation(lines):
    # h1 +0.10 (band 0.15: inside), h2 +0.30 (band 0.20: outside)
    mape = lines["held-out static + max-throughput rows: MAPE"]
    assert mape["n"] == 2 and mape["value"] == pytest.approx(0.20) and mape["met"] is False
    band = lines["held-out static + max-throughput rows: bands hold the truth"]
    assert (band["n"], band["value"], band["met"]) == (2, 0.5, False)


def test_printed_line_names_target_beside_figure(lines):
    text = format_lines(list(lines.values()))
    assert "| closed-loop sweeps: MAPE (all covered metrics) | <= 20 % | 3 | 23.3% | **no** |" in text
    assert "| Poisson runs, vLLM: median APE ITL | <= 10 % | 1 | 5.0% | yes |" in text
    assert "| closed-loop sweeps: signed median TTFT error | no target (issue's held-out: -79 %) | 2 | -2.5% | – |" in text


def test_metric_families_and_engines():
    assert [family(m) for m in ("ttft_ms", "ttft_ms_p50", "ttft_ms_p99", "itl_ms", "tpot_ms_p50", "output_tok_s")] \
        == ["ttft", "ttft", None, "itl", "tpot", None]
    assert [engine_family(f) for f in ("vLLM 0.4.3+rocm614", "SGLang", "TensorRT-LLM (TensorRT 10.1.0)",
                                       "NVIDIA NIM 1.8.0", None)] == ["vLLM", "SGLang", "TensorRT-LLM", "NIM",
                                                                      "(not stated)"]
