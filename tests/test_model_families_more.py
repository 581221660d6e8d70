"""Hand-computed parameter counts of the MoE families read in model/moe_more.py (transformers 5.24.0
modeling files named there); tests/test_transformers_wide.py checks the same families against PyTorch."""
from __future__ import annotations

from inferbound.model import count_params, load_model
from inferbound.model.kv import kv_bytes_for_context, kv_bytes_per_token

# d = 64, 4 query heads, 2 KV heads of head_dim 16, V = 128, untied:
# attention q 64·64 + k 64·32 + v 64·32 + o 64·64 = 12288; one RMSNorm 64;
# embeddings 128·64 = 8192 + lm_head 8192 + final norm 64 = 16448
TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
            tie_word_embeddings=False, num_experts_per_tok=2, moe_intermediate_size=32)


def test_solar_open_every_layer_sparse():
    m = load_model({"model_type": "solar_open", **TINY, "num_hidden_layers": 1, "n_routed_experts": 4,
                    "n_shared_experts": 1})
    # experts 4 · 3·64·32 = 24576; shared MLP 3·64·32 = 6144; router 64·4 + e_score_correction_bias 4 = 260;
    # 2 norms 128 -> layer 12288 + 24576 + 6144 + 260 + 128 = 43396; + 16448 = 59844
    assert count_params(m).total == 59844
    assert all(g.moe for g in m.layers)


def test_hy_v3_one_shared_mlp_of_n_widths_with_bias():
    m = load_model({"model_type": "hy_v3", **TINY, "num_hidden_layers": 2, "intermediate_size": 128,
                    "mlp_layer_types": ["dense", "sparse"], "num_experts": 4, "num_shared_experts": 2,
                    "mlp_bias": True, "attention_bias": False})
    # both layers: attention 12288 + q/k norms 2·16 = 32, 2 norms 128
    # layer 0 dense: 3·64·128 = 24576 + biases 2·128 + 64 = 320 -> 12288 + 32 + 24896 + 128 = 37344
    # layer 1: experts 4·6144 = 24576 (no bias); ONE shared MLP of 2·32 = 64: 3·64·64 = 12288 + biases
    # 2·64 + 64 = 192 -> 12480; router 256 + 4 -> 12320 + 24576 + 12480 + 260 + 128 = 49764
    # total 37344 + 49764 + 16448 = 103556
    assert count_params(m).total == 103556


def test_kolibri1_four_norms_shared_width_and_windows():
    m = load_model({"model_type": "kolibri1", **TINY, "num_hidden_layers": 5, "num_experts": 4,
                    "shared_expert_intermediate_size": 16, "sliding_window": 8})
    # per layer: attention 12288 + q/k norms 32 + experts 24576 + shared 3·64·16 = 3072 + router 260
    # + 4 norms 256 = 40484; 5 layers 202420 + 16448 = 218868
    assert count_params(m).total == 218868
    # layer_types absent: layer i full where (i+1) % 5 == 0 -> layers 0..3 slide over 8 tokens, layer 4 full
    assert [(g.attention, g.window, g.count) for g in m.layers] == [("window", 8, 4), ("full", None, 1)]
    # KV per layer per token 2·2·16 = 64 values, bf16 2 bytes -> 128 B; at 100 tokens:
    # 4 window layers · 8 tokens · 128 + 1 full layer · 100 · 128 = 4096 + 12800 = 16896 B
    assert kv_bytes_for_context(m, 100) == 16896


def test_flint_sinks_mlp_only_layers_and_ungated_shared_expert():
    m = load_model({"model_type": "flint", **TINY, "num_hidden_layers": 3, "intermediate_size": 128,
                    "num_experts": 4, "shared_expert_intermediate_size": 16, "sliding_window": 8})
    # mlp_only_layers absent = [0, 1]; layer_types absent: i < 2 or i % 4 == 1 or the last -> all 3 full
    # dense layer: 12288 + sinks 4 + q/k norms 32 + 24576 + 128 = 37028 (x2 = 74056)
    # MoE layer: 12288 + 4 + 32 + experts 24576 + shared 3072 (no gate) + router 256 + 128 = 40356
    # total 74056 + 40356 + 16448 = 130860
    assert count_params(m).total == 130860
    # 3 full layers · 2 (K, V) · 2 heads · 16 · 2 bytes = 384 B per token
    assert kv_bytes_per_token(m) == 384


