"""The decoders of model/decoders_own.py (CTRL, XGLM, BioGPT, GPT-NeoX-Japanese, ModernBERT-decoder), counted
by hand on small configs from the module shapes of transformers 5.24.0's modeling files. The class defaults,
every boolean switch flipped, are compared with PyTorch on the meta device in tests/test_transformers_wide.py."""
from __future__ import annotations

import pytest

from inferbound.model import count_params, kv_bytes_for_context, load_model
from inferbound.model.validate import ConfigError

SMALL = dict(vocab_size=128)


def test_ctrl_by_hand():
    m = load_model({"model_type": "ctrl", "n_layer": 2, "n_embd": 64, "n_head": 4, "dff": 128, **SMALL})
    # per layer: Wq, Wk, Wv, dense 4·(64·64 + 64) = 16640; ffn 64·128 + 128 + 128·64 + 64 = 16576;
    # 2 LayerNorms 2·2·64 = 256 -> 33472; 2 layers 66944; w (tied to lm_head) 128·64 = 8192;
    # lm_head bias 128; final LayerNorm 128; sinusoidal positions store nothing -> 75392
    assert count_params(m).total == 75392


XGLM = {"model_type": "xglm", "num_layers": 2, "d_model": 64, "attention_heads": 4, "ffn_dim": 128, **SMALL}


def test_xglm_by_hand():
    # per layer as CTRL's 33472 (q/k/v/out with biases, fc1/fc2 with biases, 2 LayerNorms) -> 66944;
    # embed_tokens (tied) 8192; final layer_norm 128; no lm_head bias -> 75264
    assert count_params(load_model(XGLM)).total == 75264
    # add_cross_attention: encoder_attn 4·(64·64 + 64) = 16640 and its LayerNorm 128 per layer: + 2·16768
    cross = load_model({**XGLM, "add_cross_attention": True})
    assert count_params(cross).total == 75264 + 2 * 16768
    # stored, but run only with encoder states: no cache of its own (12 tokens · 2 layers · 2·64 values · 2 bytes)
    assert kv_bytes_for_context(cross, 12) == 12 * 2 * 128 * 2


def test_biogpt_learned_positions_at_an_offset_by_hand():
    m = load_model({"model_type": "biogpt", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "intermediate_size": 128, "max_position_embeddings": 64, **SMALL})
    # layers 66944 (XGLM's block); embed_tokens (tied to output_projection) 8192; embed_positions
    # (64 + 2 offset rows)·64 = 4224; final layer_norm 128 -> 79488
    assert count_params(m).total == 79488


def test_gpt_neox_japanese_last_layer_bias_by_hand():
    m = load_model({"model_type": "gpt_neox_japanese", "num_hidden_layers": 2, "hidden_size": 64,
                    "num_attention_heads": 4, "intermediate_multiple_size": 2, **SMALL})
    # per layer: query_key_value 64·192 = 12288, dense 64·64 = 4096 (no biases); MLP int(64·2) = 128 wide,
    # 2·64·128 = 16384 (no biases); 2 LayerNorms 256 -> 33024; 2 layers 66048; the last layer's
    # dense_bias 64; embed_in (tied to embed_out) 8192; final_layer_norm 128 -> 74432
    assert count_params(m).total == 74432
    assert m.intermediate_size == 128


def test_gpt_neox_japanese_refuses_an_empty_mlp():
    with pytest.raises(ConfigError, match="intermediate_multiple_size=0.001 gives an MLP width"):
        load_model({"model_type": "gpt_neox_japanese", "num_hidden_layers": 2, "hidden_size": 64,
                    "num_attention_heads": 4, "intermediate_multiple_size": 0.001, **SMALL})


MBD = {"model_type": "modernbert-decoder", "num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
       "intermediate_size": 128, "local_attention": 16, **SMALL}


def test_modernbert_decoder_by_hand():
    m = load_model(MBD)
    # per layer: q, k, v, Wo 4·64·64 = 16384; GeGLU Wi 64·256 = 16384 + Wo 128·64 = 8192 (no biases) -> 40960;
    # 3 layers 122880; bias-free LayerNorms of 64: layer 0 mlp_norm only (its attn_norm is an Identity),
    # layers 1-2 attn_norm + mlp_norm -> 64 + 128 + 128 = 320; embeddings 128·64 = 8192 + their norm 64;
    # final_norm 64; prediction head dense 64·64 = 4096 + norm 64; decoder tied, bias 128 -> 135808
    assert count_params(m).total == 135808
    # classifier_bias adds the head dense's bias (64); norm_bias a bias of 64 to each of the 8 LayerNorms
    # (embeddings 1, layers 1 + 2 + 2, final 1, head 1)
    assert count_params(load_model({**MBD, "classifier_bias": True})).total == 135808 + 64
    assert count_params(load_model({**MBD, "norm_bias": True})).total == 135808 + 8 * 64


def test_modernbert_decoder_windows_by_hand():
    m = load_model(MBD)
    # no layer_types: every 3rd layer global from layer 0 (global_attn_every_n_layers 3), the others slide
    # over local_attention // 2 = 8 tokens; at 100 tokens, 2·4·16 = 128 values per token and layer:
    # 128·(100 + 8 + 8) values, bf16 -> 2 bytes each
    assert kv_bytes_for_context(m, 100) == 128 * (100 + 8 + 8) * 2
    assert m.attention_type == "MHA (2/3 local)"
