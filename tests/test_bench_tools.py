"""inferbound bench, the offline and load-generator tools: ``trtllm-bench throughput|latency`` and ``guidellm
benchmark`` (bench/trtllm.py, bench/guidellm.py, data/bench.yaml), POST /api/bench (web/routes_bench.py) and
validation rows that carry their benchmark's command line (validation/replayed.py).

Expected values are worked out by hand from the command lines and the tools' source rules cited in
data/bench.yaml; replays are small (a few requests) to stay fast.
"""
from __future__ import annotations

import json
import random
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound.bench import run_bench
from inferbound.bench.guidellm import summary
from inferbound.bench.serve import parse_serve
from inferbound.bench.tools import parse_load
from inferbound.bench.trtllm import percentiles, serve_words
from inferbound.cli import app
from inferbound.validation.dataset import parse_row
from inferbound.validation.predict import _closed_loop, _front_end_ms, deployment_for, predict_rows, row_lengths

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

LLAMA = "meta-llama/Llama-3.1-8B"
TRT_LAT = f"trtllm-bench -m {LLAMA} latency --num-requests 3 --input-mean 64 --output-mean 8"


def _cli(*args):
    return CliRunner().invoke(app, ["bench", *args])


# ---- trtllm-bench ---------------------------------------------------------------------------------------

def test_trtllm_throughput_reads_its_flags_and_the_inline_dataset():
    p = parse_load(f"trtllm-bench --model {LLAMA} throughput --dataset /tmp/synthetic.txt --num-requests 500 "
                   "--input-mean 1024 --input-stdev 0 --output-mean 128 --output-stdev 0 --num_requests 300 --tp 2 "
                   "--warmup 4 --max_batch_size 128 --max_num_tokens 4096")
    # measured: min(--num_requests 300, dataset 500); every request enqueued at once; --concurrency -1: no limit
    assert p.tool == "trtllm-throughput" and p.inputs.size == 300
    assert set(p.inputs) == {1024} and set(p.outputs) == {128}
    assert np.all(p.send_s == 0) and p.max_concurrency is None and p.request_rate == float("inf")
    # --warmup 4 drawn from the dataset (fixed lengths: copies), same (no) concurrency limit; --eos_id -1: no EOS
    assert p.warmup_inputs.tolist() == [1024] * 4 and p.warmup_concurrency is None and p.ignore_eos
    assert p.report["streaming"] is False  # throughput streams only with --streaming
    # the engine it launches, as trtllm-serve flags: TP 2 on 2 GPUs, its batch and token limits, KV fraction .90
    s = parse_serve(serve_words(p))
    assert s.deployment == {"tp": 2, "pp": 1, "num_gpus": 2}
    assert s.engine_options == {"max_num_seqs": 128, "token_budget": 4096, "memory_fraction": 0.9}


def test_trtllm_chunked_context_flags():
    from inferbound.bench import deployment_of
    from inferbound.bench.trtllm import runtime_for
    base = f"trtllm-bench -m {LLAMA} throughput --num-requests 20 --input-mean 512 --output-mean 8"
    chunked = {}
    for flag in ("", " --disable_chunked_context", " --enable_chunked_context"):
        p = parse_load(base + flag)
        chunked[flag] = runtime_for(deployment_of(parse_serve(serve_words(p))), p).chunked_prefill
    # neither flag: trtllm-bench's default, on (data/engines.yaml trtllm_bench.chunked_context)
    assert chunked == {"": True, " --disable_chunked_context": False, " --enable_chunked_context": True}


def test_trtllm_latency_is_one_at_a_time_streaming():
    p = parse_load(TRT_LAT)
    # low_latency.py: --concurrency default 1, max_batch_size 1, streaming on, EOS ignored; --warmup default 2
    assert p.tool == "trtllm-latency" and p.max_concurrency == 1 and p.report["streaming"] and p.ignore_eos
    assert p.inputs.tolist() == [64] * 3 and p.warmup_inputs.size == 2
    assert "--max_batch_size" in serve_words(p) and serve_words(p)[serve_words(p).index("--max_batch_size") + 1] == "1"


