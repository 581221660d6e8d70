"""Model loader and parameter counter.

Expected values are worked out by hand from the config.json fields, written out in each test, or are
the published counts of the model cards (data/models README). Nothing here is the code's own output.
"""
from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from inferbound.model import ConfigError, catalog_files, count_params, load_model, parse_config
from inferbound.model.params import attention_params

CATALOG = catalog_files()


def raw_config(hf_id: str) -> dict:
    return json.loads(CATALOG[hf_id].read_text())


def published_interval(figure: str, unit: float = 1e9, tolerance: float = 0.015) -> tuple[float, float]:
    """The range of true counts a published, rounded figure allows, widened by ``tolerance``.

    A model card's "3.3B" is a count rounded to its last printed digit, so the true value lies in
    [3.25B, 3.35B]: half a unit of the last digit either side ("405" -> [404.5, 405.5],
    "8.03" -> [8.025, 8.035]). The figure is taken as a string because a float loses how many
    digits were printed ("70" and "70.0" differ). The interval is then widened by 1.5 % on each
    side, the tolerance the issue allows for what our counter leaves out (q/k norms, attention
    sinks, small biases) and for card conventions.
    """
    value = Decimal(figure)
    half_unit = Decimal(5) * Decimal(10) ** (value.as_tuple().exponent - 1)
    return (float(value - half_unit) * unit * (1 - tolerance), float(value + half_unit) * unit * (1 + tolerance))


def assert_published(count: float, figure: str) -> None:
    lo, hi = published_interval(figure)
    assert lo <= count <= hi, f"{count / 1e9:.3f}B outside [{lo / 1e9:.3f}, {hi / 1e9:.3f}] for published {figure}B"


def test_published_interval_helper():
    # "3.3" -> [3.25, 3.35] widened by 1.5 %: [3.25 * 0.985, 3.35 * 1.015]
    lo, hi = published_interval("3.3")
    assert lo == pytest.approx(3.20125e9) and hi == pytest.approx(3.40025e9)
    # "405" -> [404.5, 405.5] widened
    lo, hi = published_interval("405")
    assert lo == pytest.approx(404.5e9 * 0.985) and hi == pytest.approx(405.5e9 * 1.015)
    with pytest.raises(AssertionError):
        assert_published(3.45e9, "3.3")


# ------------------------------------------------------------------ loading
@pytest.mark.parametrize("hf_id", sorted(CATALOG))
def test_every_bundled_config_loads(hf_id):
    raw = raw_config(hf_id)
    m = load_model(hf_id)
    assert m.name == hf_id
    raw = raw.get("text_config", raw)   # multimodal wrappers (Gemma 3): the language model's fields
    layers = raw.get("num_hidden_layers", raw.get("n_layer"))
    hidden = raw.get("hidden_size", raw.get("n_embd"))
    assert m.num_layers == layers
    assert m.hidden_size == hidden
    # Gemma 3's text config omits vocab_size: Gemma3TextConfig's default, its 262,208-token vocabulary
    assert m.vocab_size == raw.get("vocab_size", 262208 if raw.get("model_type") == "gemma3_text" else None)
    if m.num_attention_layers:  # attention-free (FalconMamba) entries have no heads to read
        assert m.num_heads == raw.get("num_attention_heads", raw.get("n_head"))
    p = count_params(m)
    assert 0 < p.active <= p.total


def test_load_by_file_path_folder_id_alias_and_dict(tmp_path):
    src = CATALOG["meta-llama/Llama-3.1-70B"]
    by_id = load_model("meta-llama/Llama-3.1-70B")
    by_file = load_model(str(src))
    folder = tmp_path / "my-llama"
    folder.mkdir()
    shutil.copy(src, folder / "config.json")
    by_folder = load_model(str(folder))
    by_alias = load_model("llama-3.1-70b")
    by_alias_mixed_case = load_model("Llama-3.1-70B")
    by_dict = load_model(json.loads(src.read_text()))
    assert by_file.name == "meta-llama--Llama-3.1-70B"     # the file stem
    assert by_folder.name == "my-llama"                     # the folder holding config.json
    assert by_alias.name == "meta-llama/Llama-3.1-70B"      # an alias resolves to the HF id
    for m in (by_file, by_folder, by_alias, by_alias_mixed_case, by_dict):
        assert m.model_dump(exclude={"name"}) == by_id.model_dump(exclude={"name"})
    # Llama-3.1-70B: 80 layers, hidden 8192, 64 heads, 8 kv heads
    assert (by_id.num_layers, by_id.hidden_size, by_id.num_heads, by_id.num_kv_heads) == (80, 8192, 64, 8)


