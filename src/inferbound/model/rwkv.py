"""RWKV (``rwkv``, RWKV-4 as transformers 5.24 builds it, ``models/rwkv/modeling_rwkv.py``): every block
is LayerNorm → time mixing (WKV linear attention) → LayerNorm → channel mixing, both residual; the first
block normalizes the embeddings (``pre_ln``), ``ln_out`` closes the stack, ``head`` is the LM head.

Sizes (``RwkvConfig.__post_init__``): A = ``attention_hidden_size`` (absent: hidden), F =
``intermediate_size`` (absent: 4·hidden). The block's parameters and its per-sequence state (two
token-shift vectors of d, the WKV numerator / denominator / maximum of A in float32) are ``ssm.py``'s
``RWKVSpec``; the WKV step's FLOPs ``ssm_cost.py``. transformers allocates the WKV state with d rows
(``shape = (batch, hidden_size, layers)``), so an A that differs from d is refused.
"""
from __future__ import annotations

from .fields import core
from .layout import group_layers
from .ssm import RWKVSpec
from .validate import Reader

#: transformers' RwkvModel keeps state[2:] (the WKV numerator, denominator, max) in float32
WKV_STATE_DTYPE = "fp32"


def rwkv(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults, need_heads=False)
    d = c["d"]
    a = r.opt_int("attention_hidden_size", kind="width") or d
    if a != d:
        raise r.error("attention_hidden_size", a, f"differs from hidden_size={d}",
                      f"{d} or null (transformers' RwkvModel sizes the WKV state by hidden_size)")
    ssm = RWKVSpec(hidden_size=d, attention_size=a, ffn_size=r.opt_int("intermediate_size", kind="width") or 4 * d,
                   state_dtype=WKV_STATE_DTYPE)
    return dict(hidden_size=d, num_heads=1, num_kv_heads=1, head_dim=1, vocab_size=c["vocab"], intermediate_size=0,
                gated_mlp=False, layernorm_bias=True, norms_per_layer=2, embedding_norm=True,
                tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])), ssm=ssm,
                layers=group_layers([("full", None, False, "rwkv", False)] * c["n"]))


RWKV = {"rwkv": rwkv}
