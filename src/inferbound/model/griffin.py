"""RecurrentGemma (``recurrent_gemma``, Griffin: De et al. 2024, arXiv:2402.19427), as transformers 5.24.0
builds it (``models/recurrent_gemma/modeling_recurrent_gemma.py``, ``configuration_recurrent_gemma.py``).

Layer i runs ``block_types[i % len(block_types)]`` (RecurrentGemmaConfig.layers_block_type; default
recurrent, recurrent, attention):

- ``recurrent``: Griffin's recurrent block (``model/ssm.py`` ``RGLRUSpec``: linear_y and linear_x d→W, a
  depthwise conv of ``conv1d_width``, the RG-LRU with H = ``num_attention_heads`` block-diagonal gates,
  linear_out W→d, all with biases), W = ``lru_width`` (null: hidden_size); a state of (K−1)·W conv values
  and W recurrent values (float32) per sequence;
- ``attention``: local attention over the last ``attention_window_size`` tokens, head_dim = hidden /
  heads (__post_init__ sets it so), ``num_key_value_heads`` (null: one per query head), q/k/v with
  ``attention_bias``, o_proj always with a bias.

Every layer: a gated MLP of ``intermediate_size // 2`` (RecurrentGemmaMlp) with biases, two RMSNorms
(temporal_pre_norm, channel_pre_norm); a final norm; embeddings tied by default (``tie_word_embeddings``
true); the embedding ``normalizer`` is a non-persistent buffer (no parameters).
"""
from __future__ import annotations

from .fields import sized
from .layout import group_layers
from .ssm import RGLRUSpec
from .validate import Reader

BLOCKS = ("recurrent", "attention")


def recurrent_gemma(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    n = r.int("num_hidden_layers", kind="layers")
    d = r.int("hidden_size", kind="width")
    h = r.int("num_attention_heads", kind="heads")
    vocab = sized(r, fam, defaults, size_defaults, "vocab_size", kind="vocab")
    r.divides("num_attention_heads", h, "hidden_size", d, "head_dim = hidden_size / num_attention_heads")
    kv = h if r.raw.get("num_key_value_heads") is None else r.int("num_key_value_heads", kind="heads")
    r.divides("num_key_value_heads", kv, "num_attention_heads", h, "each KV head serves an equal group of query heads")
    w = d if r.raw.get("lru_width") is None else r.int("lru_width", kind="width")
    r.divides("num_attention_heads", h, "lru_width", w, "the RG-LRU gates are num_attention_heads diagonal blocks")
    ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    window = r.int("attention_window_size", "sliding_window", default=defaults["attention_window_size"], kind="tokens")
    cycle = r.str_list("block_types", allowed=BLOCKS) or list(defaults["block_types"])
    if not cycle:
        raise r.error("block_types", cycle, "is empty", f"a list of {', '.join(BLOCKS)}")
    types = (cycle * (n // len(cycle) + 1))[:n]
    return dict(
        hidden_size=d, num_heads=h, num_kv_heads=kv, head_dim=d // h, vocab_size=vocab,
        intermediate_size=ff // 2, gated_mlp=True, qkv_bias=r.bool("attention_bias", bool(defaults["attention_bias"])),
        out_bias=True, mlp_bias=True, norms_per_layer=2,
        tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
        layers=group_layers([("window", window, False, "attention", True) if t == "attention"
                             else ("full", None, False, "rglru", True) for t in types]),
        ssm=RGLRUSpec(lru_width=w, num_blocks=h, d_conv=r.int("conv1d_width", default=defaults["conv1d_width"],
                                                              kind="width")) if "recurrent" in types else None)


GRIFFIN = {"recurrent_gemma": recurrent_gemma}