def test_trtllm_dataset_refused_in_one_line_saying_what_to_give():
    r = _cli("--", "trtllm-bench", "-m", LLAMA, "throughput", "--dataset", "/tmp/d.txt")
    assert_one_line_error(r, "trtllm-bench throughput", "--dataset", "--input-mean", "--output-mean")
    r = _cli("--", "trtllm-bench", "-m", LLAMA, "throughput", "--num-requests", "10", "--input-mean", "100",
             "--input-stdev", "10", "--output-mean", "10")
    assert_one_line_error(r, "--input-stdev 10", "allowed: 0")
    r = _cli("--", "trtllm-bench", "-m", LLAMA, "--num-requests", "10", "--input-mean", "100", "--output-mean", "10")
    assert_one_line_error(r, "trtllm-bench", "throughput, latency")


def test_trtllm_percentile_stats_index_rule():
    # PercentileStats.from_iterable: sorted[int(n q)]; n = 10: p50 -> index 5, p90/p95/p99 -> index 9
    got = percentiles([7, 1, 3, 2, 10, 5, 4, 9, 8, 6])
    assert got == {"p50": 6.0, "p90": 10.0, "p95": 10.0, "p99": 10.0, "minimum": 1.0, "maximum": 10.0,
                   "average": 5.5}


def test_trtllm_latency_report_in_its_schema_and_by_hand():
    r = run_bench(None, TRT_LAT)
    res = r.result
    # get_statistics_dict's sections (dataclasses/reporting.py); streaming_metrics because latency streams
    assert set(res) == {"engine", "machine", "world_info", "request_info", "performance", "streaming_metrics",
                        "dataset"}
    assert set(res["performance"]) == {"total_latency_ms", "avg_request_latency_ms", "request_throughput_req_s",
                                       "system_output_throughput_tok_s", "system_total_throughput_tok_s",
                                       "output_throughput_per_user_tok_s", "output_throughput_per_gpu_tok_s",
                                       "request_latency_percentiles_ms"}
    assert set(res["streaming_metrics"]) == {"token_output_speed_tok_s", "avg_ttft_ms", "avg_tpot_ms",
                                             "tpot_percentiles", "ttft_percentiles", "gen_tps_percentiles"}
    assert set(res["world_info"]) == {"tp_size", "pp_size", "ep_size", "world_size", "max_batch_size",
                                      "max_num_tokens", "scheduling_policy", "kv_cache_percentage", "issue_rate"}
    assert set(res["performance"]["request_latency_percentiles_ms"]) == {"p50", "p90", "p95", "p99", "minimum",
                                                                          "maximum", "average"}
    # one request at a time, identical lengths: each takes the same latency l, sent when the last finishes, so
    # the run lasts 3 l, 1/l req/s, 8/l output tok/s, 1 request in flight on average
    lat = res["performance"]["avg_request_latency_ms"]
    perf = res["performance"]
    assert perf["total_latency_ms"] == pytest.approx(3 * lat, rel=1e-9)
    assert perf["request_throughput_req_s"] == pytest.approx(1e3 / lat, rel=1e-9)
    assert perf["system_output_throughput_tok_s"] == pytest.approx(8e3 / lat, rel=1e-9)
    assert perf["system_total_throughput_tok_s"] == pytest.approx((64 + 8) * 1e3 / lat, rel=1e-9)
    assert perf["output_throughput_per_user_tok_s"] == pytest.approx(8e3 / lat, rel=1e-9)
    assert res["request_info"]["avg_num_concurrent_requests"] == pytest.approx(1.0, rel=1e-9)
    # issue rate as the source computes it: ((last start - first start) ns / n) x 1e9, starts 0, l, 2 l
    assert res["world_info"]["issue_rate"] == pytest.approx(2 * lat * 1e6 / 3 * 1e9, rel=1e-9)
    assert res["world_info"]["max_batch_size"] == 1 and res["world_info"]["kv_cache_percentage"] == 0.9
    s = res["streaming_metrics"]
    # TPOT = (latency - TTFT)/(N - 1), GTPS its inverse per token: 7 tokens after the first
    assert s["avg_tpot_ms"] == pytest.approx((lat - s["avg_ttft_ms"]) / 7, rel=1e-9)
    assert s["token_output_speed_tok_s"] == pytest.approx(7e3 / (lat - s["avg_ttft_ms"]), rel=1e-9)
    assert res["dataset"]["avg_isl"] == 64 and res["dataset"]["max_sequence_length"] == 72
    assert "= PERFORMANCE OVERVIEW" in r.text and "[TPOT] P99    :" in r.text and "[Latency] AVERAGE:" in r.text


