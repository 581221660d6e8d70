"""Engine runtime profiles (data/engines.yaml via inferbound.deploy.engines).

Expected values are worked out by hand from the engine rules quoted in the YAML (SGLang server_args
reserve formula, vLLM get_batch_defaults tiers, trtllm-bench finetune_setting), never copied from the
code's output.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from inferbound.deploy.engine_rules import cuda_graph_cap, kv_cache_bytes, sglang_max_running, sglang_mem_fraction, tier_value, trtllm_bench_limits
from inferbound.deploy.engines import GIB, MIB, default_engine, engine_for_framework, get_engine, load_engines

MEASURED = Path("/work/shared/validation/measured.csv")
H100_MIB = 81559 * MIB   # nvidia-smi memory.total of an H100-SXM 80GB
H200_MIB = 143771 * MIB  # nvidia-smi memory.total of an H200 141GB


# ---------------------------------------------------------------- loading and sources

def test_every_profile_loads_with_one_default_per_engine():
    cat = load_engines()
    names = {p.name for p in cat.profiles}
    assert names == {"vllm", "sglang", "trtllm", "atom", "gpt-fast", "llama.cpp"}
    for name in names:
        assert sum(p.default for p in cat.profiles if p.name == name) == 1
    assert len({p.key for p in cat.profiles}) == len(cat.profiles)
    eng, ver = default_engine()
    assert get_engine(eng, ver).key == f"{eng}@{ver}" == "vllm@0.33.0"
    # the brief's versions are all present
    assert {"vllm@0.6.3", "vllm@0.8.5", "vllm@0.15.1", "sglang@0.4.3", "sglang@0.5.23", "trtllm@0.17",
            "trtllm@1.2"} <= {p.key for p in cat.profiles}


def _unsourced_numbers(node, path="", sourced=False):
    """Paths of numbers (not bools) with no enclosing dict that carries a non-empty source."""
    out = []
    if isinstance(node, dict):
        here = sourced or bool(node.get("source"))
        for k, v in node.items():
            out += _unsourced_numbers(v, f"{path}.{k}", here)
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            out += _unsourced_numbers(v, f"{path}[{i}]", sourced)
    elif isinstance(node, (int, float)) and not isinstance(node, bool) and not sourced:
        out.append(path)
    return out


def test_every_numeric_default_has_a_source():
    for p in load_engines().profiles:
        assert _unsourced_numbers(p.model_dump()) == [], p.key


def _sources(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "source" and v is not None:
                yield v
            else:
                yield from _sources(v)
    elif isinstance(node, (list, tuple)):
        for v in node:
            yield from _sources(v)


def test_every_source_names_a_version_or_a_url():
    pattern = re.compile(r"v?\d+\.\d+|https?://|commit [0-9a-f]{8}")
    for p in load_engines().profiles:
        for s in _sources(p.model_dump()):
            assert pattern.search(s), f"{p.key}: source without version/URL: {s!r}"


def test_inherited_profile_keeps_parent_values_and_their_sources():
    new, parent = get_engine("vllm", "0.33.0"), get_engine("vllm", "0.27.0")
    assert new.kv_sizing.fraction == parent.kv_sizing.fraction  # 0.92, read in 0.27.0
    assert new.kv_sizing.fraction.value == 0.92 and "v0.27.0" in new.kv_sizing.fraction.source
    assert "v0.33.0" in new.token_budget.source  # overridden: the 160 GiB tier
    assert new.flags.token_budget == "--max-num-batched-tokens"  # flags merged, not replaced
    assert any("vllm@0.27.0" in n for n in new.notes)
    # a rule block is replaced whole: 0.5.15's formula carries no TP table from 0.4.3
    assert get_engine("sglang", "0.5.15").kv_sizing.auto.tp_table == ()


# ---------------------------------------------------------------- names, versions, frameworks

@pytest.mark.parametrize("text, expected", [
    ("TensorRT-LLM", ("trtllm", "0.17")),
    ("TensorRT-LLM + Triton tensorrtllm_backend", ("trtllm", "0.17")),
    ("TensorRT-LLM 1.0", ("trtllm", "1.2")),
    ("vLLM 0.6.3", ("vllm", "0.6.3")),
    ("vLLM v0.15", ("vllm", "0.15.1")),
    ("vLLM", ("vllm", "0.33.0")),
    ("SGLang", ("sglang", "0.5.23")),
    ("SGLang 0.4.3", ("sglang", "0.4.3")),
    ("NIM", ("trtllm", "1.2")),
    ("NIM (vLLM backend)", ("vllm", "0.33.0")),
    ("gpt-fast", ("gpt-fast", "static")),
    ("llama.cpp", ("llama.cpp", "static")),
])
def test_framework_text_maps_to_a_profile(text, expected):
    assert engine_for_framework(text) == expected


def test_every_measured_framework_maps():
    if not MEASURED.exists():
        pytest.skip(f"{MEASURED} not present")
    with MEASURED.open() as f:
        frameworks = {row["framework"] for row in csv.DictReader(f)}
    assert frameworks  # the file has rows
    for fw in frameworks:
        name, version = engine_for_framework(fw)
        assert get_engine(name, version).name == name


@pytest.mark.parametrize("version, key", [
    ("0.10.2", "vllm@0.8.5"), ("v0.11.0", "vllm@0.15.1"), ("0.19.1", "vllm@0.15.1"),
    ("0.27.1", "vllm@0.27.0"), ("0.6.3.post1", "vllm@0.6.3"), ("0.33.0", "vllm@0.33.0"),
])
def test_version_resolves_to_the_covering_profile(version, key):
    assert get_engine("vllm", version).key == key


@pytest.mark.parametrize("call, words", [
    (lambda: get_engine("tgi"), ["engine='tgi'", "allowed", "vllm"]),
    # issue 19: 0.3 now resolves to the oldest profile and 0.5.5 to sglang@0.5.6, noted (test_engine_versions.py)
    (lambda: get_engine("vllm", "99"), ["engine_version='99'", "allowed", "0.6.3"]),
    (lambda: get_engine("sglang", "1.0"), ["engine_version='1.0'", "allowed", "0.5.10"]),
    (lambda: get_engine("vllm", "latest"), ["engine_version='latest'", "allowed"]),
    (lambda: engine_for_framework("HF TGI"), ["framework='HF TGI'", "allowed"]),
    (lambda: sglang_mem_fraction(get_engine("vllm"), H100_MIB, 1), ["engine='vllm@0.33.0'", "allowed"]),
    (lambda: kv_cache_bytes(get_engine("gpt-fast"), 80e9, 16e9), ["engine='gpt-fast@static'", "allowed"]),
])
def test_bad_names_give_one_line_errors(call, words):
    with pytest.raises(ValueError) as e:
        call()
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg


# ---------------------------------------------------------------- SGLang automatic memory fraction

def test_sglang_0523_h100_tp1_reserve_formula():
    # chunked_prefill_size 8192 (60-160 GiB), decode cuda-graph max_bs 256 (tp < 4);
    # prefill graph sizes <= 8192: 4..32/4 (8) + 48..256/16 (14) + 288..512/32 (8) + 576..1024/64 (8)
    #   + 1280..4096/256 (12) + 4608..8192/512 (8) = 58 sizes * 8 MiB = 464 MiB
    # reserved = 512 + 1.5*8192 + 1*1*1024/8 + 2*256 + 464 = 13904 MiB (> floor 10240)
    # fraction = round((81559 - 13904) / 81559, 3) = round(0.82952, 3)
    assert sglang_mem_fraction(get_engine("sglang", "0.5.23"), H100_MIB, tp=1) == 0.83


def test_sglang_0523_h100_tp8():
    # tp >= 4: decode max_bs 512; reserved = 512 + 12288 + 8*128 + 2*512 + 464 = 15312 MiB
    # round((81559 - 15312) / 81559, 3) = round(0.81226, 3)
    assert sglang_mem_fraction(get_engine("sglang"), H100_MIB, tp=8) == 0.812


def test_sglang_0515_a100_40gb_no_floor():
    # 40 GiB = 40960 MiB: chunk 4096 (35-60 GiB), decode max_bs 32 (tp < 4), prefill sizes <= 4096: 50
    # reserved = 512 + 1.5*4096 + 128 + 2*32 + 50*8 = 7248 MiB; no 10 GiB floor below 60 GiB
    # round((40960 - 7248) / 40960, 3) = round(0.82305, 3)
    assert sglang_mem_fraction(get_engine("sglang", "0.5.15"), 40 * GIB, tp=1) == 0.823


def test_sglang_0410_h200_gib_table_and_043_tp_table():
    # 0.4.10, 100-160 GiB row: reserved = (12 + 1*1/2) GiB = 12800 MiB; round(130971 / 143771, 3)
    assert sglang_mem_fraction(get_engine("sglang", "0.4.10"), H200_MIB, tp=1) == 0.911
    # 0.4.10 H100 (35-90 GiB row): (9.5 + 0.5) GiB = 10240 MiB; round(71319 / 81559, 3) = 0.874
    assert sglang_mem_fraction(get_engine("sglang", "0.4.10"), H100_MIB, tp=1) == 0.874
    p = get_engine("sglang", "0.4.3")  # TP table: >=16 0.79, >=8 0.81, >=4 0.85, >=2 0.87, else 0.88
    assert [sglang_mem_fraction(p, H100_MIB, tp) for tp in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]


def test_sglang_token_budget_and_graph_tiers():
    p = get_engine("sglang", "0.5.23")
    assert tier_value(p.token_budget, H100_MIB) == 8192
    assert tier_value(p.token_budget, 24 * GIB) == 4096  # 20-35 GiB row (4090-class)
    assert tier_value(p.token_budget, 180e9) == 16384    # >= 160 GiB (B200)
    assert tier_value(p.cuda_graphs.max_batch, 24 * GIB, tp=1) == 48
    assert tier_value(p.cuda_graphs.max_batch, 24 * GIB, tp=4) == 160
    assert tier_value(get_engine("sglang", "0.4.3").token_budget, 24 * GIB) == 2048  # < 25000 MiB


def test_sglang_automatic_max_running():
    p = get_engine("sglang")
    # 500k tokens, 128k context: 500000/131072*512 = 1953 -> clamp to [2048, 4096] = 2048; tokens//2 = 250000
    assert sglang_max_running(p, 500_000, 131_072) == 2048
    # 3M tokens, 8k context: 187500 -> 4096
    assert sglang_max_running(p, 3_000_000, 8192) == 4096
    # a tiny pool: 3000 tokens -> min(2048, 1500) = 1500
    assert sglang_max_running(p, 3000, 8192) == 1500


# ---------------------------------------------------------------- vLLM tiers and graphs

def test_vllm_token_budget_and_max_seqs_tiers():
    new, v151, v085 = get_engine("vllm", "0.33.0"), get_engine("vllm", "0.15.1"), get_engine("vllm", "0.8.5")
    h100 = 80e9  # 74.5 GiB >= 70 GiB
    assert tier_value(new.token_budget, h100, "NVIDIA H100 80GB HBM3") == 8192
    assert tier_value(new.max_seqs, h100, "NVIDIA H100 80GB HBM3") == 1024
    assert tier_value(new.token_budget, h100, "NVIDIA A100-SXM4-80GB") == 2048  # A100 excluded (PR 17885)
    assert tier_value(new.max_seqs, h100, "NVIDIA A100-SXM4-80GB") == 256
    assert tier_value(v085.token_budget, h100, "NVIDIA A100-SXM4-80GB") == 8192  # no exception in 0.8.5
    assert tier_value(new.token_budget, 180e9, "NVIDIA B200") == 16384  # 167.6 GiB >= 160
    assert tier_value(v151.token_budget, 180e9, "NVIDIA B200") == 8192  # no 160 GiB tier before 0.28
    assert tier_value(new.token_budget_offline, h100) == 16384
    assert tier_value(new.token_budget, 48e9) == 2048  # L40S, 44.7 GiB
    np.testing.assert_array_equal(tier_value(new.token_budget, np.array([48e9, 80e9, 180e9])), [2048, 8192, 16384])


def test_cuda_graph_caps():
    new = get_engine("vllm")
    assert cuda_graph_cap(new, 80e9, tp=1, max_seqs=1024) == 512          # min(2*1024, 512)
    assert cuda_graph_cap(new, 80e9, tp=1, max_seqs=100) == 200           # min(2*100, 512)
    assert cuda_graph_cap(new, 180e9, tp=1, max_seqs=1024, blackwell=True) == 1024
    assert cuda_graph_cap(get_engine("vllm", "0.6.3"), 80e9, 1, max_seqs=100) == 104  # padded to 8
    assert cuda_graph_cap(get_engine("vllm", "0.8.5"), 80e9, 1, max_seqs=1024) == 512  # fixed 512
    sg = get_engine("sglang")
    assert cuda_graph_cap(sg, H100_MIB, tp=1, max_seqs=4096) == 256
    assert cuda_graph_cap(sg, H100_MIB, tp=8, max_seqs=4096) == 512
    assert cuda_graph_cap(sg, H100_MIB, tp=8, max_seqs=128) == 128      # capped by max_running_requests
    assert cuda_graph_cap(get_engine("trtllm"), 80e9, 1, 2048) == 128    # PyTorch backend default
    assert cuda_graph_cap(get_engine("trtllm", "0.17"), 80e9, 1, 2048) == 0  # TRT engine path: none
    assert cuda_graph_cap(get_engine("gpt-fast"), 80e9, 1, 4) == 4


# ---------------------------------------------------------------- KV capacity rules

def test_kv_cache_bytes_by_rule():
    W, A, N, G = 16.06e9, 2e9, 1e9, 0.5e9  # weights, activations, non-torch, graphs of one 80e9 B GPU
    # vLLM >= 0.21: 0.92*80e9 - (W + A + N + G) = 73.6e9 - 19.56e9
    assert kv_cache_bytes(get_engine("vllm"), 80e9, W, A, N, G) == pytest.approx(54.04e9)
    # vLLM 0.15.1: graphs outside the fraction: 0.9*80e9 - (W + A + N) = 72e9 - 19.06e9
    assert kv_cache_bytes(get_engine("vllm", "0.15.1"), 80e9, W, A, N, G) == pytest.approx(52.94e9)
    # TensorRT-LLM: 0.9 * (80e9 - W - A - N - G) = 0.9 * 60.44e9
    assert kv_cache_bytes(get_engine("trtllm"), 80e9, W, A, N, G) == pytest.approx(54.396e9)
    # SGLang with an explicit fraction: 0.85*80e9 - W
    assert kv_cache_bytes(get_engine("sglang"), 80e9, W, fraction=0.85) == pytest.approx(51.94e9)
    # SGLang automatic: 80e9 B = 76293.9 MiB; reserved 13904 MiB -> round(62389.9/76293.9, 3) = 0.818
    assert kv_cache_bytes(get_engine("sglang"), 80e9, W, tp=1) == pytest.approx(0.818 * 80e9 - W)


# ---------------------------------------------------------------- trtllm-bench heuristic

@pytest.mark.parametrize("requests, isl, osl, pp, expected", [
    (1000, 128, 128, 1, (1024, 2048)),    # bs 128*ceil(1000/128); tokens max(2048, 256*ceil(2000/256))
    (200, 1000, 1000, 1, (224, 2048)),    # bs max(64, 32*ceil(200/32)); tokens 400 -> floor 2048
    (5000, 2048, 128, 1, (4096, 32768)),  # bs cap 4096 -> 256*16; tokens min(4096*17, 32768)
    (3000, 500, 2000, 2, (1536, 2048)),   # bs 1500 -> 256*6; tokens 1500*1.25 = 1875 -> 2048
])
def test_trtllm_bench_limits(requests, isl, osl, pp, expected):
    assert trtllm_bench_limits(get_engine("trtllm", "0.17"), requests, isl, osl, pp) == expected


# ---------------------------------------------------------------- behaviour the lead relies on

def test_reservation_and_dp_scopes():
    assert get_engine("trtllm", "0.17").kv_reservation.value == "max_output"  # GUARANTEED_NO_EVICT
    assert get_engine("vllm", "0.6.3").kv_reservation.value == "on_demand"
    assert get_engine("vllm").kv_reservation.value == "prompt_on_admission"  # scheduler_reserve_full_isl
    assert get_engine("sglang").kv_reservation.value == "estimated_output"
    assert get_engine("vllm").dp_max_seqs_scope.value == "per_rank"
    assert get_engine("sglang").dp_max_seqs_scope.value == "total"  # divided by attn_dp_size
    assert get_engine("trtllm").dp_max_seqs_scope.value == "per_rank"
    assert get_engine("vllm", "0.6.3").prefix_caching.value is False
    assert get_engine("vllm").prefix_caching.value is True


def test_current_flag_names():
    assert "--attn-dp-size" in get_engine("sglang").flags.attention_dp
    assert get_engine("sglang").flags.cuda_graph_max == "--cuda-graph-max-bs-decode"
    assert get_engine("sglang", "0.4.10").flags.cuda_graph_max == "--cuda-graph-max-bs"
    assert get_engine("sglang").flags.kv_dtype_fp8 == "--kv-cache-dtype fp8_e4m3"
    assert get_engine("vllm").flags.kv_dtype_fp8 == "--kv-cache-dtype fp8"
    assert get_engine("vllm", "0.6.3").flags.dp is None  # no DP flag before V1
    assert "--kv_cache_free_gpu_memory_fraction" in get_engine("trtllm").flags.memory_fraction
    assert "nvidia/Llama-3.1-70B-Instruct-FP8" in get_engine("trtllm").quantization["fp8"].value


def test_vllm_v0_budget_is_at_least_max_model_len():
    """vLLM 0.6.3 without chunked prefill: max_num_batched_tokens = max(max_model_len, 2048) (config.py
    SchedulerConfig); max_model_len defaults to the config's max_position_embeddings."""
    from inferbound import make_deployment
    assert make_deployment(model="llama-3.1-8b", engine="vllm@0.6.3").runtime.token_budget == max(131072, 2048)
    assert make_deployment(model="meta-llama/Llama-2-7b-hf", engine="vllm@0.6.3").runtime.token_budget == max(4096, 2048)
    over = make_deployment(model="llama-3.1-8b", engine="vllm@0.6.3", engine_options={"token_budget": 2048})
    assert over.runtime.token_budget == 2048  # an explicit --max-batched-tokens wins


def test_simulator_refuses_a_prompt_past_an_unchunked_budget():
    from inferbound import make_deployment
    from inferbound.sim import simulate
    dep = make_deployment(model="llama-3.1-8b", engine="vllm@0.6.3", engine_options={"token_budget": 2048})
    with pytest.raises(ValueError, match="input_len=3000 exceeds the token budget 2048"):
        simulate(dep, requests=3, input_len=3000, output_len=8)


def test_no_preemption_needs_blocks_held_from_admission():
    """vLLM grants KV blocks as a sequence grows (reservation current): with no preemption it would have no
    way out when they run out, so the pair is refused in one line; with blocks held from admission
    (TensorRT-LLM's GUARANTEED_NO_EVICT, reservation max) it is what that engine does."""
    from inferbound import make_deployment
    with pytest.raises(ValueError, match=r"^preemption='none' needs kv_reservation='max'.*allowed: kv_reservation=max"):
        make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm", engine_options={"preemption": "none"})
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm",
                          engine_options={"preemption": "none", "reservation": "max"})
    assert (dep.runtime.preemption, dep.runtime.reservation) == ("none", "max")