def test_axk1_post_mlp_norm_in_moe_layers_only():
    mla = dict(kv_lora_rank=16, q_lora_rank=None, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
               n_routed_experts=4, n_shared_experts=1, intermediate_size=128, num_hidden_layers=3)
    axk1 = load_model({"model_type": "axk1", **TINY, **mla, "first_k_dense_replace": 1, "moe_layer_freq": 2})
    v3 = load_model({"model_type": "deepseek_v3", **TINY, **mla, "num_nextn_predict_layers": 0,
                     "mlp_layer_types": ["dense", "dense", "sparse"]})
    # Axk1Config: layer i sparse where i >= 1 and i % 2 == 0 -> only layer 2; the same modules as
    # DeepSeek-V3 plus post_mlp_layernorm (64) in that one MoE layer
    assert [g.moe for g in axk1.layers for _ in range(g.count)] == [False, False, True]
    assert count_params(axk1).total == count_params(v3).total + 64


# ---------------------------------------------------------------------- LFM2: short-convolution layers
LFM2_TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
                 tie_word_embeddings=True, conv_L_cache=3)


def test_lfm2_short_conv_layer_mlp_rule_and_state_by_hand():
    from inferbound.model import state_bytes_per_sequence
    raw = {"model_type": "lfm2", **LFM2_TINY, "num_hidden_layers": 2, "layer_types": ["conv", "full_attention"],
           "intermediate_size": 96, "block_multiple_of": 32, "block_ffn_dim_multiplier": 1.0}
    m = load_model(raw)
    # MLP width: int(2·96/3) = 64, int(1.0·64) = 64, rounded up to a multiple of 32: 64 -> 3·64·64 = 12288
    # conv layer: in_proj 3·64·64 = 12288 + conv 64·3 = 192 + out_proj 64·64 = 4096 = 16576; + MLP + 2 norms 128
    # = 28992; attention layer: 12288 + q/k norms 32 + 12288 + 128 = 24736; tied embeddings 8192 +
    # embedding_norm 64 -> 28992 + 24736 + 8192 + 64 = 61984
    assert count_params(m).total == 61984
    # state: one conv layer, the last K - 1 = 2 columns of 64 channels = 128 values, bf16 -> 256 bytes
    assert state_bytes_per_sequence(m) == 256
    # KV: one attention layer, 2 (K, V) · 2 heads · 16 · 2 bytes = 128 B per token
    assert kv_bytes_per_token(m) == 128
    # conv_bias: in_proj 3·64 + conv 64 + out_proj 64 = 320 more
    assert count_params(load_model({**raw, "conv_bias": True})).total == 61984 + 320
    # multiplier 1.3: int(1.3·64) = 83, rounded up to 96 -> MLP 3·64·96 = 18432 in both layers (+6144 each)
    assert count_params(load_model({**raw, "block_ffn_dim_multiplier": 1.3})).total == 61984 + 2 * 6144


def test_lfm2_moe_dense_prefix_and_expert_bias_by_hand():
    m = load_model({"model_type": "lfm2_moe", **LFM2_TINY, "num_hidden_layers": 3,
                    "layer_types": ["conv", "full_attention", "conv"], "num_dense_layers": 1,
                    "intermediate_size": 128, "num_experts": 4, "num_experts_per_tok": 2,
                    "moe_intermediate_size": 32, "use_expert_bias": True})
    # layer 0 (conv, dense MLP of 128, no 2/3 rule in LFM2-MoE): 16576 + 3·64·128 = 24576 + 128 = 41280
    # layer 1 (attention, MoE): 12288 + 32 + experts 4·3·64·32 = 24576 + router 256 + expert_bias 4 + 128 = 37284
    # layer 2 (conv, MoE): 16576 + 24576 + 260 + 128 = 41540; + 8192 + 64 -> 128360
    assert count_params(m).total == 128360
    assert [g.moe for g in m.layers for _ in range(g.count)] == [False, True, True]


def test_apertus_xielu_scalars_by_hand():
    raw = {"model_type": "apertus", **TINY, "num_hidden_layers": 2, "intermediate_size": 128}
    m = load_model(raw)
    # per layer: attention 12288 + q/k norms 2·16 = 32 + up/down 2·64·128 = 16384 + xIELU alpha_p, alpha_n,
    # beta, eps 4 + 2 norms 128 = 28836; 2 layers 57672 + 16448 = 74120
    assert count_params(m).total == 74120
    # another activation stores no scalars: 8 fewer
    assert count_params(load_model({**raw, "hidden_act": "silu"})).total == 74120 - 8