def test_trtllm_with_a_serve_command_warns_it_is_not_used():
    r = run_bench(f"vllm serve {LLAMA}", TRT_LAT)
    assert any("launches its own engine" in w for w in r.warnings)


# ---- guidellm benchmark ---------------------------------------------------------------------------------

def test_guidellm_profiles_as_its_strategies_schedule():
    c = parse_load("guidellm benchmark --target http://localhost:8000 --profile concurrent --rate 16 "
                   "--max-requests 160 --data prompt_tokens=512,output_tokens=256 --warmup 0.1")
    # concurrent: 16 streams, all released at once; warm-up 0.1 of 160 requests = 16 (TransientPhaseConfig)
    assert c.max_concurrency == 16 and np.all(c.send_s == 0) and c.report == {"warmup": 16, "cooldown": 0}
    assert set(c.inputs) == {512} and set(c.outputs) == {256} and c.ignore_eos  # max_tokens with ignore_eos
    k = parse_load("guidellm benchmark run --rate-type constant --rate 4 --max-requests 10 "
                   "--data prompt_tokens=10,output_tokens=5 --cooldown 2")
    # constant: request k at k/rate, k = 1..10; at most Settings.max_concurrency = 512 in flight
    assert k.send_s.tolist() == pytest.approx([k_ / 4 for k_ in range(1, 11)]) and k.max_concurrency == 512
    assert k.report == {"warmup": 0, "cooldown": 2}
    p = parse_load(["guidellm", "benchmark", "--profile", "poisson", "--rate", "5", "--max-requests", "4",
                    "--data", '{"prompt_tokens": 100, "output_tokens": 20}'])
    rng = random.Random(42)  # --random-seed default 42; expovariate(rate) gaps accumulated from the start
    t, want = 0.0, []
    for _ in range(4):
        t += rng.expovariate(5)
        want.append(t)
    assert p.send_s.tolist() == pytest.approx(want)
    s = parse_load("guidellm benchmark --profile synchronous --max-requests 3 --data prompt_tokens=8,output_tokens=4")
    assert s.max_concurrency == 1


@pytest.mark.parametrize("load, words", [
    ("guidellm benchmark --max-requests 10 --data prompt_tokens=8,output_tokens=4", ("--profile 'sweep'",)),
    ("guidellm benchmark --profile concurrent --rate 1,2 --max-requests 10 --data prompt_tokens=8,output_tokens=4",
     ("--rate 1,2", "one rate")),
    ("guidellm benchmark --profile synchronous --data prompt_tokens=8,output_tokens=4", ("--max-requests",)),
    ("guidellm benchmark --profile synchronous --max-requests 4 --data openai/gsm8k", ("--data 'openai/gsm8k'",)),
    ("guidellm benchmark --profile synchronous --max-requests 4 --data prompt_tokens=8,output_tokens=4,"
     "prompt_tokens_stdev=2", ("prompt_tokens_stdev=2",)),
])
def test_guidellm_refusals_name_the_flag(load, words):
    r = _cli("--serve", f"vllm serve {LLAMA}", "--", *load.split())
    assert_one_line_error(r, "guidellm benchmark", *words)