def test_load_from_local_huggingface_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    snap = tmp_path / "hub" / "models--acme--tiny-llama" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    cfg = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100}
    (snap / "config.json").write_text(json.dumps(cfg))
    m = load_model("acme/tiny-llama")
    assert m.name == "acme/tiny-llama"
    assert (m.num_layers, m.head_dim, m.num_kv_heads) == (2, 64 // 4, 2)


def test_unknown_model_names_the_value():
    with pytest.raises(ConfigError, match="no-such-model-xyz"):
        load_model("no-such-model-xyz")


def test_missing_num_hidden_layers_is_named():
    raw = raw_config("meta-llama/Llama-3.1-8B")
    del raw["num_hidden_layers"]
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        load_model(raw)


def test_missing_field_can_be_supplied_by_override():
    raw = raw_config("meta-llama/Llama-3.1-8B")
    del raw["num_hidden_layers"]
    assert load_model(raw, {"num_hidden_layers": 4}).num_layers == 4


def test_invalid_json_file_is_a_config_error(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_model(str(tmp_path))


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_moe_without_top_k_is_named():
    raw = raw_config("mistralai/Mixtral-8x7B-v0.1")
    del raw["num_experts_per_tok"]
    with pytest.raises(ConfigError, match="num_experts_per_tok"):
        load_model(raw)


def test_layer_types_errors_name_the_problem():
    raw = raw_config("openai/gpt-oss-20b")
    bad_len = {**raw, "layer_types": raw["layer_types"][:-1]}
    with pytest.raises(ConfigError, match="layer_types"):
        load_model(bad_len)
    bad_kind = {**raw, "layer_types": ["local_attention"] * raw["num_hidden_layers"]}
    with pytest.raises(ConfigError, match="local_attention"):
        load_model(bad_kind)


def test_override_halves_layer_params():
    full = count_params(load_model("llama-3.1-8b"))
    half = count_params(load_model("llama-3.1-8b", {"num_hidden_layers": 16}))
    assert half.attention * 2 == full.attention
    assert half.dense_mlp * 2 == full.dense_mlp
    # norms: 2 per layer + the final one, 4096 each
    assert full.norms == (2 * 32 + 1) * 4096 and half.norms == (2 * 16 + 1) * 4096
    assert half.embedding == full.embedding == 128256 * 4096
    # 16 layers fewer, each q 4096*4096 + k,v 4096*1024*2 + o 4096*4096 + mlp 3*4096*14336 + 2 norms
    assert full.total - half.total == 16 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096)


def test_override_of_a_spec_field():
    m = load_model("llama-3.1-8b", {"gated_mlp": False})
    assert not m.gated_mlp
    assert count_params(m).dense_mlp == 32 * 2 * 4096 * 14336   # up, down only


# ------------------------------------------------------------------ README edge cases
@pytest.mark.parametrize("hf_id, hidden", [("openai-community/gpt2", 768), ("EleutherAI/gpt-j-6b", 4096),
                                           ("tiiuae/falcon-40b", 8192), ("tiiuae/falcon-180B", 14848)])
def test_no_ffn_key_means_four_times_hidden(hf_id, hidden):
    raw = raw_config(hf_id)
    assert not {"intermediate_size", "ffn_dim"} & {k for k, v in raw.items() if v is not None}
    assert raw.get("n_inner") is None
    m = load_model(hf_id)
    assert m.intermediate_size == 4 * hidden
    assert not m.gated_mlp


@pytest.mark.parametrize("hf_id", ["google/gemma-2-9b", "openai-community/gpt2"])
def test_absent_tie_key_ties_for_gemma_and_gpt2(hf_id):
    assert "tie_word_embeddings" not in raw_config(hf_id)
    m = load_model(hf_id)
    assert m.tie_embeddings
    assert count_params(m).lm_head == 0


def test_untied_llama_has_its_own_lm_head():
    p = count_params(load_model("llama-3.1-8b"))
    assert p.lm_head == p.embedding == 128256 * 4096


def test_qwen3_32b_explicit_head_dim():
    m = load_model("qwen3-32b")
    assert m.head_dim == 128 and m.num_heads == 64
    assert m.num_heads * m.head_dim == 8192 != m.hidden_size == 5120
    # q: 5120 -> 64*128, k and v: 5120 -> 8*128 each, o: 64*128 -> 5120; no biases;
    # q_norm and k_norm: one RMSNorm weight over head_dim (128) each (Qwen3Attention)
    assert attention_params(m) == 5120 * 8192 + 2 * 5120 * 1024 + 8192 * 5120 + 2 * 128


def test_gemma2_head_dim_256_and_alternating_window():
    m = load_model("gemma-2-9b")
    assert m.head_dim == 256 != 3584 // 16
    assert m.norms_per_layer == 4     # gemma-2: pre- and post-norms around attention and MLP
    kinds = [g.attention for g in m.layers for _ in range(g.count)]
    assert kinds == ["window", "full"] * 21   # even layers slide (4096 tokens), odd layers are global
    assert {g.window for g in m.layers if g.attention == "window"} == {4096}


@pytest.mark.parametrize("hf_id, heads, kv", [("meta-llama/Llama-3.1-70B", 64, 8), ("tiiuae/falcon-40b", 128, 8),
                                              ("tiiuae/falcon-180B", 232, 8), ("Qwen/Qwen3-30B-A3B", 32, 4)])
def test_gqa(hf_id, heads, kv):
    m = load_model(hf_id)
    assert (m.num_heads, m.num_kv_heads) == (heads, kv)
    # GQA-n names the number of KV heads (the usual convention), not the group size heads // kv
    assert m.attention_type == f"GQA-{kv}"


def test_falcon_uses_num_kv_heads_only_with_new_decoder_architecture():
    raw = raw_config("tiiuae/falcon-40b")
    assert raw["new_decoder_architecture"] and raw["num_kv_heads"] == 8
    old = {**raw, "new_decoder_architecture": False, "multi_query": True}
    m = load_model(old)      # falcon-7b style: multi-query, one LayerNorm per (parallel) layer
    assert m.num_kv_heads == 1 and m.attention_type == "MQA"
    assert m.norms_per_layer == 1
    assert load_model({**old, "multi_query": False}).num_kv_heads == 128


@pytest.mark.parametrize("hf_id", ["openai-community/gpt2", "facebook/opt-66b", "microsoft/Phi-3-mini-4k-instruct",
                                   "meta-llama/Llama-2-7b-hf"])
def test_mha(hf_id):
    m = load_model(hf_id)
    assert m.num_kv_heads == m.num_heads
    assert m.attention_type.startswith("MHA")


def test_mixtral_moe_fields():
    m = load_model("mixtral-8x7b-v0.1")
    e = m.moe
    assert (e.num_experts, e.top_k, e.expert_intermediate_size, e.num_shared_experts) == (8, 2, 14336, 0)
    assert [(g.count, g.moe) for g in m.layers] == [(32, True)]


def test_qwen3_moe_fields():
    m = load_model("qwen3-30b-a3b")
    e = m.moe
    assert (e.num_experts, e.top_k, e.expert_intermediate_size, e.num_shared_experts) == (128, 8, 768, 0)
    assert all(g.moe for g in m.layers) and m.num_layers == 48
    p = count_params(m)
    assert p.dense_mlp == 0
    # 48 layers x 128 experts x (gate, up, down) 3 x 2048 x 768
    assert p.routed_experts == 48 * 128 * 3 * 2048 * 768


def test_qwen_moe_mlp_only_layers_are_dense():
    raw = raw_config("Qwen/Qwen3-30B-A3B")
    m = load_model({**raw, "mlp_only_layers": [0, 47]})
    assert [(g.count, g.moe) for g in m.layers] == [(1, False), (46, True), (1, False)]
    assert count_params(m).dense_mlp == 2 * 3 * 2048 * 6144     # dense layers use intermediate_size


def test_gpt_oss_alternating_sliding_layers_from_layer_types():
    raw = raw_config("openai/gpt-oss-120b")
    m = load_model("gpt-oss-120b")
    per_layer = [(g.attention, g.window) for g in m.layers for _ in range(g.count)]
    expected = [("window", 128) if t == "sliding_attention" else ("full", None) for t in raw["layer_types"]]
    assert per_layer == expected
    assert sum(1 for a, _ in per_layer if a == "window") == 18 == 36 // 2
    e = m.moe
    assert (e.num_experts, e.top_k, e.expert_intermediate_size) == (128, 4, 2880)
    assert e.expert_bias and e.router_bias


def test_deepseek_v3_moe_mla_and_mtp_fields():
    m = load_model("deepseek-v3")
    e = m.moe
    assert (e.num_experts, e.top_k, e.expert_intermediate_size) == (256, 8, 2048)
    assert (e.num_shared_experts, e.shared_intermediate_size) == (1, 2048)
    assert [(g.count, g.moe) for g in m.layers] == [(3, False), (58, True)]   # first_k_dense_replace = 3
    assert m.intermediate_size == 18432
    a = m.mla
    assert (a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim) == (1536, 512, 128, 64, 128)
    assert m.attention_type == "MLA"
    assert m.mtp_layers == 1
    # MLA attention of one layer, by hand:
    #   q_a 7168x1536 + q_a_layernorm 1536 + q_b 1536 x 128 heads x (128 nope + 64 rope)
    #   kv_a 7168 x (512 + 64) + kv_a_layernorm 512 + kv_b 512 x 128 x (128 nope + 128 v)
    #   o 128 x 128 x 7168
    one = (7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168)
    assert attention_params(m) == one == 187_107_328


def test_deepseek_mtp_is_counted_apart():
    with_mtp = count_params(load_model("deepseek-v3"))
    without = count_params(load_model("deepseek-v3", {"num_nextn_predict_layers": 0}))
    assert without.mtp == 0 and with_mtp.mtp > 0
    assert with_mtp.total == without.total
    # the MTP layer is a MoE layer plus eh_proj (2*7168 x 7168): at least the experts and eh_proj
    assert with_mtp.mtp > 256 * 3 * 7168 * 2048 + 2 * 7168 * 7168


def test_llama4_scout_shared_expert_and_chunked_attention():
    m = load_model("llama-4-scout-17b-16e-instruct")
    e = m.moe
    assert (e.num_experts, e.top_k, e.num_shared_experts, e.shared_intermediate_size) == (16, 1, 1, 8192)
    assert e.expert_intermediate_size == 8192
    assert all(g.moe for g in m.layers)           # interleave_moe_layer_step = 1
    kinds = [g.attention for g in m.layers for _ in range(g.count)]
    assert kinds.count("chunked") == 36 and len(kinds) == 48
    assert [i for i, k in enumerate(kinds) if k == "full"] == list(range(3, 48, 4))   # NoPE layers 3, 7, ...
    assert {g.window for g in m.layers if g.attention == "chunked"} == {8192}
    assert m.attention_type == "GQA-8 (36/48 local)"   # 8 KV heads (40 query heads in groups of 5)


def test_llama4_interleave_step_two_alternates_dense_and_moe():
    m = load_model("llama-4-scout-17b-16e-instruct", {"interleave_moe_layer_step": 2})
    moe = [g.moe for g in m.layers for _ in range(g.count)]
    assert moe == [False, True] * 24             # (i + 1) % 2 == 0: layers 1, 3, 5, ... are MoE
    p = count_params(m)
    assert p.dense_mlp == 24 * 3 * 5120 * 16384  # dense layers use intermediate_size_mlp


def test_llama4_without_no_rope_layers_uses_transformers_default():
    # transformers' Llama4TextConfig: absent/empty no_rope_layers -> every 4th layer is NoPE (full
    # attention), the others use RoPE and chunked attention; Scout's published list is that pattern.
    raw = raw_config("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    listed = load_model(raw)
    for missing in ({k: v for k, v in raw.items() if k != "no_rope_layers"}, {**raw, "no_rope_layers": []}):
        assert load_model(missing).layers == listed.layers


def test_text_config_is_unwrapped():
    text = raw_config("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    wrapped = {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"], "text_config": text}
    assert parse_config(wrapped).model_dump(exclude={"name"}) == load_model(text).model_dump(exclude={"name"})


# ------------------------------------------------------------------ parameter counts by hand
def test_llama_3_1_8b_total_by_hand():
    p = count_params(load_model("llama-3.1-8b"))
    embedding = 128256 * 4096
    per_layer = (4096 * 4096            # q
                 + 2 * 4096 * 1024      # k, v (8 kv heads x 128)
                 + 4096 * 4096          # o
                 + 3 * 4096 * 14336     # gate, up, down
                 + 2 * 4096)            # 2 RMSNorms
    total = embedding + 32 * per_layer + 4096 + 128256 * 4096   # + final norm + untied lm_head
    assert total == 8_030_261_248
    assert p.total == total


def test_gpt2_total_by_hand():
    # GPT-2 small: wte 50257x768, wpe 1024x768; per layer c_attn 768x2304 + b, c_proj 768x768 + b,
    # c_fc 768x3072 + b, c_proj 3072x768 + b, ln_1 and ln_2 (weight + bias); ln_f; LM head tied.
    per_layer = (768 * 2304 + 2304) + (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 2 * 2 * 768
    total = 50257 * 768 + 1024 * 768 + 12 * per_layer + 2 * 768
    assert total == 124_439_808          # the well-known GPT-2 small count
    p = count_params(load_model("gpt2"))
    assert p.total == total
    # tied: the token table is the LM head matmul, so only the position table (a lookup) is inactive
    assert p.active == total - 1024 * 768


def test_mixtral_8x7b_total_and_active_by_hand():
    p = count_params(load_model("mixtral-8x7b-v0.1"))
    attn = 4096 * 4096 * 2 + 4096 * 1024 * 2     # q, o + k, v
    expert = 3 * 4096 * 14336
    router, norms = 4096 * 8, 2 * 4096
    total = 32 * (attn + 8 * expert + router + norms) + 4096 + 2 * 32000 * 4096
    assert total == 46_702_792_704
    assert p.total == total
    # active: 2 of 8 experts per layer, no input embedding table, LM head included
    assert p.active == 32 * (attn + 2 * expert + router + norms) + 4096 + 32000 * 4096


# ------------------------------------------------------------------ published counts (model cards)
PUBLISHED_TOTAL = [
    ("meta-llama/Llama-3.1-8B", "8.03"), ("meta-llama/Llama-3.1-70B", "70.6"), ("meta-llama/Llama-3.1-405B", "405"),
    ("mistralai/Mixtral-8x7B-v0.1", "46.7"), ("mistralai/Mixtral-8x22B-v0.1", "141"),
    ("deepseek-ai/DeepSeek-V3", "671"), ("Qwen/Qwen3-30B-A3B", "30.5"), ("Qwen/Qwen3-235B-A22B", "235"),
    ("openai/gpt-oss-120b", "117"), ("openai/gpt-oss-20b", "21"), ("mistralai/Mistral-7B-v0.1", "7.24"),
    ("meta-llama/Llama-2-7b-hf", "6.74"), ("meta-llama/Llama-2-70b-hf", "69"),
]


@pytest.mark.parametrize("hf_id, figure", PUBLISHED_TOTAL)
def test_published_total(hf_id, figure):
    assert_published(count_params(load_model(hf_id)).total, figure)


# Active counts follow each card's convention:
# - gpt-oss (and DeepSeek-V3): without the input embedding table -> ParamCount.active.
#   (DeepSeek: 36.63B without it rounds to the card's 37B; with it, 37.55B would not.)
# - Qwen3 and Llama 4 cards count the embedding in the activated parameters -> active + embedding.
# - Mixtral: Mistral's 12.9B also includes it: 12.88B with the embedding rounds to 12.9, 12.75B
#   without it does not (both are inside the 1.5 % tolerance; we test the matching convention).
PUBLISHED_ACTIVE = [
    ("deepseek-ai/DeepSeek-V3", "37", False), ("openai/gpt-oss-120b", "5.1", False),
    ("openai/gpt-oss-20b", "3.6", False),
    ("Qwen/Qwen3-30B-A3B", "3.3", True), ("Qwen/Qwen3-235B-A22B", "22", True),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "17", True),
    ("mistralai/Mixtral-8x7B-v0.1", "12.9", True), ("mistralai/Mixtral-8x22B-v0.1", "39", True),
]


@pytest.mark.parametrize("hf_id, figure, with_embedding", PUBLISHED_ACTIVE)
def test_published_active(hf_id, figure, with_embedding):
    p = count_params(load_model(hf_id))
    assert_published(p.active + (p.embedding if with_embedding else 0), figure)


def test_deepseek_v3_685b_with_mtp():
    p = count_params(load_model("deepseek-v3"))
    # the card's 685B = 671B main model + the MTP module
    assert_published(p.total + p.mtp, "685")
    # The checkpoint also stores the MTP module's own copy of the embedding and output head
    # (129280 x 7168 each); with them the count reaches the card's figure almost exactly
    # (the rest is the fp8 scale tensors the HF hub counts too).
    stored = p.total + p.mtp + 2 * 129280 * 7168
    assert 684.0e9 <= stored <= 685.5e9


def test_dense_active_is_total_less_embedding():
    p = count_params(load_model("llama-3.1-70b"))
    assert p.active == p.total - 128256 * 8192


def test_tied_model_active_keeps_the_table_it_multiplies_by():
    # Llama-3.2-1B ties its embedding to the LM head: the table is the unembedding matmul of every
    # token, so a dense tied model's active count is its total.
    p = count_params(load_model("llama-3.2-1b"))
    assert load_model("llama-3.2-1b").tie_embeddings
    assert p.active == p.total


def test_gptj_counts_its_lm_head_bias():
    """GPT-J's LM head is nn.Linear(4096, 50400) with a bias (transformers GPTJForCausalLM)."""
    p = count_params(load_model("gpt-j-6b"))
    assert p.lm_head == 4096 * 50400 + 50400
    # 28 layers of: q,k,v,o 4·4096² (no biases) + fc_in/fc_out 2·4096·16384 + 16384 + 4096 biases
    # + ln_1 2·4096; embedding 50400·4096; ln_f 2·4096; LM head with bias
    layer = 4 * 4096**2 + 2 * 4096 * 16384 + 16384 + 4096 + 2 * 4096
    assert p.total == 28 * layer + 50400 * 4096 + 2 * 4096 + 4096 * 50400 + 50400


# ------------------------------------------------------------------ popular current models (issue 12 item 5)
def card_interval(figure: str, unit: float = 1e9) -> tuple[float, float]:
    """The published figure +/- 0.5 %, or its rounding interval (half a unit of the last printed
    digit) where that is wider: "24" -> [23.5, 24.5]; "400" -> [398, 402]."""
    value = Decimal(figure)
    half = Decimal(5) * Decimal(10) ** (value.as_tuple().exponent - 1)
    lo, hi = min(value * Decimal("0.995"), value - half), max(value * Decimal("1.005"), value + half)
    return float(lo) * unit, float(hi) * unit


def test_card_interval_helper():
    assert card_interval("24") == (23.5e9, 24.5e9)                       # rounding interval is wider
    assert card_interval("400") == pytest.approx((398e9, 402e9))         # 0.5 % is wider
    assert card_interval("1", unit=1e12) == (0.5e12, 1.5e12)


# Each card's convention, stated: "total" = ParamCount.total; "non-embedding" leaves out the token
# embedding and the (untied) output matrix; "+mtp" adds the multi-token-prediction layer; active
# "no input embedding" = ParamCount.active, "with embedding" adds the token table back.
def non_embedding(p) -> float:
    return p.total - p.embedding - p.lm_head


NEW_MODELS = [
    # hf id, card total, how the total is counted, card active, how active is counted
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "400", "total", "17", "with embedding"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "80", "total", "3", "non-embedding"),
    ("deepseek-ai/DeepSeek-V3.1", "671", "total", "37", "no input embedding"),
    ("moonshotai/Kimi-K2-Instruct", "1000", "total", "32", "no input embedding"),
    ("zai-org/GLM-4.5", "355", "non-embedding+mtp", "32", "non-embedding"),
    ("google/gemma-3-27b-it", "27", "total", None, None),
    ("mistralai/Mistral-Small-24B-Instruct-2501", "24", "total", None, None),
]


