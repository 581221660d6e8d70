"""Operators of a forward step (FLOPs, bytes) and the roofline pricing engine.

Expected values are hand computations from the model's config fields, written out in each test.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferbound.step import contract as step
from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.hardware import get_gpu
from inferbound.deploy.memory import kv_bytes_per_gpu
from inferbound.model import load_model
from inferbound.operators import Op, attended_pairs, decode_ops, experts_touched, prefill_ops
from inferbound.pricing.roofline import attention_dtype, price_op, price_step, ridge_point

BF16 = Dtypes()
TP1 = Parallelism()

# Llama-3.1-8B: hidden 4096, 32 layers, 32 heads, 8 kv heads, head_dim 128, MLP 14336, vocab 128256
L8B_LAYER_MATMUL = (4096 * 4096            # q
                    + 2 * 4096 * 1024      # k, v
                    + 4096 * 4096          # o
                    + 3 * 4096 * 14336)    # gate, up, down
L8B_LM_HEAD = 128256 * 4096


@pytest.fixture(scope="module")
def l8b():
    return load_model("llama-3.1-8b")


def total(ops, attr, kind=None, name=None):
    return sum(float(np.sum(getattr(o, attr))) * o.count for o in ops
               if (kind is None or o.kind == kind) and (name is None or o.name == name))


# ------------------------------------------------------------------ GEMMs
def test_decode_gemm_flops_are_two_per_matmul_param(l8b):
    ops = decode_ops(l8b, BF16, TP1, 1, 1000)
    assert L8B_LAYER_MATMUL == 218_103_808
    assert total(ops, "flops", kind="gemm") == 2 * (32 * L8B_LAYER_MATMUL + L8B_LM_HEAD) == 15_009_316_864


def test_decode_reads_every_weight_once(l8b):
    ops = decode_ops(l8b, BF16, TP1, 1, 1000)
    # bf16: 2 bytes per matmul weight; batch of 8 reads them once, not 8 times
    assert total(ops, "weight_bytes", kind="gemm") == 2 * (32 * L8B_LAYER_MATMUL + L8B_LM_HEAD)
    assert total(decode_ops(l8b, BF16, TP1, 8, 1000), "weight_bytes", kind="gemm") == \
        2 * (32 * L8B_LAYER_MATMUL + L8B_LM_HEAD)
    # while the GEMM FLOPs grow with the 8 tokens (the LM head runs once per sequence too)
    assert total(decode_ops(l8b, BF16, TP1, 8, 1000), "flops", kind="gemm") == \
        8 * 2 * (32 * L8B_LAYER_MATMUL + L8B_LM_HEAD)


def test_prefill_gemm_flops_scale_with_tokens_but_lm_head_once_per_sequence(l8b):
    ops = prefill_ops(l8b, BF16, TP1, 2, 512)
    # 2 x 512 tokens through the layers; logits only for the last token of each of the 2 prompts
    assert total(ops, "flops", kind="gemm") == 2 * 1024 * 32 * L8B_LAYER_MATMUL + 2 * 2 * L8B_LM_HEAD


def test_tp2_halves_gemm_flops_and_weight_bytes(l8b):
    one = decode_ops(l8b, BF16, TP1, 4, 2048)
    two = decode_ops(l8b, BF16, Parallelism(tp=2), 4, 2048)
    gemms1 = {o.name: o for o in one if o.kind == "gemm"}
    gemms2 = {o.name: o for o in two if o.kind == "gemm"}
    assert set(gemms1) == set(gemms2) == {"attn_qkv", "attn_out", "mlp", "lm_head"}
    for name in gemms1:
        assert float(gemms2[name].flops) == pytest.approx(float(gemms1[name].flops) / 2, rel=1e-12)
        assert float(gemms2[name].weight_bytes) == pytest.approx(float(gemms1[name].weight_bytes) / 2, rel=1e-12)
    assert total(two, "flops", kind="gemm") == pytest.approx(4 * (32 * L8B_LAYER_MATMUL + L8B_LM_HEAD), rel=1e-12)


# ------------------------------------------------------------------ attention
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3000), st.integers(1, 400), st.one_of(st.none(), st.integers(1, 2000)))
def test_attended_pairs_brute_force(past, new, window):
    expected = sum(t if window is None else min(t, window) for t in range(past + 1, past + new + 1))
    assert float(attended_pairs(past, new, window)) == expected


def test_prefill_causal_pairs():
    for s in (1, 2, 7, 2048):
        assert float(attended_pairs(0, s, None)) == s * (s + 1) / 2
    assert float(attended_pairs(0, 2048, None)) == 2_098_176


def test_decode_attention_flops_and_kv_reads(l8b):
    ctx = 1000
    ops = decode_ops(l8b, BF16, TP1, 1, ctx)
    att = [o for o in ops if o.kind == "attention"]
    assert len(att) == 1 and att[0].count == 32
    # one new token sees ctx + 1 tokens: QK^T and PV, 2 FLOPs per multiply-add, head_dim 128 each, 32 heads
    assert total(ops, "flops", kind="attention") == 32 * 2 * 32 * (128 + 128) * (ctx + 1)
    # reads K and V of ctx + 1 tokens: 8 kv heads x 128 x 2 bytes each, per layer
    assert total(ops, "kv_bytes", kind="attention") == 32 * (ctx + 1) * 2 * 8 * 128 * 2
    # the QKV projection writes the new token's K and V
    assert total(ops, "kv_bytes", name="attn_qkv") == 32 * 1 * 2 * 8 * 128 * 2


def test_prefill_attention_flops(l8b):
    s = 2048
    ops = prefill_ops(l8b, BF16, TP1, 1, s)
    assert total(ops, "flops", kind="attention") == 32 * 2 * 32 * (128 + 128) * s * (s + 1) / 2


def test_sliding_window_caps_attention():
    m = load_model("mistral-7b-v0.1")      # window 4096, 32 heads, head_dim 128
    ops = decode_ops(m, BF16, TP1, 1, 10_000)
    assert total(ops, "flops", kind="attention") == 32 * 2 * 32 * 256 * 4096
    assert total(ops, "kv_bytes", kind="attention") == 32 * 4096 * 2 * 8 * 128 * 2


def test_chunked_attention_sees_only_its_chunk():
    m = load_model("llama-4-scout-17b-16e-instruct")
    # decode after 2 x 8192 cached tokens: the new token (position 16385) opens the third chunk and
    # sees only itself in the 36 chunked layers; the 12 NoPE layers see all 16385 tokens.
    ops = decode_ops(m, BF16, TP1, 1, 2 * 8192)
    chunked = sum(float(o.flops) * o.count for o in ops if o.kind == "attention" and o.group.startswith("chunked"))
    assert chunked == 36 * 2 * 40 * (128 + 128) * 1


# ------------------------------------------------------------------ MoE
def test_experts_touched():
    assert float(experts_touched(1, 8, 2)) == pytest.approx(2)            # one token: its k experts
    assert float(experts_touched(2, 8, 2)) == pytest.approx(8 * (1 - 0.75 ** 2))   # 3.5
    assert float(experts_touched(100_000, 8, 2)) == pytest.approx(8)       # many tokens: all E
    assert float(experts_touched(1, 256, 8)) == pytest.approx(8)
    t = experts_touched(np.arange(1, 200), 128, 4)
    assert np.all(np.diff(t) > 0) and np.all(t <= 128)


def test_mixtral_decode_batch1_reads_two_of_eight_experts():
    m = load_model("mixtral-8x7b-v0.1")
    expert = 3 * 4096 * 14336
    ops = decode_ops(m, BF16, TP1, 1, 512)
    assert total(ops, "weight_bytes", name="experts") == pytest.approx(32 * 2 * expert * 2)
    assert total(ops, "flops", name="experts") == pytest.approx(32 * 2 * 1 * 2 * expert)
    # a batch of 256 tokens touches essentially all 8: 8 * (1 - 0.75^256)
    big = decode_ops(m, BF16, TP1, 256, 512)
    assert total(big, "weight_bytes", name="experts") == pytest.approx(32 * 8 * expert * 2)
    assert total(big, "flops", name="experts") == pytest.approx(32 * 2 * 256 * 2 * expert)


# ------------------------------------------------------------------ KV heads under TP
def test_kv_heads_split_then_replicated_under_tp(l8b):
    ctx = 999
    per_head_layer = (ctx + 1) * 2 * 128 * 2    # K and V of one head, bf16

    def kv_read(m, tp):
        return total(decode_ops(m, BF16, Parallelism(tp=tp), 1, ctx), "kv_bytes", kind="attention")

    assert kv_read(l8b, 1) == 32 * 8 * per_head_layer
    assert kv_read(l8b, 2) == 32 * 4 * per_head_layer
    assert kv_read(l8b, 8) == 32 * 1 * per_head_layer     # 8 kv heads over 8 GPUs: one each
    assert kv_read(l8b, 16) == 32 * 1 * per_head_layer    # 16 GPUs: each still holds a whole head
    mqa = load_model("llama-3.1-8b", {"num_key_value_heads": 1})
    assert kv_read(mqa, 1) == kv_read(mqa, 4) == 32 * 1 * per_head_layer


def test_kv_memory_shard_matches_replication(l8b):
    per_token = 2 * 2 * 32 * 8 * 128   # 131,072 B
    assert float(kv_bytes_per_gpu(l8b, BF16, Parallelism(tp=4), 2, 1000)) == 2 * 1000 * per_token / 4
    assert float(kv_bytes_per_gpu(l8b, BF16, Parallelism(tp=16), 2, 1000)) == 2 * 1000 * per_token / 8
    mqa = load_model("llama-3.1-8b", {"num_key_value_heads": 1})
    assert float(kv_bytes_per_gpu(mqa, BF16, Parallelism(tp=4), 1, 1000)) == 1000 * 2 * 2 * 32 * 1 * 128


# ------------------------------------------------------------------ roofline
@pytest.fixture(scope="module")
def synthetic_gpu():
    """An H100 entry with round numbers, so the expected times can be written out."""
    return get_gpu("h100_sxm", {"peak_flops.bf16": 1e15, "hbm_bw": 2e12, "efficiency.compute": 0.5,
                                "efficiency.memory": 0.8, "efficiency.kernel_overhead_s": 1e-6,
                                "efficiency.step_overhead_s": 1e-3})


def test_price_op_compute_bound(synthetic_gpu):
    op = Op("x", "gemm", 1, flops=1e12, weight_bytes=1e9)
    p = price_op(op, synthetic_gpu, "bf16")
    # t_c = 1e12 / (1e15 * 0.5) = 2 ms; t_m = 1e9 / (2e12 * 0.8) = 0.625 ms
    assert float(p.t_compute) == pytest.approx(2e-3)
    assert float(p.t_memory) == pytest.approx(6.25e-4)
    assert float(p.time) == pytest.approx(2e-3 + 1e-6)
    assert bool(p.compute_bound)


def test_price_op_memory_bound(synthetic_gpu):
    op = Op("y", "gemm", 1, flops=1e9, weight_bytes=4e9, kv_bytes=4e9)
    p = price_op(op, synthetic_gpu, "bf16")
    # t_c = 1e9 / 5e14 = 2 us; t_m = 8e9 / 1.6e12 = 5 ms
    assert float(p.time) == pytest.approx(5e-3 + 1e-6)
    assert not bool(p.compute_bound)
    assert float(p.intensity) == pytest.approx(1e9 / 8e9)


def test_ridge_point(synthetic_gpu):
    # (P * e_c) / (W * e_m) = 5e14 / 1.6e12
    assert ridge_point(synthetic_gpu, "bf16") == pytest.approx(312.5)
    below = Op("a", "gemm", 1, flops=300 * 1e9, weight_bytes=1e9)
    above = Op("b", "gemm", 1, flops=330 * 1e9, weight_bytes=1e9)
    assert not bool(price_op(below, synthetic_gpu, "bf16").compute_bound)
    assert bool(price_op(above, synthetic_gpu, "bf16").compute_bound)


def test_price_step_sums_ops_split_and_bound(synthetic_gpu):
    ops = [Op("x", "gemm", 2, flops=1e12, weight_bytes=1e9),
           Op("y", "gemm", 3, flops=1e9, weight_bytes=4e9, kv_bytes=4e9)]
    cost = price_step(ops, synthetic_gpu, "bf16", "bf16")
    # 2 x (2 ms + 1 us) + 3 x (5 ms + 1 us) + 1 ms step overhead
    assert float(cost.time) == pytest.approx(2 * 2.001e-3 + 3 * 5.001e-3 + 1e-3)
    assert float(cost.split["compute"]) == pytest.approx(4e-3)
    assert float(cost.split["weights"]) == pytest.approx(3 * 5e-3 / 2)   # half the bytes are weights
    assert float(cost.split["kv"]) == pytest.approx(3 * 5e-3 / 2)
    assert float(cost.split["overhead"]) == pytest.approx(5 * 1e-6 + 1e-3)
    assert cost.bound == "memory"


def test_collective_without_pricer_is_an_error(synthetic_gpu):
    with pytest.raises(ValueError, match="collective"):
        price_step([Op("ar", "collective", 1)], synthetic_gpu, "bf16", "bf16")


def test_attention_runs_at_fp8_only_with_fp8_cache():
    g = get_gpu("h100_sxm")
    assert attention_dtype(g, "fp8", "fp8") == "fp8"
    assert attention_dtype(g, "fp8", "bf16") == "bf16"
    assert attention_dtype(g, "bf16", "fp8") == "bf16"


# ------------------------------------------------------------------ vectorization
def test_decode_cost_vectorized_over_batch_and_context(l8b):
    from inferbound import make_deployment
    dep = make_deployment(model=l8b, gpu="h100_sxm")
    batches = np.array([1, 8, 64, 512])
    vec = step.decode(dep, batches, 2048)
    for i, b in enumerate(batches):
        one = step.decode(dep, int(b), 2048)
        assert float(np.asarray(vec.time)[i]) == pytest.approx(float(one.time), rel=1e-12)
        assert np.asarray(vec.bound)[i] == one.bound
    ctx = np.array([128, 4096, 32768])
    vec = step.decode(dep, 4, ctx)
    for i, c in enumerate(ctx):
        one = step.decode(dep, 4, int(c))
        assert float(np.asarray(vec.time)[i]) == pytest.approx(float(one.time), rel=1e-12)
