"""Decoders with module names and a layout of their own, each as transformers 5.24.0 builds it
(``transformers/models/<type>/modeling_<type>.py``; the class defaults in data/model_families.yaml).

- ``ctrl`` (``models/ctrl/modeling_ctrl.py``): Wq, Wk, Wv and dense, d × d with biases; an up/down ReLU MLP
  of ``dff`` with biases; 2 LayerNorms per block and a final one; sinusoidal positions (a non-persistent
  buffer: no parameters); the LM head tied with ``tie_word_embeddings`` (default true) and with a bias
  (``lm_head = nn.Linear(n_embd, vocab_size, bias=True)``).
- ``xglm`` (``models/xglm/modeling_xglm.py``): q/k/v/out_proj d × d with biases, fc1/fc2 of ``ffn_dim``
  with biases, 2 LayerNorms per block (pre-norm) and a final one; scaled word embeddings and sinusoidal
  positions (non-persistent: no parameters); with ``add_cross_attention`` each block adds ``encoder_attn``
  (the same four projections) and ``encoder_attn_layer_norm``, stored but run only with encoder states,
  as GPT-2's (``ModelSpec.cross_attention``).
- ``biogpt`` (``models/biogpt/modeling_biogpt.py``): XGLM's block (q/k/v/out_proj with biases, fc1/fc2 of
  ``intermediate_size``, 2 LayerNorms, a final one), learned positions of ``max_position_embeddings + 2``
  rows (BioGptLearnedPositionalEmbedding's offset 2), ``output_projection`` tied by default.
- ``gpt_neox_japanese`` (``models/gpt_neox_japanese/modeling_gpt_neox_japanese.py``): fused
  query_key_value d -> 3d and dense d -> d without bias, an up/down MLP of
  ``int(hidden_size · intermediate_multiple_size)`` without bias, 2 LayerNorms per block and a final one;
  only the last layer's attention has a bias, the separate ``dense_bias`` parameter (d: ``use_bias=
  layer_number == num_hidden_layers - 1``), counted in ``ModelSpec.extra_params``; ``embed_out`` tied by
  default.
- ``modernbert-decoder`` (``models/modernbert_decoder/modeling_modernbert_decoder.py``): embeddings with a
  LayerNorm (``norm_bias``); q/k/v and Wo d × d (``attention_bias``); a GeGLU MLP, Wi d -> 2·ff and Wo
  ff -> d (``mlp_bias``); per layer attn_norm and mlp_norm, except layer 0, whose attn_norm is an
  Identity; a final norm; the prediction head ``lm_head.dense`` d × d (``classifier_bias``) and
  ``lm_head.norm`` before ``decoder`` (V × d, tied by default, bias ``decoder_bias``). The head's norm has
  the shape of layer 0's missing attn_norm, so the count keeps 2 norms in every layer and adds the head's
  dense (d·d + d·classifier_bias) as ``extra_params``: in the weights, not priced as a matmul of its own
  (d·d against the head's V·d, 1.5 % of the head at the class default). ``layer_types`` (absent: every
  ``global_attn_every_n_layers``-th layer, default 3, is global from layer 0), and the window is
  ``local_attention // 2`` tokens (ModernBertDecoderConfig.__post_init__ sets ``sliding_window`` so and
  ignores a given one).
"""
from __future__ import annotations

from .fields import core, flag, sized
from .layout import group_layers
from .validate import Reader


def _full(n: int):
    return group_layers([("full", None, False, "attention", True)] * n)


def _tied(r: Reader, defaults: dict) -> bool:
    return r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"]))


def _biased_decoder(r: Reader, fam: str, defaults: dict, size_defaults: dict, keys: tuple, ffn: str,
                    **extra) -> dict:
    """A GPT-2-like decoder with biases everywhere, two LayerNorms per layer and an ungated MLP of width ``ffn``;
    ``keys`` = the config's (layers, hidden, heads) names, each with its standard alias."""
    layers, hidden, heads = keys
    c = core(r, fam, defaults, size_defaults, layers=(layers, "num_hidden_layers"),
             hidden=(hidden, "hidden_size"), heads=(heads, "num_attention_heads"))
    return dict(hidden_size=c["d"], num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, ffn), gated_mlp=False,
                qkv_bias=True, out_bias=True, mlp_bias=True, layernorm_bias=True, norms_per_layer=2,
                tie_embeddings=_tied(r, defaults), layers=_full(c["n"]), **extra)


def ctrl(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    return _biased_decoder(r, fam, defaults, size_defaults, ("n_layer", "n_embd", "n_head"), "dff", lm_head_bias=True)


def xglm(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    return _biased_decoder(r, fam, defaults, size_defaults, ("num_layers", "d_model", "attention_heads"), "ffn_dim",
                           cross_attention=flag(r, defaults, "add_cross_attention"))


def biogpt(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    positions = sized(r, fam, defaults, size_defaults, "max_position_embeddings", kind="tokens")
    return dict(hidden_size=c["d"], num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size"), gated_mlp=False,
                qkv_bias=True, out_bias=True, mlp_bias=True, layernorm_bias=True, norms_per_layer=2,
                learned_positions=positions + 2, tie_embeddings=_tied(r, defaults), layers=_full(c["n"]))


def gpt_neox_japanese(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    d = c["d"]
    mult = r.number("intermediate_multiple_size", defaults["intermediate_multiple_size"], lo=0.0)
    ff = int(d * mult)  # GPTNeoXJapaneseMLP: int(config.hidden_size * config.intermediate_multiple_size)
    if ff < 1:
        raise r.error("intermediate_multiple_size", mult, f"gives an MLP width int({d} x {mult:g}) = {ff}",
                      f"a number >= {1 / d:g} (the MLP width is int(hidden_size x it))")
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=ff, gated_mlp=False, layernorm_bias=True, norms_per_layer=2,
                extra_params=d, tie_embeddings=_tied(r, defaults), layers=_full(c["n"]))


def modernbert_decoder(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    types = r.str_list("layer_types", length=n, allowed=("full_attention", "sliding_attention"))
    if types is None:
        period = r.int("global_attn_every_n_layers", default=defaults["global_attn_every_n_layers"], kind="layers")
        types = ["sliding_attention" if i % period else "full_attention" for i in range(n)]
    local = r.raw.get("local_attention", defaults["local_attention"])
    if "sliding_attention" in types:
        if local is None:
            raise r.error("local_attention", None, "leaves the sliding layers without a window (sliding_window -1)",
                          "a window of tokens (the sliding layers attend to local_attention // 2)")
        local = r.int("local_attention", default=defaults["local_attention"], kind="tokens", lo=2)
    window = local // 2 if isinstance(local, int) else None
    per_layer = [("window", window, False, "attention", True) if t == "sliding_attention"
                 else ("full", None, False, "attention", True) for t in types]
    bias = flag(r, defaults, "attention_bias")
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size"), gated_mlp=True,
                qkv_bias=bias, out_bias=bias, mlp_bias=flag(r, defaults, "mlp_bias"),
                layernorm_bias=flag(r, defaults, "norm_bias"), norms_per_layer=2, embedding_norm=True,
                lm_head_bias=flag(r, defaults, "decoder_bias"),
                extra_params=d * d + d * flag(r, defaults, "classifier_bias"),
                tie_embeddings=_tied(r, defaults), layers=group_layers(per_layer))


DECODERS_OWN = {"ctrl": ctrl, "xglm": xglm, "biogpt": biogpt, "gpt_neox_japanese": gpt_neox_japanese,
                "modernbert-decoder": modernbert_decoder}