def test_llama3_70b_is_llama31_70b_architecture():
    """Meta-Llama-3-70B differs from Llama-3.1-70B only in context (8192, no llama3 rope scaling): same weights
    shape, so the same count (Llama-3.1-70B's 70.6B is checked against its card above), and the same KV per
    token, 2·2·80·8·128 = 327,680 B at bf16."""
    a, b = load_model("meta-llama/Meta-Llama-3-70B-Instruct"), load_model("meta-llama/Llama-3.1-70B")
    assert count_params(a).total == count_params(b).total
    assert a.max_position_embeddings == 8192 and b.max_position_embeddings == 131072
    from inferbound.model import kv_bytes_per_token
    assert kv_bytes_per_token(a, "bf16") == 2 * 2 * 80 * 8 * 128


@pytest.mark.parametrize("hf_id, total, total_way, active, active_way", NEW_MODELS)
def test_published_total_new_models(hf_id, total, total_way, active, active_way):
    p = count_params(load_model(hf_id))
    count = {"total": p.total, "non-embedding+mtp": non_embedding(p) + p.mtp}[total_way]
    lo, hi = card_interval(total) if hf_id != "moonshotai/Kimi-K2-Instruct" else card_interval("1", unit=1e12)
    assert lo <= count <= hi, f"{count / 1e9:.2f}B vs card {total}B"
    if active is not None:
        a = {"with embedding": p.active + p.embedding, "no input embedding": p.active,
             "non-embedding": p.active - p.lm_head}[active_way]
        lo, hi = card_interval(active)
        assert lo <= a <= hi, f"active {a / 1e9:.2f}B vs card {active}B"


