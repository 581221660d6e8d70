"""The validation reader's optional columns and the predictors they select (validation/dataset.py,
validation/predict.py): closed-loop concurrency rows, dataset profiles, mean lengths, engine settings,
e2e/tpot and percentile metrics. Every row is scored or says why it is not."""
from __future__ import annotations

import csv

import pytest

from inferbound.validation import predict_rows, read_csv
from inferbound.validation.dataset import parse_row
from inferbound.validation.predict import deployment_for, row_lengths
from inferbound.workloads.serving import serving

BASE = dict(case="c1", source="s", model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100_sxm", num_gpus="2", tp="2",
            pp="1", ep="", weight_dtype="fp8", act_dtype="", kv_dtype="", framework="NVIDIA NIM 1.8.0",
            scenario="serving", batch_size="", request_rate="", num_requests="", input_len="5000",
            output_len="500", metric="ttft_ms", value="500", source_url="https://example.org")


def write(path, rows):
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    return path


def test_nim_style_concurrency_sweep_validates(tmp_path):
    """genai-perf at concurrency 1..50: each row is a closed loop of N clients, predicted by the analytic
    steady state at that concurrency (the same numbers as serving(concurrency=N))."""
    rows = []
    for n in (1, 5, 25, 50):
        for metric, value in (("ttft_ms", 500.0), ("itl_ms", 20.0), ("output_tok_s", 100.0)):
            rows.append({**BASE, "case": f"n{n}-{metric}", "concurrency": str(n), "metric": metric, "value": str(value)})
    parsed, bad = read_csv(write(tmp_path / "nim.csv", rows))
    assert not bad and len(parsed) == 12
    preds = predict_rows(parsed)
    assert all(p.covered for p in preds), [p.reason for p in preds if not p.covered]
    dep = deployment_for(parsed[0])
    assert dep.engine.startswith("trtllm")  # NIM's optimized profiles are TensorRT-LLM (engines.yaml)
    by = {(p.row.concurrency, p.row.metric): p.predicted for p in preds}
    for n in (1, 50):
        s = serving(dep, concurrency=n, input_len=5000, output_len=500)
        assert by[(n, "itl_ms")] == pytest.approx(s.itl_s * 1e3, rel=1e-9)
        assert by[(n, "output_tok_s")] == pytest.approx(s.output_tok_s, rel=1e-9)
    # more clients: longer TTFT and ITL, more tokens per second
    assert by[(50, "ttft_ms")] > by[(1, "ttft_ms")] and by[(50, "itl_ms")] > by[(1, "itl_ms")]
    assert by[(50, "output_tok_s")] > by[(5, "output_tok_s")]


def test_serving_row_with_a_batch_size_is_a_concurrency():
    r = parse_row({**BASE, "batch_size": "16"}, 2)
    assert r.concurrency == 16


def test_serving_row_with_rate_and_concurrency_is_refused():
    r = parse_row({**BASE, "request_rate": "2", "concurrency": "16"}, 2)
    assert "not both" in r.reason


def test_sharegpt_dataset_row_validates(tmp_path):
    """A ShareGPT row with blank lengths: the bundled profile's published means (229.7 in / 203.1 out)."""
    row = {**BASE, "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "a100_80gb_sxm", "num_gpus": "1", "tp": "1",
           "weight_dtype": "", "framework": "SGLang", "engine_version": "0.3.0", "request_rate": "4",
           "num_requests": "200", "input_len": "", "output_len": "", "dataset": "sharegpt", "metric": "ttft_ms_p50",
           "value": "20"}
    parsed, bad = read_csv(write(tmp_path / "sgl.csv", [row]))
    assert not bad
    mix = row_lengths(parsed[0])
    assert (mix.mean_input, mix.mean_output) == (229.7, 203.1)
    (p,) = predict_rows(parsed)
    assert p.covered and p.predicted > 0
    assert deployment_for(parsed[0]).engine.startswith("sglang")


def test_unknown_dataset_text_needs_lengths():
    r = parse_row({**BASE, "input_len": "", "dataset": "some internal set"}, 2)
    assert "input_len is blank" in r.reason
    ok = parse_row({**BASE, "dataset": "random (fixed lengths)", "concurrency": "1"}, 2)
    assert ok.dataset is None and ok.input_len == 5000


def test_mean_lengths_are_accepted_as_means():
    r = parse_row({**BASE, "input_len": "593.37", "output_len": "128.5", "scenario": "max_throughput"}, 2)
    assert (r.input_len, r.output_len) == (593.37, 128.5)
    mix = row_lengths(r)
    assert mix.mean_input == 593.37


def test_engine_settings_columns_reach_the_runtime():
    r = parse_row({**BASE, "framework": "vLLM", "engine_version": "0.15.1", "max_num_seqs": "128",
                   "max_num_batched_tokens": "2048", "gpu_memory_utilization": "0.85", "prefix_caching": "on",
                   "concurrency": "8"}, 2)
    rt = deployment_for(r).runtime
    assert (rt.max_num_seqs, rt.token_budget, rt.memory_fraction, rt.prefix_caching) == (128, 2048, 0.85, True)
    assert rt.engine.startswith("vllm@0.15")
    explicit = parse_row({**BASE, "engine": "sglang", "concurrency": "8"}, 2)
    assert deployment_for(explicit).engine.startswith("sglang")


