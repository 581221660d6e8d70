"""inferbound bench: serve and load-tool command lines read with each tool's flags, the protocol replayed in the
simulator, the result in the tool's own schema (bench/, data/bench.yaml, docs/bench.md).

Expected values are worked out by hand from the command lines and each tool's source rules (cited in
data/bench.yaml); small --num-prompts keep the replays fast.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound.bench import run_bench
from inferbound.bench.load import EOS_NOTE, parse_load
from inferbound.bench.replay import Gate
from inferbound.bench.serve import parse_serve
from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.sim import simulate
from inferbound.workloads.requests import Request

LLAMA = "meta-llama/Llama-3.1-8B"
VLLM_SERVE = f"vllm serve {LLAMA} --max-num-seqs 256"


# ---- serve commands ------------------------------------------------------------------------------------

def test_vllm_serve_flags():
    s = parse_serve(f"vllm serve {LLAMA} -tp 2 --max-num-seqs 128 --max-num-batched-tokens 4096 "
                    "--gpu-memory-utilization 0.85 --kv-cache-dtype fp8 --no-enable-prefix-caching --block-size 32 "
                    "--max_model_len 8k --quantization fp8 --port 8001")
    assert (s.engine, s.model) == ("vllm", LLAMA)
    # GPUs = TP x PP x DP = 2 x 1 x 1; fp8 quantization is W8A8 (bench.yaml)
    assert s.deployment == {"tp": 2, "pp": 1, "dp": 1, "num_gpus": 2, "kv_dtype": "fp8", "weight_dtype": "fp8",
                            "act_dtype": "fp8"}
    assert s.engine_options == {"max_num_seqs": 128, "token_budget": 4096, "memory_fraction": 0.85,
                                "block_size": 32, "prefix_caching": False}
    assert s.max_model_len == 8000  # 8k, FlexibleArgumentParser's --max_model_len spelling read as --max-model-len
    assert s.warnings == ()  # --port is read (no effect), not unknown


def test_sglang_launch_server_with_dp_attention():
    s = parse_serve("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --dp 4 "
                    "--enable-dp-attention --max-running-requests 1024 --chunked-prefill-size 16384 "
                    "--mem-fraction-static 0.8 --kv-cache-dtype fp8_e4m3")
    # tp-size counts all 8 GPUs; 4 attention groups of 8/4 = 2; totals divided by 4: 1024/4 = 256, 16384/4 = 4096
    # no --ep-size: SGLang's experts are tensor-parallel over the 8 GPUs, modelled as EP 8 (a warning says so)
    assert s.deployment == {"tp": 2, "dp": 4, "attention_dp": True, "pp": 1, "num_gpus": 8, "ep": 8,
                            "kv_dtype": "fp8"}
    assert s.engine_options == {"memory_fraction": 0.8, "max_num_seqs": 256, "token_budget": 4096}
    assert len(s.warnings) == 1 and "modelled as expert-parallel over them (EP 8)" in s.warnings[0]
    off = parse_serve(f"python3 -m sglang.launch_server --model-path {LLAMA} --chunked-prefill-size -1")
    assert off.engine_options == {"chunked_prefill": False} and off.deployment["num_gpus"] == 1


def test_trtllm_serve_flags():
    s = parse_serve(f"trtllm-serve {LLAMA} --tp_size 4 --max_batch_size 256 --max_num_tokens 8192 "
                    "--kv_cache_free_gpu_memory_fraction 0.9")
    assert s.engine == "trtllm" and s.deployment == {"tp": 4, "pp": 1, "num_gpus": 4}
    assert s.engine_options == {"max_num_seqs": 256, "token_budget": 8192, "memory_fraction": 0.9}


def test_serve_unknown_flag_is_one_warning_and_bad_value_one_error():
    s = parse_serve(f"vllm serve {LLAMA} --foo 3 --enable-bar")
    assert s.warnings == ("vllm serve: flags inferbound does not read (the prediction ignores them): --foo, "
                          "--enable-bar",)
    with pytest.raises(ValueError, match=r"vllm serve: argument --max-num-seqs: invalid value '0'"):
        parse_serve(f"vllm serve {LLAMA} --max-num-seqs 0")
    with pytest.raises(ValueError, match="serve command 'tgi launch' unknown"):
        parse_serve("tgi launch")


# ---- load tools: flags, lengths with each tool's range-ratio semantics, send times ----------------------

def test_vllm_bench_serve_flags_and_symmetric_range_ratio():
    p = parse_load("vllm bench serve --model M --dataset-name random --random-input-len 1000 --random-output-len 200 "
                   "--random-range-ratio 0.5 --num-prompts 2000 --max-concurrency 8 --request-rate 4 "
                   "--burstiness 2 --num-warmups 3 --seed 7")
    # vllm bench serve: [floor(L(1-r)), ceil(L(1+r))] = [500, 1500] and [100, 300]
    assert p.inputs.min() >= 500 and p.inputs.max() <= 1500 and p.outputs.min() >= 100 and p.outputs.max() <= 300
    assert p.inputs.min() < 510 and p.inputs.max() > 1490  # 2000 uniform draws reach both ends of the interval
    assert p.max_concurrency == 8 and p.request_rate == 4.0
    # gaps rescaled so the last request is sent at num_prompts/rate = 2000/4 = 500 s
    assert p.send_s[-1] == pytest.approx(500.0) and p.send_s[0] > 0 and np.all(np.diff(p.send_s) >= 0)
    # 3 warm-ups, each the first request, at most --max-concurrency at once
    assert list(p.warmup_inputs) == [p.inputs[0]] * 3 and p.warmup_concurrency == 8
    # the random dataset on the openai backend ignores EOS even without --ignore-eos (main_async)
    assert p.ignore_eos and EOS_NOTE not in p.notes


def test_vllm_burstiness_inf_is_a_constant_schedule_and_goodput_counts_slo_met():
    p = parse_load("vllm bench serve --num-prompts 4 --request-rate 2 --burstiness inf")
    assert list(p.send_s) == pytest.approx([0.5, 1.0, 1.5, 2.0])  # k/rate: get_request's constant delay 1/rate
    load = "vllm bench serve --random-input-len 128 --random-output-len 16 --num-prompts 8 --max-concurrency 4"
    every = run_bench(VLLM_SERVE, load + " --goodput ttft:1e9 e2el:1e9").result
    none = run_bench(VLLM_SERVE, load + " --goodput ttft:0").result
    assert every["request_goodput"] == pytest.approx(every["request_throughput"]) and none["request_goodput"] == 0
    with pytest.raises(ValueError, match="--goodput 'itl:5'"):
        parse_load("vllm bench serve --goodput itl:5")


def test_older_benchmark_serving_lower_fraction_range_ratio():
    p = parse_load("python benchmarks/benchmark_serving.py --dataset-name random --random-input-len 1000 "
                   "--random-output-len 200 --random-range-ratio 0.5 --num-prompts 2000")
    # benchmark_dataset.py (v0.8): [int(L r), L] = [500, 1000] and [100, 200]
    assert p.inputs.min() >= 500 and p.inputs.max() <= 1000 and p.outputs.min() >= 100 and p.outputs.max() <= 200
    assert p.inputs.min() < 510 and p.inputs.max() > 990
    d = parse_load("python benchmarks/benchmark_serving.py --dataset-name random --num-prompts 4")
    # that version's default ratio 1.0: [int(1024*1), 1024] = 1024 and [128, 128] = 128; rate inf: all at 0
    assert list(d.inputs) == [1024] * 4 and list(d.outputs) == [128] * 4 and list(d.send_s) == [0.0] * 4
    assert not d.ignore_eos and EOS_NOTE in d.notes  # no --ignore-eos: output taken as the requested maximum
    assert d.warmup_inputs.size == 1  # the initial single prompt test run


def test_sglang_bench_serving_range_ratio_and_warmup():
    p = parse_load("python -m sglang.bench_serving --backend sglang --dataset-name random --random-input-len 1000 "
                   "--random-output-len 200 --random-range-ratio 0.5 --num-prompts 2000 --request-rate 8")
    # sample_random_requests: [max(int(L r), 1), L] = [500, 1000], [int(O r), O] = [100, 200]
    assert p.inputs.min() >= 500 and p.inputs.max() <= 1000 and p.outputs.min() >= 100 and p.outputs.max() <= 200
    # get_request: the first request at 0, then exponential gaps; one more gap after the last
    assert p.send_s[0] == 0.0 and p.sender_done_s > p.send_s[-1]
    # --warmup-requests default 1: the first prompt with output min(len, 32), all at once
    assert list(p.warmup_outputs) == [min(int(p.outputs[0]), 32)] and p.warmup_concurrency is None
    assert p.ignore_eos  # ignore_eos = not --disable-ignore-eos
    z = parse_load("python -m sglang.bench_serving --dataset-name random --random-input-len 10 "
                   "--random-output-len 3 --num-prompts 400")
    # default ratio 0.0: inputs [max(0, 1), 10], outputs [0, 3] with 0 counted as 1 (a note says how many)
    assert z.inputs.min() == 1 and z.inputs.max() == 10 and z.outputs.min() == 1 and z.outputs.max() == 3
    assert any("length(s) of 0 tokens counted as 1" in n for n in z.notes)
    off = parse_load("python -m sglang.bench_serving --dataset-name random --num-prompts 2 --disable-ignore-eos")
    assert not off.ignore_eos and EOS_NOTE in off.notes


def test_genai_perf_profile_flags():
    p = parse_load("genai-perf profile -m M --streaming --concurrency 8 --synthetic-input-tokens-mean 300 "
                   "--output-tokens-mean 50 --warmup-request-count 4 --extra-inputs ignore_eos:true")
    # request count default max(10, 2 x concurrency) = 16; stddev 0: every length exact
    assert p.inputs.size == 16 and set(p.inputs) == {300} and set(p.outputs) == {50}
    assert p.max_concurrency == 8 and p.warmup_inputs.size == 4 and p.ignore_eos
    r = parse_load("genai-perf profile -m M --request-rate 5 --request-count 10 --output-tokens-mean 20")
    # constant schedule (perf_analyzer default): request k at k/5 s; no concurrency limit
    assert list(r.send_s) == pytest.approx([0.2 * k for k in range(1, 11)]) and r.max_concurrency is None
    assert not r.ignore_eos and EOS_NOTE in r.notes
    c2 = parse_load("genai-perf profile -m M --concurrency 2 --output-tokens-mean 20")
    assert c2.inputs.size == 10 and set(c2.inputs) == {550}  # max(10, 4); synthetic input mean default 550
    with pytest.raises(ValueError, match="--output-tokens-mean is not set"):
        parse_load("genai-perf profile -m M --concurrency 2")
    with pytest.raises(ValueError, match="not allowed with argument"):
        parse_load("genai-perf profile -m M --concurrency 2 --request-rate 3 --output-tokens-mean 9")


def test_bad_load_values():
    with pytest.raises(ValueError, match=r"--random-range-ratio=1.5; allowed: 0 <= r < 1"):
        parse_load("vllm bench serve --random-range-ratio 1.5")
    with pytest.raises(ValueError, match="--dataset-name 'sharegpt' is not replayed"):
        parse_load("vllm bench serve --dataset-name sharegpt")
    with pytest.raises(ValueError, match="argument --num-prompts: invalid value 'ten'"):
        parse_load("vllm bench serve --num-prompts ten")


# ---- the replay ----------------------------------------------------------------------------------------

class _Ledger:
    def __init__(self, n):
        self.arrival = [0.0] * n

    def __len__(self):
        return len(self.arrival)


def test_gate_sends_each_request_when_a_slot_frees():
    """s_k = max(r_k, c_{k-C+1}): releases 0, 0, 1, 5 s, cap 2, completions at 3 and 4 s."""
    g = Gate([0.0, 0.0, 1.0, 5.0], 2)
    g.start(_Ledger(4))
    assert (g.next_time(), g.pop(), g.next_time(), g.pop()) == (0.0, 0, 0.0, 1)
    assert g.next_time() == math.inf  # both slots taken
    g.finished(0, 3.0)
    assert g.next_time() == 3.0 and g.pop() == 2  # released at 1 s, sent at the completion at 3 s
    g.finished(1, 4.0)
    assert g.next_time() == 5.0  # a slot at 4 s, but request 3 is released only at 5 s
    assert g.pop() == 3 and g.ledger.arrival == [0.0, 0.0, 3.0, 5.0] and g.next_time() == math.inf


def test_closed_loop_replay_equals_the_simulators_closed_loop():
    """Rate inf and --max-concurrency C is the simulator's closed loop of C clients without think time."""
    r = run_bench(VLLM_SERVE, "vllm bench serve --random-input-len 512 --random-output-len 64 --num-prompts 24 "
                              "--max-concurrency 6")
    dep = make_deployment(model=LLAMA, gpu="h100_sxm", engine="vllm", engine_options={"max_num_seqs": 256},
                          tp=1, pp=1, dp=1, num_gpus=1)
    s = simulate(dep, trace=[Request(i, 0.0, 512, 64) for i in range(24)], concurrency=6)
    assert r.result["mean_ttft_ms"] == pytest.approx(s["ttft_ms_mean"], rel=1e-9)
    assert r.result["mean_tpot_ms"] == pytest.approx(s["tpot_ms_mean"], rel=1e-9)


