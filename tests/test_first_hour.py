"""The first hour of a new user (issue 21, item 6): every dataset ``--help`` offers runs, names in any case;
the shipped docs/deployments.yaml runs; ``compare`` marks a deployment that does not fit instead of
aborting and labels rows by everything that differs; headers name the whole layout."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferbound import make_deployment
from inferbound.base.datafiles import data_yaml
from inferbound.cli import app
from inferbound.faces import compare as cmp
from inferbound.faces.options import DATASET
from inferbound.workloads.lengths import dataset_names, from_dataset, profile_names
from inferbound.workloads import max_throughput

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "deployments.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(args))


# --------------------------------------------------------------------------- datasets

def test_offered_datasets_are_those_with_both_means_published():
    profiles = data_yaml("datasets.yaml")["datasets"]
    # by hand from the file: sharegpt states 229.7 in / 203.1 out, the four measured profiles their file
    # means, MLPerf's OpenOrca its measured prompt mean 222.3 and reference output 294.45; the other MLPerf
    # sets and CNN/DailyMail have no published input mean (null), so they are kept for measured rows but not offered
    assert set(dataset_names()) == {"sharegpt", "sharegpt_8k_sarathi", "arxiv_summarization", "azure_conv_2023",
                                    "azure_code_2023", "mlperf_llama2_70b_openorca"}
    assert set(profile_names()) == set(profiles) >= {"mlperf_llama3.1_405b", "cnn_dailymail"}
    for name in dataset_names():
        assert profiles[name]["input_mean"] is not None and profiles[name]["output_mean"] is not None
        assert profiles[name]["source"].startswith("https://")
        assert name in DATASET.help
    for name in set(profile_names()) - set(dataset_names()):
        assert name not in DATASET.help  # not listed broken


@pytest.mark.parametrize("name", dataset_names())
def test_every_listed_dataset_runs_max_throughput(name):
    r = run("estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--dataset", name, "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    p = data_yaml("datasets.yaml")["datasets"][name]
    # the steady state runs at the profile's mean lengths (the classes' weighted means, to 0.1 token)
    assert got["input_len"] == pytest.approx(p["input_mean"], abs=0.1)
    assert got["output_len"] == pytest.approx(p["output_mean"], abs=0.1)


def test_dataset_names_are_case_insensitive():
    # vLLM PR #18566: 229,711 input and 203,068 generated tokens over 1000 prompts -> 229.7 / 203.1 per request
    for spelling in ("ShareGPT", "SHAREGPT", " sharegpt "):
        mix = from_dataset(spelling)
        assert (mix.mean_input, mix.mean_output) == (229.7, 203.1)
    lower = run("estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--dataset", "sharegpt", "--json")
    mixed = run("estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--dataset", "ShareGPT", "--json")
    assert mixed.exit_code == 0, mixed.output
    assert json.loads(mixed.output)["output_tok_s"] == json.loads(lower.output)["output_tok_s"]
    sim = run("simulate", "llama-3.1-8b", "--dataset", "ShareGPT", "--requests", "5", "--json")
    assert sim.exit_code == 0, sim.output


@pytest.mark.parametrize("name", ["arxiv_summarization", "azure_conv_2023", "azure_code_2023"])
def test_measured_profiles_are_their_length_classes(name):
    p = data_yaml("datasets.yaml")["datasets"][name]
    mix = from_dataset(name)
    rows = p["classes"]
    total = sum(r[0] for r in rows)
    assert len(rows) == 16 and total == pytest.approx(1.0, abs=1e-5)  # 16 equal-count classes, 6-decimal shares
    assert mix.weights == pytest.approx([r[0] / total for r in rows], rel=1e-12)
    assert (mix.inputs, mix.outputs) == (tuple(r[1] for r in rows), tuple(r[2] for r in rows))
    # the classes' weighted means reproduce the file's means (both printed to 0.1 token)
    assert mix.mean_input == pytest.approx(p["input_mean"], abs=0.1)
    assert mix.mean_output == pytest.approx(p["output_mean"], abs=0.1)
    assert not mix.notes  # a measured spread: nothing to warn about
    assert "github.com/microsoft/vidur/blob/" in p["source"]


def test_azure_conv_profile_by_hand():
    """Σ w_c O_c over the 16 rows of azure_conv_2023: six classes of share 0.062532 and ten of 0.062481."""
    outs_a = [30.2, 52.7, 68.0, 80.4, 88.6, 95.5]
    outs_b = [104.2, 118.7, 142.0, 173.1, 273.3, 388.5, 397.7, 409.9, 425.8, 529.9]
    total = 6 * 0.062532 + 10 * 0.062481
    want = (0.062532 * sum(outs_a) + 0.062481 * sum(outs_b)) / total
    assert from_dataset("Azure_Conv_2023").mean_output == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx(211.1, abs=0.1)  # the trace's mean output: 211.1 tokens


def test_an_unoffered_profile_is_refused_in_one_line_naming_the_offered():
    r = run("estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--dataset", "cnn_dailymail")
    assert r.exit_code == 2
    line = r.output.strip()
    assert "\n" not in line and "dataset='cnn_dailymail'" in line and "not published" in line
    assert "allowed: sharegpt" in line
    # a measured row states its own lengths and may still name the profile (its output mean is MLPerf's)
    assert from_dataset("mlperf_llama2_70b_openorca", input_len=700).mean_output == 294.45


# --------------------------------------------------------------------------- compare

def test_the_example_deployments_file_runs():
    r = run("compare", str(EXAMPLE))
    assert r.exit_code == 0, r.output
    workload, deps = cmp.load(EXAMPLE)
    rows = cmp.compare(workload, deps)
    assert len(rows) == 5
    # the last row: 70B in bf16 is ~70.6e9 x 2 B = 141 GB of weights, over one 80 GB H100
    assert [r.fits for r in rows] == [True, True, True, True, False]
    assert rows[-1].label == "70B on one H100" and "70B on one H100" in r.output
    assert all(v is None for v in rows[-1].metrics.values())
    assert len({r.label for r in rows}) == 5
    assert rows[3].label.startswith("4x h100_sxm TP2 PP2, ")


def test_a_deployment_that_does_not_fit_is_marked_not_raised():
    doc = {"workload": {"scenario": "max-throughput", "input_len": 1024, "output_len": 256},
           "deployments": [{"model": "llama-3.1-8b"}, {"model": "llama-3.1-70b", "gpu": "h100_sxm"}]}
    w, deps = cmp.parse(doc)
    rows = cmp.compare(w, deps)
    assert rows[0].fits and not rows[1].fits
    assert rows[1].bound == "does not fit" and "does not fit" in rows[1].warnings[0]
    assert rows[1].metrics["tok_s_per_gpu"] is None and rows[1].ratio["tok_s_per_gpu"] is None
    want = max_throughput(make_deployment(model="llama-3.1-8b"), input_len=1024, output_len=256, num_requests=10_000)
    assert rows[0].metrics["tok_s_per_gpu"] == pytest.approx(want.output_tok_s_per_gpu, rel=1e-12)
    # serving: the same deployment is a marked row too
    w2, deps2 = cmp.parse({**doc, "workload": {"scenario": "serving", "concurrency": 4}})
    assert [x.fits for x in cmp.compare(w2, deps2)] == [True, False]


def test_bad_input_still_stops_the_comparison():
    w, deps = cmp.parse({"workload": {"scenario": "max-throughput"},
                         "deployments": [{"model": "llama-3.1-8b"}, {"model": "llama-3.1-8b", "tp": 3}]})
    with pytest.raises(ValueError, match=r"^deployments\[1\]: "):
        cmp.compare(w, deps)


def _labels(*deployments):
    w, deps = cmp.parse({"workload": {"scenario": "max-throughput"}, "deployments": list(deployments)})
    return [r.label for r in cmp.compare(w, deps)]


def test_labels_name_every_difference():
    base = {"model": "llama-3.1-8b", "gpu": "h100_sxm"}
    # formats: llama-3.1-8b ships bf16; weight and act fp8 make the KV fp8 too (kv follows act)
    assert _labels(base, {**base, "weight_dtype": "fp8", "act_dtype": "fp8"}) == \
        ["1x h100_sxm TP1, bf16", "1x h100_sxm TP1, fp8"]
    vllm, sglang = _labels(base, {**base, "engine": "sglang"})
    assert vllm.startswith("1x h100_sxm TP1, vllm@") and sglang.startswith("1x h100_sxm TP1, sglang@")
    assert _labels(base, {**base, "block_size": 32}) == \
        ["1x h100_sxm TP1, block_size default", "1x h100_sxm TP1, block_size=32"]
    assert _labels(base, base) == ["1x h100_sxm TP1 #1", "1x h100_sxm TP1 #2"]  # alike: their positions
    assert _labels(base, {**base, "label": "mine"}) == ["1x h100_sxm TP1", "mine"]


# --------------------------------------------------------------------------- layout in headers

@pytest.mark.parametrize("kw, label", [
    (dict(model="llama-3.1-8b"), "1x h100_sxm TP1"),
    (dict(model="llama-3.1-70b", num_gpus=8, tp=2, pp=2, dp=2), "8x h100_sxm TP2 PP2 DP2"),
    (dict(model="mixtral-8x7b-v0.1", num_gpus=8, ep=8), "8x h100_sxm TP8 EP8"),
    (dict(model="mixtral-8x7b-v0.1", tp=2, dp=4, ep=8, attention_dp=True), "8x h100_sxm TP2 EP8 attention-DP4"),
    (dict(model="llama-3.1-70b", num_gpus=16, nodes=2, tp=8, pp=2), "16x h100_sxm TP8 PP2 over 2 nodes"),
])
def test_the_label_names_the_whole_layout(kw, label):
    assert make_deployment(**kw).label() == label


def test_cli_headers_name_pp_dp_ep():
    static = run("estimate", "llama-3.1-70b", "--num-gpus", "8", "--tp", "2", "--pp", "2", "--dp", "2")
    assert static.exit_code == 0, static.output
    assert "8x h100_sxm TP2 PP2 DP2" in static.output
    mt = run("estimate", "mixtral-8x7b-v0.1", "--num-gpus", "8", "--ep", "8", "--scenario", "max-throughput")
    assert mt.exit_code == 0, mt.output
    assert "on 8x h100_sxm TP8 EP8" in mt.output


def test_the_api_marks_a_row_that_does_not_fit():
    from fastapi.testclient import TestClient
    from inferbound.web import create_app
    body = {"workload": {"scenario": "max-throughput", "input_len": 1024, "output_len": 256},
            "deployments": [{"model": "llama-3.1-8b", "gpu": "h100_sxm"},
                            {"model": "llama-3.1-70b", "gpu": "h100_sxm", "weight_dtype": "bf16"}]}
    r = TestClient(create_app()).post("/api/compare", json=body)
    assert r.status_code == 200, r.text
    rows = r.json()["rows"]
    assert [x["fits"] for x in rows] == [True, False] and rows[1]["metrics"]["tok_s_per_gpu"] is None
    assert rows[0]["label"] != rows[1]["label"]


def test_an_overloaded_deployment_is_a_marked_row():
    # at 1000 req/s of 1024 in / 256 out one H100 with llama-3.1-8b would need 256,000 output tok/s; it
    # serves about 6,000 at its best (the max-throughput row above), so serving refuses the rate
    w, deps = cmp.parse({"workload": {"scenario": "serving", "rate": 1000},
                         "deployments": [{"model": "llama-3.1-8b", "num_gpus": 8, "dp": 8},
                                         {"model": "llama-3.1-8b"}]})
    rows = cmp.compare(w, deps)
    assert rows[1].fits and rows[1].bound == "overloaded" and "overloads" in rows[1].warnings[0]
    assert rows[1].metrics["ttft_ms"] is None
