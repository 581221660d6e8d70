"""Bad input, typed as a new user types it: every command answers one ``error:`` line naming the field
(and, where there is one, the value), exit code 2, nothing on stdout, no traceback; every JSON
endpoint answers 422 with field errors, each message one line.

The corpus runs in-process (typer's CliRunner, FastAPI's TestClient). Every case fails before any
long computation: a simulation, search, fit or probe that started would show as a slow test, and the
``serve`` and ``probe`` cases replace the server and the first benchmark with a failure.
"""
from __future__ import annotations

import csv
import io
import json
import socket
import warnings

import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound.cli import app
from inferbound.model import catalog_files
from inferbound.faces.options import MAX_SIM_REQUESTS, SIM_REQUESTS_CLI_CAP
from inferbound.validation.dataset import HEADER

with warnings.catch_warnings():  # starlette's TestClient warns about httpx; not ours to fix
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

LLAMA_8B = json.loads(catalog_files()["meta-llama/Llama-3.1-8B"].read_text())
CONTEXT_8B = 131_072  # Llama-3.1-8B config.json: max_position_embeddings

# ---------- files the cases name (written once per module) ----------

ROW = {"case": "c1", "source": "test", "model": "llama-3.1-8b", "gpu": "h100_sxm", "num_gpus": "1", "tp": "1",
       "pp": "1", "ep": "1", "weight_dtype": "bf16", "act_dtype": "bf16", "kv_dtype": "bf16", "framework": "vllm",
       "scenario": "max_throughput", "batch_size": "", "request_rate": "", "num_requests": "1000",
       "input_len": "1024", "output_len": "256", "metric": "output_tok_s", "value": "9000", "source_url": ""}


def _csv(rows: list[dict]) -> str:
    cols = list(dict.fromkeys([*HEADER, *ROW]))
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in cols})
    return out.getvalue()