def test_pooled_itl_adds_up_to_each_requests_decode_time():
    """Σ ITL gaps = Σ (latency − TTFT) over requests, and there are Σ (N − 1) gaps."""
    r = run_bench(VLLM_SERVE, "vllm bench serve --random-input-len 300 --random-output-len 40 "
                              "--random-range-ratio 0.5 --num-prompts 30 --max-concurrency 5")
    o = r.outcome
    assert o.itl_s.size == int((o.outputs - 1).sum())
    assert o.itl_s.sum() == pytest.approx(float((o.latency_s - o.ttft_s).sum()), rel=1e-9)
    # vLLM TPOT excludes the first token: mean over requests of (latency − TTFT)/(N − 1)
    assert r.result["mean_tpot_ms"] == pytest.approx(
        1e3 * float(np.mean((o.latency_s - o.ttft_s) / (o.outputs - 1))), rel=1e-12)


def test_warmups_run_first_and_are_excluded():
    base = "vllm bench serve --random-input-len 256 --random-output-len 32 --num-prompts 12 --max-concurrency 4"
    cold, warm = run_bench(VLLM_SERVE, base), run_bench(VLLM_SERVE, base + " --num-warmups 5")
    assert warm.result["completed"] == 12 and warm.outcome.warmups == 5 and warm.outcome.warmup_s > 0
    # the measured run is the same run: no figure includes the warm-ups (separate phase, no carried state)
    for k in ("duration", "mean_ttft_ms", "p99_itl_ms", "total_input_tokens"):
        assert warm.result[k] == cold.result[k], k
    assert any("5 warm-up request(s)" in n for n in warm.notes)


