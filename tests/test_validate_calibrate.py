"""``inferbound validate`` and ``calibrate``: a CSV whose "measured" values come from formulas written out
here, error summaries, not-covered rows, outputs (rows CSV, plot), schema errors, recovering known
efficiency factors by least squares, calibration files, error bands, and framework profiles.

The validation set runs a tiny Llama-style model (config.json in tmp_path: 2 layers, hidden 256, 4 heads
of 64 with 4 KV heads, MLP 512 gated, vocab 1000, untied) on a synthetic GPU (hardware file in tmp_path):
1e18 FLOP/s bf16, 100 GB/s HBM, every efficiency 1, no overheads (host_factor 0: no engine host work). Its ridge point is 1e7 FLOP/byte, so
every operator is memory-bound and each step lasts (bytes moved)/1e11 s. Bytes of one step running B
sequences, T tokens in all, each sequence ending with c cached tokens (bf16: 2 bytes everywhere):

  per layer: weights  2·(qkv 256·768 + o 256·256 + mlp 3·256·512)          = 2·655,360
             activations qkv 2·T·(256+768) + new K,V 2·T·512 + attention 2·2·T·256
                         + o 2·T·(256+256) + mlp 2·T·(2·256+3·512) + norms 2·3·T·3·256 = 2·13,824·T
             KV reads 2·B·c·512
  whole model: 2 layers + embedding rows 2·2·T·256 + final norm 2·3·T·256 + LM head 2·256·1000
               + logits B·(2·256 + 4·1000)
  bytes(B, T, c) = 2·(1,310,720 + 13,824·T + 1,024·B·c) + 2,560·T + 512,000 + 4,512·B

TTFT = bytes(B, B·S, S)/1e11;  TPOT = bytes(B, B, c̄ + 1)/1e11 with the mean decode context
c̄ = S + (N − 2)/2 (bytes are linear in c, so the mean step is the step at the mean context).
"""
from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from inferbound.step import contract as step
from inferbound.calibration import Calibration, load_file
from inferbound.calibration.fit import Param, fit
from inferbound.cli import app
from inferbound.hardware import get_gpu
from inferbound.validation import predict_rows, read_csv
from inferbound.deploy.runtime import profile_for_framework
from inferbound.validation.predict import deployment_for
from cli_helpers import assert_one_line_error  # noqa: E402

COLUMNS = ["case", "source", "model", "gpu", "num_gpus", "tp", "pp", "ep", "weight_dtype", "act_dtype", "kv_dtype",
           "framework", "scenario", "batch_size", "request_rate", "num_requests", "input_len", "output_len", "metric",
           "value", "source_url"]

GPU_YAML = """\
id: synth_gpu
name: Synthetic round-number GPU
vendor: test
bf16_dense_tflops: 1000000      # 1e18 FLOP/s: nothing is compute-bound
hbm_gb: 100
hbm_tbps: 0.1                   # 1e11 B/s
scaleup_domain: 1
tdp_w: 100
price_usd_per_gpu_hr_approx: 1.0
efficiency:
  compute: 1.0
  memory: 1.0
  kv_memory: 1.0
  kernel_overhead_s: 0.0
  step_overhead_s: 0.0
  host_factor: 0.0              # no engine host work either (engines.yaml pricing.host)
"""
TINY = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
        "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "tie_word_embeddings": False}
BW = 1e11
# weight bytes the deployment holds (weight_bytes_per_gpu): 2 layers of (655,360 matrix + 2·256 norm params),
# embedding and LM head 2·256·1000, final norm 256; 2 bytes each
TINY_WEIGHT_BYTES = 2 * (2 * (655_360 + 512) + 2 * 256 * 1000 + 256)


def step_bytes(b, t, c):
    return 2 * (1_310_720 + 13_824 * t + 1_024 * b * c) + 2_560 * t + 512_000 + 4_512 * b


def true_metrics(b, s, n) -> dict:
    ttft = step_bytes(b, b * s, s) / BW
    tpot = step_bytes(b, b, s + (n - 2) / 2 + 1) / BW
    e2e = ttft + (n - 1) * tpot
    return {"ttft_ms": ttft * 1e3, "itl_ms": tpot * 1e3, "tok_s_per_user": 1 / tpot, "output_tok_s": b * n / e2e,
            "output_tok_s_per_gpu": b * n / e2e, "requests_per_s": b / e2e, "total_tok_s": b * (s + n) / e2e,
            "prefill_tok_s": b * s / ttft, "achieved_mem_bw_gbps": TINY_WEIGHT_BYTES / tpot / 1e9}