CONFIGS = {  # name -> config.json content (a str is written verbatim)
    "unknown_type": {**LLAMA_8B, "model_type": "llama9000"},
    "no_type": {k: v for k, v in LLAMA_8B.items() if k != "model_type"},
    "zero_heads": {**LLAMA_8B, "num_attention_heads": 0},
    "list_hidden": {**LLAMA_8B, "hidden_size": [4096]},
    "heads_30": {**LLAMA_8B, "num_attention_heads": 30},
    "fraction_layers": {**LLAMA_8B, "num_hidden_layers": 32.7},
    "string_experts": {**LLAMA_8B, "model_type": "mixtral", "num_local_experts": "8", "num_experts_per_tok": 2},
    "text_config_5": {**{k: v for k, v in LLAMA_8B.items() if k != "hidden_size"}, "text_config": 5},
    "markup_layer_types": {**LLAMA_8B, "layer_types": ["full_attention"] * 31 + ["[/x]"]},
    "not_json": "{ this is not json",
    "a_list": "[1, 2, 3]",
    "infinite_layers": '{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": Infinity, '
                       '"num_attention_heads": 32, "vocab_size": 128256, "intermediate_size": 14336}',
}
COMPARE_FILES = {  # comparison YAMLs (inferbound compare)
    "cmp_no_deployments": "workload: {batch: 8}\n",
    "cmp_batch0": "workload: {batch: 0}\ndeployments:\n  - {model: llama-3.1-8b}\n",
    "cmp_typo": "workload: {batch: 8}\ndeployments:\n  - {model: llama-3.1-8b, tpp: 2}\n",
}
CSVS = {
    "header_only": _csv([]),
    "one_row": _csv([ROW]),
    "all_unreadable": _csv([{**ROW, "scenario": "bogus"}]),
    "wrong_columns": "a,b\n1,2\n",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_input")
    out = {"dir": str(d), "a_file": str(d / "plain.txt"), "under_a_file": str(d / "plain.txt" / "sub"),
           "bad_hw": str(d / "bad_hw.yaml"),
           "not_yaml": str(d / "not_yaml.yaml")}
    (d / "plain.txt").write_text("x")
    (d / "bad_hw.yaml").write_text("gpus:\n  - id: x\n")
    (d / "not_yaml.yaml").write_text(": : :\n")
    for name, body in CONFIGS.items():
        p = d / f"{name}.json"
        p.write_text(body if isinstance(body, str) else json.dumps(body))
        out[name] = str(p)
    for name, text in COMPARE_FILES.items():
        p = d / f"{name}.yaml"
        p.write_text(text)
        out[name] = str(p)
    for name, text in CSVS.items():
        p = d / f"{name}.csv"
        p.write_text(text)
        out[name] = str(p)
    return out


def expand(args, files):
    """'@name' arguments become the path of that fixture file."""
    return [files[a[1:]] if a.startswith("@") else a for a in args]


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def _ids(cases):
    return [" ".join(c[0])[:70] for c in cases]


# ---------- deployment, engine and model options: estimate, roofline, memory, simulate ----------

DEPLOYMENT = [  # (arguments, words the error line must contain)
    (["--gpu", "nope"], ["gpu", "nope", "h100_sxm"]),
    (["--tp", "0"], ["tp=0"]),
    (["--tp", "3"], ["tp=3"]),
    (["--tp", "abc"], ["--tp", "abc"]),
    (["--pp", "0"], ["pp=0"]),
    (["--ep", "0"], ["ep=0"]),
    (["--ep", "2"], ["ep=2", "dense"]),
    (["--dp", "-1"], ["dp=-1"]),
    (["--nodes", "0"], ["nodes=0"]),
    (["--num-gpus", "0"], ["num_gpus=0"]),
    (["--num-gpus", "3", "--tp", "2"], ["num_gpus=3"]),
    (["--weight-dtype", "fp9"], ["weight_dtype", "fp9", "bf16"]),
    (["--act-dtype", "int3"], ["act_dtype", "int3"]),
    (["--kv-dtype", "fp9"], ["kv_dtype", "fp9"]),
    (["--collective-algo", "foo"], ["collective_algo", "foo", "ring"]),
    (["--comm-overlap", "2"], ["comm_overlap", "<= 1"]),
    (["--comm-overlap", "-0.5"], ["comm_overlap", ">= 0"]),
    (["--pp-split", "a,b"], ["pp-split", "a,b", "integers"]),
    (["--pp-split", "16,16"], ["pp_split", "16"]),
    (["--microbatches", "0"], ["microbatches=0"]),
    (["--set", "hidden_sizee=4096"], ["hidden_sizee", "4096"]),
    (["--set", "num_hidden_layers=1.5"], ["num_hidden_layers", "1.5"]),
    (["--set", "num_hidden_layers=0"], ["num_hidden_layers=0"]),
    (["--set", "num_attention_heads=0"], ["num_attention_heads=0"]),
    (["--set", "num_attention_heads=30"], ["num_attention_heads=30", "hidden_size"]),
    (["--set", "hidden_size=[4096]"], ["hidden_size", "[4096]"]),
    (["--set", "gated_mlp=no"], ["gated_mlp", "no"]),
    (["--set", "num_hidden_layers"], ["--set", "KEY=VALUE"]),
    (["--set", "=3"], ["--set", "KEY"]),
    (["--set", "num_hidden_layers=NaN"], ["num_hidden_layers", "NaN", "finite"]),
    (["--gpu-set", "price_per_hour=-5"], ["price_per_hour", "-5"]),
    (["--gpu-set", "hbm_bw=inf"], ["hbm_bw", "inf", "finite"]),
    (["--gpu-set", "hbm_bw=-1"], ["hbm_bw", "-1"]),
    (["--gpu-set", "nonsense=1"], ["nonsense", "hbm_bw"]),
    (["--gpu-set", "efficiency.compute=1.5"], ["efficiency.compute", "1.5"]),
    (["--gpu-set", "peak_flops.fp9=1"], ["peak_flops.fp9", "fp9"]),
    (["--gpu-file", "/nonexistent/hw.yaml"], ["/nonexistent/hw.yaml"]),
    (["--calibration", "/nonexistent/cal.yaml"], ["calibration", "/nonexistent/cal.yaml"]),
    (["--engine", "nope"], ["engine", "nope", "vllm"]),
    (["--engine", "vllm@99"], ["engine_version", "99"]),  # issue 19: an old 0.x resolves to the oldest, noted
    (["--block-size", "0"], ["block_size=0"]),
    (["--token-budget", "0"], ["token_budget=0"]),
    (["--max-num-seqs", "0"], ["max_num_seqs=0"]),
    (["--memory-fraction", "1.5"], ["memory_fraction", "1.5"]),
    (["--kv-reservation", "foo"], ["kv_reservation", "foo", "max"]),
    (["--preemption", "foo"], ["preemption", "foo", "recompute"]),
    (["--assume-family", "nope"], ["assume_family", "nope", "llama"]),
    (["--input", "200000"], ["input_len=200000", "max_position_embeddings=131,072", "--allow-long-context"]),
    (["--input", "131000", "--output", "100"], ["input_len=131000", "max_position_embeddings"]),
    (["--input", "0"], ["input_len=0"]),
    (["--output", "0"], ["output_len=0"]),
    (["--input", "1e3"], ["--input", "1e3"]),
    (["no-such-model-xyz"], ["no-such-model-xyz"]),
    (["@unknown_type"], ["model_type", "llama9000"]),
    (["@no_type"], ["model_type"]),
    (["@zero_heads"], ["num_attention_heads=0"]),
    (["@heads_30"], ["num_attention_heads=30"]),
    (["@list_hidden"], ["hidden_size"]),
    (["@fraction_layers"], ["num_hidden_layers", "32.7"]),
    (["@string_experts"], ["num_local_experts", "8"]),
    (["@text_config_5"], ["text_config"]),
    (["@markup_layer_types"], ["layer_types", "[/x]"]),
    (["@not_json"], ["not valid JSON"]),
    (["@a_list"], ["JSON object"]),
    (["@infinite_layers"], ["num_hidden_layers"]),
]
DEPLOYMENT_COMMANDS = ("estimate", "roofline", "memory", "simulate")


@pytest.mark.parametrize("command", DEPLOYMENT_COMMANDS)
@pytest.mark.parametrize("args, words", DEPLOYMENT, ids=_ids(DEPLOYMENT))
def test_deployment_options(runner, files, command, args, words):
    extra = ["--requests", "5"] if command == "simulate" else []  # if a case ever passed: a tiny run
    assert_one_line_error(runner.invoke(app, [command, *expand(args, files), *extra]), *words)


# ---------- per command ----------

STATIC = [  # estimate, roofline and memory: the static batch
    (["--batch", "0"], ["batch=0", ">= 1"]),
    (["--batch", "-1"], ["batch=-1", ">= 1"]),
    (["--batch", "abc"], ["--batch", "abc"]),
    (["--batch"], ["--batch", "requires an argument"]),
]


@pytest.mark.parametrize("command", ("estimate", "roofline", "memory"))
@pytest.mark.parametrize("args, words", STATIC, ids=_ids(STATIC))
def test_static_batch_options(runner, command, args, words):
    assert_one_line_error(runner.invoke(app, [command, *args]), *words)


COMMANDS = [  # (arguments, words)
    (["estimate", "--scenario", "foo"], ["scenario", "foo", "max-throughput"]),
    (["estimate", "--scenario", "max-throughput", "--requests", "0"], ["requests=0"]),
    (["estimate", "--scenario", "max-throughput", "--input", "200000"], ["input_len=200000", "max_position_embeddings"]),
    (["estimate", "a", "b"], ["unexpected extra argument", "b"]),
    # SGLang's retract is a recompute (runtime.PREEMPTIONS, the one list): not a value of its own
    (["estimate", "--preemption", "retract"], ["preemption", "retract", "recompute, swap, none"]),
    (["estimate", "--collective-algo", "allgather"], ["collective_algo", "allgather", "auto, ring, tree"]),
    (["estimate", "--nope"], ["--nope"]),
    # simulate
    (["simulate", "--requests", "100000000"], ["requests=100000000", f"{SIM_REQUESTS_CLI_CAP:,}", "--max-requests"]),
    (["simulate", "--requests", str(SIM_REQUESTS_CLI_CAP + 1)], ["requests", "--max-requests"]),
    (["simulate", "--requests", "50", "--max-requests", "10"], ["requests=50", "--max-requests"]),
    (["simulate", "--max-requests", "0"], ["max_requests=0"]),
    (["simulate", "--requests", "0"], ["requests=0"]),
    (["simulate", "--rate", "0", "--requests", "5"], ["rate", "'0'", "> 0"]),
    (["simulate", "--rate", "-1", "--requests", "5"], ["rate", "-1"]),
    (["simulate", "--rate", "nan", "--requests", "5"], ["rate", "nan"]),
    (["simulate", "--rate", "fast", "--requests", "5"], ["rate", "fast"]),
    (["simulate", "--concurrency", "0", "--requests", "5"], ["concurrency=0"]),
    (["simulate", "--think-time", "-1", "--requests", "5"], ["think_time", "-1"]),
    (["simulate", "--input-dist", "normal:abc:1", "--requests", "5"], ["input_dist", "normal:abc:1"]),
    (["simulate", "--input-dist", "normal:[bold]x[/bold]:1", "--requests", "5"], ["input_dist", "[bold]x[/bold]"]),
    (["simulate", "--input-dist", ":smile:", "--requests", "5"], ["input_dist", ":smile:"]),
    (["simulate", "--input-dist", "uniform:5", "--requests", "5"], ["input_dist", "uniform:5"]),
    (["simulate", "--input-dist", "uniform:9:1", "--requests", "5"], ["input_dist", "uniform:9:1"]),
    (["simulate", "--output-dist", "foo", "--requests", "5"], ["output_dist", "foo"]),
    (["simulate", "--seed", "-1", "--requests", "5"], ["seed=-1", ">= 0"]),
    (["simulate", "--seed", str(2**32), "--requests", "5"], ["seed=4294967296", "4,294,967,295"]),
    (["simulate", "--replicas", "0", "--requests", "5"], ["replicas=0"]),
    (["simulate", "--prefill-replicas", "-1", "--requests", "5"], ["prefill_replicas=-1"]),
    (["simulate", "--prefill-replicas", "1", "--requests", "5"], ["prefill_replicas=1", "decode_replicas=0"]),
    (["simulate", "--decode-replicas", "-2", "--requests", "5"], ["decode_replicas=-2"]),
    (["simulate", "--num-blocks", "0", "--requests", "5"], ["num_blocks=0"]),
    (["simulate", "--slo-ttft-ms", "0", "--requests", "5"], ["slo_ttft_ms", "> 0"]),
    (["simulate", "--slo-tpot-ms", "-1", "--requests", "5"], ["slo_tpot_ms", "-1"]),
    (["simulate", "--slo-e2e-ms", "0", "--requests", "5"], ["slo_e2e_ms"]),
    (["simulate", "--plot", "/missing/dir/x.png", "--requests", "5"], ["--plot", "/missing/dir", "does not exist"]),
    (["simulate", "--plot", "x.jpg", "--requests", "5"], ["--plot", "x.jpg", ".png"]),
    (["simulate", "--plot", "@dir", "--requests", "5"], ["--plot", ".png"]),
    (["simulate", "--plot", "/proc/x.png", "--requests", "5"], ["--plot", "/proc/x.png", "cannot be written"]),
    (["simulate", "--trace", "/missing/trace.csv"], ["trace", "/missing/trace.csv"]),
    (["simulate", "--trace", "@dir"], ["trace", "not a file"]),
    (["simulate", "--dataset", "nope", "--requests", "5"], ["dataset", "nope", "sharegpt"]),
    # search: each fails before the sweep
    (["search", "--gpus", "h100_sxm,nope", "--max-gpus", "1"], ["gpu", "nope"]),
    (["search", "--gpus", ",", "--max-gpus", "1"], ["gpus", "empty"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "0"], ["max_gpus=0"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--top", "0"], ["top=0"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--emit-rank", "0"], ["emit_rank=0"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--backend", "foo"], ["backend", "foo", "local"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--workers", "0"], ["workers", "0"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--dtypes", "fp9"], ["dtypes", "fp9"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--objective", "fast"], ["objective", "fast"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--objective", "gpus_for_rate"], ["target_rate"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--input", "200000"],
     ["input_len=200000", "max_position_embeddings", "--allow-long-context"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--output", "1"], ["output_len=1", ">= 2"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--target-rate", "0"], ["target_rate"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--gpu-budget", "0"], ["max_total_gpus=0"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--max-watts", "0"], ["max_watts"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--max-dollars-per-hour", "-1"], ["max_dollars_per_hour"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--slo-ttft-ms", "0"], ["slo_ttft_ms"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--slo-tpot-ms", "-3"], ["slo_tpot_ms"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--pareto", "tok_s_per_gpu"], ["--pareto", "tok_s_per_gpu"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--emit", "tgi"], ["emit", "tgi"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--emit", "vllm", "--engine", "sglang"], ["--emit", "--engine"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--engine", "nope"], ["engine", "nope"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--block-size", "0"], ["block_size=0"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--plot", "out.jpg"], ["--plot", "out.jpg", ".png"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--html", "x.png"], ["--html", ".html"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--csv", "/missing/x.csv"], ["--csv", "/missing"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--csv", "/proc/x.csv"], ["--csv", "/proc/x.csv", "cannot"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "100000"], ["max_gpus=100000", "72", "--no-cap"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "73"], ["max_gpus=73", "1..72", "--no-cap"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--gpu-set", "hbm_bw=inf"], ["hbm_bw", "inf"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--gpu-set", "price_per_hour=-5"], ["price_per_hour", "-5"]),
    (["search", "--gpus", "h100_sxm", "--max-gpus", "1", "--gpu-file", "/nonexistent/hw.yaml"], ["/nonexistent/hw.yaml"]),
    (["search", "no-such-model-xyz", "--gpus", "h100_sxm", "--max-gpus", "1"], ["no-such-model-xyz"]),
    (["search", "@unknown_type", "--gpus", "h100_sxm", "--max-gpus", "1"], ["model_type", "llama9000"]),
    (["search", "--max-gpus", "x"], ["--max-gpus", "x"]),
    # validate
    (["validate", "@header_only"], ["header_only.csv", "no rows"]),
    (["validate", "@all_unreadable"], ["none of its 1 row(s) is readable", "bogus"]),
    (["validate", "@wrong_columns"], ["wrong_columns.csv", "column"]),
    (["validate", "/missing/rows.csv"], ["/missing/rows.csv"]),
    (["validate", "@one_row", "--scenario", "foo"], ["scenario", "foo", "static_batch"]),
    (["validate", "/missing/rows.csv", "--scenario", "foo"], ["scenario", "foo", "static_batch"]),  # before reading
    (["validate", "@one_row", "--scenario", "serving"], ["scenario", "serving", "no rows"]),
    (["validate", "@one_row", "--out", "/missing/dir/rows.csv"], ["out", "/missing/dir"]),
    (["validate", "@one_row", "--out", "rows.txt"], ["out", ".csv"]),
    (["validate", "@one_row", "--plot", "x.jpg"], ["plot", ".png"]),
    (["validate", "@one_row", "--out", "/proc/rows.csv"], ["--out", "/proc/rows.csv", "cannot be written"]),
    (["validate", "@one_row", "--plot", "/proc/x.png"], ["--plot", "/proc/x.png", "cannot be written"]),
    (["validate", "@one_row", "--calibration", "/nonexistent/cal.yaml"], ["calibration", "/nonexistent/cal.yaml"]),
    (["validate", "@one_row", "--gpu-file", "@bad_hw"], ["bad_hw.yaml"]),
    (["validate", "@one_row", "--gpu-file", "/nonexistent/hw.yaml"], ["/nonexistent/hw.yaml"]),
    (["validate"], ["Missing argument"]),
    # calibrate: each fails before the fit
    (["calibrate", "@one_row", "--out", "/missing/dir/cal.yaml"], ["out", "/missing/dir", "does not exist"]),
    (["calibrate", "@one_row", "--out", "@dir"], ["out", ".yaml"]),
    (["calibrate", "@one_row", "--out", "cal.txt"], ["out", "cal.txt", ".yaml"]),
    (["calibrate", "@one_row", "--out", "/proc/cal.yaml"], ["--out", "/proc/cal.yaml", "cannot be written"]),
    (["calibrate", "@one_row", "--max-evals", "0"], ["max_evals=0", ">= 1"]),
    (["calibrate", "@one_row", "--max-evals", "-3"], ["max_evals=-3"]),
    (["calibrate", "@one_row", "--max-evals", "many"], ["--max-evals", "many"]),
    (["calibrate", "@one_row", "--scenarios", "foo"], ["scenarios", "foo", "static_batch"]),
    (["calibrate", "@one_row", "--scenarios", ","], ["scenarios", "empty"]),
    (["calibrate", "@one_row", "--scenarios", "serving"], ["scenarios", "serving", "no rows"]),
    (["calibrate", "@one_row", "--cv", "foo"], ["cv", "foo", "gpu", "model"]),
    (["calibrate", "@header_only"], ["header_only.csv", "no rows"]),
    (["calibrate", "/missing/rows.csv"], ["/missing/rows.csv"]),
    # compare
    (["compare"], ["file", "missing"]),
    (["compare", "/missing/cmp.yaml"], ["/missing/cmp.yaml"]),
    (["compare", "@not_yaml"], ["not_yaml.yaml", "YAML"]),
    (["compare", "@cmp_no_deployments"], ["deployments"]),
    (["compare", "@cmp_batch0"], ["batch=0"]),
    (["compare", "@cmp_typo"], ["tpp", "tp"]),
    (["compare", "@cmp_typo", "--csv", "rows.txt"], ["--csv", ".csv"]),
    (["compare", "@cmp_typo", "--plot", "/missing/dir/x.png"], ["--plot", "/missing/dir"]),
    (["compare", "@cmp_typo", "--csv", "/proc/x.csv"], ["--csv", "/proc/x.csv", "cannot be written"]),
    # catalogs
    (["models", "extra"], ["unexpected extra argument", "extra"]),
    (["models", "--foo"], ["--foo"]),
    (["gpus", "--gpu-file", "/nonexistent/hw.yaml"], ["/nonexistent/hw.yaml"]),
    (["gpus", "--gpu-file", "@bad_hw"], ["bad_hw.yaml"]),
    (["gpus", "--gpu-file", "@not_yaml"], ["not_yaml.yaml", "YAML"]),
    (["gpus", "--foo"], ["--foo"]),
    # click's own usage errors
    ([], ["Missing command"]),
    (["nosuchcommand"], ["nosuchcommand"]),
    (["estimat"], ["estimat", "estimate"]),
]


@pytest.mark.parametrize("args, words", COMMANDS, ids=_ids(COMMANDS))
def test_command_options(runner, files, args, words):
    assert_one_line_error(runner.invoke(app, expand(args, files)), *words)


def test_markup_in_user_text_is_printed_verbatim(runner):
    """Rich markup in a user's value is echoed as typed: neither styled away nor turned into an emoji."""
    r = runner.invoke(app, ["simulate", "--input-dist", "normal:[bold]x[/bold]:1", "--requests", "5"])
    assert "normal:[bold]x[/bold]:1" in r.stderr
    r = runner.invoke(app, ["simulate", "--input-dist", ":smile:", "--requests", "5"])
    assert ":smile:" in r.stderr and "\U0001f604" not in r.stderr


# ---------- serve: arguments checked before the server starts ----------

SERVE = [
    (["--log-level", "foo"], ["log_level", "foo", "debug"]),
    (["--log-level", ""], ["log_level"]),
    (["--host", "999.1.1.1"], ["host", "999.1.1.1", "IPv4"]),
    (["--host", "1.2.3"], ["host", "1.2.3"]),
    (["--host", "::zz"], ["host", "::zz", "IPv6"]),
    (["--host", "bad name!"], ["host", "bad name!"]),
    (["--host", ""], ["host"]),
    (["--host", "no-such-host.invalid"], ["host", "no-such-host.invalid", "resolve"]),
    (["--host", "192.0.2.1"], ["host", "192.0.2.1", "cannot bind"]),  # TEST-NET-1 (RFC 5737): never local
    # the declared ranges (faces/options.py SERVE), checked before anything binds
    (["--port", "99999"], ["port=99999", "<= 65,535"]),
    (["--port", "65536"], ["port=65536", "<= 65,535"]),
    (["--port", "-1"], ["port=-1", ">= 0"]),
    (["--port", "http"], ["--port", "http"]),
    (["--work-seconds", "0"], ["work_seconds=0.0", ">= 0.1"]),
    (["--work-seconds", "0.05"], ["work_seconds=0.05", ">= 0.1"]),
    (["--work-seconds", "inf"], ["work_seconds", "inf"]),
    (["--work-seconds", "soon"], ["--work-seconds", "soon"]),
]


@pytest.fixture
def no_server(monkeypatch):
    import uvicorn

    def refuse(*a, **k):
        raise AssertionError("serve started a server for bad input")
    monkeypatch.setattr(uvicorn, "run", refuse)


@pytest.mark.parametrize("args, words", SERVE, ids=_ids(SERVE))
def test_serve_arguments(runner, no_server, args, words):
    assert_one_line_error(runner.invoke(app, ["serve", *args]), *words)


def test_serve_port_in_use(runner, no_server):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = runner.invoke(app, ["serve", "--port", str(port)])
    assert_one_line_error(r, "host='127.0.0.1'", f"port={port}", "cannot bind")


# ---------- probe: arguments checked before the first benchmark ----------

PROBE = [
    (["--threads", "0"], ["threads=0", ">= 1"]),
    (["--threads", "-2"], ["threads=-2"]),
    (["--threads", "abc"], ["--threads", "abc"]),
    (["--dtype", "fp64"], ["dtype", "fp64", "bf16"]),
    (["--model", "no-such-model-xyz"], ["no-such-model-xyz"]),
    (["--model", "mixtral-8x7b-v0.1"], ["moe", "not supported by probe"]),
    (["--model", "gpt2"], ["gated_mlp", "not supported by probe"]),
    (["--model", "@unknown_type"], ["model_type", "llama9000"]),
    (["--set", "x"], ["--set", "KEY=VALUE"]),
    (["--set", "num_hidden_layers=0"], ["num_hidden_layers=0"]),
    (["--set", "hidden_sizee=3"], ["hidden_sizee"]),
    (["--out", "@a_file"], ["out", "plain.txt", "is a file"]),
    (["--out", "@under_a_file"], ["out", "plain.txt", "is a file"]),
    (["--out", "/proc/probe-out"], ["--out", "/proc/probe-out", "cannot be written"]),
    (["--out", "/proc/a/b"], ["--out", "/proc/a/b", "cannot be written", "'/proc'"]),
]


@pytest.fixture
def no_benchmark(monkeypatch):
    pytest.importorskip("torch")
    from inferbound.probe import microbench

    def refuse(*a, **k):
        raise AssertionError("probe started measuring for bad input")
    monkeypatch.setattr(microbench, "matmuls", refuse)


@pytest.mark.parametrize("args, words", PROBE, ids=_ids(PROBE))
def test_probe_arguments(runner, files, no_benchmark, tmp_path, args, words):
    args = expand(args, files)
    if "--out" not in args:
        args = [*args, "--out", str(tmp_path / "probe")]
    assert_one_line_error(runner.invoke(app, ["probe", *args]), *words)


# ---------- the JSON API: 422 with field errors ----------

@pytest.fixture(scope="module")
def client():
    from inferbound.web import create_app
    return TestClient(create_app())


M = {"model": "llama-3.1-8b"}
API_DEPLOYMENT = [  # (body, field in loc (None: the body as a whole), words of its msg)
    ({**M, "gpu": "nope"}, "gpu", ["nope"]),
    ({**M, "gpu": "../etc"}, "gpu", []),
    ({**M, "tp": 0}, "tp", []),
    ({**M, "tp": 3}, "tp", ["tp=3"]),
    ({**M, "pp": 0}, "pp", []),
    ({**M, "ep": 2}, "ep", ["dense"]),
    ({**M, "dp": -1}, "dp", []),
    ({**M, "num_gpus": 3, "tp": 2}, "num_gpus", []),
    ({**M, "num_gpus": 10**6}, "num_gpus", []),
    ({**M, "weight_dtype": "fp9"}, "weight_dtype", []),
    ({**M, "kv_dtype": "fp9"}, "kv_dtype", []),
    ({**M, "collective_algo": "foo"}, "collective_algo", []),
    ({**M, "comm_overlap": 2}, "comm_overlap", []),
    ({**M, "pp_split": ["a"]}, "pp_split", []),
    ({**M, "pp_split": [0]}, "pp_split", []),
    ({**M, "microbatches": 0}, "microbatches", []),
    ({**M, "model_overrides": {"hidden_sizee": 4096}}, "model_overrides", ["hidden_sizee"]),
    ({**M, "model_overrides": {"num_hidden_layers": 1.5}}, "model_overrides", ["num_hidden_layers"]),
    ({**M, "model_overrides": {"num_hidden_layers": 10**9}}, "model_overrides", ["num_hidden_layers"]),
    ({**M, "model_overrides": {"num_attention_heads": 30}}, "model_overrides", ["num_attention_heads=30"]),
    ({"model": "deepseek-v3", "model_overrides": {"n_routed_experts": -4}}, "model_overrides", ["n_routed_experts"]),
    ({**M, "model_overrides": {"x": [1]}}, "model_overrides", []),
    ({**M, "gpu_overrides": {"price_per_hour": -5}}, "gpu_overrides", ["price_per_hour", "-5"]),
    ({**M, "gpu_overrides": {"hbm_bw": "inf"}}, "gpu_overrides", ["hbm_bw"]),
    ({**M, "gpu_overrides": {"hbm_bw": -1}}, "gpu_overrides", ["hbm_bw"]),
    ({**M, "gpu_overrides": {"nonsense": 1}}, "gpu_overrides", ["nonsense"]),
    ({**M, "gpu_overrides": {"efficiency.compute": 1.5}}, "gpu_overrides", ["efficiency.compute"]),
    ({"model": "no-such-model-xyz"}, "model", ["no-such-model-xyz"]),
    ({"model": "/etc/passwd"}, "model", []),
    ({"model": "meta-llama/Llama-3.1-8B/../x"}, "model", []),
    ({**M, "config": LLAMA_8B}, None, ["exactly one"]),
    ({"gpu": "h100_sxm"}, None, ["exactly one"]),
    ({"config": {**LLAMA_8B, "model_type": "llama9000"}}, "config", ["llama9000"]),
    ({"config": {k: v for k, v in LLAMA_8B.items() if k != "model_type"}}, "config", ["model_type"]),
    ({"config": {**LLAMA_8B, "num_attention_heads": 0}}, "config", ["num_attention_heads"]),
    ({"config": {**LLAMA_8B, "num_local_experts": "8", "model_type": "mixtral"}}, "config", ["num_local_experts"]),
    ({"config": {**LLAMA_8B, "layer_types": ["[/x]"] * 32}}, "config", ["layer_types"]),
    ({"config": LLAMA_8B, "model_overrides": {"hidden_sizee": 1}}, "model_overrides", ["hidden_sizee"]),
    ({"config": {**LLAMA_8B, "model_type": "llama9000"}, "assume_family": "nope"}, "assume_family", ["nope"]),
    ({**M, "calibration": "/etc/cal.yaml"}, "calibration", []),
    ({**M, "engine": "nope"}, "engine", ["nope"]),
    ({**M, "engine": "vllm@99"}, "engine", ["99"]),
    ({**M, "block_size": 0}, "block_size", []),
    ({**M, "memory_fraction": 2}, "memory_fraction", []),
    ({**M, "kv_reservation": "foo"}, "kv_reservation", []),
    ({**M, "assume_family": "nope"}, "assume_family", ["nope"]),
    ({**M, "surprise": 1}, "surprise", []),
    ({**M, "input_len": 200000}, "input_len", ["max_position_embeddings=131,072", "allow_long_context"]),
    ({**M, "input_len": 0}, "input_len", []),
    ({**M, "output_len": 0}, "output_len", []),
]
API_DEPLOYMENT_PATHS = ("/api/estimate", "/api/roofline", "/api/memory", "/api/simulate")

S = {**M, "requests": 5}
API_OTHER = [  # (path, body, field, words)
    ("/api/estimate", {**M, "batch": 0}, "batch", []),
    ("/api/estimate", {**M, "batch": -1}, "batch", []),
    ("/api/roofline", {**M, "batch": 10**6}, "batch", []),
    ("/api/memory", {**M, "batch": "eight"}, "batch", []),
    ("/api/estimate", {**M, "scenario": "foo"}, "scenario", []),
    ("/api/estimate", {**M, "scenario": "max-throughput", "num_requests": 0}, "num_requests", []),
    ("/api/estimate", {**M, "scenario": "max-throughput", "input_len": 200000}, "input_len", ["max_position"]),
    ("/api/simulate", {**M, "requests": MAX_SIM_REQUESTS + 1}, "requests", []),
    ("/api/simulate", {**M, "requests": 0}, "requests", []),
    ("/api/simulate", {**S, "rate": 0}, "rate", []),
    ("/api/simulate", {**S, "rate": "fast"}, "rate", []),
    ("/api/simulate", {**S, "input_dist": "normal:abc:1"}, "input_dist", []),
    ("/api/simulate", {**S, "output_dist": ":smile:"}, "output_dist", []),
    ("/api/simulate", {**S, "seed": -1}, "seed", []),
    ("/api/simulate", {**S, "concurrency": 0}, "concurrency", []),
    ("/api/simulate", {**S, "think_time": -1}, "think_time", []),
    ("/api/simulate", {**S, "replicas": 0}, "replicas", []),
    ("/api/simulate", {**S, "num_blocks": 0}, "num_blocks", []),
    ("/api/simulate", {**S, "slo_ttft_ms": 0}, "slo_ttft_ms", []),
    ("/api/simulate", {**S, "timeline": "yes please"}, "timeline", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 0}, "max_gpus", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 73}, "max_gpus", []),
    ("/api/search", {**M, "max_gpus": 64}, "max_gpus", ["size cap"]),
    ("/api/search", {**M, "gpus": ["nope"], "max_gpus": 1}, "gpus", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "objective": "speed"}, "objective", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "dtypes": ["fp9"]}, "dtypes", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "dtypes": ["bf16", "fp8", "int4", "fp4", "bf16"]},
     "dtypes", ["1..4"]),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "emit": "vllm", "emit_rank": 101}, "emit_rank", []),
    ("/api/estimate", {**M, "preemption": "retract"}, "preemption", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "top": 0}, "top", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "input_len": 200000}, "input_len", ["max_position"]),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "output_len": 1}, "output_len", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "target_rate": 0}, "target_rate", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "frontier_x": "nope"}, "frontier_x", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "max_points": 1}, "max_points", []),
    ("/api/search", {**M, "gpus": ["h100_sxm"], "max_gpus": 1, "engine": "nope"}, "engine", ["nope"]),
    ("/api/search", {"model": "no-such-model-xyz", "gpus": ["h100_sxm"], "max_gpus": 1}, "model", []),
    ("/api/validate", {"csv": CSVS["header_only"]}, "csv", ["no rows"]),
    ("/api/validate", {"csv": ""}, "csv", []),
    ("/api/validate", {"csv": CSVS["wrong_columns"]}, "csv", ["column"]),
    ("/api/validate", {"csv": CSVS["one_row"], "calibration": "/etc/cal.yaml"}, "calibration", []),
    ("/api/validate", {}, "csv", []),
]


