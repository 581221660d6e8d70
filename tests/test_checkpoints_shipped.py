"""Checkpoints as shipped, the gaps the quantization tests (test_model_quant.py, test_fp8_compute.py) leave:
bytes per parameter of an AWQ/GPTQ layout in memory, W8A8 int8 and W4A16 compute formats, a multimodal
checkpoint's towers staying 16-bit beside quantized text weights, compressed-tensors groups that differ, and
the ids of the issue sized as their formats. Every expected value is worked out here from the format."""
from __future__ import annotations

import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.model import count_params, load_model
from inferbound.model.weights import weight_bytes_by_component

LLAMA_8B = dict(model_type="llama", num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                num_key_value_heads=8, intermediate_size=14336, vocab_size=128256, torch_dtype="bfloat16")
LINEAR = ("attention", "dense_mlp")


def test_awq_bytes_per_parameter_as_the_kernels_store_them():
    # AutoAWQ GEMM layout (qweight int32 of 8 packed int4, qzeros int32 of 8 packed int4 per group, scales fp16
    # per group): per weight 0.5 byte + 2/128 (scale) + 0.5/128 (zero point) at group 128
    m = load_model({**LLAMA_8B, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
                                                         "zero_point": True, "version": "gemm"}})
    per_weight = 0.5 + 2 / 128 + 0.5 / 128
    p = count_params(m)
    w = weight_bytes_by_component(m)
    assert w["attention"] == pytest.approx(p.attention * per_weight, rel=1e-12)
    assert w["dense_mlp"] == pytest.approx(p.dense_mlp * per_weight, rel=1e-12)
    assert w["embedding"] == p.embedding * 2 and w["lm_head"] == p.lm_head * 2     # kept bf16
    # weight-only: the GEMMs run at bf16 (Marlin / AWQ kernels dequantize into 16-bit MMAs)
    d = make_deployment(model=m, gpu="h100_sxm")
    assert (d.dtypes.weight, d.compute_dtype) == ("int4", "bf16")


def test_compressed_tensors_w8a8_int8_runs_int8_gemms():
    w8a8 = {"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True}}}}
    m = load_model({**LLAMA_8B, "quantization_config": w8a8})
    assert (m.quantization.weight_dtype, m.quantization.bits_per_weight) == ("int8", 8 + 16 / 4096)
    d = make_deployment(model=m, gpu="a100_80gb_sxm")
    assert (d.dtypes.weight, d.dtypes.act) == ("int8", "int8")


def test_differing_config_groups_are_a_stated_guess():
    groups = {"group_0": {"targets": ["re:.*mlp.*"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                                 "group_size": 128}},
              "group_1": {"targets": ["re:.*self_attn.*"], "weights": {"num_bits": 8, "type": "float",
                                                                       "strategy": "channel"}}}
    m = load_model({**LLAMA_8B, "quantization_config": {"quant_method": "compressed-tensors", "config_groups": groups}})
    assert m.quantization.bits_per_weight == 4 + 16 / 128                             # group_0's scheme
    assert any("2 weight schemes" in w and "group_0" in w for w in m.warnings)


def test_towers_stay_16_bit_beside_quantized_text_weights():
    base = load_model("google/gemma-3-27b-it")
    fp8 = make_deployment(model="google/gemma-3-27b-it", gpu="h100_sxm", weight_dtype="fp8")
    bf16 = make_deployment(model="google/gemma-3-27b-it", gpu="h100_sxm")
    (tw,) = base.towers
    p = count_params(base)
    lin = p.attention + p.dense_mlp
    fp8_bytes = (8 + 32 / (128 * 128)) / 8              # --weight-dtype fp8: 1 byte + an fp32 scale per 128x128 block
    assert bf16.weight_bytes_per_gpu - fp8.weight_bytes_per_gpu == pytest.approx(lin * (2 - fp8_bytes), rel=1e-9)
    assert tw.params * 2 < fp8.weight_bytes_per_gpu                                    # the tower is in both


@pytest.mark.parametrize("typed, weight, gpu, act", [
    ("nvidia/DeepSeek-R1-0528-NVFP4-v2", "fp4", "b200_hgx", "fp4"),
    ("nvidia/Llama-3.3-70B-Instruct-FP4", "fp4", "b200_hgx", "fp4"),
    ("nvidia/Llama-3.3-70B-Instruct-FP8", "fp8", "h100_sxm", "fp8"),
    ("Qwen/Qwen3-30B-A3B-FP8", "fp8", "h100_sxm", "fp8"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "fp8", "h100_sxm", "fp8"),
])
def test_issue_ids_are_sized_and_computed_as_their_format(typed, weight, gpu, act):
    m = load_model(typed)
    q = m.quantization
    assert q.weight_dtype == weight
    p = count_params(m)
    bits = {"fp4": 4 + 8 / 16, "fp8": 8.0}[weight]          # NVFP4: FP8 scale per 16 values; FP8 per-tensor
    quantized = sum(getattr(p, c) for c in q.components)
    rest = p.total - quantized
    assert weight_bytes_by_component(m)["total"] == pytest.approx(quantized * bits / 8 + rest * 2, rel=1e-6)
    kw = {"num_gpus": 8, "ep": 8} if "DeepSeek" in typed else {}
    assert make_deployment(model=typed, gpu=gpu, **kw).compute_dtype == act


def test_deepseek_r1_nvfp4_ids_are_far_below_the_fp8_base():
    fp8 = weight_bytes_by_component(load_model("deepseek-ai/DeepSeek-R1"))["total"]
    assert fp8 > 660e9                                                                 # the base's 673 GB
    for typed in ("nvidia/DeepSeek-R1-FP4", "nvidia/DeepSeek-R1-0528-NVFP4-v2"):
        total = weight_bytes_by_component(load_model(typed))["total"]
        assert total < 0.6 * fp8, typed                                                # 4.5 of ~8 bits
