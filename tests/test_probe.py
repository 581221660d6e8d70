"""``inferbound probe``: measured hardware entry, measured rows, and their scoring (needs PyTorch).

One quick probe of SmolLM2-135M cut to 2 layers runs once for the module (a few seconds on 2 cores);
the tests check its files and figures against hand computations from the raw timings it records.
"""
from __future__ import annotations

import json
import statistics

import pytest

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from inferbound import load_model  # noqa: E402
from inferbound.hardware import load_catalog  # noqa: E402
from inferbound.probe import TORCH_MISSING, probe  # noqa: E402
from inferbound.probe.device import detect  # noqa: E402
from inferbound.probe.hwentry import overheads  # noqa: E402
from inferbound.probe.model_run import TorchDecoder, check_supported  # noqa: E402
from inferbound.probe.report import Plan  # noqa: E402
from inferbound.validation import read_csv  # noqa: E402

TINY = {"num_hidden_layers": 2}
#: short plan; the no-cache context (256) is also a cached decode context, so on/off meet there
PLAN = Plan(prefill=((1, 32), (2, 32)), decode=((1, 256), (2, 256)), no_cache=((1, 256),),
            decode_steps=4, no_cache_steps=2, prefill_repeats=2)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:   # the autouse env fixture is per test; this runs once
        mp.delenv("INFERBOUND_HARDWARE_PATH", raising=False)
        mp.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_empty")))
        mp.setenv("INFERBOUND_CALIBRATION", "none")
        # one thread: on a shared machine a multi-threaded run waits on descheduled threads (docs/probe.md)
        return probe("smollm2-135m", quick=True, out_dir=tmp_path_factory.mktemp("probe"), overrides=TINY,
                     plan=PLAN, threads=1)


def test_hardware_entry_loads_as_gpu_local_with_measured_figures(result):
    gpu = load_catalog(extra_paths=[result.files["hardware"]])["local"]
    # written with 6 significant digits in vendor units (TB/s, TFLOP/s)
    assert gpu.hbm_bw == pytest.approx(result.bandwidth["bytes_per_s"], rel=1e-5)
    assert gpu.peak_flops["fp32"] == pytest.approx(result.peak_flop_s["fp32"], rel=1e-5)
    assert gpu.peak_flops["bf16"] == pytest.approx(result.peak_flop_s["bf16"], rel=1e-5)
    assert gpu.efficiency.compute == 1.0 and gpu.efficiency.memory == 1.0 and gpu.efficiency.kv_memory == 1.0
    assert gpu.efficiency.kernel_overhead_s == pytest.approx(result.overheads["kernel_overhead_s"], rel=1e-5)
    assert gpu.scaleup_domain == 1 and not gpu.nvlink
    if result.device["kind"] == "cpu":
        assert gpu.power.tdp_w == 65.0   # the documented placeholder


def test_bandwidth_is_bytes_over_seconds_of_the_raw_timing(result):
    bw = result.bandwidth
    assert bw["buffer_bytes"] == 256 * 2**20          # one 256 MiB fp32 buffer (CPU)
    assert bw["bytes_moved"] == 2 * 256 * 2**20       # copy: every byte read once and written once
    assert bw["bytes_per_s"] == pytest.approx(bw["bytes_moved"] / bw["seconds"])
    rd = result.read_bandwidth
    assert rd["bytes_moved"] == 256 * 2**20 and rd["bytes_per_s"] == pytest.approx(rd["bytes_moved"] / rd["seconds"])


def test_matmul_rates_are_two_mkn_over_seconds_and_peak_is_the_best(result):
    for mm in result.matmul:
        assert mm["flops"] == 2 * mm["m"] * mm["k"] * mm["n"]
        assert mm["flop_s"] == pytest.approx(mm["flops"] / mm["seconds"])
    for dtype in ("fp32", "bf16"):
        assert result.peak_flop_s[dtype] == max(m["flop_s"] for m in result.matmul if m["dtype"] == dtype)


def test_rows_parse_in_the_validation_schema(result):
    rows, bad = read_csv(result.files["rows"])
    assert bad == []
    # 2 prefill setups x (ttft_ms + tok_s_per_user) + 2 decode-only setups x tok_s_per_user
    assert len(rows) == 2 * 2 + 2
    assert {r.gpu for r in rows} == {"local"} and {r.source for r in rows} == {"inferbound_probe"}
    assert {r.framework for r in rows} == {"pytorch-eager"}
    assert all(r.weight_dtype == r.act_dtype == r.kv_dtype == "fp32" for r in rows)
    assert all(r.output_len == PLAN.decode_steps + 1 for r in rows)   # N-1 decode steps after the prefill
    assert load_model(rows[0].model).num_layers == 2                  # the written config of the cut model
    # values re-derived from the raw samples: ttft = median(prefill) in ms, tok/s = 1 / median(step)
    cached = [m for m in result.measurements if m["kv_cache"]]
    first = cached[0]
    assert rows[0].metric == "ttft_ms"
    assert rows[0].value == pytest.approx(statistics.median(first["prefill_s"]) * 1e3, rel=1e-5)
    assert rows[1].metric == "tok_s_per_user"
    assert rows[1].value == pytest.approx(1 / statistics.median(first["decode_s"]), rel=1e-5)
    nc_rows, nc_bad = read_csv(result.files["no_cache_rows"])
    assert nc_bad == [] and len(nc_rows) == 1 and nc_rows[0].framework == "pytorch-eager-nokvcache"


