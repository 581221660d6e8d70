"""Every causal-LM model type transformers ships: read exactly, or refused in one line that says why.

For each entry of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` (transformers 5.24.0, the dev
extra's pin: 196 model types) the class's default config is built, its depth lowered to a few layers
(every switch and width kept: the counts are sums of per-layer formulas, so exactness at a few layers of
each kind is exactness at any depth), and the model is built on the meta device (no weights, no hub).
inferbound (``load_model`` on the config dict, every field explicit as transformers writes a config.json)
must then either

- match PyTorch **to the parameter**: ``count_params(...).total`` equals the ``state_dict`` elements
  (tied tensors once, persistent buffers in; less what transformers allocates and never reads, absent
  from the checkpoint: LongCat-Flash's identity-expert slices of ``gate_up_proj``, stated in
  ``_meta_count.NEVER_READ``); for a multimodal wrapper that the loader says it counts as
  its language model only, the language model's; and **to the element** on the cache of a forward on
  the meta device: KV at 12 tokens, recurrent (conv + SSM / DeltaNet) state, the number of window layers,
  and past every window the KV of ``max(window) + 3`` tokens (transformers keeps W - 1 tokens in a
  window layer, inferbound the W an engine allocates: one token per window layer, stated); or
- refuse with a ``ConfigError`` naming the model_type and the reason listed for it in
  ``data/refused_families.yaml``.

A type refused without a row there fails, a listed type the loader reads fails, and a printed number that
differs fails. The comparison lives in ``tests/_meta_count.py``; ``benchmarks/model_coverage.py`` runs it
over the same table for the README's counts.
"""
from __future__ import annotations

import pytest
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

from _meta_count import check, check_switches, refused_table
from inferbound.model import count_params, load_model
from inferbound.model.validate import ConfigError

TYPES = sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
REFUSED = refused_table()


@pytest.mark.parametrize("model_type", TYPES)
def test_exact_or_refused_with_its_reason(model_type):
    out = check(model_type, REFUSED)
    assert out.ok, f"{model_type}: {out.status}: {out.detail}"
    if out.status == "refused":
        group, detail = REFUSED[model_type]
        assert group in out.detail or out.detail.startswith(group)


def test_the_table_names_only_types_transformers_ships():
    assert not sorted(set(REFUSED) - set(TYPES))


def test_a_refusal_is_one_line_naming_the_type_and_the_reason():
    # bart is listed under the encoder-decoder group (data/refused_families.yaml)
    with pytest.raises(ConfigError) as e:
        load_model({"model_type": "bart", "d_model": 1024, "decoder_layers": 12})
    msg = str(e.value)
    assert "\n" not in msg
    assert "model_type='bart' is refused: by choice: the decoder of an encoder-decoder" in msg


def test_a_refused_type_can_still_be_read_as_a_named_family():
    raw = {"model_type": "dory", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 128}
    m = load_model(raw, assume_family="llama")
    # llama layout at d = 64, ff = 128, V = 128, 2 layers, untied:
    # per layer q,k,v,o 4·64·64 = 16384 + MLP 3·64·128 = 24576 + 2 norms 128 = 41088;
    # 2 layers 82176 + embeddings 8192 + head 8192 + final norm 64 = 98624
    assert count_params(m).total == 98624
    assert any("assume_family" in w for w in m.warnings)


ACCEPTED = [t for t in TYPES if t not in REFUSED]


@pytest.mark.parametrize("model_type", ACCEPTED)
def test_parameters_exact_with_every_switch_flipped(model_type):
    # each boolean switch of the class default (biases, norms, tying, parallel blocks, multi-query, ...)
    # flipped one at a time where transformers builds it, and the sizes a default leaves at 0
    assert check_switches(model_type) == []


TINY = dict(num_hidden_layers=1, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, vocab_size=128, tie_word_embeddings=False)


def test_stablelm_per_head_qk_norms_by_hand():
    m = load_model({"model_type": "stablelm", **TINY, "qk_layernorm": True})
    # q 64·64 + k 64·32 + v 64·32 + o 64·64 = 12288; a bias-free LayerNorm per head over head_dim 16:
    # (4 q + 2 k heads)·16 = 96; gated MLP 3·64·128 = 24576; 2 LayerNorms with bias 2·2·64 = 256
    # -> layer 37216; embeddings 128·64 = 8192, head 8192, final LayerNorm 128 -> 53728
    assert count_params(m).total == 53728


def test_bitnet_sub_norms_by_hand():
    m = load_model({"model_type": "bitnet", **TINY})
    # attention 12288 (no biases) + MLP 24576 + 2 RMSNorms 128 + attn_sub_norm 64 + ffn_sub_norm 128
    # = 37184; embeddings 8192 + head 8192 + final norm 64 -> 53632
    assert count_params(m).total == 53632