def test_ttft_rises_with_concurrency():
    """Llama-3.1-8B on one H100, 1024/1024: 256 clients queue prefills behind each other (one wave of 256 x 1024
    prompt tokens through an 8192-token budget is 32 steps), 4 clients do not."""
    load = f"vllm bench serve --model {LLAMA} --random-input-len 1024 --random-output-len 1024 --ignore-eos"
    lo = run_bench(VLLM_SERVE, f"{load} --max-concurrency 4 --num-prompts 8")
    hi = run_bench(VLLM_SERVE, f"{load} --max-concurrency 256 --num-prompts 256")
    assert hi.result["mean_ttft_ms"] > 5 * lo.result["mean_ttft_ms"]


def test_max_num_seqs_8_under_64_clients_queues():
    """With 8 running slots and 64 clients of equal lengths the requests run in 8 waves; a request of wave w
    (0..7) waits w waves of E2E first, so the mean TTFT is about (0+1+...+7)/8 = 3.5 E2E of the 8-client run."""
    serve = f"vllm serve {LLAMA} --max-num-seqs 8"
    load = "vllm bench serve --random-input-len 256 --random-output-len 64 --num-prompts 64 " \
           "--percentile-metrics ttft,e2el"
    at8 = run_bench(serve, load + " --max-concurrency 8").result
    at64 = run_bench(serve, load + " --max-concurrency 64").result
    assert at64["mean_ttft_ms"] > 20 * at8["mean_ttft_ms"]
    assert at64["mean_ttft_ms"] == pytest.approx(3.5 * at8["mean_e2el_ms"], rel=0.15)


