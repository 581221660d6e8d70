"""Validation of static-batch predictions: reading the CSV schema, predicting rows, summaries.

Expected values are written out by hand: the metric relations of a static batch run
(output tok/s = R·B·N / (TTFT + (N−1)·ITL), achieved bandwidth = weight bytes per GPU / ITL, ...)
and the parameter count of the model from its config fields.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from inferbound.validation import group_summary, predict_rows, read_csv, summarize
from inferbound.validation.dataset import Row, Unreadable

COLUMNS = ["case", "source", "model", "gpu", "num_gpus", "tp", "pp", "ep", "weight_dtype", "act_dtype", "kv_dtype",
           "framework", "scenario", "batch_size", "request_rate", "num_requests", "input_len", "output_len", "metric",
           "value", "source_url"]

# Llama-2-7B: hidden 4096, 32 layers, 32 heads (no GQA), MLP 11008, vocab 32000, untied LM head
L7_LAYER = 4 * 4096 * 4096 + 3 * 4096 * 11008     # q, k, v, o + gate, up, down = 202,375,168
L7_NORMS = (2 * 32 + 1) * 4096                     # 266,240
L7_TOTAL = 32 * L7_LAYER + 2 * 32000 * 4096 + L7_NORMS
# bf16, TP2: matrices split 2 ways, norms replicated
L7_TP2_BYTES = (L7_TOTAL - L7_NORMS) * 2 / 2 + L7_NORMS * 2

SHARED_CSV = Path(__file__).resolve().parents[2] / "shared" / "validation" / "measured.csv"

GPTFAST = dict(source="gpt-fast_test", model="meta-llama/Llama-2-7b-hf", gpu="a100_80gb_sxm", num_gpus="2", tp="2",
               pp="1", ep="", weight_dtype="bf16", act_dtype="", kv_dtype="", framework="gpt-fast",
               scenario="static_batch", batch_size="1", request_rate="", num_requests="", input_len="5",
               output_len="200", source_url="https://example.invalid")
METRICS = ["achieved_mem_bw_gbps", "tok_s_per_user", "itl_ms", "ttft_ms", "output_tok_s", "output_tok_s_per_gpu",
           "total_tok_s", "requests_per_s"]


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in COLUMNS})
    return path


@pytest.fixture
def small_csv(tmp_path):
    rows = [dict(GPTFAST, case=f"g{i}", metric=m, value="100") for i, m in enumerate(METRICS)]
    rows.append(dict(GPTFAST, case="dp2", num_gpus="4", metric="output_tok_s_per_gpu", value="100"))
    rows.append(dict(GPTFAST, case="dp2b", num_gpus="4", metric="output_tok_s", value="100"))
    rows.append(dict(GPTFAST, case="nogpu", gpu="h900_sxm", metric="itl_ms", value="10"))
    rows.append(dict(GPTFAST, case="odd", num_gpus="3", metric="itl_ms", value="10"))
    rows.append(dict(GPTFAST, case="novalue", metric="itl_ms", value=""))
    rows.append(dict(GPTFAST, case="badmetric", metric="tokens_per_joule", value="1"))
    rows.append(dict(GPTFAST, case="nobatch", batch_size="", metric="itl_ms", value="10"))
    rows.append(dict(GPTFAST, case="notp", tp="", num_gpus="2", metric="itl_ms", value="10"))
    return write_csv(tmp_path / "m.csv", rows)


# ----------------------------------------------------------------- reading


def test_read_csv_parses_and_keeps_unreadable_rows(small_csv):
    rows, bad = read_csv(small_csv)
    by_case = {r.case: r for r in rows}
    g0 = by_case["g0"]
    assert isinstance(g0, Row)
    assert (g0.num_gpus, g0.tp, g0.pp, g0.ep, g0.batch_size, g0.input_len, g0.output_len) == (2, 2, 1, None, 1, 5, 200)
    assert g0.weight_dtype == "bf16" and g0.act_dtype is None and g0.kv_dtype is None   # blank -> None
    assert g0.value == 100.0 and g0.metric == "achieved_mem_bw_gbps"
    assert by_case["notp"].tp == 2                         # blank tp defaults to num_gpus
    assert "nogpu" in by_case                              # the GPU is checked when predicting, not reading
    reasons = {u.case: u.reason for u in bad}
    assert set(reasons) == {"novalue", "badmetric", "nobatch"}
    assert all(isinstance(u, Unreadable) for u in bad)
    assert "unreadable" in reasons["novalue"] and "value" in reasons["novalue"]
    assert "metric" in reasons["badmetric"] and "tokens_per_joule" in reasons["badmetric"]
    assert "batch_size" in reasons["nobatch"]
    assert len(rows) + len(bad) == 16


def test_read_csv_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="file"):
        read_csv(tmp_path / "absent.csv")
    p = tmp_path / "short.csv"
    p.write_text("case,source,model\nx,y,z\n")
    with pytest.raises(ValueError, match="gpu"):
        read_csv(p)


# ----------------------------------------------------------------- predicting


@pytest.fixture
def predictions(small_csv):
    rows, _ = read_csv(small_csv)
    return {p.row.case: p for p in predict_rows(rows)}


def test_not_covered_rows_say_why(predictions):
    p = predictions["nogpu"]
    assert not p.covered and p.predicted is None and p.error is None
    assert "h900_sxm" in p.reason
    odd = predictions["odd"]
    assert not odd.covered and "num_gpus" in odd.reason


def test_static_metrics_follow_from_ttft_and_itl(predictions):
    """gpt-fast style row: batch 1, 5 tokens in, 200 out, Llama-2-7B bf16 on 2 A100-80GB (TP2)."""
    v = {m: predictions[f"g{i}"].predicted for i, m in enumerate(METRICS)}
    assert all(predictions[f"g{i}"].covered for i in range(len(METRICS)))
    itl, ttft = v["itl_ms"] / 1e3, v["ttft_ms"] / 1e3
    e2e = ttft + (200 - 1) * itl
    assert v["tok_s_per_user"] == pytest.approx(1 / itl, rel=1e-12)
    assert v["output_tok_s"] == pytest.approx(1 * 200 / e2e, rel=1e-12)
    assert v["output_tok_s_per_gpu"] == pytest.approx(1 * 200 / e2e / 2, rel=1e-12)
    assert v["total_tok_s"] == pytest.approx(1 * (5 + 200) / e2e, rel=1e-12)
    assert v["requests_per_s"] == pytest.approx(1 / e2e, rel=1e-12)
    # gpt-fast's "achieved bandwidth" = weight bytes read per token / time per token
    assert L7_TOTAL == 6_738_415_616
    assert L7_TP2_BYTES == 6_738_681_856
    assert v["achieved_mem_bw_gbps"] == pytest.approx(L7_TP2_BYTES / itl / 1e9, rel=1e-12)
    # each decode step reads at least the weight shard at the achievable HBM bandwidth
    # (a100_80gb_sxm 2.039 TB/s x 0.85, efficiency.yaml defaults.memory) and pays the 1 ms step overhead
    assert itl >= L7_TP2_BYTES / (2.039e12 * 0.85) + 1e-3
    # error is signed relative to the measured value (100 in the CSV)
    p = predictions["g1"]
    assert p.error == pytest.approx((p.predicted - 100) / 100, rel=1e-12)


def test_data_parallel_row(predictions):
    """num_gpus 4 with tp 2: two replicas; total tok/s doubles, per GPU stays."""
    one_total = predictions["g4"].predicted          # output_tok_s at 2 GPUs
    one_per_gpu = predictions["g5"].predicted
    assert predictions["dp2b"].predicted == pytest.approx(2 * one_total, rel=1e-12)
    assert predictions["dp2"].predicted == pytest.approx(2 * one_total / 4, rel=1e-12)
    assert predictions["dp2"].predicted == pytest.approx(one_per_gpu, rel=1e-12)


def test_summaries_by_hand():
    s = summarize([0.1, -0.3, 0.2, 0.4])
    assert s["n"] == 4
    assert s["mape"] == pytest.approx((0.1 + 0.3 + 0.2 + 0.4) / 4)
    assert s["median_ape"] == pytest.approx((0.2 + 0.3) / 2)
    assert s["within_25"] == pytest.approx(2 / 4)
    assert s["bias"] == pytest.approx((0.1 - 0.3 + 0.2 + 0.4) / 4)
    assert summarize([])["n"] == 0 and summarize([])["mape"] is None


def test_group_summary_counts_not_covered(predictions):
    groups = group_summary(list(predictions.values()), ("source", "metric"))
    itl = next(g for g in groups if g["metric"] == "itl_ms")
    # itl rows: g2 and notp are covered; nogpu and odd are not
    assert itl["n"] == 2 and itl["not_covered"] == 2


# ----------------------------------------------------------------- the measured data

#: the static_batch rows with tp > 1 of ../shared/validation/measured.csv (67 rows: TensorRT-LLM v0.9.0
#: performance doc, gpt-fast README, TensorRT-LLM H200 launch blog), copied verbatim with their
#: source_url column, so that a fresh clone runs this check without the shared folder
TP_ROWS_CSV = Path(__file__).parent / "data" / "measured_static_tp.csv"
#: public measured rows kept in the repo (benchmarks/data/README.md); 70 of them are static_batch, tp > 1
PUBLIC_CSV = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "measured_public.csv"


def static_tp_rows(path: Path):
    rows, _ = read_csv(path)
    return [r for r in rows if r.scenario == "static_batch" and r.tp > 1]


def assert_all_covered(rows):
    preds = predict_rows(rows)
    missing = [(p.row.case, p.reason) for p in preds if not p.covered]
    assert not missing, missing
    for p in preds:
        assert p.predicted > 0, p.row.case


@pytest.mark.parametrize("path, count", [(TP_ROWS_CSV, 67), (PUBLIC_CSV, 70)], ids=["tests-data", "public"])
def test_static_tp_rows_all_covered(path, count):
    rows = static_tp_rows(path)
    assert len(rows) == count
    assert all(r.extra["source_url"].startswith("https://") for r in rows)   # every row names where it was read
    assert_all_covered(rows)


def test_shared_static_tp_rows_all_covered():
    """Extra check where the shared data is present (not in a fresh clone): every static_batch tp > 1 row
    of the shared file is covered, and the copy in tests/data still equals the shared rows it was taken from."""
    if not SHARED_CSV.is_file():
        pytest.skip(f"shared measured data not found at {SHARED_CSV} (tests/data/measured_static_tp.csv "
                    f"covers its rows)")
    shared = static_tp_rows(SHARED_CSV)
    assert shared, "no static_batch rows with tp > 1 in the shared data"
    copy = {r.case: r for r in static_tp_rows(TP_ROWS_CSV)}
    by_case = {r.case: r for r in shared}
    assert set(copy) <= set(by_case), sorted(set(copy) - set(by_case))
    assert [c for c in copy if copy[c] != by_case[c]] == []
    assert_all_covered([r for r in shared if r.case not in copy])   # the copied rows: the test above