def test_guidellm_distribution_summary_by_hand():
    # values 1, 2, 2, 3: pdf {1: .25, 2: .5, 3: .25}, cdf .25, .75, 1; a percentile is the first value whose
    # cdf >= q (searchsorted left): p25 -> 1, p50 -> 2, p99 -> 3; mean 2, variance (1 + 0 + 0 + 1)/4 = .5
    d = summary([2, 1, 3, 2])
    assert (d["mean"], d["median"], d["mode"], d["variance"], d["min"], d["max"], d["count"], d["total_sum"]) == \
        (2.0, 2.0, 2.0, 0.5, 1.0, 3.0, 4, 8.0)
    assert d["std_dev"] == pytest.approx(0.5 ** 0.5)
    assert (d["percentiles"]["p001"], d["percentiles"]["p25"], d["percentiles"]["p75"], d["percentiles"]["p99"]) == \
        (1.0, 1.0, 2.0, 3.0)
    assert summary([])["count"] == 0 and summary([])["mean"] == 0.0  # guidellm's empty summary: zeros


def test_guidellm_report_in_its_schema_and_by_hand():
    r = run_bench(f"vllm serve {LLAMA}", "guidellm benchmark --profile synchronous --max-requests 4 "
                                          "--data prompt_tokens=64,output_tokens=9 --warmup 1")
    b = r.result["benchmarks"][0]
    m = b["metrics"]
    # GenerativeMetrics fields replayed (benchmark/schemas/generative/metrics.py), each a StatusDistributionSummary
    assert set(m) == {"request_totals", "requests_per_second", "request_concurrency", "request_latency",
                      "prompt_token_count", "output_token_count", "total_token_count", "time_to_first_token_ms",
                      "time_per_output_token_ms", "inter_token_latency_ms", "prompt_tokens_per_second",
                      "output_tokens_per_second", "tokens_per_second"}
    assert all(set(m[k]) == {"successful", "errored", "incomplete", "total"} for k in m)
    keys = {"mean", "median", "mode", "variance", "std_dev", "min", "max", "count", "total_sum", "percentiles", "pdf"}
    assert all(set(m[k]["successful"]) == keys for k in m if k != "request_totals")
    assert set(m["time_to_first_token_ms"]["successful"]["percentiles"]) == {
        "p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999"}
    # 4 sent, the first is the warm-up: 3 measured, one at a time, identical: latency l each, window 3 l
    assert m["request_totals"]["successful"] == 3 and b["config"]["strategy"] == {"type_": "synchronous"}
    lat = m["request_latency"]["successful"]["mean"]
    ttft, itl = m["time_to_first_token_ms"]["successful"]["mean"], m["inter_token_latency_ms"]["successful"]["mean"]
    # TPOT (guidellm) = (last - start)/N includes TTFT; ITL = (last - first)/(N - 1): TPOT = (TTFT + 8 ITL)/9
    assert m["time_per_output_token_ms"]["successful"]["mean"] == pytest.approx((ttft + 8 * itl) / 9, rel=1e-9)
    assert lat * 1e3 == pytest.approx(ttft + 8 * itl, rel=1e-9)
    assert m["requests_per_second"]["total"]["mean"] == pytest.approx(1 / lat, rel=1e-9)
    assert m["output_tokens_per_second"]["total"]["mean"] == pytest.approx(9 / lat, rel=1e-9)
    assert m["request_concurrency"]["total"]["mean"] == pytest.approx(1.0, rel=1e-9)
    assert "Request Latency Statistics (Completed Requests)" in r.text and "synchronous" in r.text


# ---- POST /api/bench ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    from inferbound.web.app import create_app
    return TestClient(create_app())


