"""The stream interval (SGLang --stream-interval k): engines.yaml per version, the runtime option, the analytic
serving figures (workloads/streaming.py), the simulator's summary, the serve-command flag and the bench replay.
Expected values are hand computations written out here."""
from __future__ import annotations

import math

import pytest

from inferbound import make_deployment
from inferbound.bench.serve import parse_serve
from inferbound.deploy.engines import get_engine
from inferbound.sim import simulate
from inferbound.workloads import streaming
from inferbound.workloads.serving import serving


def _dep(engine="sglang@0.5.9", **opts):
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine=engine, calibration="none",
                           engine_options=opts)


# -- engines.yaml, per version ---------------------------------------------------------------------------------
def test_the_first_chunk_rule_changed_between_sglang_0_4_7_and_0_4_10():
    # 0.4.2.post4-0.4.7: len(output_ids) % k == 0; 0.4.10.post2 on: % k == 1 (the first token at once)
    assert get_engine("sglang", "0.4.3").stream_interval.first == "at_multiple"
    for v in ("0.4.10", "0.5.3", "0.5.7", "0.5.9", "0.5.23"):
        si = get_engine("sglang", v).stream_interval
        assert (si.value, si.first, si.flag) == (1, "at_once", "--stream-interval")


def test_default_is_one_token_per_chunk_and_the_option_sets_k():
    assert _dep().runtime.stream_interval == 1
    rt = _dep(stream_interval=10).runtime
    assert (rt.stream_interval, rt.stream_first) == (10, "at_once")
    assert "stream interval 10" in rt.describe()
    assert any("stream interval 10 (--stream-interval 10)" in n for n in rt.notes)


@pytest.mark.parametrize("bad", [0, 2.5, True])
def test_bad_intervals_are_refused_naming_the_field(bad):
    with pytest.raises(ValueError, match="stream_interval="):
        _dep(stream_interval=bad)


def test_an_engine_without_the_setting_refuses_k_above_one():
    with pytest.raises(ValueError, match="stream_interval=4: engine='vllm@0.33.0'.*allowed: stream_interval=1"):
        _dep(engine="vllm@0.33.0", stream_interval=4)
    assert _dep(engine="vllm@0.33.0", stream_interval=1).runtime.stream_interval == 1


# -- the formulas ----------------------------------------------------------------------------------------------
def test_chunk_counts_by_hand():
    # at_once, O = 1024, k = 10: chunks at tokens 1, 11, ..., 1021 and the finish (1024): (1023 / 10 -> 103 gaps)
    assert streaming.gaps(1024, 10, "at_once") == 103
    assert streaming.delay_steps(1024, 10, "at_once") == 0
    # at_multiple: chunks at 10, 20, ..., 1020 and 1024: 103 chunks, 102 gaps; the first waits 9 steps
    assert streaming.gaps(1024, 10, "at_multiple") == 102
    assert streaming.delay_steps(1024, 10, "at_multiple") == 9
    # O = 21, k = 10, at_once: tokens 1, 11, 21: 2 gaps; at_multiple: 10, 20, 21: 2 gaps after a 9-step wait
    assert streaming.gaps(21, 10, "at_once") == 2 and streaming.gaps(21, 10, "at_multiple") == 2
    # shorter than k: at_multiple sends one chunk at the finish (no gap), waiting O - 1 = 4 steps
    assert streaming.gaps(5, 10, "at_multiple") == 0 and streaming.delay_steps(5, 10, "at_multiple") == 4
    assert streaming.gaps(1024, 1, "at_multiple") == 1023


def test_pooled_itl_by_hand():
    t = 0.010
    # at_once, O = 1024: 1023 steps over 103 gaps = 99.32 ms
    assert streaming.pooled_itl(t, 10, "at_once", [1024], [1.0]) == pytest.approx(1023 * t / 103)
    # two classes, O = 21 and 101, weights 1/2 each, at_once: (20 + 100) steps over (2 + 10) gaps = 10 t
    assert streaming.pooled_itl(t, 10, "at_once", [21, 101], [0.5, 0.5]) == pytest.approx(120 * t / 12)
    # at_multiple, O = 1024: (1023 - 9) steps over 102 gaps
    assert streaming.pooled_itl(t, 10, "at_multiple", [1024], [1.0]) == pytest.approx(1014 * t / 102)
    assert streaming.pooled_itl(t, 1, "at_once", [1024], [1.0]) == t