# ---- output schemas ------------------------------------------------------------------------------------

VLLM_KEYS = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
             "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
             "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
             "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests", "rtfx"]


def test_vllm_result_keys_as_save_result_writes_them():
    r = run_bench(VLLM_SERVE, "vllm bench serve --random-input-len 128 --random-output-len 16 --num-prompts 8 "
                              "--max-concurrency 4")
    per = [f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl") for s in ("mean", "median", "std", "p99")]
    assert list(r.result) == VLLM_KEYS + per  # default --percentile-metrics ttft,tpot,itl: no e2el keys
    e = run_bench(VLLM_SERVE, "vllm bench serve --random-input-len 128 --random-output-len 16 --num-prompts 8 "
                              "--percentile-metrics ttft,e2el --metric-percentiles 50,99.9")
    assert [k for k in e.result if k.endswith("_ms")] == [f"{s}_{m}_ms" for m in ("ttft", "e2el")
                                                          for s in ("mean", "median", "std", "p50", "p99.9")]
    # 8 requests of 128 + 16 tokens: totals are hand sums; throughput = completed / duration
    assert (r.result["total_input_tokens"], r.result["total_output_tokens"]) == (8 * 128, 8 * 16)
    assert r.result["request_throughput"] == pytest.approx(8 / r.result["duration"])
    assert r.result["max_concurrent_requests"] == 4 and r.result["request_rate"] == "inf"
    assert "Serving Benchmark Result" in r.text and "Mean TPOT (ms):" in r.text


def test_sglang_and_genai_perf_result_keys():
    s = run_bench(VLLM_SERVE, "python -m sglang.bench_serving --dataset-name random --random-input-len 128 "
                              "--random-output-len 16 --random-range-ratio 1 --num-prompts 8 --max-concurrency 4")
    assert list(s.result) == [
        "backend", "dataset_name", "request_rate", "max_concurrency", "sharegpt_output_len", "random_input_len",
        "random_output_len", "random_range_ratio", "duration", "completed", "total_input_tokens",
        "total_output_tokens", "total_output_tokens_retokenized", "request_throughput", "input_throughput",
        "output_throughput", "mean_e2e_latency_ms", "median_e2e_latency_ms", "std_e2e_latency_ms",
        "p99_e2e_latency_ms", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
        "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "std_itl_ms", "p95_itl_ms",
        "p99_itl_ms", "concurrency", "accept_length"]
    # concurrency = Σ E2E / duration: 4 clients kept busy, so just under 4
    assert 3.0 < s.result["concurrency"] <= 4.0 + 1e-9
    g = run_bench(VLLM_SERVE, "genai-perf profile -m M --streaming --concurrency 4 --synthetic-input-tokens-mean 128 "
                              "--output-tokens-mean 16")
    assert list(g.result) == ["time_to_first_token", "request_latency", "inter_token_latency",
                              "output_token_throughput_per_user", "output_sequence_length", "input_sequence_length",
                              "output_token_throughput", "request_throughput", "request_count", "input_config"]
    stats = ["unit", "avg", *(f"p{p}" for p in (1, 5, 10, 25, 50, 75, 90, 95, 99)), "min", "max", "std"]
    assert list(g.result["time_to_first_token"]) == stats and g.result["request_count"] == {"unit": "count", "avg": 10}
    itl = g.result["inter_token_latency"]["avg"] / 1e3  # s; per user tok/s is the inverse, per request
    assert g.result["output_token_throughput_per_user"]["min"] == pytest.approx(
        1 / (g.result["inter_token_latency"]["max"] / 1e3), rel=1e-9) and itl > 0
    assert "NVIDIA GenAI-Perf | LLM Metrics" in g.text


# ---- the command line ----------------------------------------------------------------------------------

def _cli(*args):
    return CliRunner().invoke(app, ["bench", *args])


def test_cli_text_json_and_warnings():
    load = ["--", "vllm", "bench", "serve", "--random-input-len", "128", "--random-output-len", "16",
            "--num-prompts", "8", "--max-concurrency", "4"]
    r = _cli("--gpu", "h100_sxm", "--serve", f"vllm serve {LLAMA} --max-num-seqs 64 --foo 1", *load, "--bar")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("============ Serving Benchmark Result ============")
    assert "warning: vllm serve: flags inferbound does not read (the prediction ignores them): --foo" in r.stdout
    assert "warning: vllm bench serve: flags inferbound does not read (the prediction ignores them): --bar" in \
        r.stdout
    j = _cli("--json", "--serve", f"vllm serve {LLAMA}", *load)
    assert j.exit_code == 0, j.output
    assert list(json.loads(j.stdout))[:len(VLLM_KEYS)] == VLLM_KEYS  # stdout is the tool's JSON alone
    assert "note:" in j.stderr


def test_cli_bad_values_are_one_line():
    load = ["--", "vllm", "bench", "serve", "--num-prompts", "4"]
    assert_one_line_error(_cli("--serve", f"vllm serve {LLAMA} --max-num-seqs abc", *load), "--max-num-seqs", "abc")
    assert_one_line_error(_cli("--serve", f"vllm serve {LLAMA}", "--", "vllm", "bench", "serve",
                               "--random-range-ratio", "2"), "random-range-ratio")
    assert_one_line_error(_cli("--serve", f"vllm serve {LLAMA}", "--engine", "sglang", *load), "engine")
    assert_one_line_error(_cli("--serve", f"vllm serve {LLAMA} --max-model-len 100", "--", "vllm", "bench",
                               "serve", "--num-prompts", "2"), "max_model_len=100")
