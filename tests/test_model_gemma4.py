"""Per-layer attention geometry (model/geometry.py): Gemma 4 and MiMo-V2-Flash, by hand and against PyTorch.

Hand computations are written out in each test; the PyTorch comparisons build transformers 5.24.0's model
on the meta device (tests/_meta_count.py) for variants the class defaults leave off (KV sharing,
``attention_k_eq_v`` with fewer global KV heads, double-wide MLPs).
"""
from __future__ import annotations

import pytest
from transformers import AutoConfig

from _meta_count import build_meta, meta_cache, state_dict_count
from inferbound.deploy.config import Parallelism
from inferbound.model import count_params, kv_bytes_for_context, load_model
from inferbound.model.kv import kv_bytes_per_rank, kv_bytes_per_token, kv_values_per_token_layer
from inferbound.model.validate import ConfigError
from inferbound.operators.attention import attention_shape

TINY = dict(model_type="gemma4_text", num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"],
            hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
            intermediate_size=128, vocab_size=128, hidden_size_per_layer_input=8, vocab_size_per_layer_input=32,
            sliding_window=16, tie_word_embeddings=True)


def test_gemma4_parameters_by_hand():
    m = load_model(TINY)
    # layer 0, sliding (head_dim 16, 2 KV heads): q 64·4·16 = 4096, k 64·2·16 = 2048, v 2048, o 64·64 = 4096
    #   -> 12288; q_norm 16 + k_norm 16 (v_norm has no weight) = 32; gated MLP 3·64·128 = 24576; 4 RMSNorms
    #   256; per-layer input gate 64·8 + projection 8·64 + post norm 64 = 1088; layer_scalar 1 -> 38241
    # layer 1, full (global_head_dim 32): q 64·4·32 = 8192, k 64·2·32 = 4096, v 4096, o 128·64 = 8192
    #   -> 24576; norms 32 + 32 = 64; MLP 24576; 4 norms 256; per-layer input 1088; scalar 1 -> 50561
    # model: embeddings 128·64 = 8192 (tied head), final norm 64, embed_tokens_per_layer 32·(2·8) = 512,
    #   per_layer_model_projection 64·16 = 1024, per_layer_projection_norm 8
    assert count_params(m).total == 38241 + 50561 + 8192 + 64 + 512 + 1024 + 8  # 98602
    # the per-layer table is a lookup: not active (like the token table, which is tied here and so active)
    assert count_params(m).active == 98602 - 512


def test_gemma4_tiny_equals_pytorch():
    cfg = AutoConfig.for_model("gemma4_text", **{k: v for k, v in TINY.items() if k != "model_type"})
    assert state_dict_count(build_meta(cfg)) == count_params(load_model(cfg.to_dict())).total == 98602


#: a 12-layer Gemma 4: full attention at 5 and 11 (every 6th), the rest sliding; the full layers with
#: attention_k_eq_v (no v_proj) and 2 global KV heads of 512; the last 4 layers share KV, double-wide MLPs
SHARED = dict(num_hidden_layers=12, hidden_size=256, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
              global_head_dim=512, num_global_key_value_heads=2, attention_k_eq_v=True, num_kv_shared_layers=4,
              use_double_wide_mlp=True, intermediate_size=512, vocab_size=1024, vocab_size_per_layer_input=1024,
              hidden_size_per_layer_input=16, sliding_window=512)


def test_gemma4_kv_by_hand():
    m = load_model({"model_type": "gemma4_text", **SHARED})
    # layers 8-11 reuse the caches of layers 7 (sliding) and 5 (full): they cache nothing. Caching layers:
    # 7 sliding (0-4, 6, 7) × K and V × 4 KV heads × 256 × 2 bytes (bf16) = 7 × 4096 = 28672 and
    # 1 full (5) × 2 × 2 global KV heads × 512 × 2 bytes = 4096 (k_eq_v: the values are the keys' projection,
    # normed apart, and cached beside them)
    assert kv_bytes_per_token(m, "bf16") == 7 * 2 * 4 * 256 * 2 + 1 * 2 * 2 * 512 * 2 == 32768
    # 10,000 tokens: the sliding layers hold their 512-token window, the full layer every token
    assert kv_bytes_for_context(m, 10_000, "bf16") == 7 * 4096 * 512 + 1 * 4096 * 10_000 == 55_640_064
    # TP 4: the sliding layers' 4 KV heads split 4 ways, the full layer's 2 only 2 ways (replicated past 2)
    assert kv_bytes_per_rank(m, 10_000, "bf16", 4) == 7 * 4096 * 512 / 4 + 4096 * 10_000 / 2


