"""Checkpoints as shipped (quantization_config -> ModelSpec.quantization, weight bytes by component) and
the repo ids people type (variants of catalog models). Bit counts are worked out in each test from the
format's definition (quant.py docstring), never copied from the code's output.
"""
from __future__ import annotations

import pytest

from inferbound.model import ConfigError, count_params, load_model
from inferbound.model.weights import weight_bytes_by_component

LLAMA_8B = dict(model_type="llama", num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                num_key_value_heads=8, intermediate_size=14336, vocab_size=128256)
LINEAR = ("attention", "ssm", "dense_mlp", "routed_experts", "shared_experts")


def quantized(qc: dict):
    return load_model({**LLAMA_8B, "quantization_config": qc})


# ---------------------------------------------------------------------- formats
def test_gpt_oss_mxfp4_experts_only():
    m = load_model("gpt-oss-120b")
    q = m.quantization
    assert (q.method, q.weight_dtype, q.components) == ("mxfp4", "fp4", ("routed_experts",))
    assert q.bits_per_weight == 4 + 8 / 32          # E2M1 + one E8M0 scale per 32 values (OCP MX v1.0)
    assert "model.layers.*.self_attn" in q.excluded and "lm_head" in q.excluded


def test_gpt_oss_120b_checkpoint_is_about_65_gb():
    w = weight_bytes_by_component(load_model("gpt-oss-120b"))
    # routed experts: 36 layers x 128 experts x (gate+up 2880x5760 + down 2880x2880 + biases 5760 + 2880)
    experts = 36 * 128 * (3 * 2880 * 2880 + 5760 + 2880)
    assert experts == 114_701_598_720
    assert w["routed_experts"] == experts * 4.25 / 8
    others = count_params(load_model("gpt-oss-120b")).total - experts       # attention, embeddings, router, norms
    assert w["total"] == pytest.approx(experts * 4.25 / 8 + others * 2)
    assert 64e9 < w["total"] < 66e9                 # the published checkpoint: ~65 GB


def test_weight_dtype_override_path_ignores_the_checkpoint_format():
    m = load_model("gpt-oss-120b")
    assert weight_bytes_by_component(m, "bf16", quantization=None)["total"] == count_params(m).total * 2


def test_deepseek_v3_fp8_block_scales():
    q = load_model("deepseek-v3").quantization
    assert (q.method, q.weight_dtype, q.block_size, q.activation_dtype) == ("fp8", "fp8", (128, 128), "fp8")
    assert q.bits_per_weight == 8 + 32 / (128 * 128)     # one fp32 scale per 128x128 block
    assert q.components == LINEAR                           # embeddings, norms, router stay bf16
    w = weight_bytes_by_component(load_model("deepseek-v3"))
    p = count_params(load_model("deepseek-v3"))
    assert w["embedding"] == p.embedding * 2 and w["router"] == p.router * 2
    assert w["routed_experts"] == p.routed_experts * (8 + 32 / 16384) / 8


def test_awq_and_gptq_int4_group_128():
    # 4-bit values + an fp16 scale and a 4-bit packed zero point per group of 128: 4 + 20/128
    for method in ("awq", "gptq"):
        q = quantized({"quant_method": method, "bits": 4, "group_size": 128}).quantization
        assert (q.weight_dtype, q.bits_per_weight, q.group_size) == ("int4", 4 + 20 / 128, 128)
        assert "lm_head" not in q.components
    assert quantized({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False}
                     ).quantization.bits_per_weight == 4 + 16 / 128
    # group_size -1: one scale per output channel, taken over hidden_size (4096) inputs
    assert quantized({"quant_method": "gptq", "bits": 4, "group_size": -1}).quantization.bits_per_weight == 4 + 20 / 4096
    assert "lm_head" in quantized({"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": True}
                                  ).quantization.components


