"""KV-cache bytes: the seed's 2·2·n_layers·n_heads·d_head at fp16, generalized (GQA, MLA, windows, dtype).

Every expected value is worked out by hand from the config fields in the test.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferbound.model import kv_bytes_for_context, kv_bytes_per_token, load_model


def test_seed_formula_mha_llama2_7b():
    # seed article: 2 (K and V) * 2 bytes (fp16) * n_layers * n_heads * d_head; Llama-2-7B is MHA
    m = load_model("llama-2-7b-hf")
    assert kv_bytes_per_token(m, "fp16") == 2 * 2 * 32 * 32 * 128 == 524_288


def test_llama_3_1_70b_gqa():
    m = load_model("llama-3.1-70b")
    # K and V, bf16 2 bytes, 80 layers, 8 kv heads (not 64 query heads), head_dim 128
    assert kv_bytes_per_token(m, "bf16") == 2 * 2 * 80 * 8 * 128 == 327_680
    assert kv_bytes_for_context(m, 1000, "bf16") == 1000 * 327_680


def test_fp8_kv_halves_it():
    m = load_model("llama-3.1-70b")
    assert kv_bytes_per_token(m, "fp8") == 2 * 1 * 80 * 8 * 128 == 163_840
    assert kv_bytes_for_context(m, 4096, "fp8") * 2 == kv_bytes_for_context(m, 4096, "bf16")


def test_deepseek_v3_mla_latent():
    m = load_model("deepseek-v3")
    # one latent per token and layer: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values, no K/V factor 2
    assert kv_bytes_per_token(m, "bf16") == 61 * 576 * 2 == 70_272
    assert kv_bytes_for_context(m, 32_768, "bf16") == 32_768 * 70_272


def test_mistral_7b_stops_growing_past_its_window():
    m = load_model("mistral-7b-v0.1")
    per_token = 2 * 2 * 32 * 8 * 128    # 131,072 B: 32 layers, 8 kv heads, head_dim 128, bf16
    assert kv_bytes_per_token(m) == per_token
    assert kv_bytes_for_context(m, 1000) == 1000 * per_token
    assert kv_bytes_for_context(m, 4096) == 4096 * per_token
    assert kv_bytes_for_context(m, 4097) == 4096 * per_token      # sliding window 4096
    assert kv_bytes_for_context(m, 32_000) == 4096 * per_token == 536_870_912


def test_gpt_oss_120b_half_the_layers_windowed():
    m = load_model("gpt-oss-120b")
    per_layer_token = 2 * 8 * 64 * 2    # K and V, 8 kv heads, head_dim 64, bf16 = 2,048 B
    # 18 full-attention layers keep every token; 18 sliding layers keep at most 128
    assert kv_bytes_for_context(m, 100) == 36 * 100 * per_layer_token
    assert kv_bytes_for_context(m, 8192) == 18 * 8192 * per_layer_token + 18 * 128 * per_layer_token
    assert kv_bytes_for_context(m, 8192) == 18 * 2048 * (8192 + 128) == 306_708_480


def test_gemma2_alternating_window():
    m = load_model("gemma-2-9b")
    per_layer_token = 2 * 8 * 256 * 2    # 8 kv heads, head_dim 256, bf16
    assert kv_bytes_for_context(m, 10_000) == 21 * 10_000 * per_layer_token + 21 * 4096 * per_layer_token


def test_llama4_chunked_layers_hold_one_chunk():
    m = load_model("llama-4-scout-17b-16e-instruct")
    per_layer_token = 2 * 8 * 128 * 2
    # 12 NoPE layers keep all 100k tokens; 36 chunked layers at most one 8192-token chunk
    assert kv_bytes_for_context(m, 100_000) == 12 * 100_000 * per_layer_token + 36 * 8192 * per_layer_token


def test_vectorized_over_context():
    m = load_model("mistral-7b-v0.1")
    ctx = np.array([1, 4096, 5000])
    out = kv_bytes_for_context(m, ctx)
    assert out.tolist() == [kv_bytes_for_context(m, int(c)) for c in ctx]


def test_unknown_kv_dtype_is_named():
    with pytest.raises(ValueError, match="fp9"):
        kv_bytes_per_token(load_model("llama-3.1-8b"), "fp9")


MODELS = ["llama-3.1-8b", "mistral-7b-v0.1", "gpt-oss-20b", "gemma-2-9b", "deepseek-v3",
          "llama-4-scout-17b-16e-instruct"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.integers(0, 300_000), st.integers(0, 300_000))
def test_kv_non_decreasing_in_context(alias, a, b):
    m = load_model(alias)
    lo, hi = sorted((a, b))
    assert kv_bytes_for_context(m, lo) <= kv_bytes_for_context(m, hi)


@settings(max_examples=50, deadline=None)
@given(st.integers(4096, 10_000_000))
def test_mistral_constant_beyond_window(ctx):
    m = load_model("mistral-7b-v0.1")
    assert kv_bytes_for_context(m, ctx) == 4096 * 2 * 2 * 32 * 8 * 128