def test_gemma4_sharing_and_k_eq_v_equal_pytorch():
    cfg = AutoConfig.for_model("gemma4_text", **SHARED)
    model, m = build_meta(cfg), load_model(cfg.to_dict())
    assert count_params(m).total == state_dict_count(model)
    hf = meta_cache(model)  # 12 tokens, within every window: every caching layer holds all 12
    assert hf.kv == kv_bytes_for_context(m, 12, "fp32") / 4 == 12 * (7 * 2 * 4 * 256 + 2 * 2 * 512)
    assert hf.window_layers == 7


def test_gemma4_global_head_dim_from_the_class_default_is_said():
    raw = {k: v for k, v in TINY.items() if k != "global_head_dim"}
    m = load_model(raw)
    assert any("global_head_dim absent" in w and "512" in w for w in m.warnings)


@pytest.mark.parametrize("bad, field", [
    ({"enable_moe_block": True, "num_experts": 1, "top_k_experts": 1, "moe_intermediate_size": 8}, "num_experts"),
    ({"per_layer_config": {"1": {"head_dim": 32, "intermediate_size": 64}}}, "per_layer_config.1.intermediate_size"),
    ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention"),
    ({"num_kv_shared_layers": 1}, "num_kv_shared_layers"),  # layer 1, the only full layer, would share
])
def test_gemma4_refusals_name_the_field(bad, field):
    with pytest.raises(ConfigError) as e:
        load_model({**TINY, **bad})
    assert f"{field}=" in str(e.value) and "\n" not in str(e.value)




def test_mimo_kv_by_hand():
    m = load_model(AutoConfig.for_model("mimo_v2_flash").to_dict())
    # 48 layers: full attention at layer 0 and every 6th (5, 11, ..., 47): 9 full, 39 sliding (window 129);
    # K of head_dim 192 and V of v_head_dim 128; full layers 4 KV heads, sliding layers 2 × 4 = 8
    assert kv_values_per_token_layer(m, m.layers[0]) == 4 * (192 + 128) == 1280
    assert kv_bytes_per_token(m, "bf16") == (9 * 1280 + 39 * 8 * 320) * 2 == 222_720
    assert kv_bytes_for_context(m, 10_000, "bf16") == 9 * 1280 * 2 * 10_000 + 39 * 2560 * 2 * 129 == 256_158_720


def test_mimo_attention_shape_of_each_group():
    m = load_model(AutoConfig.for_model("mimo_v2_flash").to_dict())
    full = next(g for g in m.layers if g.attention == "full")
    slide = next(g for g in m.layers if g.attention == "window")
    par = Parallelism(tp=8)
    # (heads per GPU, d_qk, d_v decode, d_qk, d_v prefill, cached values per token on a GPU, output width)
    # full: 64/8 heads, KV heads 4 < tp 8 so each GPU keeps one (replicated): 1·(192 + 128)
    assert attention_shape(m, par, full) == (8.0, 192, 128, 192, 128, 320.0, 64 * 128)
    # sliding: 8 KV heads over 8 GPUs: one each
    assert attention_shape(m, par, slide) == (8.0, 192, 128, 192, 128, 320.0, 64 * 128)
    assert attention_shape(m, Parallelism(tp=1), slide)[5] == 8 * 320


MOE = dict(num_hidden_layers=6, hidden_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
           global_head_dim=64, intermediate_size=256, vocab_size=512, hidden_size_per_layer_input=0,
           enable_moe_block=True, num_experts=8, top_k_experts=2, moe_intermediate_size=64)


def test_gemma4_moe_block_by_hand_and_against_pytorch():
    m = load_model({"model_type": "gemma4_text", **MOE})
    # per layer beside attention: the dense MLP 3·128·256 = 98304 (always on: a shared expert), experts
    # 8 × 3·128·64 = 196608, router proj 128·8 = 1024 + scale 128 + per_expert_scale 8 = 1160,
    # 4 + 3 RMSNorms 7·128 = 896; 2 of 8 experts active: 2 × 24576 = 49152
    pc = count_params(m)
    assert (pc.shared_experts, pc.routed_experts, pc.router) == (6 * 98304, 6 * 196608, 6 * 1160)
    assert pc.active_routed == 6 * 49152
    cfg = AutoConfig.for_model("gemma4_text", **MOE)
    assert pc.total == state_dict_count(build_meta(cfg))