def test_compressed_tensors_nvfp4_fp8_dynamic_and_w4a16():
    nvfp4 = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
             "config_groups": {"group_0": {"targets": ["Linear"],
                                           "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                                       "group_size": 16, "symmetric": True},
                                           "input_activations": {"num_bits": 4, "type": "float",
                                                                 "strategy": "tensor_group", "group_size": 16}}}}
    q = quantized(nvfp4).quantization
    assert (q.weight_dtype, q.bits_per_weight, q.activation_dtype) == ("fp4", 4 + 8 / 16, "fp4")  # FP8 scale per 16
    assert q.components == LINEAR                     # lm_head in ignore
    fp8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
           "kv_cache_scheme": {"num_bits": 8, "type": "float"},
           "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                                         "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}}}
    q = quantized(fp8).quantization
    assert (q.weight_dtype, q.bits_per_weight, q.activation_dtype, q.kv_cache_dtype) == ("fp8", 8 + 16 / 4096, "fp8", "fp8")
    w4a16 = {"quant_method": "compressed-tensors", "ignore": [],
             "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                       "group_size": 128, "symmetric": False}}}}
    q = quantized(w4a16).quantization
    assert (q.weight_dtype, q.bits_per_weight, q.activation_dtype) == ("int4", 4 + (16 + 4) / 128, None)
    assert "lm_head" in q.components                 # nothing ignored: the LM head is quantized too


def test_modelopt_nvfp4_with_fp8_kv_cache_both_spellings():
    q = quantized({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16,
                   "exclude_modules": ["lm_head"]}).quantization
    assert (q.weight_dtype, q.bits_per_weight, q.kv_cache_dtype) == ("fp4", 4.5, "fp8")
    nested = quantized({"producer": {"name": "modelopt"},
                        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}).quantization
    assert (nested.method, nested.weight_dtype, nested.bits_per_weight, nested.kv_cache_dtype) == ("modelopt", "fp8", 8.0, "fp8")


def test_bitsandbytes_nf4_double_quant():
    q = quantized({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True}).quantization
    # absmax per 64 values quantized to 8 bits, with an fp32 absmax per 256 of those blocks
    assert q.bits_per_weight == 4 + 8 / 64 + 32 / (64 * 256)


def test_unknown_method_and_partial_exclusions_are_warnings():
    m = quantized({"quant_method": "hqq"})
    assert m.quantization is None and any("hqq" in w for w in m.warnings)
    m = quantized({"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.mlp"]})
    assert any("model.layers.0.mlp" in w for w in m.warnings)


def test_expert_only_exclusion_keeps_attention_16_bit():
    q = quantized({"quant_method": "fp8", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}).quantization
    assert "attention" not in q.components and "dense_mlp" in q.components


# ---------------------------------------------------------------------- ids people type
VARIANTS = [
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B", None),
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B", None),
    ("meta-llama/Llama-2-70b-chat-hf", "meta-llama/Llama-2-70b-hf", None),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-v0.1", None),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B", None),
    ("nvidia/Llama-3.1-8B-Instruct-FP8", "meta-llama/Llama-3.1-8B", "fp8"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "meta-llama/Llama-3.1-8B", "fp8"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen/Qwen2.5-7B", "int4"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-72B", "int4"),
    ("nvidia/Llama-3.3-70B-Instruct-FP4", "meta-llama/Llama-3.3-70B-Instruct", "fp4"),
    ("RedHatAI/Meta-Llama-3.1-70B-Instruct-quantized.w4a16", "meta-llama/Llama-3.1-70B", "int4"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3", "fp8"),       # dtype from the base's config
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-235B-A22B", None),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "Qwen/Qwen3-Next-80B-A3B-Instruct", None),
    ("google/gemma-3-27b-pt", "google/gemma-3-27b-it", None),
    ("mistralai/Mistral-Small-24B-Base-2501", "mistralai/Mistral-Small-24B-Instruct-2501", None),
    ("unsloth/Llama-3.1-8B-Instruct-bnb-4bit", "meta-llama/Llama-3.1-8B", "int4"),
]


@pytest.mark.parametrize("typed, base, dtype", VARIANTS)
def test_variant_ids_resolve_to_their_architecture(typed, base, dtype):
    m = load_model(typed)
    assert m.name == typed and m.base_model == base
    assert count_params(m).total == count_params(load_model(base)).total
    assert (m.quantization.weight_dtype if m.quantization else None) == dtype
    assert any(base in w for w in m.warnings)          # the resolution is shown, not silent


def test_id_implied_quantization_is_marked_as_such():
    q = load_model("nvidia/Llama-3.1-8B-Instruct-FP8").quantization
    assert (q.source, q.method, q.bits_per_weight) == ("id", "id", 8.0)


@pytest.mark.parametrize("typed", ["meta-llama/Llama-3.1-8B-Instruct-abliterated", "someone/Llama-3.1-9B-Instruct",
                                   "Qwen/Qwen2.5-7B-Math-Instruct"])
def test_ids_with_other_tokens_are_not_guessed(typed):
    with pytest.raises(ConfigError, match="not a config file"):
        load_model(typed)


def test_gpt_oss_120b_fits_one_h100_by_default():
    """The issue's case: with the checkpoint's MXFP4 experts (~65 GB, above) the default deployment fits one
    80 GB H100 (Hopper runs MXFP4 through weight-only kernels), where bf16 weights (~234 GB) could not."""
    from inferbound import estimate
    from inferbound import make_deployment
    dep = make_deployment(model="openai/gpt-oss-120b", gpu="h100_sxm")
    assert dep.dtypes.weight == "fp4" and dep.compute_dtype in ("bf16", "fp16")
    e = estimate(dep, batch=1, input_len=1024, output_len=256)
    assert e.fits and 64e9 < e.memory.weights < 66e9
    bf16 = estimate(make_deployment(model="openai/gpt-oss-120b", gpu="h100_sxm", weight_dtype="bf16"),
                    batch=1, input_len=1024, output_len=256)
    assert not bf16.fits
