"""Command line: estimate, roofline, memory, models, gpus; errors are one line with exit code 2.

Click's CliRunner keeps stderr apart in ``result.stderr`` and interleaves both in ``result.output``;
JSON is parsed from ``result.stdout`` only.
"""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from cli_helpers import assert_one_line_error  # noqa: E402


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def run_json(runner, *args):
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)




def test_estimate_defaults_print_ttft(runner):
    r = runner.invoke(app, ["estimate"])
    assert r.exit_code == 0, r.output
    assert "TTFT" in r.output and "TPOT" in r.output
    assert "Traceback" not in r.output


def test_estimate_json(runner):
    d = run_json(runner, "estimate")
    for key in ("ttft_ms", "tpot_ms", "output_tok_s", "output_tok_s_per_gpu", "tok_s_per_user", "prefill", "decode"):
        assert key in d
    for phase in ("prefill", "decode"):
        assert d[phase]["bound"] in ("compute", "memory", "communication")
        assert d[phase]["explanation"]
    # defaults: llama-3.1-8b, batch 8, 1024 in / 256 out, one GPU
    assert (d["batch"], d["input_len"], d["output_len"], d["num_gpus"]) == (8, 1024, 256, 1)
    assert d["tok_s_per_user"] == pytest.approx(1000 / d["tpot_ms"])
    assert d["e2e_ms"] == pytest.approx(d["ttft_ms"] + 255 * d["tpot_ms"])
    assert d["output_tok_s"] == pytest.approx(8 * 256 / (d["e2e_ms"] / 1000))
    assert d["output_tok_s_per_gpu"] == pytest.approx(d["output_tok_s"])


def test_estimate_options_flow_through(runner):
    d = run_json(runner, "estimate", "llama-3.1-70b", "--gpu", "h100_sxm", "--tp", "4", "--batch", "2",
                 "--input", "300", "--output", "40")
    assert d["model"] == "meta-llama/Llama-3.1-70B"
    assert (d["num_gpus"], d["parallelism"]["tp"], d["batch"], d["input_len"], d["output_len"]) == (4, 4, 2, 300, 40)
    assert d["output_tok_s_per_gpu"] == pytest.approx(d["output_tok_s"] / 4)


def test_unknown_gpu_is_one_line_listing_known(runner):
    r = runner.invoke(app, ["estimate", "--gpu", "nope"])
    assert_one_line_error(r, "gpu", "nope", "h100_sxm", "a100_80gb_sxm")


def test_bad_weight_dtype_is_one_line(runner):
    r = runner.invoke(app, ["estimate", "--weight-dtype", "fp9"])
    assert_one_line_error(r, "weight_dtype", "fp9", "bf16")


def test_tp_not_dividing_heads_exits_2(runner):
    r = runner.invoke(app, ["estimate", "llama-3.1-8b", "--tp", "3"])
    assert_one_line_error(r, "tp=3", "32")     # Llama-3.1-8B has 32 heads


def test_unknown_model_exits_2(runner):
    r = runner.invoke(app, ["estimate", "no-such-model-xyz"])
    assert_one_line_error(r, "no-such-model-xyz")


def test_models_lists_catalog(runner):
    r = runner.invoke(app, ["models"])
    assert r.exit_code == 0, r.output
    assert "llama-3.1-70b" in r.output
    rows = {row["alias"]: row for row in run_json(runner, "models")}
    assert rows["llama-3.1-70b"]["id"] == "meta-llama/Llama-3.1-70B"
    assert rows["llama-3.1-70b"]["kv_bytes_per_token_bf16"] == 2 * 2 * 80 * 8 * 128
    assert rows["llama-3.1-8b"]["total_params"] == 8_030_261_248


def test_gpus_lists_catalog(runner):
    r = runner.invoke(app, ["gpus"])
    assert r.exit_code == 0, r.output
    assert "h100_sxm" in r.output
    d = run_json(runner, "gpus")
    h100 = next(g for g in d["gpus"] if g["id"] == "h100_sxm")
    assert h100["bf16_tflops"] == 989 and h100["hbm_gb"] == 80


def test_roofline_json_has_operator_rows(runner):
    d = run_json(runner, "roofline")
    for phase in ("prefill", "decode"):
        rows = d["phases"][phase]
        names = {r["name"] for r in rows}
        assert {"attn_qkv", "attention", "attn_out", "mlp", "lm_head"} <= names
        assert all(r["bound"] in ("compute", "memory", "communication") for r in rows)
    bound = {r["name"]: r["bound"] for r in d["phases"]["decode"]}
    assert bound["mlp"] == "memory"      # batch 8 decode GEMMs read far more bytes than they compute
    bound = {r["name"]: r["bound"] for r in d["phases"]["prefill"]}
    assert bound["mlp"] == "compute"     # 8 x 1024 tokens: well above the ridge


def test_memory_json(runner):
    d = run_json(runner, "memory")
    for key in ("weights", "kv_cache", "fits"):
        assert key in d
    assert d["fits"] is True
    # llama-3.1-8b, batch 8 x (1024 + 256) tokens x 2*2*32*8*128 = 131,072 B/token
    assert d["kv_cache"] == 8 * 1280 * 131_072
    assert d["weights"] == 2 * 8_030_261_248


def test_set_changes_the_model(runner):
    full = run_json(runner, "memory")
    half = run_json(runner, "memory", "--set", "num_hidden_layers=16")
    # 16 fewer layers of 218,112,000 params (q, k, v, o, MLP, 2 norms) at 2 bytes
    assert full["weights"] - half["weights"] == 16 * 218_112_000 * 2
    assert half["kv_cache"] * 2 == full["kv_cache"]


def test_set_malformed_exits_2(runner):
    r = runner.invoke(app, ["memory", "--set", "num_hidden_layers"])
    assert_one_line_error(r, "KEY=VALUE")
