"""The counts that used to be silently wrong (issue 21, item 2), each against PyTorch on the meta device.

Every case builds the config with transformers (``AutoModelForCausalLM.from_config`` under
``torch.device("meta")``, via test_model_exact's ``torch_count``: state_dict elements, tied tensors once)
and requires inferbound's count to equal it to the parameter; the KV bytes per token and the recurrent
state are written out by hand from the config's numbers. Configs: published ones (the bundled catalog,
tests/data/configs/, sources in tests/data/README.md), or a transformers config class's own defaults.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForImageTextToText

from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.deploy.memory_terms import weight_bytes_per_gpu
from inferbound.model import catalog_files, count_params, kv_bytes_per_token, load_model, state_bytes_per_sequence
from inferbound.model.towers import read_towers
from test_model_exact import hf_config, torch_count

CONFIGS = Path(__file__).parent / "data" / "configs"


def catalog(hf_id: str) -> dict:
    return json.loads(catalog_files()[hf_id].read_text())


def without(raw: dict, key: str) -> dict:
    return {k: v for k, v in raw.items() if k != key}


# ---------------------------------------------------------------------- Mamba / FalconMamba intermediate_size
def test_falcon_mamba_7b_reads_intermediate_size_not_expand():
    raw = json.loads((CONFIGS / "falcon-mamba-7b-published.json").read_text())
    assert raw["expand"] == 16 and raw["intermediate_size"] == 8192      # the published file has both
    m = load_model(raw)
    assert m.ssm.d_inner == 8192
    # per layer, E = 8192, d = 4096, N = 16, K = 4, R = 256: in_proj d*2E 67,108,864 + conv E*K + E 40,960
    # + x_proj E*(R+2N) 2,359,296 + dt_proj R*E + E 2,105,344 + A_log E*N 131,072 + D E 8,192
    # + out_proj E*d 33,554,432 + RMSNorm d 4,096 = 105,312,256; x 64 layers = 6,739,984,384;
    # + embedding and untied head 2 * 65,024 * 4,096 = 532,676,608 + final norm 4,096
    hand = 64 * 105_312_256 + 2 * 65_024 * 4_096 + 4_096
    assert hand == 7_272_665_088
    assert count_params(m).total == hand == torch_count(hf_config(raw))
    # recurrent state E*N = 131,072 values + conv (K-1)*E = 24,576 values per layer, 64 layers, bf16
    assert state_bytes_per_sequence(m, "bf16") == 64 * (131_072 + 24_576) * 2 == 19_922_944
    assert load_model("tiiuae/falcon-mamba-7b").ssm.d_inner == 8192       # the catalog entry is that file


def test_mamba_without_intermediate_size_still_uses_expand():
    raw = without(AutoConfig.for_model("mamba", hidden_size=256, expand=3, num_hidden_layers=2).to_dict(),
                  "intermediate_size")
    assert load_model(raw).ssm.d_inner == 768                             # int(3 * 256)
    assert count_params(load_model(raw)).total == torch_count(hf_config(raw))


# ---------------------------------------------------------------------- num_key_value_heads absent
# (label, config with the key removed, the config class's default, attention layers, head_dim): the
# published configs of Qwen2.5-72B (64 heads), Qwen3-32B (64), gemma-2-9b (16), gemma-3-27b-it (32); class
# defaults of Qwen2-MoE, Gemma and SmolLM3 with more query heads than their KV default.
def _kv_cases():
    g3 = catalog("google/gemma-3-27b-it")
    return [
        ("qwen2 Qwen2.5-72B", without(catalog("Qwen/Qwen2.5-72B"), "num_key_value_heads"), 32, 80, 128),
        ("qwen3 Qwen3-32B", without(catalog("Qwen/Qwen3-32B"), "num_key_value_heads"), 32, 64, 128),
        ("qwen2_moe class", without(AutoConfig.for_model("qwen2_moe", num_attention_heads=32, num_hidden_layers=4)
                                    .to_dict(), "num_key_value_heads"), 16, 4, 64),
        ("gemma class", without(AutoConfig.for_model("gemma", num_attention_heads=32, num_hidden_layers=4).to_dict(),
                                "num_key_value_heads"), 16, 4, 256),
        ("gemma2 gemma-2-9b", without(catalog("google/gemma-2-9b"), "num_key_value_heads"), 4, 42, 256),
        ("gemma3 gemma-3-27b-it", {**g3, "text_config": without(g3["text_config"], "num_key_value_heads")}, 4, 62, 128),
        ("smollm3 class", without(AutoConfig.for_model("smollm3", num_hidden_layers=4).to_dict(),
                                  "num_key_value_heads"), 4, 4, 128),
    ]


@pytest.mark.parametrize("label, raw, kv, layers, head_dim", _kv_cases(), ids=[c[0] for c in _kv_cases()])
def test_absent_kv_heads_take_the_class_default(label, raw, kv, layers, head_dim):
    cfg = hf_config(raw)
    assert cfg.num_key_value_heads == kv                                  # what transformers itself fills in
    m = load_model(raw)
    assert m.num_kv_heads == kv
    assert any("num_key_value_heads absent" in w for w in m.warnings)     # a class default is said
    assert count_params(m).total == torch_count(cfg)
    # K and V: 2 * kv heads * head_dim * layers * 2 bytes (bf16)
    assert kv_bytes_per_token(m, "bf16") == 2 * kv * head_dim * layers * 2


def test_explicit_null_kv_heads_is_one_per_query_head():
    raw = {**catalog("Qwen/Qwen2.5-7B"), "num_key_value_heads": None}     # Qwen2Config.__post_init__: = heads
    m = load_model(raw)
    assert m.num_kv_heads == 28 == hf_config(raw).num_key_value_heads
    assert count_params(m).total == torch_count(hf_config(raw))


# ---------------------------------------------------------------------- GPT-2 with cross-attention
def test_gpt2_add_cross_attention_counts_the_cross_attention_blocks():
    raw = {**catalog("openai-community/gpt2"), "add_cross_attention": True}
    m = load_model(raw)
    # each of 12 blocks adds q_attn d*d + d, c_attn d*2d + 2d, c_proj d*d + d (4d^2 + 4d) and ln_cross_attn 2d
    d = 768
    extra = 12 * (4 * d * d + 4 * d + 2 * d)
    assert extra == 28_366_848
    assert count_params(load_model("openai-community/gpt2")).total == 124_439_808
    assert count_params(m).total == 124_439_808 + extra == torch_count(hf_config(raw))
    # the cross-attention reads encoder states: the decoder's own KV is unchanged, 2 * 768 * 12 layers * 2 B
    assert kv_bytes_per_token(m, "bf16") == 2 * 768 * 12 * 2 == 36_864


# ---------------------------------------------------------------------- Nemotron-H biases and the untied head
def test_nemotron_h_mlp_bias_and_tie_word_embeddings():
    base = AutoConfig.for_model("nemotron_h")                             # blocks M, E, *, - ; d 4096
    both = AutoConfig.for_model("nemotron_h", mlp_bias=True, tie_word_embeddings=True)
    m0, m1 = load_model(base.to_dict()), load_model(both.to_dict())
    assert count_params(m1).total == torch_count(both)
    assert count_params(m0).total == torch_count(base)
    # mlp_bias adds the MLP block's up/down biases (21,504 + 4,096) and the shared expert's (7,688 + 4,096);
    # the routed experts have none; tie_word_embeddings changes nothing (the head is never tied)
    assert count_params(m1).total - count_params(m0).total == (21_504 + 4_096) + (7_688 + 4_096)
    assert not m1.tie_embeddings and count_params(m1).lm_head == 131_072 * 4_096
    assert any("never ties its output head" in w for w in m1.warnings)


# ---------------------------------------------------------------------- memory: BLOOM's embedding LayerNorm
def test_bloom_weight_memory_includes_the_embedding_layernorm():
    raw = json.loads((CONFIGS / "bloom-560m.json").read_text())
    m = load_model(raw)
    assert m.embedding_norm
    p = count_params(m)
    assert p.total == torch_count(hf_config(raw))
    # unquantized bf16 on one GPU: every parameter at 2 bytes, the word_embeddings_layernorm (2 * d) included
    assert weight_bytes_per_gpu(m, Dtypes(weight="bf16", act="bf16"), Parallelism(tp=1)) == 2 * p.total


# ---------------------------------------------------------------------- multimodal wrappers: the towers counted
def _tower_count(cfg) -> int:
    """Meta-device parameters of the model's vision tower and projector (everything but the language model)."""
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForImageTextToText.from_config(cfg)
    return sum(p.numel() for n, p in model.named_parameters()
               if n.startswith(("model.vision_tower.", "model.multi_modal_projector.")))