def test_serving_reports_the_chunk_gap_and_keeps_ttft_with_the_first_token_at_once():
    base = serving(_dep(), concurrency=4, input_len=1024, output_len=1024)
    s = serving(_dep(stream_interval=10), concurrency=4, input_len=1024, output_len=1024)
    t = base.tpot_s
    assert s.tpot_s == pytest.approx(t)
    assert s.itl_s == pytest.approx(1023 * t / 103)  # 9.932 t
    assert s.ttft_s["mean"] == pytest.approx(base.ttft_s["mean"])
    assert s.e2e_s["mean"] == pytest.approx(base.e2e_s["mean"])


def test_sglang_0_4_3_delays_the_first_chunk_k_minus_1_steps():
    base = serving(_dep("sglang@0.4.3"), concurrency=4, input_len=1024, output_len=1024)
    s = serving(_dep("sglang@0.4.3", stream_interval=10), concurrency=4, input_len=1024, output_len=1024)
    t = base.tpot_s
    assert s.ttft_s["mean"] == pytest.approx(base.ttft_s["mean"] + 9 * t)
    assert s.tpot_s == pytest.approx(t * 1014 / 1023)  # (E2E - TTFT)/(O - 1) with the wait moved into TTFT
    assert s.itl_s == pytest.approx(1014 * t / 102)
    assert any("first chunk leaves at token 10" in n for n in s.notes)


def test_chunk_view_of_two_requests_by_hand():
    # request A: first 1.0 s, finish 1.0 + 20 x 0.01 = 1.2 s, O = 21; B: first 2.0, finish 2.5 (O = 51, g = 0.01)
    first, gaps = streaming.chunk_view([1.0, 2.0], [1.2, 2.5], [21, 51], 10, "at_once")
    assert list(first) == [1.0, 2.0]
    # A: 2 gaps of 0.1 s; B: ceil(50 / 10) = 5 gaps of 0.1 s
    assert len(gaps) == 7 and gaps == pytest.approx([0.1] * 7)
    first, gaps = streaming.chunk_view([1.0], [1.2], [21], 10, "at_multiple")
    assert first[0] == pytest.approx(1.0 + 9 * 0.01)  # token 10
    assert len(gaps) == 2 and sum(gaps) == pytest.approx(0.2 - 0.09)  # tokens 10 -> 20 -> 21


def test_the_simulator_reports_chunk_gaps():
    base = simulate(_dep(), concurrency=2, requests=8, input_len=256, output_len=101).summary
    s = simulate(_dep(stream_interval=10), concurrency=2, requests=8, input_len=256, output_len=101).summary
    # O = 101, at_once: 100 decode gaps in 10 chunks of 10: the mean chunk gap is 10 mean token gaps
    assert s["itl_ms_mean"] == pytest.approx(base["tpot_ms_mean"] * 100 / math.ceil(100 / 10), rel=1e-9)
    assert s["ttft_ms_mean"] == pytest.approx(base["ttft_ms_mean"])
    assert any("stream interval 10" in n for n in s["notes"])


# -- serve commands and the bench replay ------------------------------------------------------------------------
def test_sglang_launch_reads_stream_interval():
    spec = parse_serve("python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --stream-interval 10")
    assert spec.engine_options["stream_interval"] == 10


def test_bench_itl_per_chunk_for_openai_backends_and_per_token_for_native():
    from inferbound.bench import run_bench
    serve = "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --stream-interval 10"
    load = ("python3 -m sglang.bench_serving --backend {b} --dataset-name random --num-prompts 8 --random-input 256 "
            "--random-output 101 --random-range-ratio 1 --max-concurrency 2")
    oai = run_bench(serve, load.format(b="vllm"), gpu="h100_sxm").result
    native = run_bench(serve, load.format(b="sglang"), gpu="h100_sxm").result
    # vllm backend: one gap per chunk, 10 chunks of 10 tokens after the first; native: the chunk's gap split
    assert oai["mean_itl_ms"] == pytest.approx(native["mean_tpot_ms"] * 100 / 10, rel=1e-6)
    assert native["mean_itl_ms"] == pytest.approx(native["mean_tpot_ms"], rel=1e-6)


# -- TensorRT-LLM (stream_interval in the options YAML) ----------------------------------------------------------
def test_trtllm_profile_streams_the_first_token_then_every_kth_iteration():
    # py_executor._handle_responses: py_decoding_iter == 1 or is_finished or py_decoding_iter % k == 0
    si = get_engine("trtllm", "1.2").stream_interval
    assert (si.value, si.first) == (1, "at_once_then_multiple")
    rt = _dep("trtllm@1.2", stream_interval=10).runtime
    assert (rt.stream_interval, rt.stream_first) == (10, "at_once_then_multiple")
    assert any("then at tokens 10, 20" in n for n in rt.notes)