@pytest.mark.parametrize("serve, load", [
    (None, TRT_LAT),
    (f"vllm serve {LLAMA} --max-num-seqs 8",
     "guidellm benchmark --profile concurrent --rate 2 --max-requests 4 --data prompt_tokens=32,output_tokens=4"),
])
def test_api_bench_equals_the_cli_json(client, serve, load):
    got = client.post("/api/bench", json={"gpu": "h100_sxm", "serve": serve, "load": load})
    assert got.status_code == 200, got.text
    cli = _cli("--gpu", "h100_sxm", *(["--serve", serve] if serve else []), "--json", "--", *load.split())
    assert cli.exit_code == 0, cli.output
    body = got.json()
    assert body["result"] == json.loads(cli.stdout)
    assert body["tool"] in ("trtllm-latency", "guidellm") and body["text"] and body["notes"]


@pytest.mark.parametrize("body, field, word", [
    ({"serve": f"vllm serve {LLAMA}", "load": "vllm bench serve --num-prompts abc"}, "load", "--num-prompts"),
    ({"serve": f"vllm serve {LLAMA} --max-num-seqs x", "load": "vllm bench serve --num-prompts 4"}, "serve",
     "--max-num-seqs"),
    ({"serve": f"vllm serve {LLAMA}", "load": "guidellm benchmark --profile sweep --max-requests 4 "
                                              "--data prompt_tokens=8,output_tokens=4"}, "load", "--profile"),
    ({"serve": None, "load": "vllm bench serve --num-prompts 4"}, "load", "serve_command"),
    ({"serve": f"vllm serve {LLAMA}"}, "load", ""),
    ({"gpu": "not a gpu", "load": TRT_LAT}, "gpu", "gpu"),
])
def test_api_bench_422_names_the_field(client, body, field, word):
    got = client.post("/api/bench", json=body)
    assert got.status_code == 422, got.text
    detail = got.json()["detail"]
    assert detail[0]["loc"] == ["body", field] and word in detail[0]["msg"], detail


def test_api_bench_caps_the_replayed_requests(client):
    got = client.post("/api/bench", json={"serve": f"vllm serve {LLAMA}", "load": "vllm bench serve --num-prompts "
                                                                                  "100000"})
    assert got.status_code == 422 and got.json()["detail"][0]["loc"] == ["body", "load"]


# ---- validation rows with their benchmark's command line ------------------------------------------------

ROW = dict(case="b1", source="test", model=LLAMA, gpu="h100_sxm", num_gpus="1", tp="1", framework="vllm",
           scenario="serving", input_len="256", output_len="32", metric="ttft_ms", value="50")
CMD = ("vllm bench serve --random-input-len 256 --random-output-len 32 --num-prompts 24 --max-concurrency 8 "
       "--request-rate 20 --num-warmups 4")


def test_validation_row_with_a_bench_command_is_replayed():
    row = parse_row(dict(ROW, bench_command=CMD), 2)  # no request_rate/concurrency column: the command has them
    assert row.bench_command == CMD
    dep = deployment_for(row)
    fe = _front_end_ms(dep)
    rows = [parse_row(dict(ROW, bench_command=CMD, metric=m), 2) for m in ("ttft_ms", "tpot_ms", "e2e_ms_p99")]
    got = {p.row.metric: p.predicted for p in predict_rows(rows)}
    # the same protocol through `inferbound bench` (the same engine profile: vllm's default), plus the front end
    r = run_bench(f"vllm serve {LLAMA}", CMD)
    assert got["ttft_ms"] == pytest.approx(r.result["mean_ttft_ms"] + fe, rel=1e-9)
    assert got["tpot_ms"] == pytest.approx(r.result["mean_tpot_ms"], rel=1e-9)
    e2e = (r.outcome.finish_s - r.outcome.send_s) * 1e3 + fe
    assert got["e2e_ms_p99"] == pytest.approx(float(np.percentile(e2e, 99)), rel=1e-9)


