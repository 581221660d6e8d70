"""The ids people type (issue 21, item 5): short base and Instruct aliases, the new catalog entries, fine-tunes
named by their card's base, and a "did you mean" on a miss.

The counts of the new entries are checked against PyTorch on the meta device by test_model_exact.py (its
catalog test covers every bundled file); here against hand computations and the model cards' figures.
"""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound.cli import app
from inferbound.model import ConfigError, catalog_files, count_params, kv_bytes_per_token, load_model
from inferbound.model.variants import aliases, suggest
from inferbound.web.modelsource import catalog_id

# (typed, the catalog entry it is sized as, whether that is said as a variant warning)
TYPED = [
    ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", False),        # the README's own example
    ("llama-3.3-70b-instruct", "meta-llama/Llama-3.3-70B-Instruct", False),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mistral-7B-Instruct-v0.3", False),
    ("mistral-7b-v0.3", "mistralai/Mistral-7B-Instruct-v0.3", False),
    ("meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B", True),
    ("microsoft/phi-4", "microsoft/phi-4", False),
    ("phi-4", "microsoft/phi-4", False),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "meta-llama/Llama-3.3-70B-Instruct", True),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "meta-llama/Llama-3.1-8B", True),
    ("tiiuae/falcon-mamba-7b", "tiiuae/falcon-mamba-7b", False),
    ("qwen3-4b", "Qwen/Qwen3-4B", False),
    ("Qwen/Qwen3-14B", "Qwen/Qwen3-14B", False),
    ("gemma-3-27b", "google/gemma-3-27b-it", False),
    ("kimi-k2", "moonshotai/Kimi-K2-Instruct", False),
    ("mistral-small-24b", "mistralai/Mistral-Small-24B-Instruct-2501", False),
    ("META-LLAMA/llama-3.1-8b", "meta-llama/Llama-3.1-8B", False),       # an id in another case
    ("meta-llama/Llama-3.3-70B", "meta-llama/Llama-3.3-70B-Instruct", True),  # the base name of an Instruct entry
    ("llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B", True),
]


@pytest.mark.parametrize("typed, entry, as_variant", TYPED, ids=[t[0] for t in TYPED])
def test_typed_ids_resolve(typed, entry, as_variant):
    m = load_model(typed)
    reference = load_model(entry)
    assert count_params(m).total == count_params(reference).total
    if as_variant:
        assert m.base_model == entry
        assert any(f"sized as {entry!r}" in w for w in m.warnings)
    else:
        assert m.name == entry and m.base_model is None


def test_the_web_api_accepts_the_same_aliases():
    assert catalog_id("llama-3.3-70b") == "meta-llama/Llama-3.3-70B-Instruct"
    assert catalog_id("phi-4") == "microsoft/phi-4"


def test_reduced_aliases_are_only_given_when_unique():
    al = aliases(sorted(catalog_files()))
    assert al["llama-3.3-70b"] == "meta-llama/Llama-3.3-70B-Instruct"
    assert al["llama-3-70b"] == "meta-llama/Meta-Llama-3-70B"              # the Meta- prefix dropped
    assert al["llama-2-7b"] == "meta-llama/Llama-2-7b-hf"
    # an alias never names a quantized checkpoint, and every alias points at a catalog entry
    assert set(al.values()) <= set(catalog_files())


def test_distill_mapping_cites_the_card():
    m = load_model("deepseek-ai/DeepSeek-R1-Distill-Llama-70B")
    assert any("huggingface.co/deepseek-ai/DeepSeek-R1" in w and "base model" in w for w in m.warnings)


# ---------------------------------------------------------------------- the new entries, by hand and by card
def test_mistral_7b_instruct_v03_by_hand():
    m = load_model("mistralai/Mistral-7B-Instruct-v0.3")
    # 32 layers: q, o 4096^2 each, k, v 1024 x 4096 each, gated MLP 3 x 4096 x 14336, 2 RMSNorms 2 x 4096;
    # embedding and untied head 2 x 32768 x 4096; final norm 4096
    layer = 2 * 4096 ** 2 + 2 * 1024 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    assert count_params(m).total == 32 * layer + 2 * 32768 * 4096 + 4096 == 7_248_023_552
    assert kv_bytes_per_token(m, "bf16") == 2 * 8 * 128 * 32 * 2 == 131_072
    assert m.max_position_embeddings == 32768 and all(g.attention == "full" for g in m.layers)  # no window


def test_llama_32_3b_by_hand_and_card():
    m = load_model("meta-llama/Llama-3.2-3B")
    # 28 layers: q, o 3072 x 3072 (24 heads x 128), k, v 1024 x 3072, MLP 3 x 3072 x 8192, norms 2 x 3072;
    # tied embedding 128256 x 3072; final norm
    layer = 2 * 3072 * 3072 + 2 * 1024 * 3072 + 3 * 3072 * 8192 + 2 * 3072
    total = 28 * layer + 128256 * 3072 + 3072
    assert count_params(m).total == total == 3_212_749_824
    assert round(total / 1e9, 2) == 3.21                                   # the Llama 3.2 card: 3.21B
    assert kv_bytes_per_token(m, "bf16") == 2 * 8 * 128 * 28 * 2 == 114_688


def test_phi_4_by_hand():
    m = load_model("microsoft/phi-4")
    # phi3 layout: fused qkv 5120 x (40 + 2 x 10) x 128, o 5120^2, gate_up 5120 x 2 x 17920, down 17920 x 5120
    layer = 5120 * 60 * 128 + 5120 * 5120 + 3 * 5120 * 17920 + 2 * 5120
    assert count_params(m).total == 40 * layer + 2 * 100352 * 5120 + 5120 == 14_659_507_200
    assert kv_bytes_per_token(m, "bf16") == 2 * 10 * 128 * 40 * 2


@pytest.mark.parametrize("hf_id, card", [("Qwen/Qwen3-4B", "4.0"), ("Qwen/Qwen3-14B", "14.8")])
def test_qwen3_card_totals(hf_id, card):
    # the Qwen3 cards print the total to one decimal ("Number of Parameters: 4.0B", "14.8B")
    assert f"{count_params(load_model(hf_id)).total / 1e9:.1f}" == card


# ---------------------------------------------------------------------- a miss: refused, with the closest names
@pytest.mark.parametrize("typed, expected", [
    ("lama-3.3-70b", "llama-3.3-70b"),
    ("mistralai/Mistral-7B-Instruct-v0.4", "mistralai/Mistral-7B-Instruct-v0.3"),
    ("qwen3-8", "qwen3-8b"),
])
def test_a_typo_gets_a_suggestion(typed, expected):
    with pytest.raises(ConfigError) as e:
        load_model(typed)
    assert "did you mean" in str(e.value) and expected in str(e.value).split("did you mean", 1)[1]
    assert expected in suggest(typed, sorted(catalog_files()))


def test_an_id_without_a_config_is_refused_not_guessed():
    # GLM-4.5-Air's published config.json could not be obtained verbatim: not in the catalog, not a variant
    with pytest.raises(ConfigError, match="did you mean zai-org/GLM-4.5"):
        load_model("zai-org/GLM-4.5-Air")


def test_cli_miss_is_one_line_with_the_suggestion():
    r = CliRunner().invoke(app, ["memory", "lama-3.3-70b"])
    assert_one_line_error(r, "lama-3.3-70b", "did you mean llama-3.3-70b")
