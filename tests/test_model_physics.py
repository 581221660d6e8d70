"""New physics priced exactly: sparse attention (DeepSeek-V3.2's DSA indexer), Gated DeltaNet hybrids
beyond Qwen3-Next (Qwen3.5 dense and MoE), MiniMax's lightning attention (and MiniMax-M2, which has none),
RWKV-4's recurrent state, Kimi-Linear's Kimi Delta Attention beside MLA,
Gemma 3n's per-layer KV sharing (and its AltUp, LAuReL and per-layer embeddings).

For each family: the parameter count against PyTorch on the meta device (transformers 5.24), the cache a
real tiny forward holds (tests/test_model_exact.py's helpers), and the hand formula written out here.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.deploy.memory_terms import weight_bytes_per_gpu
from inferbound.model import count_params, kv_bytes_for_context, kv_bytes_per_token, load_model, state_bytes_per_sequence
from inferbound.model.kv import kv_values_per_token_layer
from inferbound.operators import decode_ops, prefill_ops
from test_model_exact import L, hf_config, real_cache, torch_count

CONFIGS = Path(__file__).parent / "data" / "configs"


def exact(model_type: str, **keys) -> tuple[int, int]:
    """(inferbound's total, PyTorch's) for a config class's defaults plus ``keys``, every field explicit."""
    cfg = AutoConfig.for_model(model_type, **keys)
    return count_params(load_model(cfg.to_dict())).total, torch_count(cfg)