def test_qwen3_next_card_non_embedding_total():
    # the card also prints "Number of Parameters (Non-Embedding): 79B"
    lo, hi = card_interval("79")
    assert lo <= non_embedding(count_params(load_model("Qwen/Qwen3-Next-80B-A3B-Instruct"))) <= hi


def test_qwen3_next_layout_and_deltanet_params_by_hand():
    m = load_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    mixers = [g.mixer for g in m.layers for _ in range(g.count)]
    # 12 x (3 x Gated DeltaNet -> 1 x gated attention): full_attention_interval 4
    assert mixers == (["gated_deltanet"] * 3 + ["attention"]) * 12
    assert m.attention_gate and m.qk_norm == "head" and m.attention_type == "GQA-2 + 36 gated_deltanet"
    from inferbound.model.ssm import ssm_params
    d, kd, vd = 2048, 16 * 128, 32 * 128       # 16 key heads x 128, 32 value heads x 128
    by_hand = (d * (2 * kd + 2 * vd)           # in_proj_qkvz
               + d * 2 * 32                    # in_proj_ba (beta and alpha per value head)
               + (2 * kd + vd) * 4             # depthwise conv, kernel 4, no bias
               + 2 * 32                        # dt_bias, A_log
               + 128                           # gated RMSNorm over the value head width
               + vd * d)                       # out_proj
    assert ssm_params(m.ssm, d) == by_hand == 33_718_464
    # gated attention: q_proj emits query and gate (2 x 16 x 256), k/v 2 x 256 each, o 16 x 256 -> d,
    # q_norm and k_norm over head_dim 256
    assert attention_params(m) == d * 2 * 16 * 256 + 2 * d * 2 * 256 + 16 * 256 * d + 2 * 256


