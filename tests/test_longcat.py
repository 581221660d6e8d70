"""LongCat-Flash (model/longcat.py): parameters, active parameters, KV and the experts' work by hand.

A tiny config: d = 64, 4 heads, 1 block (= 2 MLA sub-layers), vocab 128, q_lora 32, kv_lora 16,
qk_nope 8, qk_rope 8, v 8, dense MLP 64, E = 4 real experts of 32, Z = 2 identity experts, top 3.
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.model import count_params, kv_bytes_for_context, load_model
from inferbound.model.validate import ConfigError
from inferbound.operators import decode_ops

TINY = dict(model_type="longcat_flash", hidden_size=64, num_attention_heads=4, num_layers=1, vocab_size=128,
            q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8,
            ffn_hidden_size=64, expert_ffn_hidden_size=32, n_routed_experts=4, zero_expert_num=2, moe_topk=3,
            tie_word_embeddings=False, attention_bias=False)

# one MLA sub-layer: q_a 64·32 = 2048, q_a_layernorm 32, q_b 32·4·(8+8) = 2048, kv_a 64·(16+8) = 1536,
# kv_a_layernorm 16, kv_b 16·4·(8+8) = 1024, o 4·8·64 = 2048 -> 8752
MLA = 2048 + 32 + 2048 + 1536 + 16 + 1024 + 2048
EXPERT = 3 * 64 * 32                      # gate, up, down of one real expert: 6144
TOTAL = (2 * MLA                          # two attention sub-layers
         + 2 * 3 * 64 * 64                # mlps[0], mlps[1]: 24576
         + 4 * 64                         # input_layernorm[0,1], post_attention_layernorm[0,1]
         + 4 * EXPERT                     # E = 4 real experts (the identity ones hold nothing)
         + 64 * 6 + 6                     # classifier d·(E + Z), e_score_correction_bias (E + Z)
         + 128 * 64 + 128 * 64 + 64)      # embeddings, untied LM head, final norm


def test_parameters_by_hand():
    assert TOTAL == 83750
    assert count_params(load_model(TINY)).total == TOTAL


def test_pytorch_allocates_gate_up_for_the_identity_experts_too():
    # transformers' gate_up_proj is (E + Z)·2·I·d; the Z slices are never read (model/longcat.py):
    # the state_dict holds Z·2·32·64 = 8192 more than the checkpoint
    torch = pytest.importorskip("torch")
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(**TINY)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    stored = sum(v.numel() for v in model.state_dict().values())
    assert stored == TOTAL + 2 * 2 * 32 * 64


def test_active_parameters_count_the_real_experts_only():
    p = count_params(load_model(TINY))
    # k·E/(E + Z) = 3·4/6 = 2 real experts per token; the input embedding table is a lookup
    assert p.active == TOTAL - 4 * EXPERT + 2 * EXPERT - 128 * 64


def test_published_size_and_active():
    # LongcatFlashConfig's defaults are LongCat-Flash's: 28 blocks, d 6144, 64 heads, vocab 131072.
    # Its report (arXiv:2509.01322) gives 560 B total, 18.6-31.3 B active (0 to 12 real experts).
    m = load_model(dict(model_type="longcat_flash", num_layers=28, hidden_size=6144, num_attention_heads=64,
                        vocab_size=131072, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                        qk_rope_head_dim=64, v_head_dim=128))
    mla = 6144 * 1536 + 1536 + 1536 * 64 * 192 + 6144 * 576 + 512 + 512 * 64 * 256 + 64 * 128 * 6144
    expert = 3 * 6144 * 2048
    fixed = 28 * (2 * mla + 2 * 3 * 6144 * 12288 + 4 * 6144 + 6144 * 768 + 768) + 2 * 131072 * 6144 + 6144
    p = count_params(m)
    assert p.total == fixed + 28 * 512 * expert
    # 8 = 12·512/768 real experts a token: 27.15 B, the report's ~27 B average
    assert p.active == fixed - 131072 * 6144 + 28 * 8 * expert
    assert 27.1e9 < p.active < 27.2e9
    assert any("zero-computation experts" in w for w in m.warnings)


def test_kv_is_two_mla_latents_per_block():
    # 2 sub-layers x (kv_lora 16 + rope 8) values per token, bf16 2 bytes, 100 tokens
    assert kv_bytes_for_context(load_model(TINY), 100, "bf16") == 100 * 2 * (16 + 8) * 2


def test_experts_priced_at_the_real_experts():
    m = load_model(TINY)
    ops = decode_ops(m, Dtypes(), Parallelism(), 10, 100)
    experts = [o for o in ops if o.name == "experts"]
    router = [o for o in ops if o.name == "router"]
    shared = [o for o in ops if o.name == "shared_experts"]
    # 10 tokens x 2 real experts x 2·6144 FLOPs; the router over E + Z: 2·10·(64·6 + 6)
    assert sum(float(np.sum(o.flops)) * o.count for o in experts) == 2 * 10 * 2 * EXPERT
    assert sum(float(np.sum(o.flops)) * o.count for o in router) == 2 * 10 * (64 * 6 + 6)
    # the shortcut's partner mlps[0] runs on every token as the shared expert: 2·10·3·64·64
    assert sum(float(np.sum(o.flops)) * o.count for o in shared) == 2 * 10 * 3 * 64 * 64
    # real experts touched by 10 tokens, each picking a real expert with probability 3/6 per choice:
    # 4·(1 - (1 - 2/4)^10), their weights read once in bf16
    touched = 4 * (1 - (1 - 2 / 4) ** 10)
    assert sum(float(np.sum(o.weight_bytes)) * o.count for o in experts) == pytest.approx(touched * EXPERT * 2)


def test_bad_layer_count_and_top_k_are_one_line():
    with pytest.raises(ConfigError, match="num_hidden_layers=3 is not 2 x num_layers=1"):
        load_model({**TINY, "num_hidden_layers": 3})
    with pytest.raises(ConfigError, match=r"moe_topk=7 exceeds the 4 \+ 2 experts"):
        load_model({**TINY, "moe_topk": 7})
