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


# ------------------------------------------------------------------ hybrids: KV only in attention layers, fixed state
import json  # noqa: E402
from pathlib import Path  # noqa: E402

from inferbound.model import cache_bytes_for_context, state_bytes_per_sequence  # noqa: E402
from inferbound.model.ssm_cost import mixer_cost  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "configs"


def test_qwen3_next_kv_counts_only_the_12_attention_layers():
    m = load_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    # 12 gated-attention layers x K and V x 2 KV heads x head_dim 256 x 2 bytes
    assert kv_bytes_per_token(m, "bf16") == 12 * 2 * 2 * 256 * 2 == 24_576
    assert kv_bytes_for_context(m, 32_768) == 32_768 * 24_576


def test_qwen3_next_deltanet_state_by_hand():
    m = load_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    conv = (4 - 1) * (2 * 16 * 128 + 32 * 128)      # K-1 columns x (q, k: 16 heads x 128; v: 32 x 128)
    recurrent = 32 * 128 * 128                      # one 128 x 128 state per value head
    assert state_bytes_per_sequence(m, "bf16") == 36 * (conv + recurrent) * 2 == 39_518_208
    # O(1) in context: a request at 1k and at 256k tokens holds the same state
    assert cache_bytes_for_context(m, 1024) - kv_bytes_for_context(m, 1024) == 39_518_208
    assert cache_bytes_for_context(m, 262_144) - kv_bytes_for_context(m, 262_144) == 39_518_208


def test_mamba2_codestral_state_by_hand_and_no_kv():
    m = load_model(json.loads((CONFIGS / "mamba-codestral-7b.json").read_text()))
    assert kv_bytes_per_token(m) == 0 and kv_bytes_for_context(m, 100_000) == 0
    conv = 3 * (8192 + 2 * 8 * 128)                 # E = 2 x 4096; conv over E + 2 G N
    recurrent = 128 * 64 * 128                      # H x P x N
    assert state_bytes_per_sequence(m, "bf16") == 64 * (conv + recurrent) * 2 == 138_149_888


def test_nemotron_h_recurrent_state_at_the_dtype_its_config_asks_for():
    m = load_model(json.loads((CONFIGS / "nemotron-h-8b.json").read_text()))
    assert m.ssm.state_dtype == "fp32"              # mamba_ssm_cache_dtype: float32
    n_mamba = 24                                     # M blocks in the pattern
    conv = 3 * (128 * 64 + 2 * 8 * 128)
    recurrent = 128 * 64 * 128
    assert state_bytes_per_sequence(m, "bf16") == n_mamba * (conv * 2 + recurrent * 4)
    assert kv_bytes_per_token(m, "bf16") == 4 * 2 * 8 * 128 * 2   # 4 attention blocks


def test_gemma3_27b_five_local_to_one_global_at_32k():
    m = load_model("google/gemma-3-27b-it")
    per = 2 * 16 * 128 * 2                          # K and V, 16 KV heads, head_dim 128, bf16 = 8,192 B
    # 10 global layers keep 32,768 tokens, 52 local layers the last 1,024
    assert kv_bytes_for_context(m, 32_768) == per * (10 * 32_768 + 52 * 1024) == 3_120_562_176
    one_to_one = per * (31 * 32_768 + 31 * 1024)     # the old misreading: alternating 1:1
    assert one_to_one / kv_bytes_for_context(m, 32_768) > 2.7


def test_mixer_cost_formulas_by_hand():
    mamba = load_model(json.loads((CONFIGS / "mamba-130m.json").read_text())).ssm
    c = mixer_cost(mamba, batch=1, new=1, past=10)
    # E = 1536, N = 16, K = 4: conv 2*4*1536, scan 9*E*N + 2*E
    assert c.flops == 2 * 4 * 1536 + 9 * 1536 * 16 + 2 * 1536
    # state read and written (past > 0): conv 3 x 1536 + recurrent 1536 x 16 values, bf16
    assert c.state_bytes == 2 * (3 * 1536 + 1536 * 16) * 2
    m2 = load_model(json.loads((CONFIGS / "mamba-codestral-7b.json").read_text())).ssm
    h, n, p, q = 128, 128, 64, 256
    decode = mixer_cost(m2, batch=1, new=1, past=100).flops
    assert decode == 2 * 4 * 10240 + h * (5 * n * p + p)
    prefill = mixer_cost(m2, batch=1, new=1024, past=0)
    assert prefill.flops == pytest.approx(1024 * (2 * 4 * 10240 + h * (2 * q * (n + p) + 4 * n * p + 2 * n * p / q + p)))
    assert prefill.state_bytes == (3 * 10240 + h * p * n) * 2      # written once, nothing to read
    gdn = load_model("Qwen/Qwen3-Next-80B-A3B-Instruct").ssm
    assert mixer_cost(gdn, 1, 1, 5).flops == 2 * 4 * 8192 + 32 * 7 * 128 * 128
    batch = np.array([1, 8, 64])
    assert mixer_cost(gdn, batch, 1, 5).flops.tolist() == (batch * (2 * 4 * 8192 + 32 * 7 * 128 * 128)).tolist()