SETUPS = [(1, 128, 32), (4, 512, 64), (16, 64, 200), (2, 1000, 2)]   # (batch, input, output)


def write_csv(path: Path, rows: list[dict], columns=COLUMNS) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in columns})
    return path


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    gpu = d / "gpu.yaml"
    gpu.write_text(GPU_YAML)
    (d / "tiny").mkdir()
    (d / "tiny" / "config.json").write_text(json.dumps(TINY))
    base = dict(source="hand", model=str(d / "tiny" / "config.json"), gpu="synth_gpu", num_gpus="1", tp="1", pp="1",
                weight_dtype="bf16", framework="test", scenario="static_batch", source_url="https://example.invalid")
    rows = []
    for b, s, n in SETUPS:
        for metric, value in true_metrics(b, s, n).items():
            rows.append(dict(base, case=f"b{b}s{s}n{n}", batch_size=str(b), input_len=str(s), output_len=str(n),
                             metric=metric, value=repr(value)))
    truth = true_metrics(1, 128, 32)
    # a second source with known errors: measured 1.25x the truth (e = -0.2) and half of it (e = +1.0)
    rows.append(dict(base, source="biased", case="x1", batch_size="1", input_len="128", output_len="32",
                     metric="itl_ms", value=repr(truth["itl_ms"] * 1.25)))
    rows.append(dict(base, source="biased", case="x2", batch_size="1", input_len="128", output_len="32",
                     metric="ttft_ms", value=repr(truth["ttft_ms"] / 2)))
    # not coverable: an unknown GPU (predicted, fails) and a blank value (unreadable)
    rows.append(dict(base, case="nogpu", gpu="h900_sxm", batch_size="1", input_len="128", output_len="32",
                     metric="itl_ms", value="1.0"))
    rows.append(dict(base, case="novalue", batch_size="1", input_len="128", output_len="32", metric="itl_ms",
                     value=""))
    csv_path = write_csv(d / "measured.csv", rows)
    return {"dir": d, "gpu": gpu, "csv": csv_path, "base": base, "n_hand": len(SETUPS) * 9}


@pytest.fixture(scope="module")
def runner():
    return CliRunner()




# --- the hand formulas themselves -------------------------------------------------------------------

def test_hand_formula_constants():
    # per-layer weights: q,k,v 256x(256+256+256) + o 256x256 + gate/up/down 3x256x512
    assert 256 * 768 + 256 * 256 + 3 * 256 * 512 == 655_360
    # per-layer activation bytes per token / 2: qkv (1024) + new K,V (512) + attention out (2·256)
    # + o (512) + mlp (2048) + norms/residual (3·3·256)
    assert 1024 + 512 + 512 + 512 + 2048 + 9 * 256 == 6_912 == 13_824 // 2
    # model-level per token: embedding 2·2·256 + final norm 2·3·256
    assert 4 * 256 + 6 * 256 == 2_560


def test_predictions_match_the_hand_formulas(synth):
    rows, bad = read_csv(synth["csv"])
    preds = predict_rows([r for r in rows if r.source == "hand" and r.gpu == "synth_gpu"], gpu_files=[synth["gpu"]])
    assert len(preds) == synth["n_hand"]
    for p in preds:
        assert p.covered, p.reason
        assert p.predicted == pytest.approx(p.row.value, rel=1e-9), (p.row.case, p.row.metric)
        assert p.bound == "memory"


# --- validate command --------------------------------------------------------------------------------