def test_validation_rows_without_the_column_are_predicted_as_before():
    row = parse_row(dict(ROW, concurrency="8", num_requests="24"), 2)
    assert row.bench_command is None
    want = _closed_loop(deployment_for(row), row, row_lengths(row))["ttft_ms"]
    assert predict_rows([row])[0].predicted == pytest.approx(want, rel=1e-12)
    # a different command is a different run (setup_key), and one whose lengths disagree with the columns says so
    assert parse_row(dict(ROW, bench_command=CMD), 2).setup_key != row.setup_key
    bad = parse_row(dict(ROW, input_len="500", bench_command=CMD), 3)
    p = predict_rows([bad])[0]
    assert p.predicted is None and "input_len=500" in p.reason and "256" in p.reason
    assert "allowed: serving rows" in parse_row(dict(ROW, scenario="static_batch", batch_size="1",
                                                     bench_command=CMD), 4).reason


def test_api_bench_past_the_work_budget_is_422_at_load():
    from inferbound.web.app import create_app
    slow = TestClient(create_app(work_seconds=0.0))
    got = slow.post("/api/bench", json={"serve": f"vllm serve {LLAMA}", "load": "vllm bench serve --num-prompts 50"})
    assert got.status_code == 422 and got.json()["detail"][0]["loc"] == ["body", "load"]
    assert "replay stopped" in got.json()["detail"][0]["msg"]


def test_guidellm_phase_must_be_a_finite_number():
    r = _cli("--serve", f"vllm serve {LLAMA}", "--", "guidellm", "benchmark", "--profile", "synchronous",
             "--max-requests", "3", "--data", "prompt_tokens=8,output_tokens=4", "--warmup", "inf")
    assert_one_line_error(r, "--warmup 'inf'", "finite number")


def test_page_panel_pastes_commands_and_shows_the_result():
    """The page's "Paste your commands" panel (web/static/bench.js): the result table is /api/bench's result,
    a bad load command shows the 422 naming `load`; no console error, nothing from another origin."""
    import socket
    import threading
    import time
    from pathlib import Path

    if not Path("/usr/bin/chromium").exists():
        pytest.skip("/usr/bin/chromium not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    uvicorn = pytest.importorskip("uvicorn")
    from inferbound.web import create_app
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_api.sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless=new", "--no-sandbox"])
            pg = b.new_page()
            problems = []
            pg.on("pageerror", lambda e: problems.append(str(e)))
            pg.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:")) else problems.append(r.url))
            pg.goto(base + "/")
            pg.fill("#bench-serve", "")
            pg.fill("#bench-load", TRT_LAT)
            pg.click("#bench-run")
            sync_api.expect(pg.locator("#bench-status")).to_have_text("trtllm-latency", timeout=30_000)
            cells = pg.locator("#bench-table tbody tr td:first-child").all_text_contents()
            assert "performance.request_throughput_req_s" in cells and "world_info.max_batch_size" in cells
            assert "PERFORMANCE OVERVIEW" in pg.locator("#bench-text").text_content()
            pg.fill("#bench-serve", f"vllm serve {LLAMA}")
            pg.fill("#bench-load", "vllm bench serve --num-prompts abc")
            pg.click("#bench-run")
            sync_api.expect(pg.locator("#bench-errors")).to_contain_text("load: vllm bench serve", timeout=30_000)
            assert pg.locator("#bench-table").is_hidden()
            b.close()
        assert not problems, problems
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.parametrize("load", [
    "vllm bench serve --num-prompts 999999 --num-warmups 2",
    "genai-perf profile -m x --output-tokens-mean 8 --concurrency 600000",
    f"trtllm-bench -m {LLAMA} latency --num-requests 1000001 --input-mean 8 --output-mean 8",
    "guidellm benchmark --profile synchronous --max-requests 1000001 --data prompt_tokens=8,output_tokens=8",
])
def test_request_counts_past_the_replay_limit_are_refused(load):
    # data/bench.yaml max_requests = 1,000,000 measured + warm-up requests (genai-perf: 2 per client by default)
    with pytest.raises(ValueError, match="at most 1,000,000"):
        parse_load(load)