def test_cohere2_moe_dense_prefix_shared_experts_and_derived_layouts():
    m = load_model({"model_type": "cohere2_moe", **TINY, "num_hidden_layers": 2, "first_k_dense_replace": 1,
                    "intermediate_size": 32, "prefix_dense_intermediate_size": 128, "num_experts": 4,
                    "num_shared_experts": 2, "sliding_window": 8})
    # derived: layer 0 dense, prefix pattern 1 -> (0 + 1) % 1 == 0 -> full; layer 1 sparse, pattern 4 ->
    # (0 + 1) % 4 != 0 -> a window of 8
    assert [(g.attention, g.window, g.moe) for g in m.layers] == [("full", None, False), ("window", 8, True)]
    # layer 0: attention 12288 + MLP 3·64·128 = 24576 + one norm 64 = 36928
    # layer 1: 12288 + experts 4·3·64·32 = 24576 + ONE shared MLP of 2·32: 3·64·64 = 12288 + router 64·4 = 256
    # + 64 = 49472; total 36928 + 49472 + 16448 = 102848
    assert count_params(m).total == 102848


def test_beam_gated_attention_with_head_bias_and_derived_layouts():
    m = load_model({"model_type": "beam", **TINY, "num_hidden_layers": 4, "intermediate_size": 128,
                    "num_experts": 4, "sliding_window": 8})
    # derived: windows except every 6th and the last layer; the first min(3, 4) = 3 layers dense
    assert [(g.attention, g.moe, g.count) for g in m.layers] == [("window", False, 3), ("full", True, 1)]
    # attention 12288 + gate_proj 64·64 = 4096 + gate_bias 4 + q/k norms 32 = 16420; 4 norms 256
    # dense layer 16420 + 24576 + 256 = 41252 (x3 = 123756); MoE layer 16420 + experts 24576 + router
    # 256 + e_score_correction_bias 4 + 256 = 41512; total 123756 + 41512 + 16448 = 181716
    assert count_params(m).total == 181716


def test_laguna_per_head_gate_and_its_per_element_form():
    raw = {"model_type": "laguna", **TINY, "num_hidden_layers": 2, "intermediate_size": 128, "num_experts": 4,
           "shared_expert_intermediate_size": 16, "gating": True}
    # attention 12288 + q/k norms 32 + g_proj 64·4 = 256 -> 12576; 2 norms 128
    # layer 0 (dense, derived): 12576 + 24576 + 128 = 37280; layer 1: 12576 + experts 24576 + shared
    # 3·64·16 = 3072 + router 256 + e_score_correction_bias 4 + 128 = 40612; total 77892 + 16448 = 94340
    assert count_params(load_model(raw)).total == 94340
    # gating false: g_proj 64·(4·16) = 4096 instead of 256, in both layers: + 2·3840
    assert count_params(load_model({**raw, "gating": False})).total == 94340 + 2 * 3840


