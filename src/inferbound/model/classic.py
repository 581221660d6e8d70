"""Older decoder layouts with their own module names, each as transformers 5.24.0 builds it.

- ``mpt`` (``models/mpt/modeling_mpt.py``): fused Wqkv (3d) and out_proj without bias; LayerNorms whose
  bias is removed (``norm.bias = None``: weights only, d each), 2 per block and a final one; MLP up 4·d /
  down without bias (MptMLP fixes the 4; ``expansion_ratio`` and ``no_bias`` are not read by it); ALiBi,
  so no position parameters; the LM head tied with ``tie_word_embeddings`` (default true).
- ``gpt_neo`` (``models/gpt_neo/modeling_gpt_neo.py``): q/k/v without bias, out_proj with bias; MLP
  c_fc/c_proj of ``intermediate_size`` (None: 4·d) with biases; 2 LayerNorms with bias per block and a
  final one; learned positions (``max_position_embeddings`` rows); tied head. Its "local" layers mask
  the scores to ``window_size`` tokens but keep every token in the cache (a plain DynamicLayer), so
  they are counted as full-attention layers, as transformers caches them.
- ``dbrx`` (``models/dbrx/modeling_dbrx.py``): the attention and MLP sizes sit in the nested
  ``attn_config`` (``kv_n_heads``) and ``ffn_config`` (``ffn_hidden_size``, ``moe_num_experts``,
  ``moe_top_k``); fused Wqkv (d + 2·kv·head_dim) and out_proj without bias; bias-free LayerNorms (d each,
  2 per block and a final one); every block a mixture of gated experts (w1, v1, w2 of ffn_hidden_size,
  no bias) with a d × E router; the LM head untied unless ``tie_word_embeddings``.
"""
from __future__ import annotations

from .fields import core
from .layout import group_layers
from .spec import MoE
from .validate import Reader


def mpt(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults, layers=("n_layers", "num_hidden_layers"),
             hidden=("d_model", "hidden_size"), heads=("n_heads", "num_attention_heads"))
    d = c["d"]
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=4 * d, gated_mlp=False, layernorm_bias=False, norms_per_layer=2,
                tie_embeddings=r.bool("tie_word_embeddings", True),
                layers=group_layers([("full", None, False, "attention", True)] * c["n"]))


def gpt_neo(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults, layers=("num_layers", "num_hidden_layers"),
             heads=("num_heads", "num_attention_heads"))
    d = c["d"]
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=r.opt_int("intermediate_size", kind="width") or 4 * d, gated_mlp=False,
                qkv_bias=False, out_bias=True, mlp_bias=True, layernorm_bias=True, norms_per_layer=2,
                learned_positions=r.int("max_position_embeddings", default=2048, kind="tokens"),
                tie_embeddings=r.bool("tie_word_embeddings", True),
                layers=group_layers([("full", None, False, "attention", True)] * c["n"]))


def dbrx(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults, layers=("n_layers", "num_hidden_layers"),
             hidden=("d_model", "hidden_size"), heads=("n_heads", "num_attention_heads"))
    attn, ffn = (Reader(r.raw.get(k) or {}, f"{r.name} {k}") for k in ("attn_config", "ffn_config"))

    def nested(sub: Reader, key: str, kind: str, lo: int | None = None) -> int:
        if sub.has(key):
            return sub.int(key, kind=kind, lo=lo)
        if key in size_defaults:  # a size of one published model: said (data/model_families.yaml)
            r.warn(f"{sub.name.split()[-1]}.{key} absent: using the dbrx config class default {size_defaults[key]} "
                   f"(transformers); set it if the checkpoint differs")
            return size_defaults[key]
        return defaults[key]

    kv = nested(attn, "kv_n_heads", "heads")
    r.divides("attn_config.kv_n_heads", kv, "n_heads", c["h"], "each KV head serves an equal group of query heads")
    n_exp = nested(ffn, "moe_num_experts", "experts", lo=2)
    top = nested(ffn, "moe_top_k", "experts")
    if top > n_exp:
        raise ffn.error("moe_top_k", top, f"exceeds the {n_exp} experts", f"an integer in 1..{n_exp}")
    ff = nested(ffn, "ffn_hidden_size", "width")
    return dict(hidden_size=c["d"], num_heads=c["h"], num_kv_heads=kv, head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=ff, gated_mlp=True, layernorm_bias=False, norms_per_layer=2,
                tie_embeddings=r.bool("tie_word_embeddings", False),
                moe=MoE(num_experts=n_exp, top_k=top, expert_intermediate_size=ff),
                layers=group_layers([("full", None, True, "attention", True)] * c["n"]))


CLASSIC = {"mpt": mpt, "gpt_neo": gpt_neo, "dbrx": dbrx}