def forward_cache(raw: dict):
    """The cache object of one L-token forward of the tiny model ``raw`` (fp32)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(hf_config(raw)).eval()
        with torch.no_grad():
            return model(torch.randint(0, 128, (1, L)), use_cache=True).past_key_values


def op(ops, name):
    """The operator ``name`` of one layer (every layer group of these models prices it alike: checked)."""
    found = [x for x in ops if x.name == name]
    assert len({(float(np.asarray(x.flops)), float(np.asarray(x.kv_bytes))) for x in found}) == 1
    return found[0]


# ---------------------------------------------------------------------- parameters against PyTorch
CLASS_CASES = [
    ("qwen3_5", {}),                       # the multimodal wrapper: its language model
    ("qwen3_5_text", {}),
    ("qwen3_5_text", dict(full_attention_interval=3, num_hidden_layers=9, attention_bias=True)),
    ("qwen3_5_moe", {}),
    ("qwen3_5_moe_text", dict(num_hidden_layers=8, tie_word_embeddings=True)),
    ("deepseek_v32", {}),                  # the class defaults are DeepSeek-V3.2's sizes
    ("deepseek_v32", dict(num_hidden_layers=5, attention_bias=True, index_n_heads=32, index_head_dim=64)),
    ("deepseek_v32", dict(num_hidden_layers=4, mlp_layer_types=["dense", "sparse", "dense", "sparse"])),
    ("minimax", {}),                       # lightning attention on odd layers, softmax on even ones
    ("minimax", dict(num_hidden_layers=8, block_size=64, sliding_window=1024, head_dim=64)),
    ("minimax_m2", {}),                    # full attention only, q/k norms over all heads
    ("rwkv", {}),
    ("kimi_linear", {}),                   # KDA + MLA every 4th layer
    ("gemma3n_text", {}),                  # google/gemma-3n-E4B's sizes: 15 of 35 layers share KV
    ("gemma3n_text", dict(num_hidden_layers=10, num_kv_shared_layers=4, hidden_size=512, intermediate_size=[1024] * 10,
                          altup_num_inputs=3, laurel_rank=16, vocab_size_per_layer_input=1000, vocab_size=1200)),
    ("gemma3n_text", dict(num_hidden_layers=6, num_kv_shared_layers=0, hidden_size=256, attention_bias=True,
                          tie_word_embeddings=False)),
    ("kimi_linear", dict(q_lora_rank=256, attention_bias=True, num_hidden_layers=6, first_k_dense_replace=2)),
    ("kimi_linear", dict(num_hidden_layers=5, tie_word_embeddings=True)),   # never tied (_tied_weights_keys = {})
    ("rwkv", dict(num_hidden_layers=3, intermediate_size=1000, tie_word_embeddings=True)),
]


@pytest.mark.parametrize("model_type, keys", CLASS_CASES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CLASS_CASES)])
def test_params_match_pytorch(model_type, keys):
    ours, theirs = exact(model_type, **keys)
    assert ours == theirs


PHYSICS_FILES = ["deepseek-v3.2-shape.json", "qwen3.5-shape.json", "qwen3.5-moe-shape.json",
                 "minimax-text-01-shape.json", "minimax-m2-shape.json", "rwkv-4-shape.json", "kimi-linear-shape.json",
                 "gemma-3n-shape.json"]


@pytest.mark.parametrize("name", PHYSICS_FILES)
def test_shipped_shape_configs_match_pytorch(name):
    raw = json.loads((CONFIGS / name).read_text())   # keys left out: the loader applies the class defaults
    assert count_params(load_model(raw)).total == torch_count(hf_config(raw))


# ---------------------------------------------------------------------- DeepSeek-V3.2: the DSA indexer
DSV32 = dict(model_type="deepseek_v32", num_hidden_layers=2, hidden_size=64, intermediate_size=128, vocab_size=128,
             num_attention_heads=4, num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=16, qk_nope_head_dim=8,
             qk_rope_head_dim=4, v_head_dim=8, n_routed_experts=4, moe_intermediate_size=16, first_k_dense_replace=1,
             num_experts_per_tok=2, n_group=1, topk_group=1, index_n_heads=2, index_head_dim=8, index_topk=4)


def test_indexer_parameters_by_hand():
    m = load_model(DSV32)
    as_v3 = load_model({**DSV32, "model_type": "deepseek_v3"})   # the same MLA + MoE without the indexer
    # per layer: wq_b q_lora 16 x (2 heads x 8) = 256, wk d 64 x 8 = 512, k_norm LayerNorm 2 x 8 = 16,
    # weights_proj 64 x 2 = 128: 912; 2 layers
    assert count_params(m).attention - count_params(as_v3).attention == 2 * (256 + 512 + 16 + 128)
    assert m.attention_type == "MLA, sparse top-4"


def test_indexer_cache_against_a_real_forward():
    m = load_model(DSV32)
    cache = forward_cache(DSV32)
    assert len(cache.layers) == m.num_attention_layers == 2
    for layer in cache.layers:
        # transformers caches the MLA latent (keys: kv_lora_rank 16, values: rope 4) and the indexer key
        assert layer.keys.shape[-2] == L and layer.indexer_keys.shape[-2] == L
        assert layer.keys.shape[-1] + layer.values.shape[-1] == kv_values_per_token_layer(m) == 16 + 4
        assert layer.indexer_keys.shape[-1] == m.indexer.head_dim == 8
    # engines keep the indexer key in fp8 with one fp32 scale per 128 values (reference k_cache +
    # k_scale_cache): 8 x 1 + ceil(8/128) x 4 = 12 bytes per token and layer, whatever the KV dtype
    assert kv_bytes_per_token(m, "bf16") == 2 * ((16 + 4) * 2 + 12)
    assert kv_bytes_per_token(m, "fp8") == 2 * ((16 + 4) * 1 + 12)
    assert kv_bytes_for_context(m, 1000, "bf16") == 1000 * 2 * (20 * 2 + 12)   # the cache holds every token
    assert real_cache(DSV32)["full"] == 2 * L * (16 + 4) * 4   # the latent part, fp32, as the helper sums it


def test_deepseek_v32_published_sizes_cache_132_bytes_of_index_key_per_token():
    m = load_model(AutoConfig.for_model("deepseek_v32").to_dict())
    # index_head_dim 128: 128 fp8 values + 1 fp32 scale = 132 bytes; latent 512 + 64 at bf16; 61 layers
    assert kv_bytes_per_token(m, "bf16") == 61 * ((512 + 64) * 2 + 132)


BIG = dict(DSV32, hidden_size=512, num_attention_heads=8, num_key_value_heads=8, q_lora_rank=64, kv_lora_rank=64,
           qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, index_n_heads=8, index_head_dim=64, index_topk=256)


def test_decode_attention_is_bounded_by_top_k_and_the_indexer_grows_with_context():
    m = load_model(BIG)
    dt, par = Dtypes(), Parallelism()
    a, b = decode_ops(m, dt, par, 4, 1000), decode_ops(m, dt, par, 4, 2000)
    # MLA attends to the top 256 tokens: absorbed decode 2·h·(d_qk + d_v) = 2·8·((64 + 16) + 64) per pair,
    # 4 sequences x 256 pairs, whatever the context beyond 256; it reads 256 latents of (64 + 16) bf16
    for ops in (a, b):
        att = op(ops, "attention")
        assert float(att.flops) == 2 * 8 * (80 + 64) * 4 * 256
        assert float(att.kv_bytes) == 4 * 256 * 80 * 2
    # the indexer scores all 1001 (then 2001) visible tokens: 2·H_i·D_i + 2·H_i = 2·8·64 + 16 FLOPs per
    # pair, and reads each token's index key of 64 fp8 values + 1 fp32 scale
    for ops, seen in ((a, 1001), (b, 2001)):
        ix = op(ops, "indexer")
        assert float(ix.flops) == 4 * seen * (2 * 8 * 64 + 2 * 8)
        assert float(ix.kv_bytes) == 4 * seen * (64 + 4)
        assert ix.dtype == "fp8"


def test_prefill_pairs_sparse_for_attention_full_for_the_indexer():
    m = load_model(BIG)
    ops = prefill_ops(m, Dtypes(), Parallelism(tp=2), 1, 600)
    # causal pairs of a 600-token prompt: 600·601/2 = 180300 for the indexer; MLA sees min(t, 256):
    # Σ_{t<=256} t + (600 − 256)·256 = 32896 + 88064 = 120960 (expanded prefill: d_qk 48, d_v 32, 4 heads/GPU)
    assert float(op(ops, "indexer").flops) == 180300 * (2 * 8 * 64 + 2 * 8) / 2
    assert float(op(ops, "attention").flops) == 2 * 4 * (48 + 32) * 120960


def test_step_order_puts_the_indexer_between_projection_and_attention():
    m = load_model(BIG)
    names = [o.name for o in decode_ops(m, Dtypes(), Parallelism(), 2, 100)]
    i = names.index("attn_qkv")
    assert names[i:i + 3] == ["attn_qkv", "indexer", "attention"]


def test_indexer_needs_the_query_latent():
    with pytest.raises(ValueError, match="q_lora_rank"):
        load_model({**DSV32, "q_lora_rank": None})


# ---------------------------------------------------------------------- Qwen3.5: Gated DeltaNet + gated attention
QWEN35 = dict(model_type="qwen3_5_text", num_hidden_layers=4, hidden_size=64, intermediate_size=128, vocab_size=128,
              num_attention_heads=4, num_key_value_heads=2, head_dim=16, linear_num_key_heads=2,
              linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8)
QWEN35_MOE = dict(QWEN35, model_type="qwen3_5_moe_text", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                  shared_expert_intermediate_size=32)


@pytest.mark.parametrize("raw", [QWEN35, QWEN35_MOE], ids=["dense", "moe"])
def test_qwen3_5_cache_and_state_against_a_real_forward(raw):
    m = load_model(raw)
    hf = real_cache(raw)
    # layers 1-3 Gated DeltaNet, layer 4 full attention (every 4th); KV 2 x 2 heads x 16 per token, fp32
    assert [g.mixer for g in m.layers] == ["gated_deltanet", "attention"]
    assert kv_bytes_for_context(m, L, "fp32") == hf["full"] == L * 2 * 2 * 16 * 4
    # per DeltaNet layer: conv over 2·Kd + Vd = 2·16 + 32 = 64 channels, K = 4 columns (transformers) or 3
    # (engines); recurrent Hv·Dk·Dv = 4·8·8 = 256 values; 3 layers, fp32
    assert state_bytes_per_sequence(m, "fp32", full_conv_window=True) == hf["state"] == 3 * (4 * 64 + 256) * 4
    assert state_bytes_per_sequence(m, "fp32") == 3 * (3 * 64 + 256) * 4


def test_qwen3_5_moe_routes_every_layer_ignoring_sparse_step():
    # Qwen3_5MoeDecoderLayer builds the sparse block in every layer (no decoder_sparse_step / mlp_only_layers)
    m = load_model(QWEN35_MOE)
    assert all(g.moe for g in m.layers) and m.moe.shared_expert_gate


# ---------------------------------------------------------------------- MiniMax: lightning + softmax attention
MINIMAX = dict(model_type="minimax", num_hidden_layers=4, hidden_size=64, intermediate_size=128, vocab_size=128,
               num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
               block_size=8)


def test_lightning_parameters_by_hand():
    m = load_model(MINIMAX)
    # one lightning layer: qkv_proj 64 x 3·64, output_gate 64 x 64, norm 64, out_proj 64 x 64, and the
    # decay buffers transformers keeps in its state dict: slope H 4 + query/key decay 2·4·8 + diagonal 4·8·8
    one = 64 * 192 + 64 * 64 + 64 + 64 * 64 + (4 + 2 * 4 * 8 + 4 * 8 * 8)
    assert count_params(m).ssm == 2 * one
    assert [g.mixer for g in m.layers] == ["attention", "lightning", "attention", "lightning"]


def test_lightning_state_against_a_real_forward():
    m = load_model(MINIMAX)
    cache = forward_cache(MINIMAX)
    states = [t for t in cache.linear_cache if isinstance(t, torch.Tensor)]
    # layers 2 and 4: one H x P x P = 4 x 16 x 16 state each, no convolution, fp32
    assert [tuple(t.shape) for t in states] == [(1, 4, 16, 16)] * 2
    assert state_bytes_per_sequence(m, "fp32", full_conv_window=True) == state_bytes_per_sequence(m, "fp32") \
        == sum(t.numel() * 4 for t in states) == 2 * 4 * 16 * 16 * 4
    # layers 1 and 3 cache K and V of 2 heads x 16 for every token
    assert kv_bytes_for_context(m, L, "fp32") == real_cache(MINIMAX)["full"] == 2 * L * 2 * 2 * 16 * 4


def test_lightning_decode_cost_is_constant_in_context():
    m = load_model(MINIMAX)
    a, b = (op(decode_ops(m, Dtypes(), Parallelism(), 8, ctx), "ssm_scan") for ctx in (100, 100_000))
    # decode per head: S <- λS + kᵀv (3·P²), o = qS (2·P²): 5·16² = 1280, 4 heads, 8 sequences
    assert float(a.flops) == float(b.flops) == 8 * 4 * 5 * 16 * 16
    # the state is read and written once per step: 2 x 4·16·16 values at bf16, 8 sequences
    assert float(a.kv_bytes) == float(b.kv_bytes) == 8 * 2 * 4 * 16 * 16 * 2
    assert op(decode_ops(m, Dtypes(), Parallelism(), 8, 100), "attention").kv_bytes < \
        op(decode_ops(m, Dtypes(), Parallelism(), 8, 100_000), "attention").kv_bytes


def test_minimax_m2_is_full_attention_only():
    m = load_model(AutoConfig.for_model("minimax_m2").to_dict())
    assert m.ssm is None and m.num_attention_layers == m.num_layers == 62 and m.qk_norm == "full"


# ---------------------------------------------------------------------- RWKV-4
RWKV = dict(model_type="rwkv", num_hidden_layers=3, hidden_size=64, vocab_size=128)


def test_rwkv_parameters_by_hand():
    m = load_model(RWKV)
    d, f = 64, 4 * 64
    # time mixing 2d + 3d + 4·d² ; channel mixing 2d + d·f + d² + f·d ; ln1, ln2 2·2d per block; pre_ln 2d,
    # ln_out 2d; embeddings and head 128·d each
    block = 5 * d + 4 * d * d + 2 * d + d * f + d * d + f * d + 4 * d
    assert count_params(m).total == 3 * block + 2 * d + 2 * d + 2 * 128 * d


def test_rwkv_state_against_a_real_forward():
    m = load_model(RWKV)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(hf_config(RWKV)).eval()
        with torch.no_grad():
            state = model(torch.randint(0, 128, (1, L)), use_cache=True).state
    # five tensors of hidden x layers per sequence: two token shifts (model dtype), WKV num/den/max (fp32)
    assert [tuple(s.shape) for s in state] == [(1, 64, 3)] * 5
    assert state_bytes_per_sequence(m, "fp32") == sum(s.numel() * s.element_size() for s in state)
    # at bf16 the shifts halve, the WKV state stays fp32: 3 layers x (2·64·2 + 3·64·4)
    assert state_bytes_per_sequence(m, "bf16") == 3 * (2 * 64 * 2 + 3 * 64 * 4)
    assert kv_bytes_per_token(m) == 0


def test_rwkv_refuses_an_attention_width_transformers_cannot_cache():
    with pytest.raises(ValueError, match="attention_hidden_size=32"):
        load_model({**RWKV, "attention_hidden_size": 32})


# ---------------------------------------------------------------------- Kimi-Linear: KDA + MLA
KIMI = dict(model_type="kimi_linear", num_hidden_layers=5, hidden_size=64, intermediate_size=128, vocab_size=128,
            num_attention_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8,
            moe_intermediate_size=32, num_experts=4, num_experts_per_token=2, linear_num_heads=2, linear_head_dim=8,
            pad_token_id=0, bos_token_id=1, eos_token_id=2)


def test_kda_parameters_by_hand():
    m = load_model(KIMI)
    h, p, d, k = 2, 8, 64, 4
    v = h * p
    # q, k, v 3·d·V; conv 3V·K; forget gate f_a d·P + f_b P·V + dt_bias V + A_log H; b_proj d·H;
    # output gate g_a d·P + g_b P·V; gated norm P; o_proj V·d — 4 KDA layers (layer 5 is MLA: i = 4)
    one = 3 * d * v + 3 * v * k + (d * p + p * v + v + h) + d * h + (d * p + p * v) + p + v * d
    assert count_params(m).ssm == 4 * one
    assert [g.mixer for g in m.layers] == ["kda", "kda", "attention"]


def test_kda_state_and_mla_cache_against_a_real_forward():
    m = load_model(KIMI)
    hf = real_cache(KIMI)
    # per KDA layer: conv over 3V = 48 channels (K = 4 columns in transformers, 3 in engines) + H·P·P = 128
    assert state_bytes_per_sequence(m, "fp32", full_conv_window=True) == hf["state"] == 4 * (4 * 48 + 128) * 4
    assert state_bytes_per_sequence(m, "fp32") == 4 * (3 * 48 + 128) * 4
    # one MLA layer caches the latent 16 + rope 4 per token
    assert kv_bytes_for_context(m, L, "fp32") == hf["full"] == L * 20 * 4


def test_kda_decode_cost_by_hand():
    m = load_model(KIMI)
    scan = op(decode_ops(m, Dtypes(), Parallelism(), 4, 5000), "ssm_scan")
    # decode: conv 2·K per channel (2·4·48) + the delta rule 7·P·P per head (2 heads); 4 sequences
    assert float(scan.flops) == 4 * (2 * 4 * 48 + 2 * 7 * 8 * 8)


# ---------------------------------------------------------------------- Gemma 3n: KV sharing, AltUp, LAuReL
GEMMA3N = dict(model_type="gemma3n_text", num_hidden_layers=10, hidden_size=64, intermediate_size=128, vocab_size=128,
               vocab_size_per_layer_input=96, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
               sliding_window=5, num_kv_shared_layers=4, hidden_size_per_layer_input=8, laurel_rank=4, altup_num_inputs=2)


def test_gemma3n_parameters_by_hand():
    p = count_params(load_model(GEMMA3N))
    d, n, r, q, layers = 64, 2, 4, 8, 10
    # per layer: AltUp d + n² + n³ + d·n + d, LAuReL 2·d·r + d, per-layer input 2·d·q + d
    per_layer = (d + n * n + n ** 3 + d * n + d) + (2 * d * r + d) + (2 * d * q + d)
    # per model: per_layer_model_projection d·L·q + its norm q, (n − 1) AltUp and (n − 1) unembed projections d²
    assert p.layer_extras == layers * per_layer + d * layers * q + q + 2 * (n - 1) * d * d
    assert p.per_layer_embedding == 96 * layers * q          # lookup only: not in the active count
    assert p.total - p.active >= p.per_layer_embedding
    # attention: q 64·64, k and v 64·32 each, o 64·64, q/k norms 16 each; the 4 sharing layers lack k, v, k_norm
    full, shared = 2 * 64 * 64 + 2 * 64 * 32 + 2 * 16, 2 * 64 * 64 + 16
    assert p.attention == 6 * full + 4 * shared


def test_gemma3n_kv_counts_only_the_layers_that_cache():
    m = load_model(GEMMA3N)
    hf = real_cache(GEMMA3N)
    # layer types: every 5th full (layers 5, 10), the rest a 5-token window; layers 7-10 reuse the caches of
    # layer 6 (window) and layer 5 (full): 5 window + 1 full layer cache, 2 KV heads x 16 per token, fp32
    per = 2 * 2 * 16 * 4
    assert hf["window_layers"] == 5
    # transformers keeps W − 1 = 4 tokens in a window layer, inferbound (and engines) W = 5
    assert kv_bytes_for_context(m, L, "fp32") == hf["full"] + hf["window"] + 5 * per == (L + 5 * 5) * per
    assert kv_bytes_per_token(m, "fp32") == 6 * per
    assert m.gemma3n.kv_shared == (("window", 5, 3), ("full", None, 1))


def test_gemma3n_memory_holds_the_whole_text_model():
    m = load_model(AutoConfig.for_model("gemma3n_text").to_dict())
    # bf16: 2 bytes per parameter, tied head, one GPU: the per-layer embeddings and extras included
    assert weight_bytes_per_gpu(m, Dtypes(), Parallelism()) == pytest.approx(2 * count_params(m).total, rel=1e-12)


def test_gemma3n_refuses_per_layer_mlp_widths():
    with pytest.raises(ValueError, match="intermediate_size"):
        load_model({**GEMMA3N, "intermediate_size": [128] * 9 + [256]})