TOWER_CASES = {
    "llava-class (CLIP ViT-L/14-336 + llama)": AutoConfig.for_model("llava"),
    "llava-two-feature-layers": AutoConfig.for_model("llava", vision_feature_layer=[-2, -5],
                                                     multimodal_projector_bias=False),
    "gemma3-class (SigLIP with head)": AutoConfig.for_model("gemma3"),
    "gemma3-27b-it vision config": AutoConfig.for_model(
        "gemma3", vision_config=catalog("google/gemma-3-27b-it")["vision_config"],
        text_config={"hidden_size": 5376, "num_hidden_layers": 1, "num_attention_heads": 32,
                     "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 64}),
}


@pytest.mark.parametrize("case", sorted(TOWER_CASES))
def test_tower_counts_match_pytorch(case):
    cfg = TOWER_CASES[case]
    (tower,), _ = read_towers(cfg.to_dict(), case)
    assert tower.params == _tower_count(cfg)


def test_llava_class_tower_by_hand():
    raw = AutoConfig.for_model("llava").to_dict()
    (tower,), _ = read_towers(raw, "llava")
    # CLIP ViT-L/14 at 336 px: d 1024, ff 4096, 24 layers, (336/14)^2 = 576 patches + class token
    layer = 4 * 1024 ** 2 + 4 * 1024 + 2 * 2 * 1024 + 2 * 1024 * 4096 + 4096 + 1024
    hand = 1024 + 3 * 14 * 14 * 1024 + 577 * 1024 + 2 * 2 * 1024 + 24 * layer
    assert tower.encoder == hand == 303_507_456
    # projector 1024 -> 4096 -> 4096 with biases
    assert tower.projector == 1024 * 4096 + 4096 + 4096 * 4096 + 4096


def test_wrappers_name_the_towers_they_count():
    m = load_model("google/gemma-3-27b-it")
    note = next(w for w in m.warnings if "multimodal" in w)
    assert "vision_config (siglip_vision_model" in note and "towers counted in memory" in note
    assert [t.kind for t in m.towers] == ["siglip_vision_model"]
    llava = load_model(AutoConfig.for_model("llava").to_dict())
    assert any("a multimodal checkpoint" in w and "clip_vision_model" in w for w in llava.warnings)
    mistral3 = load_model(AutoConfig.for_model("mistral3").to_dict())
    assert [t.kind for t in mistral3.towers] == ["pixtral"]
    assert not [w for w in load_model("meta-llama/Llama-3.1-8B").warnings if "multimodal" in w]
    llama4 = load_model(AutoConfig.for_model("llama4").to_dict())
    assert [t.kind for t in llama4.towers] == ["llama4_vision_model"]
    # the catalog's text-only Llama 4 files list their encoder themselves: named, not counted
    scout = load_model("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert scout.towers == () and any("towers not counted" in w and "llama4_vision_model" in w for w in scout.warnings)


def test_a_tower_field_that_does_not_read_leaves_the_tower_uncounted():
    raw = AutoConfig.for_model("llava").to_dict()
    raw["vision_config"] = {**raw["vision_config"], "hidden_size": "wide"}
    m = load_model(raw)
    note = next(w for w in m.warnings if "multimodal" in w)
    assert m.towers == () and "towers not counted" in note and "hidden_size='wide'" in note