def test_bad_setting_cells_are_refused_by_name():
    assert "prefix_caching='maybe' unknown" in parse_row({**BASE, "prefix_caching": "maybe", "concurrency": "1"}, 2).reason
    assert "gpu_memory_utilization=1.5" in parse_row({**BASE, "gpu_memory_utilization": "1.5",
                                                      "concurrency": "1"}, 2).reason
    assert "concurrency=0" in parse_row({**BASE, "concurrency": "0"}, 2).reason


def test_feature_rows_are_modelled_or_say_why(tmp_path):
    rows = [{**BASE, "concurrency": "4", "speculative": "mtp:3"}, {**BASE, "case": "c2", "concurrency": "4",
                                                                    "kv_offload": "on"}]
    parsed, _ = read_csv(write(tmp_path / "x.csv", rows))
    preds = predict_rows(parsed)
    # MTP drafts need the model's multi-token-prediction layers: Llama has none, so the row says so
    assert not preds[0].covered and "num_nextn_predict_layers" in preds[0].reason
    assert preds[1].covered  # a host KV tier over PCIe is modelled (features/kv-offload.md)


def test_latency_metric_variants_are_read(tmp_path):
    static = dict(BASE, scenario="static_batch", batch_size="8", framework="vLLM", input_len="128",
                  output_len="128", concurrency="")
    rows = [{**static, "case": m, "metric": m, "value": "1000"} for m in ("e2e_ms", "tpot_ms", "e2e_ms_p99",
                                                                          "ttft_ms_p50")]
    parsed, bad = read_csv(write(tmp_path / "s.csv", rows))
    assert not bad
    preds = {p.row.metric: p.predicted for p in predict_rows(parsed)}
    # a static batch is uniform: the 99th percentile of its latencies is their mean
    assert preds["e2e_ms_p99"] == preds["e2e_ms"]
    assert preds["e2e_ms"] > preds["tpot_ms"] * 127


def test_validate_engine_applies_to_rows_naming_none(tmp_path):
    from typer.testing import CliRunner
    from inferbound.cli import app
    row = {**BASE, "framework": "", "concurrency": "4", "metric": "itl_ms", "value": "20"}
    parsed, _ = read_csv(write(tmp_path / "e.csv", [row, {**row, "case": "c2", "framework": "vLLM"}]))
    assert deployment_for(parsed[0], default_engine="sglang").engine.startswith("sglang")
    assert deployment_for(parsed[1], default_engine="sglang").engine.startswith("vllm")  # the row's own wins
    a = predict_rows(parsed[:1], engine="sglang")[0].predicted
    b = predict_rows(parsed[:1], engine="trtllm")[0].predicted
    assert a != b
    r = CliRunner().invoke(app, ["validate", str(tmp_path / "e.csv"), "--engine", "nope"])
    assert r.exit_code == 2 and "engine" in r.output and len(r.output.strip().splitlines()) == 1


def test_attention_dp_column_prices_the_dep_layout(tmp_path):
    """TensorRT-LLM's DEP4 (tp_size 4, moe_ep_size 4, enable_attention_dp): the engine's tp_size counts the
    attention ranks, so the row is attention tp 1 over 4 ranks sharing the experts. DeepSeek-R1's MLA cache
    (one latent of 512 + 64 rope dims per token and layer: (512 + 64)·61 B at fp8 = 35,136 B) is not split
    by TP, so under TP4 every GPU holds every sequence's latent; under DEP4 each rank holds its own."""
    row = {**BASE, "model": "nvidia/DeepSeek-R1-0528-NVFP4-v2", "gpu": "b200_hgx", "num_gpus": "4", "tp": "4",
           "ep": "4", "weight_dtype": "fp4", "act_dtype": "fp4", "kv_dtype": "fp8", "framework": "TensorRT-LLM",
           "scenario": "max_throughput", "input_len": "1024", "output_len": "1024", "metric": "output_tok_s_per_gpu",
           "value": "6430", "engine_version": "1.x"}
    (tep,), _ = read_csv(write(tmp_path / "tep.csv", [row]))
    (dep,), _ = read_csv(write(tmp_path / "dep.csv", [{**row, "attention_dp": "on"}]))
    assert tep.attention_dp is None and dep.attention_dp is True
    a, b = deployment_for(tep), deployment_for(dep)
    assert (a.par.tp, a.par.dp, a.par.ep, a.par.attention_dp) == (4, 1, 4, False)
    assert (b.par.tp, b.par.dp, b.par.ep, b.par.attention_dp) == (1, 4, 4, True)
    assert b.par.attention_groups == 4 and b.par.replicas == 1 and b.par.moe_group == 4
    from inferbound.deploy.memory import kv_bytes_per_gpu
    assert float(kv_bytes_per_gpu(a.model, a.dtypes, a.par, 1, 1)) == (512 + 64) * 61
    # four sequences under DEP4 put one on each rank: the busiest GPU holds one latent per token
    assert float(kv_bytes_per_gpu(b.model, b.dtypes, b.par, 4, 1)) == (512 + 64) * 61
    rows, bad = read_csv(write(tmp_path / "bad.csv", [{**row, "attention_dp": "maybe"}]))
    assert not rows and "attention_dp='maybe'" in bad[0].reason and "on, off" in bad[0].reason