def test_trtllm_chunk_counts_by_hand():
    # O = 1024, k = 10: chunks at tokens 1, 10, 20, ..., 1020 (102 multiples) and the finish 1024: 104 chunks
    assert streaming.gaps(1024, 10, "at_once_then_multiple") == 103
    assert streaming.delay_steps(1024, 10, "at_once_then_multiple") == 0
    # O = 20: chunks 1, 10, 20 -> 2 gaps; O = 5 (shorter than k): 1 and the finish -> 1 gap; O = 1: none
    assert streaming.gaps(20, 10, "at_once_then_multiple") == 2
    assert streaming.gaps(5, 10, "at_once_then_multiple") == 1
    assert streaming.gaps(1, 10, "at_once_then_multiple") == 0
    # O = 922 (InferenceX 1k/1k mean): 92 multiples of 10 up to 920, then 922: 93 gaps over 921 steps
    assert streaming.pooled_itl(0.010, 10, "at_once_then_multiple", [922], [1.0]) == pytest.approx(921 * 0.010 / 93)


def test_trtllm_serving_itl_is_the_chunk_gap_and_ttft_is_unchanged():
    base = serving(_dep("trtllm@1.2"), concurrency=4, input_len=1024, output_len=1024)
    s = serving(_dep("trtllm@1.2", stream_interval=10), concurrency=4, input_len=1024, output_len=1024)
    t = base.tpot_s
    assert s.itl_s == pytest.approx(1023 * t / 103)
    assert s.tpot_s == pytest.approx(t)
    assert s.ttft_s["mean"] == pytest.approx(base.ttft_s["mean"])


def test_trtllm_options_yaml_is_read_when_the_file_is_here(tmp_path):
    cfg = tmp_path / "dsr1.yml"
    cfg.write_text("stream_interval: 10\nenable_attention_dp: true\nmax_batch_size: 64\n"
                   "kv_cache_config:\n  dtype: fp8\n  free_gpu_memory_fraction: 0.8\n  enable_block_reuse: false\n"
                   "moe_config:\n  backend: TRTLLM\n")
    spec = parse_serve(f"trtllm-serve deepseek-ai/DeepSeek-R1-0528 --tp_size 8 --max_batch_size 256 "
                       f"--extra_llm_api_options {cfg}")
    # the YAML is applied after the command line: its max_batch_size 64 replaces 256
    assert spec.engine_options == {"stream_interval": 10, "max_num_seqs": 64, "memory_fraction": 0.8,
                                   "prefix_caching": False}
    # attention DP over the 8 tp_size ranks: attention TP 1, DP 8, experts over the 8 GPUs
    assert spec.deployment == {"tp": 1, "pp": 1, "num_gpus": 8, "dp": 8, "attention_dp": True, "ep": 8,
                               "kv_dtype": "fp8"}
    assert any("not modelled: moe_config" in w for w in spec.warnings)


def test_trtllm_options_yaml_missing_or_bad(tmp_path):
    spec = parse_serve("trtllm-serve meta-llama/Llama-3.1-8B --config /nonexistent/x.yml")
    assert any("is not on this machine" in w for w in spec.warnings)
    bad = tmp_path / "bad.yml"
    bad.write_text("stream_interval: 0\n")
    with pytest.raises(ValueError, match="stream_interval=0; allowed: an integer >= 1"):
        parse_serve(f"trtllm-serve meta-llama/Llama-3.1-8B --config {bad}")
    bad.write_text("- a\n- b\n")
    with pytest.raises(ValueError, match="allowed: a mapping"):
        parse_serve(f"trtllm-serve meta-llama/Llama-3.1-8B --config {bad}")


def test_sglang_continuous_decode_steps_is_read_and_said_to_change_nothing():
    # SGLang 0.5.9 / 0.5.12 wheels: num_continuous_decode_steps appears in server_args.py only
    spec = parse_serve("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1-0528 --tp 8 "
                       "--num-continuous-decode-steps 4")
    assert any("--num-continuous-decode-steps 4 is declared but read by no scheduler code" in w
               for w in spec.warnings)
    assert not any("do not read" in w and "continuous" in w for w in spec.warnings)
    assert "scheduler_steps" not in spec.engine_options