def assert_422(r, field, words):
    """422 with FastAPI's field errors: a loc naming ``field`` (None: the body), one-line messages."""
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, list) and detail, r.text
    assert all(d["msg"] and "\n" not in d["msg"] for d in detail), r.text
    assert "Traceback" not in r.text
    locs = [d["loc"] for d in detail]
    if field is None:
        assert ["body"] in locs, r.text
        hit = [d for d in detail if d["loc"] == ["body"]]
    else:
        assert any(field in loc for loc in locs), r.text
        hit = [d for d in detail if field in d["loc"]]
    for w in words:
        assert any(w in d["msg"] for d in hit), r.text


@pytest.mark.parametrize("path", API_DEPLOYMENT_PATHS)
@pytest.mark.parametrize("body, field, words", API_DEPLOYMENT, ids=[json.dumps(c[0])[:60] for c in API_DEPLOYMENT])
def test_api_deployment_fields(client, path, body, field, words):
    body = {**body, "requests": 5} if path == "/api/simulate" else body
    assert_422(client.post(path, json=body), field, words)


@pytest.mark.parametrize("path, body, field, words", API_OTHER,
                         ids=[f"{c[0]}:{json.dumps(c[1])[:50]}" for c in API_OTHER])
def test_api_endpoint_fields(client, path, body, field, words):
    assert_422(client.post(path, json=body), field, words)