def test_validate_json_summary(runner, synth):
    res = runner.invoke(app, ["validate", str(synth["csv"]), "--gpu-file", str(synth["gpu"]), "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    n_hand = synth["n_hand"]
    assert s["rows"] == n_hand + 4 and s["covered"] == n_hand + 2 and s["not_covered"] == 2
    groups = {(g["source"], g["scenario"], g["metric"]): g for g in s["by_source_scenario_metric"]}
    for metric in ("ttft_ms", "itl_ms", "output_tok_s", "tok_s_per_user", "achieved_mem_bw_gbps", "total_tok_s",
                   "requests_per_s", "prefill_tok_s", "output_tok_s_per_gpu"):
        g = groups[("hand", "static_batch", metric)]
        assert g["mape"] < 1e-9 and g["within_25"] == 1.0 and abs(g["bias"]) < 1e-9
    # the biased source: errors -0.2 and +1.0
    biased = [p for k, p in groups.items() if k[0] == "biased"]
    errors = sorted(g["bias"] for g in biased)
    assert errors == pytest.approx([-0.2, 1.0], rel=1e-9)
    # all covered rows: n_hand zeros, -0.2, +1.0
    a = s["all"]
    assert a["n"] == n_hand + 2
    assert a["mape"] == pytest.approx(1.2 / (n_hand + 2), rel=1e-9)
    assert a["bias"] == pytest.approx(0.8 / (n_hand + 2), rel=1e-9)
    assert a["within_25"] == pytest.approx((n_hand + 1) / (n_hand + 2), rel=1e-12)
    assert a["median_ape"] < 1e-9
    # not covered, with reasons, never dropped
    reasons = {r["case"]: r["reason"] for r in s["not_covered_rows"]}
    assert set(reasons) == {"nogpu", "novalue"}
    assert "h900_sxm" in reasons["nogpu"]
    assert "value" in reasons["novalue"]
    assert {g["gpu"]: g for g in s["by_gpu"]}["h900_sxm"]["not_covered"] == 1


def test_validate_rows_csv_and_plot(runner, synth, tmp_path):
    out, png = tmp_path / "rows.csv", tmp_path / "f.png"
    res = runner.invoke(app, ["validate", str(synth["csv"]), "--gpu-file", str(synth["gpu"]), "--out", str(out),
                              "--plot", str(png)])
    assert res.exit_code == 0, res.output
    assert "not covered" in res.output and "h900_sxm" in res.output
    with out.open() as f:
        reader = csv.DictReader(f)
        assert {"case", "metric", "measured", "predicted", "error"} <= set(reader.fieldnames)
        recs = list(reader)
    assert len(recs) == synth["n_hand"] + 4                 # every input row, covered or not
    t = true_metrics(4, 512, 64)
    rec = next(r for r in recs if r["case"] == "b4s512n64" and r["metric"] == "itl_ms")
    assert float(rec["measured"]) == pytest.approx(t["itl_ms"], rel=1e-12)
    assert float(rec["predicted"]) == pytest.approx(t["itl_ms"], rel=1e-9)
    assert abs(float(rec["error"])) < 1e-9
    x2 = next(r for r in recs if r["case"] == "x2")
    assert float(x2["error"]) == pytest.approx(1.0, rel=1e-9)
    nogpu = next(r for r in recs if r["case"] == "nogpu")
    assert nogpu["predicted"] == "" and "h900_sxm" in nogpu["reason"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_validate_other_schema_missing_column_exits_2(runner, tmp_path):
    cols = [c for c in COLUMNS if c != "metric"]
    bad = write_csv(tmp_path / "other.csv", [{"case": "a", "value": "1"}], columns=cols)
    assert_one_line_error(runner.invoke(app, ["validate", str(bad)]), "metric")


def test_validate_missing_file_exits_2(runner, tmp_path):
    assert_one_line_error(runner.invoke(app, ["validate", str(tmp_path / "nope.csv")]), "nope.csv")


def test_validate_extra_columns_are_ignored(runner, synth, tmp_path):
    b, s, n = 1, 128, 32
    row = dict(synth["base"], case="extra", batch_size="1", input_len="128", output_len="32", metric="itl_ms",
               value=repr(true_metrics(b, s, n)["itl_ms"]), notes="anything")
    path = write_csv(tmp_path / "extra.csv", [row], columns=COLUMNS + ["notes"])
    res = runner.invoke(app, ["validate", str(path), "--gpu-file", str(synth["gpu"]), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["covered"] == 1 and d["all"]["mape"] < 1e-9


# --- calibration: recovering known factors -------------------------------------------------------------

ENGINE = "vllm@0.33.0"   # framework "test" names no profile: the default engine (engines.yaml default)
TRUE = Calibration(engines={ENGINE: {"step_s": 0.002, "seq_s": 1.0e-5, "gemm": 1.3, "attention": 0.8}})
# priors: engines.yaml pricing.host default (1 ms per step, no per-sequence term: fit.SEQ_PRIOR_S 2 us), 1 for
# the kernel-class factors
PARAMS = [Param(ENGINE, "step_s", 1.0e-3), Param(ENGINE, "seq_s", 2.0e-6), Param(ENGINE, "gemm", 1.0),
          Param(ENGINE, "attention", 1.0)]
CAL_SETUPS = [  # (batch, input, output): short and long contexts, small and large batches
    (1, 128, 128), (1, 2048, 64), (1, 8192, 32), (2, 512, 256), (4, 1024, 128), (8, 128, 512), (8, 4096, 64),
    (16, 2048, 128), (32, 256, 256), (64, 512, 64), (64, 2048, 32), (128, 128, 128), (256, 128, 32),
    (256, 1024, 16), (16, 16384, 16), (1, 32, 16),
]


@pytest.fixture(scope="module")
def cal_data(tmp_path_factory):
    """Static-batch rows of Llama-3.1-8B on h100_sxm whose measured values are the engine's predictions
    under TRUE (the recovery test checks the fit, not the formulas): (rows, CSV path)."""
    d = tmp_path_factory.mktemp("cal")
    base = dict(source="synthetic", model="meta-llama/Llama-3.1-8B", gpu="h100_sxm", num_gpus="1", tp="1", pp="1",
                weight_dtype="bf16", framework="test", scenario="static_batch", value="1")
    raw = [dict(base, case=f"c{b}_{s}_{n}", batch_size=str(b), input_len=str(s), output_len=str(n), metric=m)
           for b, s, n in CAL_SETUPS for m in ("ttft_ms", "output_tok_s_per_gpu")]
    rows, bad = read_csv(write_csv(d / "template.csv", raw))
    assert not bad
    preds = predict_rows(rows, calibration=TRUE)
    path = write_csv(d / "measured.csv", [dict(r, value=repr(p.predicted)) for r, p in zip(raw, preds)])
    return [dataclasses.replace(p.row, value=p.predicted) for p in preds], path


@pytest.fixture(scope="module")
def cal_rows(cal_data):
    return cal_data[0]


@pytest.fixture(scope="module")
def cal_csv(cal_data):
    return cal_data[1]


def test_rows_span_both_bounds(cal_rows):
    preds = predict_rows(cal_rows, calibration=TRUE)
    bounds = {p.bound for p in preds}
    assert {"compute", "memory"} <= bounds


def test_calibrate_recovers_known_factors(cal_rows):
    # starting from the priors the data are far off (GEMMs 1.3x slower, host work 2 ms + 10 us per sequence)
    start_err = [abs(p.error) for p in predict_rows(cal_rows, calibration="none")]
    assert max(start_err) > 0.15
    cal, report = fit(cal_rows, prior_sigma=None, params=PARAMS, max_evals=200)
    e = cal.engines[ENGINE]
    assert e["step_s"] == pytest.approx(0.002, rel=0.03)
    assert e["seq_s"] == pytest.approx(1.0e-5, rel=0.05)
    assert e["gemm"] == pytest.approx(1.3, rel=0.03)
    assert e["attention"] == pytest.approx(0.8, rel=0.03)
    assert set(report["parameters"]) == {f"engines.{ENGINE}.{f}" for f in ("step_s", "seq_s", "gemm", "attention")}
    assert report["parameters"][f"engines.{ENGINE}.step_s"]["prior"] == 1.0e-3
    end_err = [abs(p.error) for p in predict_rows(cal_rows, calibration=cal)]
    assert max(end_err) < 0.01


def test_default_parameters_are_engine_and_kernel_class_factors(cal_rows):
    """No per-GPU scalars: host work and kernel-class factors of the rows' engine (no TP: no collective)."""
    from inferbound.calibration.fit import parameters
    names = {p.name for p in parameters(cal_rows)}
    assert names == {f"engines.{ENGINE}.{f}" for f in ("step_s", "seq_s", "gemm", "attention")}


def test_calibrate_command_writes_a_calibration_that_validates_better(runner, cal_csv, tmp_path):
    out = tmp_path / "fitted.yaml"
    res = runner.invoke(app, ["calibrate", str(cal_csv), "--out", str(out), "--cv", "none", "--max-evals", "40",
                              "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["calibration"] == str(out) and d["fitted_on"]["rows"] == len(CAL_SETUPS) * 2
    assert {f"engines.{ENGINE}.step_s", f"engines.{ENGINE}.gemm"} <= set(d["fit"]["parameters"])
    cal = load_file(out)
    assert "*" in cal.bands and 0 <= cal.bands["*"] < 0.25
    assert cal.bands["coverage"]["gpus"] == ["h100_sxm"] and cal.bands["coverage"]["engines"] == [ENGINE]
    scores = {}
    for choice in ("none", str(out)):
        v = runner.invoke(app, ["validate", str(cal_csv), "--calibration", choice, "--json"])
        assert v.exit_code == 0, v.output
        scores[choice] = json.loads(v.stdout)["all"]["mape"]
    assert scores[str(out)] < 0.5 * scores["none"]


def test_calibrate_cross_validation_with_a_single_model_does_not_crash(runner, cal_csv, tmp_path):
    res = runner.invoke(app, ["calibrate", str(cal_csv), "--out", str(tmp_path / "c.yaml"), "--cv", "model",
                              "--max-evals", "10", "--json"])
    assert res.exit_code in (0, 2), res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)


def test_calibration_file_round_trip(tmp_path):
    cal = Calibration(global_factors={"kv_memory": 0.41, "step_overhead_s": 0.0015},
                      gpus={"h100_sxm": {"compute": 0.7, "memory": 0.8, "compute_by_dtype": {"fp8": 0.55}}},
                      bands={"static_batch/throughput/memory": 0.14, "*": 0.2},
                      meta={"fitted_on": {"file": "m.csv", "rows": 3}}, serving={"request_overhead_s": 0.007},
                      kernel_factors={"collective": 1.1}, engines={ENGINE: {"step_s": 0.001, "seq_s": 2e-6}})
    path = tmp_path / "cal.yaml"
    cal.save(path)
    doc = yaml.safe_load(path.read_text())
    assert doc["schema_version"] == 1
    back = load_file(path)
    assert back.global_factors == cal.global_factors and back.gpus == cal.gpus and back.bands == cal.bands
    assert back.serving == cal.serving and back.request_overhead_s == 0.007
    assert back.kernel_factors == cal.kernel_factors and back.engines == cal.engines
    assert back.meta["fitted_on"] == {"file": "m.csv", "rows": 3}
    g = back.apply(get_gpu("h100_sxm"))
    e = g.efficiency
    assert (e.compute, e.memory, e.kv_memory, e.step_overhead_s, e.compute_for("fp8")) == (0.7, 0.8, 0.41, 0.0015, 0.55)
    assert back.band("static_batch", "throughput", "memory") == 0.14
    assert back.band("static_batch", "latency", "compute") == 0.2       # falls back to '*'


def test_not_a_calibration_file_is_named(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("global: {memory: 0.5}\n")
    with pytest.raises(ValueError, match="schema_version"):
        load_file(p)


# --- --calibration on estimate: factors and error bands ------------------------------------------------

@pytest.fixture(scope="module")
def cal_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("calfile") / "cal.yaml"
    Calibration(engines={ENGINE: {"step_s": 1.0e-3, "seq_s": 0.0, "gemm": 1.5}},
                bands={"static_batch/throughput/memory": 0.14, "*": 0.2}).save(path)
    return path


def est_json(runner, *args):
    res = runner.invoke(app, ["estimate", "--batch", "1", "--input", "2048", "--output", "64", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_calibration_changes_the_estimate_and_brings_bands(runner, cal_file):
    none = est_json(runner, "--calibration", "none")
    cal = est_json(runner, "--calibration", str(cal_file))
    assert none["error_bands"] == {}
    # batch-1 decode of an 8B model: the weight GEMMs are most of the step; the engine's GEMM factor 1.5
    assert 1.25 * none["tpot_ms"] < cal["tpot_ms"] < 1.5 * none["tpot_ms"]
    assert cal["decode"]["bound"] == "memory" and cal["prefill"]["bound"] == "compute"
    # throughput/tpot: 'static_batch/throughput/memory'; ttft: 'static_batch/latency/compute' absent -> '*'
    assert cal["error_bands"] == {"throughput": 0.14, "tpot": 0.14, "ttft": 0.2}


def test_calibration_from_environment(runner, cal_file, monkeypatch):
    monkeypatch.setenv("INFERBOUND_CALIBRATION", str(cal_file))
    assert est_json(runner)["error_bands"]["throughput"] == 0.14


def test_estimate_table_shows_the_band(runner, cal_file):
    res = runner.invoke(app, ["estimate", "--batch", "1", "--input", "2048", "--output", "64", "--calibration",
                              str(cal_file)])
    assert res.exit_code == 0, res.output
    assert "(±14%)" in res.output and "(±20%)" in res.output
    res_none = runner.invoke(app, ["estimate", "--calibration", "none"])
    assert "±" not in res_none.output and "no error band" in res_none.output


@pytest.mark.parametrize("command", [["estimate"], ["estimate", "--scenario", "max-throughput"], ["memory"],
                                     ["roofline"]])
def test_bad_calibration_path_exits_2(runner, tmp_path, command):
    missing = tmp_path / "missing.yaml"
    assert_one_line_error(runner.invoke(app, [*command, "--calibration", str(missing)]), "calibration=",
                          "missing.yaml")


def test_validate_bad_calibration_path_exits_2(runner, synth, tmp_path):
    missing = tmp_path / "missing.yaml"
    res = runner.invoke(app, ["validate", str(synth["csv"]), "--gpu-file", str(synth["gpu"]), "--calibration",
                              str(missing), "--json"])
    assert_one_line_error(res, "calibration=", "missing.yaml")


def test_simulate_accepts_calibration(runner, cal_file):
    import inferbound.cli.simulate_cmd  # noqa: F401  (registers `simulate`)
    res = runner.invoke(app, ["simulate", "--rate", "0.01", "--requests", "2", "--input", "64", "--output", "4",
                              "--calibration", str(cal_file), "--json"])
    assert res.exit_code == 0, res.output


# --- framework profiles: TensorRT-LLM ran Mistral with full attention --------------------------------------

MISTRAL_ROW = dict(source="s", model="mistralai/Mistral-7B-v0.1", gpu="h100_sxm", num_gpus="1", tp="1", pp="1",
                   weight_dtype="bf16", scenario="static_batch", batch_size="1", input_len="20000", output_len="2",
                   metric="itl_ms", value="10")
MISTRAL_ROW_OBJ = read_csv.__globals__["parse_row"](dict(MISTRAL_ROW, case="r", framework="vLLM"), 2)
ROW_8B_H100 = read_csv.__globals__["parse_row"](dict(MISTRAL_ROW, case="r8", framework="test",
                                                     model="meta-llama/Llama-3.1-8B", input_len="128"), 2)
# one decode step at 20,000 cached tokens (+1 new): full attention reads 20,001 tokens per layer, the sliding
# window 4,096. Mistral-7B-v0.1 (data/models): 32 layers x 8 KV heads x 128 x (K, V) x 2 B = 131,072 B per token.
FULL_READS, WINDOW_READS = 20_001 * 131_072, 4_096 * 131_072


def _attention_reads(dep, row):
    (a,) = [p for p in step.decode(dep, row.batch_size, row.input_len).ops if p.op.name == "attention"]
    return float(a.op.kv_bytes) * a.op.count, float(a.time) * a.op.count


def test_tensorrt_llm_mistral_uses_full_attention(tmp_path):
    rows, _ = read_csv(write_csv(tmp_path / "m.csv", [dict(MISTRAL_ROW, case="trt", framework="TensorRT-LLM v0.17"),
                                                       dict(MISTRAL_ROW, case="vllm", framework="vLLM")]))
    assert profile_for_framework("TensorRT-LLM v0.17").sliding_window.value is False
    assert profile_for_framework("vLLM").sliding_window is None      # honoured: the profile says nothing against
    trt_dep, vllm_dep = (deployment_for(r, calibration="none") for r in rows)
    assert {g.attention for g in trt_dep.model.layers} == {"full"}
    assert {(g.attention, g.window) for g in vllm_dep.model.layers} == {("window", 4096)}
    (trt_bytes, trt_t), (vllm_bytes, vllm_t) = _attention_reads(trt_dep, rows[0]), _attention_reads(vllm_dep, rows[1])
    assert trt_bytes == pytest.approx(FULL_READS, rel=1e-12) and vllm_bytes == pytest.approx(WINDOW_READS, rel=1e-12)
    # 4.9x the cache read (memory-bound at 20k context) on top of each kernel's fixed cost (~10 us x 32 layers)
    assert trt_t > 1.5 * vllm_t


def test_rows_differing_only_by_framework_are_predicted_apart(tmp_path):
    rows, _ = read_csv(write_csv(tmp_path / "m.csv", [dict(MISTRAL_ROW, case="trt", framework="TensorRT-LLM v0.17"),
                                                       dict(MISTRAL_ROW, case="vllm", framework="vLLM")]))
    trt, vllm = predict_rows(rows)
    trt_dep, vllm_dep = (deployment_for(r, calibration="none") for r in rows)
    assert (trt_dep.engine, vllm_dep.engine) == ("trtllm@0.17", "vllm@0.33.0")
    assert trt.predicted > vllm.predicted + 0.5 * (_attention_reads(trt_dep, rows[0])[1]
                                                   - _attention_reads(vllm_dep, rows[1])[1]) * 1e3


# --- error bands: base quantile, widening where a prediction extrapolates, the band column -------------

def test_base_bands_are_the_80th_percentile_of_out_of_fold_errors():
    from inferbound.calibration.bands import base_bands
    rows = [dataclasses.replace(MISTRAL_ROW_OBJ, metric="output_tok_s", scenario="max_throughput") for _ in range(10)]
    errors = [0.01 * (i + 1) for i in range(10)]          # 1 % .. 10 %
    b = base_bands(rows, errors, scenario_keys_only=False)
    # numpy's linear quantile at 0.8 over 10 sorted values: x[7.2] = 0.08 + 0.2 * 0.01 = 0.082
    assert b["max_throughput/throughput"] == pytest.approx(0.082) and b["*"] == pytest.approx(0.082)
    assert base_bands(rows[:4], errors[:4]) == {}            # fewer than 5 rows: no band


def test_bands_widen_for_each_way_a_deployment_extrapolates():
    from inferbound.deploy.bands import band_for, widening
    cov = {"gpus": ["h100_sxm"], "engines": [ENGINE], "dtypes": ["bf16"], "families": ["llama"]}
    ext = {"gpu": 1.5, "prior_curves": 1.2, "cross_vendor": 2.0, "engine": 1.3, "dtype": 1.4, "family": 1.25}
    cal = Calibration(bands={"static_batch/throughput": 0.1, "extrapolation": ext, "coverage": cov})
    inside = deployment_for(ROW_8B_H100, calibration=cal)
    assert widening(cal, inside) == (1.0, []) and band_for(cal, inside, "static_batch", "throughput") == 0.1
    # GH200: absent from the fit, prior curves (derived from h100_sxm, same vendor): 0.1 x 1.5 x 1.2
    gh = deployment_for(dataclasses.replace(ROW_8B_H100, gpu="gh200"), calibration=cal)
    assert band_for(cal, gh, "static_batch", "throughput") == pytest.approx(0.1 * 1.5 * 1.2)
    # MI300X: absent, NVIDIA template (another vendor); fp8 absent too: 0.1 x 1.5 x 2.0 x 1.4
    mi = deployment_for(dataclasses.replace(ROW_8B_H100, gpu="mi300x", weight_dtype="fp8", act_dtype="fp8"),
                        calibration=cal)
    f, why = widening(cal, mi)
    assert f == pytest.approx(1.5 * 2.0 * 1.4) and len(why) == 3
    # engine absent (TensorRT-LLM 0.17 row) and family absent (Mixtral)
    other = deployment_for(dataclasses.replace(ROW_8B_H100, framework="TensorRT-LLM v0.17",
                                               model="mistralai/Mixtral-8x7B-v0.1", num_gpus=2, tp=2), calibration=cal)
    assert widening(cal, other)[0] == pytest.approx(1.3 * 1.25)


def test_validate_out_writes_each_rows_band_and_the_coverage(runner, synth, tmp_path):
    path = tmp_path / "bands.yaml"
    Calibration(bands={"static_batch/throughput": 0.05, "static_batch/latency": 0.5}).save(path)
    out = tmp_path / "rows.csv"
    res = runner.invoke(app, ["validate", str(synth["csv"]), "--gpu-file", str(synth["gpu"]), "--calibration",
                              str(path), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    got = list(csv.DictReader(out.open()))
    assert "band" in got[0]
    for r in got:
        if r["covered"] == "True":
            assert float(r["band"]) == (0.5 if r["metric"] in ("ttft_ms", "itl_ms") else 0.05)
        else:
            assert r["band"] == ""
    d = json.loads(res.stdout)
    bc = d["band_coverage"]["all"]
    inside = sum(abs(float(r["error"])) <= float(r["band"]) for r in got if r["band"])
    assert bc["n"] == sum(1 for r in got if r["band"]) and bc["coverage"] == pytest.approx(inside / bc["n"])