def test_layouts_not_counted_are_refused_in_one_line():
    import pytest
    from inferbound.model.validate import ConfigError
    cases = [({"model_type": "laguna", **TINY, "num_hidden_layers": 2, "intermediate_size": 128, "num_experts": 4,
               "num_attention_heads_per_layer": [4, 8]}, "num_attention_heads_per_layer"),
             ({"model_type": "beam", **TINY, "num_hidden_layers": 2, "intermediate_size": 128, "num_experts": 4,
               "attention_bias": True}, "attention_bias"),
             ({"model_type": "lfm2_moe", **LFM2_TINY, "num_hidden_layers": 2, "intermediate_size": 128,
               "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}, "layer_types")]
    for raw, field in cases:
        with pytest.raises(ConfigError) as e:
            load_model(raw)
        assert "\n" not in str(e.value) and field in str(e.value)


def test_glm_moe_dsa_is_deepseek_v32_layout_and_refuses_shared_indexers():
    import pytest
    from inferbound.model.validate import ConfigError
    keys = dict(TINY, num_hidden_layers=2, kv_lora_rank=16, q_lora_rank=32, qk_nope_head_dim=16,
                qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=4, n_shared_experts=1, intermediate_size=128,
                first_k_dense_replace=1, index_n_heads=2, index_head_dim=16, index_topk=8,
                num_nextn_predict_layers=0)
    glm = load_model({"model_type": "glm_moe_dsa", **keys})
    v32 = load_model({"model_type": "deepseek_v32", **keys})
    # the same modules (GlmMoeDsa* mirror DeepseekV32*): one DSA indexer per layer, wq_b 32·2·16 = 1024 +
    # wk 64·16 = 1024 + k_norm 2·16 = 32 + weights_proj 64·2 = 128 = 2208 per layer
    assert count_params(glm).total == count_params(v32).total
    assert glm.indexer.n_heads == 2 and glm.indexer.head_dim == 16
    with pytest.raises(ConfigError) as e:  # freq 2, offset 2: layer 2 has max(2 - 2 + 1, 0) % 2 = 1: 'shared'
        load_model({"model_type": "glm_moe_dsa", **keys, "num_hidden_layers": 3, "index_topk_freq": 2})
    assert "index_topk_freq" in str(e.value) and "shared" in str(e.value)


def test_olmo_hybrid_deltanet_defaults_and_state_by_hand():
    from inferbound.model import state_bytes_per_sequence
    m = load_model({"model_type": "olmo_hybrid", **TINY, "num_hidden_layers": 4, "intermediate_size": 128})
    # layer_types absent: layer 3 (i % 4 == 3) full attention, layers 0-2 Gated DeltaNet with Hk = Hv = 4 heads,
    # Dk = int(0.75·64/4) = 12, Dv = 24 -> Kd = 48, Vd = 96; K = 4 (class default)
    # DeltaNet: q, k, v, g 64·(2·48 + 2·96) = 18432 + a, b 64·2·4 = 512 + conv (2·48 + 96)·4 = 768 + A_log,
    # dt_bias 8 + o_norm 24 + o_proj 96·64 = 6144 -> 25888; + MLP 3·64·128 = 24576 + 2 norms 128 = 50592 (x3)
    # attention layer: 12288 + q_norm 4·16 + k_norm 2·16 = 96 + 24576 + 128 = 37088
    # total 3·50592 + 37088 + 16448 = 205312
    assert count_params(m).total == 205312
    # state per DeltaNet layer: conv (4 - 1)·192 = 576 + Hv·Dk·Dv = 4·12·24 = 1152 -> 1728 values; 3 layers
    # at bf16: 3·1728·2 = 10368 bytes
    assert state_bytes_per_sequence(m) == 10368
    assert kv_bytes_per_token(m) == 2 * 2 * 16 * 2  # one attention layer


def test_lara_mini_pattern_windows_and_ungated_shared_expert_by_hand():
    m = load_model({"model_type": "lara_mini", **TINY, "num_hidden_layers": 5, "num_experts": 4,
                    "shared_expert_intermediate_size": 16, "sliding_window": 8, "linear_num_key_heads": 2,
                    "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
                    "linear_conv_kernel_dim": 4})
    # pattern: linear, sliding, linear, full, sliding; Kd = 2·16 = 32, Vd = 4·16 = 64, Hv = 4
    # DeltaNet: 64·(2·32 + 2·64) = 12288 + 64·2·4 = 512 + conv (2·32 + 64)·4 = 512 + 2·4 + norm 16 + out 64·64
    # = 4096 -> 17432; attention 12288 + q/k norms 32 = 12320
    # every layer: experts 4·6144 = 24576 + shared 3·64·16 = 3072 + router 256 + 2 norms 128 = 28032
    # 2 DeltaNet + 3 attention layers: 2·17432 + 3·12320 + 5·28032 = 34864 + 36960 + 140160 = 211984
    # + 16448 = 228432
    assert count_params(m).total == 228432
    assert [(g.mixer, g.attention, g.window) for g in m.layers] == [
        ("gated_deltanet", "full", None), ("attention", "window", 8), ("gated_deltanet", "full", None),
        ("attention", "full", None), ("attention", "window", 8)]


def test_bailing_hybrid_full_rank_kda_gates_and_gated_mla_by_hand():
    m = load_model({"model_type": "bailing_hybrid", **TINY, "num_hidden_layers": 2, "kv_lora_rank": 16,
                    "q_lora_rank": None, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
                    "linear_num_heads": 4, "linear_head_dim": 16, "linear_conv_kernel_dim": 4,
                    "layer_types": ["linear_attention", "full_attention"], "mlp_layer_types": ["dense", "sparse"],
                    "intermediate_size": 128, "num_experts": 4, "num_shared_experts": 1})
    # KDA, V = 4·16 = 64: q/k/v 3·64·64 = 12288 + conv 3·64·4 = 768 + f_proj 64·64 = 4096 + dt_bias 64 + A_log 4
    # + b_proj 64·4 = 256 + g_proj 64·64 = 4096 + o_norm 16 + o_proj 64·64 = 4096 -> 25684
    # MLA (q_lora_rank null): q_proj 64·4·24 = 6144 + kv_a 64·24 = 1536 + kv_a norm 16 + kv_b 16·4·32 = 2048
    # + o_proj 4·16·64 = 4096 + g_proj 64·4 = 256 -> 14096
    # layer 0: 25684 + MLP 24576 + 2 norms 128 = 50388; layer 1: 14096 + experts 24576 + shared 6144 + router
    # 256 + e_score_correction_bias 4 + 128 = 45204; untied embeddings 16448 -> 112040
    assert count_params(m).total == 112040
