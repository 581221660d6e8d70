"""Model arithmetic against PyTorch: parameter counts on the meta device, KV and state bytes of a real cache.

**The PyTorch count** of a config is what transformers (pinned in pyproject's dev extra) builds for it
with ``AutoModelForCausalLM.from_config`` on the meta device (no weights, no hub): the elements of the
model's ``state_dict`` (what a checkpoint stores), each tied tensor once (a tied LM head is the
embedding table, counted once: ``named_parameters()`` de-duplicates it), persistent buffers included
(DeepSeek-V3's, GLM-4.5's and Nemotron-H's ``e_score_correction_bias`` is a stored buffer), non-persistent
buffers (rotary ``inv_freq``, Gemma's ``embed_scale``) not. Multi-token-prediction modules
(DeepSeek-V3 ``num_nextn_predict_layers``) are not built by transformers and are not in the main count;
inferbound reports them apart (``ParamCount.mtp``, tested in test_model.py). The comparison is exact:
every architecture below matches to the parameter.

**The cache**: a tiny copy of each attention or state-space family (a few layers, hidden 64) runs one
forward of L = 12 tokens with ``use_cache=True`` in float32; the bytes of the tensors the cache holds
are compared with ``kv_bytes_for_context`` / ``state_bytes_per_sequence`` at fp32 (4 bytes). Two
conventions differ from transformers' cache, each by a stated amount:
- a sliding-window (or chunked) layer of window W holds W−1 tokens between steps in transformers
  (``DynamicSlidingWindowLayer``); inferbound counts the W tokens a decode step holds (the W−1 kept plus
  the new one, what engines allocate), so it is one token per window layer higher once L ≥ W;
- the conv state holds K−1 columns in engines (vLLM ``MambaStateShapeCalculator``) and K in
  transformers (``LinearAttentionLayer``): compared with ``full_conv_window=True``.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.utils import logging as hf_logging

from inferbound.model import catalog_files, count_params, kv_bytes_for_context, load_model, state_bytes_per_sequence
from inferbound.model.kv import kv_values_per_token_layer

hf_logging.set_verbosity_error()
CONFIG_DIR = Path(__file__).parent / "data" / "configs"
#: model_types transformers has no config class for, and the family their vendor says to run them as
HF_TYPE = {"kimi_k2": "deepseek_v3"}


def hf_config(raw: dict):
    raw = dict(raw)
    if "text_config" in raw and "hidden_size" not in raw:  # multimodal wrapper: the language model only
        raw = {"model_type": raw["model_type"] + "_text", **raw["text_config"]}
    raw["model_type"] = HF_TYPE.get(raw["model_type"], raw["model_type"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoConfig.for_model(**{k: v for k, v in raw.items() if not k.startswith("_")})


def torch_count(cfg) -> int:
    """state_dict elements of the meta-device model, tied tensors once, persistent buffers included."""
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(cfg)
    unique = sum(p.numel() for p in model.parameters())
    names = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    buffers = sum(v.numel() for k, v in model.state_dict().items() if k not in names)
    return unique + buffers


# ---------------------------------------------------------------------- architectures from config classes
# (id, model_type, keys set on top of the config class's defaults). The class defaults are themselves
# published models (LlamaConfig: Llama-2-7B, DeepseekV3Config: DeepSeek-V3, ...); the keys add the
# variants each family has.
CLASS_ARCHS = [
    ("llama", "llama", {}),
    ("llama-biases-tied", "llama", dict(attention_bias=True, mlp_bias=True, tie_word_embeddings=True)),
    ("mistral-explicit-head_dim", "mistral", dict(hidden_size=5120, num_hidden_layers=40, num_attention_heads=32,
                                                  num_key_value_heads=8, head_dim=128, vocab_size=131072,
                                                  sliding_window=None)),
    ("mixtral", "mixtral", {}),
    ("qwen2", "qwen2", dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                            intermediate_size=4864, tie_word_embeddings=True)),
    ("qwen2_moe", "qwen2_moe", {}),
    ("qwen2_moe-sparse-step", "qwen2_moe", dict(decoder_sparse_step=2, mlp_only_layers=[0])),
    ("qwen3", "qwen3", {}),
    ("qwen3_moe", "qwen3_moe", {}),
    ("qwen3_moe-sparse-step-mlp-only", "qwen3_moe", dict(decoder_sparse_step=2, mlp_only_layers=[0, 5],
                                                         num_hidden_layers=12)),
    ("gemma", "gemma", {}),
    ("gemma2", "gemma2", {}),
    ("gemma3_text", "gemma3_text", {}),
    ("phi", "phi", {}),
    ("phi-qk_layernorm", "phi", dict(qk_layernorm=True)),
    ("phi3", "phi3", {}),
    ("phimoe", "phimoe", {}),
    ("phimoe-biases", "phimoe", dict(attention_bias=True, lm_head_bias=True)),
    ("granite", "granite", {}),
    ("granitemoe", "granitemoe", {}),
    ("olmo", "olmo", {}),
    ("olmo2", "olmo2", {}),
    ("olmoe", "olmoe", {}),
    ("cohere", "cohere", {}),
    ("cohere-qk_norm", "cohere", dict(use_qk_norm=True, num_key_value_heads=8)),
    ("starcoder2", "starcoder2", {}),
    ("gpt2", "gpt2", {}),
    ("gpt2-n_inner", "gpt2", dict(n_inner=2048, n_layer=6)),
    ("gptj", "gptj", {}),
    ("gpt_neox", "gpt_neox", {}),
    ("gpt_neox-no-attention-bias", "gpt_neox", dict(attention_bias=False, num_hidden_layers=4)),
    ("opt", "opt", {}),
    ("opt-non-affine-norms", "opt", dict(layer_norm_elementwise_affine=False)),
    ("bloom", "bloom", {}),
    ("falcon", "falcon", {}),
    ("falcon-new-decoder-architecture", "falcon", dict(hidden_size=8192, num_hidden_layers=60, num_attention_heads=128,
                                                       num_kv_heads=8, new_decoder_architecture=True)),
    ("falcon-sequential", "falcon", dict(parallel_attn=False)),
    ("llama4_text", "llama4_text", {}),
    ("llama4_text-interleaved-128e", "llama4_text", dict(interleave_moe_layer_step=2, num_local_experts=128)),
    ("gpt_oss", "gpt_oss", {}),
    ("deepseek_v2-lite", "deepseek_v2", dict(hidden_size=2048, num_hidden_layers=27, num_attention_heads=16,
                                             num_key_value_heads=16, q_lora_rank=None, n_routed_experts=64,
                                             num_experts_per_tok=6, moe_intermediate_size=1408,
                                             first_k_dense_replace=1, intermediate_size=10944)),
    ("deepseek_v3", "deepseek_v3", {}),
    ("deepseek_v3-attention-bias", "deepseek_v3", dict(attention_bias=True, num_hidden_layers=5)),
    ("glm4_moe-air", "glm4_moe", dict(hidden_size=4096, num_hidden_layers=46, num_attention_heads=96,
                                      num_key_value_heads=8, head_dim=128, attention_bias=True)),
    ("glm4_moe-qk_norm", "glm4_moe", dict(num_attention_heads=32, head_dim=128, use_qk_norm=True, num_hidden_layers=8)),
    ("smollm3", "smollm3", {}),
    ("mamba", "mamba", {}),
    ("mamba2", "mamba2", {}),
    ("mamba2-biases", "mamba2", dict(use_bias=True, num_hidden_layers=8)),
    ("falcon_mamba", "falcon_mamba", {}),
    ("jamba", "jamba", {}),
    ("jamba-offsets", "jamba", dict(attn_layer_period=4, attn_layer_offset=2, expert_layer_period=3,
                                    expert_layer_offset=0, num_hidden_layers=12)),
    ("qwen3_next", "qwen3_next", {}),
    ("qwen3_next-interval-3", "qwen3_next", dict(full_attention_interval=3, num_hidden_layers=12, mlp_only_layers=[1])),
    ("nemotron_h", "nemotron_h", {}),
    ("nemotron_h-latent-moe", "nemotron_h", dict(hybrid_override_pattern="MEME*E", moe_latent_size=1024)),
    ("falcon_h1", "falcon_h1", {}),
    ("falcon_h1-norm-biases", "falcon_h1", dict(mamba_rms_norm=True, projectors_bias=True, mamba_proj_bias=True,
                                                attention_bias=True, num_hidden_layers=6)),
    ("granitemoehybrid", "granitemoehybrid", {}),
    ("granitemoehybrid-mixed", "granitemoehybrid", dict(layer_types=["mamba"] * 3 + ["attention"] + ["mamba"] * 3
                                                        + ["attention"], num_hidden_layers=8, num_key_value_heads=8)),
    ("granitemoehybrid-dense", "granitemoehybrid", dict(num_local_experts=0, shared_intermediate_size=8192,
                                                        num_hidden_layers=4)),
]


@pytest.mark.parametrize("label, model_type, keys", CLASS_ARCHS, ids=[a[0] for a in CLASS_ARCHS])
def test_count_matches_pytorch_class_configs(label, model_type, keys):
    cfg = AutoConfig.for_model(model_type, **keys)
    raw = cfg.to_dict()           # every field explicit, as transformers writes a config.json
    assert count_params(load_model(raw)).total == torch_count(cfg)


FILE_CONFIGS = sorted(CONFIG_DIR.glob("*.json"))
CATALOG = catalog_files()


@pytest.mark.parametrize("path", FILE_CONFIGS, ids=[p.stem for p in FILE_CONFIGS])
def test_count_matches_pytorch_sparse_files(path):
    raw = json.loads(path.read_text())   # keys left out: the loader must apply the class defaults
    assert count_params(load_model(raw)).total == torch_count(hf_config(raw))


@pytest.mark.parametrize("hf_id", sorted(CATALOG))
def test_count_matches_pytorch_catalog(hf_id):
    raw = json.loads(CATALOG[hf_id].read_text())
    assert count_params(load_model(hf_id)).total == torch_count(hf_config(raw))


def test_at_least_fifty_architectures_and_every_required_family():
    families = {load_model(AutoConfig.for_model(t, **k).to_dict()).family for _, t, k in CLASS_ARCHS}
    families |= {load_model(json.loads(p.read_text())).family for p in FILE_CONFIGS}
    required = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2",
                "gemma3_text", "phi", "phi3", "phimoe", "granite", "granitemoe", "olmo", "olmo2", "olmoe", "cohere",
                "starcoder2", "gpt2", "gptj", "gpt_neox", "opt", "bloom", "falcon", "llama4_text", "gpt_oss",
                "deepseek_v2", "deepseek_v3", "glm4_moe", "smollm3", "mamba", "mamba2", "falcon_mamba", "jamba",
                "qwen3_next", "nemotron_h", "falcon_h1", "granitemoehybrid"}
    assert required <= families
    assert len(CLASS_ARCHS) + len(FILE_CONFIGS) + len(CATALOG) >= 50


# ---------------------------------------------------------------------- KV cache and state of a real forward
SMALL = dict(hidden_size=64, intermediate_size=128, vocab_size=128)
ATT = dict(num_attention_heads=4, num_key_value_heads=2, head_dim=16)
L = 12
CACHE_CASES = {
    "llama-gqa": dict(model_type="llama", num_hidden_layers=2, **SMALL, **ATT),
    "falcon-mqa": dict(model_type="falcon", num_hidden_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=128),
    "mistral-sliding-window": dict(model_type="mistral", num_hidden_layers=2, sliding_window=5, **SMALL, **ATT),
    "gemma2-alternating": dict(model_type="gemma2", num_hidden_layers=4, sliding_window=5, **SMALL, **ATT),
    # no layer_types: the 5 local : 1 global pattern is derived from sliding_window_pattern
    "gemma3-5-to-1": dict(model_type="gemma3_text", num_hidden_layers=12, sliding_window=5, sliding_window_pattern=6,
                          **SMALL, **ATT),
    "gpt_oss-sinks-window": dict(model_type="gpt_oss", num_hidden_layers=4, sliding_window=5, num_local_experts=4,
                                 num_experts_per_tok=2, **SMALL, **ATT),
    "llama4-chunked": dict(model_type="llama4_text", num_hidden_layers=4, attention_chunk_size=5, intermediate_size_mlp=128,
                           num_local_experts=2, num_experts_per_tok=1, no_rope_layer_interval=2, **SMALL, **ATT),
    "deepseek_v3-mla-latent": dict(model_type="deepseek_v3", num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=16, qk_nope_head_dim=8,
                                   qk_rope_head_dim=4, v_head_dim=8, n_routed_experts=4, moe_intermediate_size=16,
                                   first_k_dense_replace=1, num_experts_per_tok=2, n_group=1, topk_group=1, **SMALL),
    "qwen3_next-deltanet": dict(model_type="qwen3_next", num_hidden_layers=4, **SMALL, **ATT, linear_num_key_heads=2,
                                linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, num_experts=4,
                                num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32),
    "jamba": dict(model_type="jamba", num_hidden_layers=4, **SMALL, num_attention_heads=4, num_key_value_heads=2,
                  num_experts=4, num_experts_per_tok=2, mamba_d_state=8, mamba_dt_rank=8, attn_layer_period=2,
                  attn_layer_offset=1),
    "mamba": dict(model_type="mamba", num_hidden_layers=2, hidden_size=64, vocab_size=128, state_size=8, time_step_rank=8),
    "mamba2": dict(model_type="mamba2", num_hidden_layers=2, hidden_size=64, vocab_size=128, num_heads=8, head_dim=16,
                   state_size=8, n_groups=2),
    "nemotron_h": dict(model_type="nemotron_h", hybrid_override_pattern="M-*E", hidden_size=64, vocab_size=128,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128,
                       mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=8, n_groups=2, n_routed_experts=4,
                       num_experts_per_tok=2, moe_intermediate_size=32, moe_shared_expert_intermediate_size=32),
    "falcon_h1-parallel": dict(model_type="falcon_h1", num_hidden_layers=2, **SMALL, num_attention_heads=4,
                               num_key_value_heads=2, mamba_d_ssm=64, mamba_n_heads=8, mamba_d_head=8, mamba_d_state=8,
                               mamba_n_groups=1),
    "granitemoehybrid": dict(model_type="granitemoehybrid", num_hidden_layers=4,
                             layer_types=["mamba", "attention", "mamba", "attention"], **SMALL, num_attention_heads=4,
                             num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                             shared_intermediate_size=32, mamba_n_heads=8, mamba_d_head=16, mamba_d_state=8,
                             mamba_n_groups=1),
}


def real_cache(raw: dict) -> dict:
    """Bytes the cache of one L-token forward holds: full-attention KV, window KV (and how many window
    layers), conv + recurrent state."""
    torch.manual_seed(0)
    cfg = hf_config(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(cfg).eval()
        with torch.no_grad():
            cache = model(torch.randint(0, 128, (1, L)), use_cache=True).past_key_values
    out = dict(full=0, window=0, window_layers=0, state=0)
    for layer in cache.layers:
        keys = getattr(layer, "keys", None)
        if isinstance(keys, torch.Tensor):
            b = (layer.keys.numel() + layer.values.numel()) * keys.element_size()
            if "SlidingWindow" in type(layer).__name__:
                out["window"] += b
                out["window_layers"] += 1
            else:
                out["full"] += b
        for attr in ("conv_states", "recurrent_states"):
            states = getattr(layer, attr, None) or {}
            values = states.values() if isinstance(states, dict) else states
            out["state"] += sum(t.numel() * t.element_size() for t in values if isinstance(t, torch.Tensor))
    return out


@pytest.mark.parametrize("case", sorted(CACHE_CASES))
def test_kv_and_state_match_a_real_forward(case):
    raw = CACHE_CASES[case]
    m = load_model(raw)
    hf = real_cache(raw)
    per_token_layer = kv_values_per_token_layer(m) * 4          # fp32
    windows = sum(g.count for g in m.layers if g.has_attention and g.attention != "full")
    assert windows == hf["window_layers"]
    # full layers hold all L tokens; window layers W = 5 < L: transformers keeps W - 1, inferbound W
    assert kv_bytes_for_context(m, L, "fp32") == hf["full"] + hf["window"] + windows * per_token_layer
    assert state_bytes_per_sequence(m, "fp32", full_conv_window=True) == hf["state"]


def test_engine_conv_state_is_one_column_less_per_layer():
    raw = CACHE_CASES["mamba2"]
    m = load_model(raw)
    # Mamba-2 conv channels: E + 2·G·N = 128 + 2·2·8 = 160 (E = expand 2 x hidden 64); 2 layers, fp32
    assert (state_bytes_per_sequence(m, "fp32", full_conv_window=True)
            - state_bytes_per_sequence(m, "fp32")) == 2 * 160 * 4