def test_hybrid_layer_patterns():
    jamba = load_model(json.loads((Path(__file__).parent / "data/configs/jamba-v0.1.json").read_text()))
    mixers = [(g.mixer, g.moe) for g in jamba.layers for _ in range(g.count)]
    # attention at i % 8 == 4, MoE at i % 2 == 1 (attn_layer_period/offset, expert_layer_period/offset)
    assert [i for i, (x, _) in enumerate(mixers) if x == "attention"] == [4, 12, 20, 28]
    assert [i for i, (_, e) in enumerate(mixers) if e] == list(range(1, 32, 2))
    nemo = load_model(json.loads((Path(__file__).parent / "data/configs/nemotron-h-8b.json").read_text()))
    kinds = "".join({"mamba2": "M", "attention": "*", "none": "-"}[g.mixer] * g.count for g in nemo.layers)
    assert kinds == "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
    assert all(g.mlp == (g.mixer == "none") for g in nemo.layers)   # a block is a mixer or an MLP


def test_gemma3_sliding_window_pattern_without_layer_types():
    m = load_model("google/gemma-3-27b-it")
    kinds = [g.attention for g in m.layers for _ in range(g.count)]
    # Gemma3TextConfig: layer i slides unless (i + 1) % 6 == 0 -> 5 local : 1 global
    assert [i for i, k in enumerate(kinds) if k == "full"] == list(range(5, 62, 6))
    assert kinds.count("window") == 52 and {g.window for g in m.layers if g.attention == "window"} == {1024}


def test_gqa_label_counts_kv_heads_not_group_size():
    m = load_model("llama-4-scout-17b-16e-instruct")       # 40 query heads over 8 KV heads: groups of 5
    assert m.attention_type.startswith("GQA-8") and m.num_heads // m.num_kv_heads == 5
    assert "KV heads" in type(m).attention_type.__doc__
