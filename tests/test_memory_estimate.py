"""Memory per GPU (weights, KV, fit, max batch/context) and the static-batch estimate.

Expected values are hand computations from the config fields and the datasheet, written out in each
test, or published measurements (/work/shared/validation/measured.csv).
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from inferbound.step import contract as step
from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.deploy.deployment import make_deployment
from inferbound.workloads.static import estimate
from inferbound.hardware import get_gpu
from inferbound.deploy.memory import max_batch, max_context, memory_report, weight_bytes_per_gpu
from inferbound.model import load_model

MEASURED = Path("/work/shared/validation/measured.csv")

# Llama-3.1-70B by hand: hidden 8192, 80 layers, 64 heads, 8 kv heads x 128, MLP 28672, vocab 128256
L70_MATRICES = 80 * (8192 * 8192 * 2 + 8192 * 1024 * 2 + 3 * 8192 * 28672)   # q, o, k, v, gate/up/down
L70_EMB = 128256 * 8192                      # embedding; the untied LM head is the same size
L70_NORMS = (2 * 80 + 1) * 8192              # 2 RMSNorms per layer + final
L70_TOTAL = L70_MATRICES + 2 * L70_EMB + L70_NORMS


@pytest.fixture(scope="module")
def l70():
    return load_model("llama-3.1-70b")


def test_llama_70b_total_by_hand():
    assert L70_TOTAL == 70_553_706_496


def test_weights_bf16_are_two_bytes_per_param(l70):
    assert weight_bytes_per_gpu(l70, Dtypes(), Parallelism()) == 2 * L70_TOTAL == 141_107_412_992


def test_weights_tp2_halve_all_but_the_norms(l70):
    # matrices, embedding and LM head split 2 ways; norms replicated on both GPUs
    expected = 2 * (L70_MATRICES + 2 * L70_EMB) / 2 + 2 * L70_NORMS
    assert weight_bytes_per_gpu(l70, Dtypes(), Parallelism(tp=2)) == pytest.approx(expected, rel=1e-15)


def test_int4_weights_pay_for_their_scales(l70):
    # int4 matrices: 4 bits + one fp16 scale per 128 weights = 4.125 bits; embedding, LM head, norms in bf16
    expected = L70_MATRICES * (4 + 16 / 128) / 8 + (2 * L70_EMB + L70_NORMS) * 2
    assert weight_bytes_per_gpu(l70, Dtypes(weight="int4"), Parallelism()) == pytest.approx(expected, rel=1e-15)
    assert expected == pytest.approx(39.5e9, rel=0.01)     # ~35.3 GB matrices + ~4.2 GB bf16 tables


def test_70b_bf16_does_not_fit_one_h100_but_fits_four(l70):
    one = memory_report(make_deployment(model=l70, gpu="h100_sxm"), 8, 1280)   # 80 GB
    assert not one.fits             # 141 GB of weights alone
    assert one.weights > 80e9 and one.kv_capacity == 0
    four = memory_report(make_deployment(model=l70, gpu="h100_sxm", tp=4), 8, 1280)
    assert four.fits
    assert four.weights == pytest.approx((2 * (L70_MATRICES + 2 * L70_EMB)) / 4 + 2 * L70_NORMS)
    # 8 sequences x 1280 tokens x 327,680 B/token, split over 4 of the 8 kv heads' GPUs
    assert four.kv_cache == pytest.approx(8 * 1280 * 327_680 / 4)


def test_kv_allocation_follows_the_engine_rule():
    """Llama-3.1-8B bf16 on one H100 (85,045,477,376 B as CUDA reports it, data/device_memory.yaml): weights 16,060,522,496 B; a profiled step of T = 8192 tokens
    has T x (4d + 2ff + (h + 2kv) hd) x 2 B = 8192 x 51,200 x 2 activations plus fp32 logits for the
    running-sequence cap (min(cap, T) rows x 128,256 x 4 B); non-torch reserve 1e9 B (runtime.yaml)."""
    w, act_t, rows_b = 16_060_522_496, 8192 * 51_200 * 2, 128_256 * 4
    vllm = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.33.0")
    # vLLM: gpu_memory_utilization 0.92 of all memory, minus weights, activations (1024 seqs), reserve
    assert memory_report(vllm, 1, 100).kv_capacity == pytest.approx(0.92 * 85_045_477_376 - w - (act_t + 1024 * rows_b) - 1e9)
    trt = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="trtllm@0.17")
    # TensorRT-LLM: 0.9 of what is free after weights, activations (2048 seqs) and the reserve
    assert memory_report(trt, 1, 100).kv_capacity == pytest.approx(0.9 * (85_045_477_376 - w - (act_t + 2048 * rows_b) - 1e9))
    rep = memory_report(vllm, 1, 100)
    assert rep.reserve == pytest.approx(1e9)
    assert rep.total == pytest.approx(rep.weights + rep.kv_cache + rep.activations + rep.reserve)
    assert rep.unused == pytest.approx(85_045_477_376 - rep.weights - rep.kv_capacity - 1e9 - rep.activations)


@pytest.mark.parametrize("context", [1280, 4096, 32_768])
def test_max_batch_is_the_fit_boundary(l70, context):
    dep = make_deployment(model=l70, gpu="h100_sxm", tp=4)
    b = int(max_batch(dep, context))
    assert b >= 1
    assert memory_report(dep, b, context).fits
    assert not memory_report(dep, b + 1, context).fits


def test_max_batch_zero_when_weights_do_not_fit(l70):
    assert int(max_batch(make_deployment(model=l70, gpu="h100_sxm"), 1024)) == 0


@pytest.mark.parametrize("batch", [1, 16, 64])
def test_max_context_is_the_fit_boundary(l70, batch):
    dep = make_deployment(model=l70, gpu="h100_sxm", tp=4)
    c = max_context(dep, batch)
    assert c >= 1
    assert max_batch(dep, c) >= batch
    assert max_batch(dep, c + 1) < batch
    assert memory_report(dep, batch, c).fits
    assert not memory_report(dep, batch, c + 1).fits


# ------------------------------------------------------------------ estimate
@pytest.fixture(scope="module")
def est8():
    return estimate(model="llama-3.1-8b", gpu="h100_sxm", batch=4, input_len=512, output_len=33)


def test_ttft_is_the_prefill_step(est8):
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    pre = step.prefill(dep, 4, 512)
    assert est8.ttft_s == pytest.approx(float(pre.time), rel=1e-12)


def test_e2e_and_throughput_identities(est8):
    n = 33
    assert est8.e2e_s == pytest.approx(est8.ttft_s + (n - 1) * est8.tpot_s, rel=1e-12)
    assert est8.output_tok_s == pytest.approx(4 * n / est8.e2e_s, rel=1e-12)
    assert est8.output_tok_s_per_gpu == pytest.approx(est8.output_tok_s, rel=1e-12)   # one GPU
    assert est8.tok_s_per_user == pytest.approx(1 / est8.tpot_s, rel=1e-12)
    d = est8.to_dict()
    assert d["ttft_ms"] == pytest.approx(est8.ttft_s * 1e3) and d["tpot_ms"] == pytest.approx(est8.tpot_s * 1e3)


def test_tpot_is_the_mean_decode_step_within_the_run(est8):
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    lo = step.decode(dep, 4, 512).time
    hi = step.decode(dep, 4, 512 + 33).time
    assert float(lo) < est8.tpot_s < float(hi)      # decode time grows with the cache


def test_tpot_averages_the_exact_decode_contexts():
    s, n = 512, 5
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    e = estimate(dep, batch=4, input_len=s, output_len=n)
    # after prefill the cache holds S tokens; step 1 feeds output token 1 with S cached, ...,
    # step N-1 feeds token N-1 with S + N - 2 cached
    t = [float(step.decode(dep, 4, s + j - 1).time)
         for j in range(1, n)]
    assert e.tpot_s == pytest.approx(np.mean(t), rel=1e-9)


def test_decode_memory_bound_prefill_compute_bound_llama_8b_h100():
    e = estimate(model="llama-3.1-8b", gpu="h100_sxm", batch=1, input_len=2048, output_len=64)
    assert e.decode.bound == "memory"
    assert e.prefill.bound == "compute"
    assert "HBM-bound" in e.decode.explanation and "compute-bound" in e.prefill.explanation


def test_decode_without_kv_cache_is_slower_and_grows_quadratically():
    ratios = []
    for n in (16, 128, 1024):
        e = estimate(model="llama-3.1-8b", gpu="h100_sxm", batch=1, input_len=128, output_len=n)
        with_cache = (n - 1) * e.tpot_s
        assert e.decode_without_kv_cache_s > with_cache
        ratios.append(e.decode_without_kv_cache_s / with_cache)
    assert ratios[0] < ratios[1] < ratios[2]


def test_larger_batch_more_throughput_while_memory_bound():
    prev = 0.0
    for b in (1, 4, 16, 64):
        e = estimate(model="llama-3.1-8b", gpu="h100_sxm", batch=b, input_len=512, output_len=128)
        assert e.decode.bound == "memory"
        assert e.output_tok_s > prev
        prev = e.output_tok_s


def test_batch1_decode_near_weight_streaming_bound():
    # Llama-3.1-8B bf16 on one H100 SXM: each step streams the matmul weights, 32 layers x
    # 218,103,808 + LM head 128256 x 4096 = 7.50e9 params = 15.0 GB, over 3.35 TB/s at 0.85
    # efficiency: 5.27 ms (the embedding table is only looked up); the step adds KV reads and fixed
    # overheads (a few ms at most)
    e = estimate(model="llama-3.1-8b", gpu="h100_sxm", batch=1, input_len=128, output_len=64)
    floor = 2 * (32 * 218_103_808 + 128256 * 4096) / (3.35e12 * 0.85)
    assert floor < e.tpot_s < floor + 3e-3


def test_fp8_activations_on_a100_need_emulate_weight_only_fp8_does_not():
    e = estimate(model="llama-3.1-8b", gpu="a100_80gb_sxm", weight_dtype="fp8", batch=1, input_len=16, output_len=4)
    assert e.compute_dtype == "bf16"           # W8A16: FP8 Marlin dequantizes inside the bf16 GEMM
    with pytest.raises(ValueError, match="fp8"):
        estimate(model="llama-3.1-8b", gpu="a100_80gb_sxm", weight_dtype="fp8", act_dtype="fp8", batch=1,
                 input_len=16, output_len=4)
    with pytest.raises(ValueError, match="fp8"):
        estimate(model="llama-3.1-8b", gpu="a100_80gb_sxm", act_dtype="fp8", batch=1, input_len=16, output_len=4)
    e = estimate(model="llama-3.1-8b", gpu="a100_80gb_sxm", weight_dtype="fp8", emulate=True,
                 batch=1, input_len=16, output_len=4)
    assert e.compute_dtype == "bf16"


def test_tp_not_dividing_heads_names_tp():
    with pytest.raises(ValueError, match=r"tp=3"):
        estimate(model="llama-3.1-8b", tp=3, batch=1, input_len=16, output_len=4)


def test_bad_lengths_are_named():
    with pytest.raises(ValueError, match="output_len"):
        estimate(model="llama-3.1-8b", batch=1, input_len=16, output_len=0)


# ------------------------------------------------------------------ against published measurements
def _measured(case: str) -> dict:
    with MEASURED.open() as f:
        return next(r for r in csv.DictReader(f) if r["case"] == case)


@pytest.mark.skipif(not MEASURED.exists(), reason="validation data not present")
def test_gpt_fast_llama2_7b_bf16_batch1_a100():
    row = _measured("m1244")
    # gpt-fast README: Llama-2-7b, bf16, batch 1, A100-80GB (power-limited to 330 W), torch.compile
    assert (row["model"], row["gpu"], row["weight_dtype"], row["batch_size"], row["metric"]) == \
        ("meta-llama/Llama-2-7b-hf", "a100_80gb_sxm", "bf16", "1", "tok_s_per_user")
    measured = float(row["value"])       # 104.9 tok/s
    e = estimate(model=row["model"], gpu=row["gpu"], num_gpus=int(row["num_gpus"]), batch=1,
                 input_len=int(row["input_len"]), output_len=int(row["output_len"]))
    error = e.tok_s_per_user / measured - 1
    assert abs(error) <= 0.35, f"predicted {e.tok_s_per_user:.1f} tok/s vs measured {measured} ({error:+.1%})"
