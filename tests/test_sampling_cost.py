"""The sampler's cost beyond the plain path (deploy/sampling.py, operators/layers.head_ops, data/features.yaml
sampling), against byte counts written out by hand.

Figures used:
- Qwen3-8B vocab_size 151,936 and Llama-3.1-8B 128,256 (their config.json);
- features.yaml sampling: vLLM's PyTorch top-p sort 156 B per fp32 logit below 128 rows (full radix sort:
  fill 8 + 4 passes of r12 w12 + a 4 B histogram read = 100, segment-bit pass 24, postprocess 24) and 176 B from
  128 rows (cub segmented sort: fill 8 + 6 passes of 28), then 62 B of softmax, cumsum, compare, masked_fill and
  scatter back; penalties 85 B (17 + 17 + 10 + 24 + 17); FlashInfer's sort-free rounds 12 B;
- h100_sxm: HBM 3.35 TB/s at memory efficiency 0.85, kernel fixed cost 2 us (data/hardware.yaml, efficiency.yaml).
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.step import contract as C
from inferbound.step.table import StepModel

SAMPLED = {"top_p": 0.95, "repetition_penalty": 1.1}  # ML.ENERGY's requests (data/power_measured.csv)


def _dep(model="qwen3-8b", engine="vllm@0.11.1", **opts):
    return make_deployment(model=model, gpu="h100_sxm", engine=engine, engine_options=opts or None)


def _sampler(cost):
    return [p for p in cost.ops if p.op.name == "sampler"]


@pytest.mark.parametrize("rows, expected", [
    (64, 64 * 151_936 * (156 + 62 + 85)),      # 9,723,904 logits x 303 B = 2,946,342,912 B (full sort)
    (256, 256 * 151_936 * (176 + 62 + 85)),    # 38,895,616 logits x 323 B = 12,563,283,968 B (segmented sort)
])
def test_top_p_and_penalties_bytes_by_hand(rows, expected):
    dep = _dep(**SAMPLED)
    assert dep.runtime.sampler_bytes == (303.0, 323.0)
    (op,) = _sampler(C.price(dep, C.uniform(dep.model, decode=rows, context=1000)))
    assert float(op.op.act_bytes) == expected
    # memory-bound: bytes / (3.35 TB/s x 0.85) + one kernel's 2 us
    assert float(op.time) == pytest.approx(expected / (3.35e12 * 0.85) + 2e-6, rel=1e-9)


def test_the_sampler_adds_its_own_time_and_nothing_else():
    plain, sampled = _dep(), _dep(**SAMPLED)
    load = C.uniform(plain.model, decode=200, context=800)
    a, b = C.price(plain, load), C.price(sampled, load)
    (op,) = _sampler(b)
    assert not _sampler(a)
    assert float(b.time) - float(a.time) == pytest.approx(float(op.time), rel=1e-9)
    assert float(b.bytes) - float(a.bytes) == pytest.approx(200 * 151_936 * 323, rel=1e-12)


def test_top_p_alone_and_penalties_alone():
    assert _dep(top_p=0.9).runtime.sampler_bytes == (218.0, 238.0)          # 156 + 62, 176 + 62
    assert _dep(repetition_penalty=1.2).runtime.sampler_bytes == (85.0, 85.0)
    assert _dep(top_p=1.0, repetition_penalty=1.0).runtime.sampler_bytes == (0.0, 0.0)
    assert _dep().runtime.sampler_bytes == (0.0, 0.0)


@pytest.mark.parametrize("engine, expected", [
    ("vllm@0.6.3", (218.0, 238.0)),    # V0: the PyTorch sort (FlashInfer only with VLLM_USE_FLASHINFER_SAMPLER=1)
    ("vllm@0.10.1", (12.0, 12.0)),     # V1 0.8-0.10 (profile 0.8.5): FlashInfer's rejection sampler by default
    ("vllm@0.11.1", (218.0, 238.0)),   # profile 0.15.1 (0.11-0.20): PR #26859 turned FlashInfer's sampler off
    ("vllm@0.15.1", (218.0, 238.0)),
    ("vllm@0.33.0", (12.0, 12.0)),     # after PR #40376 (assumed from 0.21)
])
def test_top_p_path_follows_the_version(engine, expected):
    assert _dep(engine=engine, top_p=0.9).runtime.sampler_bytes == expected


def test_what_a_profile_range_hides_is_said():
    notes = " ".join(_dep(engine="vllm@0.10.1", top_p=0.9).runtime.notes)
    assert "FlashInfer" in notes and "PR #11394" in notes
    assert "0.11.0, which this profile also stands for" in " ".join(_dep(top_p=0.9).runtime.notes)


@pytest.mark.parametrize("opts, message", [
    ({"top_p": 0}, "top_p=0 must be a number in (0, 1]"),
    ({"top_p": 1.5}, "top_p=1.5 must be a number in (0, 1]"),
    ({"top_p": True}, "top_p=True must be a number in (0, 1]"),
    ({"repetition_penalty": 0}, "repetition_penalty=0 must be a number > 0"),
])
def test_bad_values_name_the_field(opts, message):
    with pytest.raises(ValueError) as e:
        _dep(**opts)
    assert str(e.value) == message


def test_an_engine_whose_sampler_was_not_read_refuses():
    with pytest.raises(ValueError, match=r"top_p: the sampler of engine='trtllm@.*' is not read from its sources; "
                                         r"allowed: an engine of sglang, vllm, or top_p=1"):
        _dep(engine="trtllm", top_p=0.9)
    assert _dep(engine="trtllm", top_p=1.0).runtime.sampler_bytes == (0.0, 0.0)


def test_sglang_samples_sort_free_on_nvidia_and_sorts_on_rocm():
    # NVIDIA: FlashInfer's rejection sampler 12 B + SGLang's penalty tensor 50 + 16 = 66 B
    assert _dep(engine="sglang", top_p=0.9, repetition_penalty=1.1).runtime.sampler_bytes == (78.0, 78.0)
    amd = make_deployment(model="qwen3-8b", gpu="mi300x", engine="sglang", engine_options={"top_p": 0.9})
    assert amd.runtime.sampler_bytes == (218.0, 238.0)     # the pytorch backend's sort
    assert any("pytorch backend" in n for n in amd.runtime.notes)


def test_vllm_on_rocm_sorts_where_cuda_takes_flashinfer():
    amd = make_deployment(model="qwen3-8b", gpu="mi300x", engine="vllm@0.10.1", engine_options={"top_p": 0.9})
    assert amd.runtime.sampler_bytes == (218.0, 238.0)
    assert any("forward_native" in n for n in amd.runtime.notes)


def test_tensor_parallel_ranks_each_sample_the_whole_vocabulary():
    one = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=1, engine="vllm@0.11.1", engine_options=SAMPLED)
    two = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2, engine="vllm@0.11.1", engine_options=SAMPLED)
    load = C.uniform(one.model, decode=64, context=500)
    for dep in (one, two):   # 64 rows x 128,256 x 303 B on every rank (the gathered logits)
        (op,) = _sampler(C.price(dep, load))
        assert float(op.op.act_bytes) == 64 * 128_256 * 303


def test_the_step_table_prices_the_sampler_as_the_contract_does():
    dep = _dep(**SAMPLED)
    sm = StepModel(dep, 4096)
    for rows in (8.0, 127.0, 128.0, 300.0):
        load = C.uniform(dep.model, decode=rows, context=700)
        assert float(sm.price(load, "stream").time) == pytest.approx(float(C.price(dep, load).time), rel=1e-9)
    dec = np.array([100.0, 900.0, 3000.0])
    t, _ = sm.step(dec, [(0, 700)], "stream")
    load = C.of_sequences(dep.model, dec, [0], [700])
    assert t == pytest.approx(float(C.price(dep, load).time), rel=1e-9)


def test_runtime_describe_names_the_sampling():
    assert _dep(**SAMPLED).runtime.describe().endswith(", top_p 0.95, repetition penalty 1.1")
