"""inferbound bench: the load tool's sampling flags priced (bench/load.request_sampling, deploy/sampling.py).

vllm bench serve (vllm/benchmarks/serve.py): sampling flags go into every request's body; without --temperature
the request is greedy (``sampling_params["temperature"] = 0.0  # Default to greedy decoding``), and vLLM resets a
greedy request's top_p to 1 (vllm/sampling_params.py: "Zero temperature means greedy sampling"). Llama-3.1-8B,
vocab 128,256; vLLM's default profile (0.33.0) samples top-p sort-free (12 B per logit), the 0.11.1-0.20 profile
sorts (218 B below 128 rows, 238 B from 128); penalties 85 B (data/features.yaml sampling).
"""
from __future__ import annotations

from inferbound.bench import run_bench
from inferbound.bench.load import parse_load

SERVE = "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 256"
LOAD = ("vllm bench serve --random-input-len 256 --random-output-len 32 --num-prompts 16 --max-concurrency 8 "
        "--ignore-eos")


def test_sampled_requests_become_engine_options():
    assert parse_load(LOAD + " --temperature 0.8 --top-p 0.95 --repetition-penalty 1.1").sampling == \
        {"top_p": 0.95, "repetition_penalty": 1.1}
    assert parse_load(LOAD).sampling == {}


def test_greedy_requests_ignore_top_p_with_a_warning():
    p = parse_load(LOAD + " --top-p 0.9")                     # no --temperature: greedy
    assert p.sampling == {}
    assert any("--top-p 0.9 with greedy decoding" in w for w in p.warnings)
    # penalties apply to greedy requests too
    assert parse_load(LOAD + " --repetition-penalty 1.2").sampling == {"repetition_penalty": 1.2}


def test_the_sort_is_priced_on_the_engine_that_sorts():
    plain = run_bench(SERVE, LOAD, engine="vllm@0.11.1")
    sampled = run_bench(SERVE, LOAD + " --temperature 0.8 --top-p 0.95 --repetition-penalty 1.1", engine="vllm@0.11.1")
    assert plain.deployment.runtime.sampler_bytes == (0.0, 0.0)
    assert sampled.deployment.runtime.sampler_bytes == (218.0 + 85.0, 238.0 + 85.0)
    assert sampled.result["mean_tpot_ms"] > plain.result["mean_tpot_ms"]


def test_the_default_profile_samples_without_the_sort():
    r = run_bench(SERVE, LOAD + " --temperature 0.8 --top-p 0.95")
    assert r.deployment.runtime.sampler_bytes == (12.0, 12.0)
    assert any("PR #40376" in w or "0.21" in w for w in r.warnings + list(r.deployment.runtime.notes))


def test_an_engine_whose_sampler_was_not_read_runs_unpriced_with_a_warning():
    r = run_bench("trtllm-serve meta-llama/Llama-3.1-8B",
                  LOAD.replace("--ignore-eos", "--ignore-eos --backend openai") + " --temperature 0.8 --top-p 0.9")
    assert r.deployment.runtime.sampler_bytes == (0.0, 0.0)
    assert any("sampling (top_p 0.9) is not priced: trtllm's sampler is not read" in w for w in r.warnings)
