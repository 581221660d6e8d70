"""Multimodal towers counted whole (model/towers.py): parameters exact against PyTorch on the meta device
(transformers' AutoModelForImageTextToText, every state_dict element outside ``language_model`` and
``lm_head``), tokens per image and FLOPs per image worked out by hand below, the towers' weights in memory
per GPU, and their encoder pass in the prefill when a request carries images (``--images``)."""
from __future__ import annotations

import math
import warnings

import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.memory_terms import weight_bytes_per_gpu
from inferbound.model import load_model, parse_config
from inferbound.model.towers import NOTE_PREFIX, read_towers
from inferbound.step.towers import image_tokens, tower_prefill
from inferbound.workloads.static import estimate

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

#: the towers of the published configs (config.json of each repo; text_config cut to one small layer: the
#: projector reads only its hidden_size)
LLAVA_15_7B = {  # llava-hf/llava-1.5-7b-hf: CLIP ViT-L/14-336 + a 2-layer MLP projector
    "model_type": "llava", "vision_feature_layer": -2, "vision_feature_select_strategy": "default",
    "projector_hidden_act": "gelu", "image_seq_length": 576,
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
                      "num_hidden_layers": 24, "num_attention_heads": 16, "image_size": 336, "patch_size": 14,
                      "projection_dim": 768},
    "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 64, "num_hidden_layers": 1,
                    "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 1000}}
GEMMA3_4B = {  # google/gemma-3-4b-it: SigLIP so400m at 896 px, no pooling head
    "model_type": "gemma3", "mm_tokens_per_image": 256,
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
                      "num_hidden_layers": 27, "num_attention_heads": 16, "image_size": 896, "patch_size": 14,
                      "vision_use_head": False},
    "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 64, "num_hidden_layers": 1,
                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 1000}}
LLAMA4_SCOUT = {  # meta-llama/Llama-4-Scout-17B-16E-Instruct: vision encoder, pixel-shuffle adapter, projector
    "model_type": "llama4",
    "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 1408, "intermediate_size": 5632,
                      "num_hidden_layers": 34, "num_attention_heads": 16, "image_size": 336, "patch_size": 14,
                      "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096, "projector_output_dim": 4096,
                      "vision_output_dim": 4096, "multi_modal_projector_bias": False},
    "text_config": {"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 64,
                    "intermediate_size_mlp": 64, "num_hidden_layers": 1, "num_attention_heads": 40,
                    "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 2, "vocab_size": 1000}}
MISTRAL_SMALL_31 = {  # mistralai/Mistral-Small-3.1-24B-Instruct-2503: Pixtral encoder, patch merger, projector
    "model_type": "mistral3", "spatial_merge_size": 2, "multimodal_projector_bias": False,
    "projector_hidden_act": "gelu", "vision_feature_layer": -1,
    "vision_config": {"model_type": "pixtral", "hidden_size": 1024, "intermediate_size": 4096, "head_dim": 64,
                      "num_hidden_layers": 24, "num_attention_heads": 16, "image_size": 1540, "patch_size": 14},
    "text_config": {"model_type": "mistral", "hidden_size": 5120, "intermediate_size": 64, "num_hidden_layers": 1,
                    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 1000}}
QWEN25_VL_7B = {  # Qwen/Qwen2.5-VL-7B-Instruct: windowed ViT, full attention in 4 layers, 2x2 merger
    "model_type": "qwen2_5_vl",
    "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                      "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                      "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]},
    "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 3584, "intermediate_size": 64,
                    "num_hidden_layers": 1, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 1000}}
PUBLISHED = {"llava-1.5-7b": LLAVA_15_7B, "gemma-3-4b": GEMMA3_4B, "llama-4-scout": LLAMA4_SCOUT,
             "mistral-small-3.1": MISTRAL_SMALL_31, "qwen2.5-vl-7b": QWEN25_VL_7B}