def test_api_body_that_is_not_json(client):
    r = client.post("/api/estimate", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"]


def test_api_long_context_allowed_is_a_warning(client):
    r = client.post("/api/memory", json={**M, "input_len": CONTEXT_8B, "output_len": 1, "allow_long_context": True})
    assert r.status_code == 200, r.text
    assert any("max_position_embeddings=131,072" in w for w in r.json()["warnings"])
    r = client.post("/api/memory", json={**M, "input_len": CONTEXT_8B - 1, "output_len": 1})
    assert r.status_code == 200 and not any("max_position" in w for w in r.json()["warnings"])  # exactly the limit


def test_cli_long_context_allowed_is_a_warning(runner):
    r = runner.invoke(app, ["memory", "--input", "200000", "--allow-long-context", "--json"])
    assert r.exit_code == 0, r.output
    assert any("max_position_embeddings=131,072" in w for w in json.loads(r.stdout)["warnings"])
    r = runner.invoke(app, ["roofline", "--input", "200000", "--allow-long-context"])
    assert r.exit_code == 0 and "warning: input_len + output_len = 200,256 tokens" in r.stdout


def test_api_variant_ids_resolve_as_on_the_cli(client):
    """An Instruct id of a catalog model is sized as its base (loader's variant rules), with the warning."""
    r = client.post("/api/memory", json={"model": "meta-llama/Llama-3.1-8B-Instruct"})
    assert r.status_code == 200, r.text
    base = client.post("/api/memory", json=M).json()
    assert r.json()["weights"] == base["weights"]
    assert any("Llama-3.1-8B-Instruct" in w for w in r.json()["warnings"])


def test_openapi_says_exactly_one_of_model_or_config(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("EstimateIn", "WorkloadIn", "SimulateIn", "SearchIn"):
        one_of = schemas[name]["oneOf"]
        assert sorted(tuple(s["required"]) for s in one_of) == [("config",), ("model",)]
        assert "Exactly one of `model`" in schemas[name]["description"]


def test_429_carries_retry_after():
    from inferbound.web import create_app
    app_ = create_app(work_seconds=0.2, heavy_slots=1)
    app_.state.heavy_slots.acquire()  # another simulation holds the only slot
    try:
        r = TestClient(app_).post("/api/simulate", json={**M, "requests": 5})
    finally:
        app_.state.heavy_slots.release()
    assert r.status_code == 429
    assert r.headers["retry-after"] == "1"  # the 0.2 s work budget, in whole seconds (RFC 9110), at least 1