def test_every_row_is_predicted(result):
    assert all(r["covered"] for r in result.rows), [r["reason"] for r in result.rows if not r["covered"]]
    assert result.overall["not_covered"] == 0 and result.overall["n"] == len(result.rows)


def test_decode_is_predicted_memory_bound(result):
    assert result.memory_bound["all_memory_bound"]
    assert {(s["batch"], s["context"]) for s in result.memory_bound["setups"]} == {(1, 32), (2, 32), (1, 256), (2, 256)}


def test_kv_cache_decode_is_faster_than_recomputing_the_prefix(result):
    longest = max(result.no_cache, key=lambda x: x["context"])
    assert longest["context"] == 256
    assert longest["cached_measured_step_s"] < longest["measured_step_s"]


def test_slope_check_uses_the_kv_bytes_per_token(result):
    # 2 layers x (K and V) x 3 KV heads x 64 head dim x 4 bytes (fp32) = 3072 B per token
    bw = load_catalog(extra_paths=[result.files["hardware"]])["local"].hbm_bw
    assert [s["batch"] for s in result.slope] == [1, 2]
    for s in result.slope:
        assert s["kv_bytes_per_token"] == 3072
        assert s["kv_read_slope_s_per_token"] == pytest.approx(s["batch"] * 3072 / bw)
        assert s["contexts"] == [32 + 1.5, 256 + 1.5]   # mean context of 4 steps at L..L+3


def test_torch_decoder_has_the_configured_parameters():
    m = load_model({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                    "intermediate_size": 128, "vocab_size": 256, "num_hidden_layers": 2, "tie_word_embeddings": True})
    # embedding 256*64; per layer: q 64*64 + k,v 2*(64*32) + o 64*64 + MLP 3*64*128 + 2 norms*64; final norm 64
    per_layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64
    assert TorchDecoder(m).num_params == 256 * 64 + 2 * per_layer + 64 == 90432


def test_cached_decode_gives_the_logits_of_a_full_recompute():
    m = load_model("smollm2-135m", {"num_hidden_layers": 2})
    dec = TorchDecoder(m)
    ids = dec.random_ids(2, 9)
    with torch.inference_mode():
        cache = dec.new_cache(2, 16)
        dec.forward(ids[:, :8], 0, cache)
        step = dec.forward(ids[:, 8:], 8, cache)
        full = dec.forward(ids)
    assert torch.allclose(step, full, atol=1e-4, rtol=1e-4)


def test_overheads_split_over_the_predictors_operators():
    # tiny decoder: 3.0 ms at 1 layer, 11.0 ms at 9 layers -> 1.0 ms per layer; the predictor charges
    # 5 operators per dense layer (qkv, attention, out, MLP, norms) and 3 outside (embedding, final norm,
    # LM head): 0.2 ms each; the step keeps 3.0 - 1.0 - 3 * 0.2 = 1.4 ms
    o = overheads({"layers": [1, 9], "step_s": [3.0e-3, 11.0e-3]}, "fp32")
    assert (o["predictor_ops_per_layer"], o["predictor_ops_outside_layers"]) == (5, 3)
    assert o["kernel_overhead_s"] == pytest.approx(0.2e-3)
    assert o["step_overhead_s"] == pytest.approx(1.4e-3)


def test_unsupported_models_and_dtypes_are_refused():
    with pytest.raises(ValueError, match="moe"):
        check_supported(load_model("mixtral-8x7b-v0.1"))
    with pytest.raises(ValueError, match="dtype='fp8'.*allowed: fp32, bf16"):
        detect("fp8")


def test_tables_show_rows_and_checks(result, capsys):
    from inferbound.cli.probe_cmd import show
    show(result)
    out = capsys.readouterr().out
    for words in ("probe-0001", "tok_s_per_user", "memory-bound", "KV-read slope", "without KV cache"):
        assert words in out


def test_plan_rejects_empty_steps():
    with pytest.raises(ValueError, match="plan.decode_steps=0"):
        Plan(prefill=((1, 8),), decode=(), no_cache=(), decode_steps=0, no_cache_steps=1, prefill_repeats=1)


def test_cli_quick_json(tmp_path):
    from inferbound.cli import app
    import inferbound.cli.probe_cmd  # noqa: F401  (registers the command)
    r = CliRunner().invoke(app, ["probe", "--quick", "--json", "--set", "num_hidden_layers=2", "--threads", "1",
                                 "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["model"]["layers"] == 2 and out["overall"]["not_covered"] == 0 and out["device"]["threads"] == 1
    assert (tmp_path / "local_gpu.yaml").is_file() and (tmp_path / "measured_local.csv").is_file()


def test_cli_without_torch_is_one_line_exit_2(monkeypatch):
    from inferbound.cli import app
    import inferbound.cli.probe_cmd as cmd
    monkeypatch.setattr(cmd, "torch_available", lambda: False)
    r = CliRunner().invoke(app, ["probe", "--quick"])
    assert r.exit_code == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [f"error: {TORCH_MISSING}"]


def test_probe_rows_are_scored_by_validate(result):
    """The issue's loop: `inferbound validate` reads the probe's CSV with its hardware entry and covers
    every row; its errors are the probe's own (same predictor, no calibration)."""
    from inferbound.cli import app
    out = CliRunner().invoke(app, ["validate", result.files["rows"], "--gpu-file", result.files["hardware"],
                                   "--calibration", "none", "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output)
    assert summary["rows"] == len(result.rows) and summary["not_covered"] == 0
    assert summary["all"]["mape"] == pytest.approx(result.overall["mape"], rel=1e-9)