def torch_tower_count(raw: dict) -> tuple[int, dict]:
    """state_dict elements outside the language model and LM head of the meta-device model, and its config."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = transformers.AutoConfig.for_model(**raw)
        with torch.device("meta"):
            model = transformers.AutoModelForImageTextToText.from_config(cfg)
    n = sum(v.numel() for k, v in model.state_dict().items() if "language_model" not in k and "lm_head" not in k)
    return n, cfg.to_dict()


@pytest.mark.parametrize("wrapper", ["llava", "gemma3", "llama4", "mistral3", "qwen2_5_vl"])
def test_default_config_towers_are_exact_against_pytorch(wrapper):
    n, raw = torch_tower_count({"model_type": wrapper})
    towers, note = read_towers(raw, wrapper)
    assert len(towers) == 1 and sum(t.params for t in towers) == n
    assert note.startswith(NOTE_PREFIX) and "towers counted in memory" in note and "vision_config" in note


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_towers_are_exact_against_pytorch(name):
    n, _ = torch_tower_count(PUBLISHED[name])
    towers, _ = read_towers(PUBLISHED[name], name)
    assert towers[0].params == n


def test_llava_15_by_hand():
    d, ff, L, p, s, C, t = 1024, 4096, 24, 14, 336, 3, 4096
    n = (s // p) ** 2                                   # 24 x 24 = 576 patches
    assert n == 576
    layer_linear = 4 * d * d + 4 * d + 2 * d * ff + ff + d
    encoder = d + C * p * p * d + (n + 1) * d + 4 * d + L * (layer_linear + 4 * d)
    projector = d * t + t + t * t + t                   # linear_1, linear_2 with biases
    (tw,), _ = read_towers(LLAVA_15_7B, "llava")
    assert (tw.encoder, tw.projector, tw.tokens_per_image, tw.positions) == (encoder, projector, 576, 577)
    # 303.5M + 21.0M: 4.6 % of the 7.06B checkpoint, as the issue measured
    assert 0.045 < (encoder + projector) / (6_607_343_616 + 131_072_000 + encoder + projector) < 0.047
    flops = 2 * (L * layer_linear + C * p * p * d) * (n + 1) + L * 4 * (n + 1) ** 2 * d + 2 * projector * n
    assert tw.flops_per_image == pytest.approx(flops, rel=1e-12)
    assert tw.attention_flops_per_image == pytest.approx(L * 4 * 577 * 577 * d, rel=1e-12)


def test_gemma3_siglip_by_hand():
    d, ff, L, p, s, C, t = 1152, 4304, 27, 14, 896, 3, 2560
    n = (s // p) ** 2                                   # 64 x 64 = 4096 patches, pooled to 256 tokens
    encoder = C * p * p * d + d + n * d + L * (4 * d * d + 4 * d + 2 * d * ff + ff + d + 4 * d) + 2 * d
    (tw,), _ = read_towers(GEMMA3_4B, "gemma3")
    assert (tw.encoder, tw.projector, tw.tokens_per_image, tw.positions) == (encoder, d * t + d, 256, 4096)


def test_dynamic_resolution_tokens_at_the_stated_image():
    (px,), _ = read_towers(MISTRAL_SMALL_31, "mistral3")
    cells = math.ceil(1024 / (14 * 2))                  # 37 cells a side after the 2x2 merge
    assert cells == 37
    assert (px.embeddings, px.tokens_per_image, px.positions) == (37 * 37, 37 * 37 + 37, (37 * 2) ** 2)
    (qw,), _ = read_towers(QWEN25_VL_7B, "qwen2_5_vl")
    assert round(1024 / 28) == 37                       # smart_resize: 1024 -> 1036 px
    assert (qw.tokens_per_image, qw.positions) == (1369, 5476)
    d, L, n, w = 1280, 32, 5476, (112 // 14) ** 2     # 28 windowed layers attend 64 patches, 4 attend all
    assert qw.attention_flops_per_image == pytest.approx(4 * n * d * (4 * n + 28 * w), rel=1e-12)
    (l4,), _ = read_towers(LLAMA4_SCOUT, "llama4")
    assert l4.tokens_per_image == (336 // 14) ** 2 // 4 == 144   # pixel shuffle 0.5: 576 patches -> 144


def test_tower_weights_are_in_memory_sharded_over_tp():
    m = load_model("google/gemma-3-27b-it")
    (tw,) = m.towers
    plain = m.model_copy(update={"towers": ()})
    dep = make_deployment(model=m, gpu="h100_sxm", num_gpus=2)
    added = weight_bytes_per_gpu(m, dep.dtypes, dep.par) - weight_bytes_per_gpu(plain, dep.dtypes, dep.par)
    d, ff, L, t = 1152, 4304, 27, 5376
    sharded = L * (4 * d * d + 4 * d + 2 * d * ff + ff + d) + d * t   # encoder layers and projection, over TP
    assert tw.sharded == sharded
    assert added == pytest.approx((sharded / 2 + (tw.params - sharded)) * 2, rel=1e-12)   # bf16


def test_images_join_the_prompt_and_the_prefill():
    dep = make_deployment(model="google/gemma-3-27b-it", gpu="h100_sxm", num_gpus=2)
    (tw,) = dep.model.towers
    with_images = estimate(dep, batch=4, input_len=1000, output_len=16, images=3)
    text_only = estimate(dep, batch=4, input_len=1000 + 3 * 256, output_len=16)
    assert with_images.input_len == 1000 + 3 * 256
    cost = tower_prefill(dep, 4 * 3)
    assert cost.flops == pytest.approx(12 * tw.flops_per_image / 2, rel=1e-12)   # TP2 splits the encoder
    assert with_images.ttft_s == pytest.approx(text_only.ttft_s + float(cost.time), rel=1e-9)
    assert with_images.tpot_s == pytest.approx(text_only.tpot_s, rel=1e-12)
    assert any("images=3 per request" in w for w in with_images.warnings)


def test_images_without_a_tower_are_refused_in_one_line():
    with pytest.raises(ValueError, match="needs a multimodal checkpoint"):
        image_tokens(load_model("meta-llama/Llama-3.1-8B"), 1)
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100_sxm", "--images", "1",
                                 "--scenario", "serving", "--rate", "1"])   # steady states: tests/test_towers_steady.py
    assert r.exit_code == 2 and "needs a multimodal checkpoint" in r.output and len(r.output.strip().splitlines()) == 1


def test_an_unknown_tower_is_named_not_counted():
    raw = {**LLAVA_15_7B, "vision_config": {"model_type": "some_vit", "hidden_size": 64}}
    towers, note = read_towers(raw, "x")
    assert towers == () and "towers not counted" in note and "some_vit" in note
    m = parse_config(raw, "x")
    assert m.towers == () and any("some_vit" in w for w in m.warnings)
    bad = parse_config({**GEMMA3_4B, "mm_tokens_per_image": "many"}, "g")  # a tower field that does not read
    assert bad.towers == () and any("mm_tokens_per_image='many'" in w for w in bad.warnings)


def test_the_api_takes_images_as_the_cli_does():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from inferbound.web import create_app
    client = TestClient(create_app())
    body = {"model": "google/gemma-3-27b-it", "gpu": "h100_sxm", "num_gpus": 2, "batch": 1, "input_len": 100,
            "output_len": 8, "images": 2}
    r = client.post("/api/estimate", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["input_len"] == 100 + 2 * 256
    r = client.post("/api/estimate", json={**body, "scenario": "serving", "rate": 1, "output_len": 64})  # _steady.py
    assert r.status_code == 200 and r.json()["input_len"] == 100 + 2 * 256
    r = client.post("/api/estimate", json={**body, "model": "llama-3.1-8b"})
    assert r.status_code == 422 and "needs a multimodal checkpoint" in r.text
