"""Request length mixes (workloads/lengths.py) through the steady state (steady_state.py) and max_throughput.

Expected values are written out: class shares, prompts per decode step, tokens per step, held KV; the
one-class mix must reproduce fixed lengths exactly.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from inferbound import make_deployment, max_throughput
from inferbound.deploy.memory import kv_bytes_per_gpu
from inferbound.workloads import steady_state
from inferbound.workloads.lengths import Mix, dataset_names, fixed, from_dataset, from_pairs, from_row_moments, from_spec, workload_mix

M8 = "meta-llama/Llama-3.1-8B"


def two_classes() -> Mix:
    # half the requests 1000 in / 101 out, half 200 in / 401 out
    return Mix((0.5, 0.5), (1000.0, 200.0), (101.0, 401.0), "two classes")


def test_mix_means_and_shares_by_hand():
    mix = two_classes()
    assert mix.mean_input == 600.0 and mix.mean_output == 251.0
    # decode steps are taken in proportion to O − 1: 100 and 400 -> shares 0.2 and 0.8
    assert steady_state.decode_shares(mix) == pytest.approx([0.2, 0.8])
    # p = 1 / Σ w (O − 1) = 1 / (0.5·100 + 0.5·400) = 1/250
    assert steady_state.prompts_per_decode(mix) == pytest.approx(1 / 250)
    assert steady_state.concurrency(100.0, mix) == pytest.approx(100 * (1 + 1 / 250))


def test_steady_load_of_a_mix_by_hand():
    """D = 250 decoders: tokens per step T = D + D·p·Σ w I = 250 + 250/250·600 = 850; sequences
    S = D(1 + p) = 251."""
    m = make_deployment(model=M8, gpu="h100_sxm").model
    load = steady_state.load(m, 250.0, two_classes())
    assert float(load.tokens) == pytest.approx(850.0)
    assert float(load.sequences) == pytest.approx(251.0)
    decode_only = steady_state.load(m, 250.0, two_classes(), decode_only=True)
    assert float(decode_only.tokens) == pytest.approx(250.0)


def test_one_class_mix_is_fixed_lengths():
    dep = make_deployment(model=M8, gpu="h100_sxm", engine_options={"token_budget": 8192})
    a = max_throughput(dep, input_len=1000, output_len=201)
    b = max_throughput(dep, lengths=Mix((1.0,), (1000.0,), (201.0,), "one class"))
    assert (a.decode_batch, a.output_tok_s, a.step_time_s) == (b.decode_batch, b.output_tok_s, b.step_time_s)


def test_output_spread_holds_more_kv_per_decoder_by_hand():
    """With reservation ``max`` a sequence holds I + O tokens; longer outputs decode more steps, so they
    weigh more among the decoders: KV per decoder = Σ (s_c + p·w_c)·k(H_c), here with H = 1101 and 601
    tokens rounded up to 16-token blocks (1104, 608)."""
    dep = make_deployment(model=M8, gpu="h100_sxm", engine_options={"reservation": "max", "block_size": 16})
    rt = dep.runtime
    mix = two_classes()
    per_token = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, 1))  # 2·2·32·8·128 = 131,072
    assert per_token == 2 * 2 * 32 * 8 * 128
    held = [math.ceil((1000 + 101) / 16) * 16, math.ceil((200 + 401) / 16) * 16]
    assert held == [1104, 608]
    p = 1 / 250
    expected = sum((s + p * w) * h * per_token for s, w, h in zip((0.2, 0.8), (0.5, 0.5), held))
    per, _ = steady_state.kv_per_decoder(dep, mix, rt)
    assert per == pytest.approx(expected, rel=1e-12)


def test_from_pairs_groups_by_output_then_input():
    mix = from_pairs([10, 20, 30, 40], [2, 2, 8, 8], "four", classes=2)
    assert mix.weights == (0.5, 0.5)
    assert mix.inputs == (15.0, 35.0) and mix.outputs == (2.0, 8.0)


def test_distribution_spec_is_deterministic_and_near_its_mean():
    a = from_spec(1000, 200, "normal:1000:300", "uniform:100:300")
    b = from_spec(1000, 200, "normal:1000:300", "uniform:100:300")
    assert a == b
    assert len(a.weights) == 16 and sum(a.weights) == pytest.approx(1.0)
    assert a.mean_input == pytest.approx(1000, rel=0.02) and a.mean_output == pytest.approx(200, rel=0.02)


def test_dataset_profiles_carry_their_published_means():
    assert "sharegpt" in dataset_names()
    mix = from_dataset("sharegpt")  # vLLM PR #18566: 229,711 input and 203,068 output tokens over 1000 prompts
    assert (mix.mean_input, mix.mean_output) == (229.7, 203.1)
    assert mix.notes and "spread" in mix.notes[0]
    # a profile without a published input mean needs the row's
    with pytest.raises(ValueError, match="input_len"):
        from_dataset("mlperf_llama3.1_405b")
    mix = from_dataset("mlperf_llama3.1_405b", input_len=700)
    assert mix.mean_output == 684.68  # MLPerf's reference output length per sample
    # OpenOrca: 16 measured prompt classes of 1/16 each (benchmarks/openorca_profile.py), all at the reference
    # output 294.45; their mean is the file's 222.3 to the rounding of the printed class means
    mix = from_dataset("mlperf_llama2_70b_openorca")
    assert len(mix.weights) == 16 and set(mix.outputs) == {294.45}
    assert mix.mean_input == pytest.approx(222.3, abs=0.1)
    assert from_dataset("mlperf_llama2_70b_openorca", input_len=700).mean_output == 294.45
    with pytest.raises(ValueError, match="dataset='nope' unknown"):
        from_dataset("nope")


def test_row_moments_accept_non_integer_means():
    mix = from_row_moments(593.37, 128.5, None, None)
    assert (mix.inputs, mix.outputs) == ((593.37,), (128.5,))
    spread = from_row_moments(593.37, 128.5, 100.0, 20.0)
    assert spread.mean_input == pytest.approx(593.37, rel=0.02)


def test_workload_mix_refuses_two_sources():
    with pytest.raises(ValueError, match="dataset and input_dist"):
        workload_mix(100, 100, input_dist="normal:100:10", dataset="sharegpt")
    assert workload_mix(100, 50) == fixed(100, 50)


def test_spread_lowers_the_kv_limited_batch():
    """Same means, outputs spread: the decoders are the long-output ones, each holding more KV, so the
    KV-limited decode batch is smaller than at fixed lengths."""
    dep = make_deployment(model=M8, gpu="l40s", engine="trtllm@0.17")
    flat = max_throughput(dep, input_len=1000, output_len=251)
    spread = max_throughput(dep, lengths=Mix((0.5, 0.5), (1000.0, 1000.0), (51.0, 451.0), "spread"))
    assert flat.limited_by == "kv-cache"
    assert spread.decode_batch < flat.decode_batch
    assert np.isclose(spread.output_len, 251.0)


def test_length_options_are_the_declared_ones():
    """workloads.lengths reads the same option names that faces/options.LENGTHS declares."""
    from inferbound.faces.options import LENGTHS
    from inferbound.workloads.lengths import LENGTH_OPTIONS
    assert {o.name for o in LENGTHS} == set(LENGTH_OPTIONS)
