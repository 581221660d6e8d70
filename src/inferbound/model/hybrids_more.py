"""Hybrid families read on top of ``hybrids.py``'s Mamba-2 reader, each as transformers 5.24.0 builds it.

- ``bamba`` (``models/bamba/modeling_bamba.py``): layer i runs Llama attention when i is in
  ``attn_layer_indices``, else a Mamba-2 mixer (BambaMixer: in_proj with ``mamba_proj_bias``, a depthwise
  conv with ``mamba_conv_bias``, the gated RMSNorm, out_proj), Mamba-2 width int(mamba_expand·d), head
  width ``mamba_d_head`` ("auto" = width / ``mamba_n_heads``); every layer has a gated MLP of
  ``intermediate_size`` (biases ``mlp_bias``) and 2 RMSNorms (input, pre-FF); attention biases
  ``attention_bias``.
"""
from __future__ import annotations

from .fields import core, flag, sized
from .hybrids import _attention, _expand, _mamba2, _tie
from .layout import group_layers
from .validate import Reader


def bamba(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    attn = set(r.int_list("attn_layer_indices", 0, n - 1) or [])
    ssm = None
    if len(attn) < n:
        ssm = _mamba2(r, fam, defaults, size_defaults, d_inner=_expand(r, fam, size_defaults, "mamba_expand", d),
                      heads=("mamba_n_heads",), head_dim=("mamba_d_head",), groups=("mamba_n_groups",),
                      state=("mamba_d_state",), conv=("mamba_d_conv",), conv_bias="mamba_conv_bias",
                      in_bias="mamba_proj_bias", out_bias="mamba_proj_bias", gated_norm=True,
                      chunk=("mamba_chunk_size",))
    bias = flag(r, defaults, "attention_bias")
    return dict(hidden_size=d, **_attention(c), vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size"), gated_mlp=True,
                qkv_bias=bias, out_bias=bias, mlp_bias=flag(r, defaults, "mlp_bias"),
                tie_embeddings=_tie(r, defaults), ssm=ssm,
                layers=group_layers([("full", None, False, "attention" if i in attn else "mamba2", True)
                                     for i in range(n)]))


HYBRIDS_MORE = {"bamba": bamba}
