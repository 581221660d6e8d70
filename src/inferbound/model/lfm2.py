"""LFM2 (``lfm2``) and LFM2-MoE (``lfm2_moe``): gated short-convolution layers beside attention, as
transformers 5.24.0 builds them (``models/lfm2/modeling_lfm2.py``, ``models/lfm2_moe/modeling_lfm2_moe.py``).

- ``layer_types``: ``conv`` (``Lfm2ShortConv``: ssm.py's ``ShortConvSpec``, kernel K = ``conv_L_cache``,
  biases ``conv_bias``) or ``full_attention`` (q/k/v/out_proj without bias, q/k RMSNorms over head_dim).
  Absent (lfm2): full attention at ``full_attn_idxs`` (default every layer), conv elsewhere
  (Lfm2Config.__post_init__).
- Every layer: ``operator_norm`` and ``ffn_norm`` (RMSNorm d); the model: ``embedding_norm`` (d, applied
  after the last layer: the final norm), embeddings tied by default (the legacy keys ``tie_embedding`` and
  ``block_ff_dim`` win over ``tie_word_embeddings`` and ``intermediate_size``, as __post_init__ pops them).
- lfm2 MLP (``Lfm2MLP``, w1/w3/w2 without bias): width ff = ``intermediate_size``; with
  ``block_auto_adjust_ff_dim``, ff = int(2·ff/3), and when ``block_ffn_dim_multiplier`` is not null
  ff = int(multiplier·ff) rounded up to a multiple of ``block_multiple_of``.
- lfm2_moe: layers i < ``num_dense_layers`` have that dense MLP of ``intermediate_size``, the others a MoE
  (``Lfm2MoeSparseMoeBlock``) of ``num_experts`` bias-free experts of ``moe_intermediate_size``, top
  ``num_experts_per_tok``, a router d·E and, with ``use_expert_bias``, an ``expert_bias`` buffer (E).

State per sequence and conv layer: the last K−1 columns of the conv input, (K−1)·d values (ssm.py).
"""
from __future__ import annotations

from .fields import core, flag, sized
from .layout import group_layers, top_k
from .spec import MoE
from .ssm import ShortConvSpec
from .validate import Reader


def _mlp_width(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> int:
    ff = sized(r, fam, defaults, size_defaults, "block_ff_dim", "intermediate_size")  # block_ff_dim wins (__post_init__)
    if fam == "lfm2_moe" or not flag(r, defaults, "block_auto_adjust_ff_dim"):
        return ff
    ff = int(2 * ff / 3)
    mult = r.raw.get("block_ffn_dim_multiplier", defaults.get("block_ffn_dim_multiplier"))
    r.raw.seen.add("block_ffn_dim_multiplier")
    if mult is None:
        return ff
    if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
        raise r.error("block_ffn_dim_multiplier", mult, "is not a positive number", "a positive number or null")
    step = r.int("block_multiple_of", default=defaults["block_multiple_of"], kind="width")
    ff = int(mult * ff)
    return step * ((ff + step - 1) // step)


def lfm2(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    types = r.str_list("layer_types", length=n, allowed=("full_attention", "conv"))
    if types is None:
        if fam == "lfm2_moe":  # Lfm2MoeConfig derives none: its decoder layers index config.layer_types
            raise r.error("layer_types", None, "is not set", f"a list of {n} entries, each 'full_attention' or 'conv'")
        full = r.int_list("full_attn_idxs", 0, n - 1)
        full = set(range(n)) if full is None else set(full)
        types = ["full_attention" if i in full else "conv" for i in range(n)]
    moe, dense = None, n
    if fam == "lfm2_moe":
        n_exp = sized(r, fam, defaults, size_defaults, "num_experts", kind="experts")
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"),
                  expert_intermediate_size=sized(r, fam, defaults, size_defaults, "moe_intermediate_size"),
                  router_bias=flag(r, defaults, "use_expert_bias"))
        dense = r.int("num_dense_layers", default=defaults["num_dense_layers"], kind="layers", lo=0)
    ssm = None
    if "conv" in types:
        ssm = ShortConvSpec(hidden_size=d, d_conv=r.int("conv_L_cache", default=defaults["conv_L_cache"], kind="small"),
                            bias=flag(r, defaults, "conv_bias"))
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["kv"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=_mlp_width(r, fam, defaults, size_defaults), gated_mlp=True, qk_norm="head",
                tie_embeddings=r.bool("tie_embedding", r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"]))),
                ssm=ssm, moe=moe,
                layers=group_layers([("full", None, moe is not None and i >= dense,
                                      "shortconv" if t == "conv" else "attention", True) for i, t in enumerate(types)]))


LFM2 = {"lfm2": lfm2, "lfm2_moe": lfm2}
