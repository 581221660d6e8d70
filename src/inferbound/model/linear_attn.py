"""Linear-attention hybrids beyond Qwen3-Next: which layers run Gated DeltaNet and which run attention.

Each builder follows its transformers 5.24 modeling file (``models/<family>/modeling_<family>.py``):

- ``qwen3_5_text`` (Qwen3.5 dense) / ``qwen3_5_moe_text`` (Qwen3.5 MoE), also reached from the
  multimodal wrappers ``qwen3_5`` / ``qwen3_5_moe`` through their ``text_config``: ``layer_types`` (or
  every ``full_attention_interval``-th layer, default 4, ``Qwen3_5TextConfig.__post_init__``) run
  Qwen3-Next's gated full attention (q_proj doubled for the output gate, q/k RMSNorms over head_dim),
  the others a Gated DeltaNet whose projections are split (``in_proj_qkv`` d×(2Kd+Vd), ``in_proj_z``
  d×Vd, ``in_proj_b`` and ``in_proj_a`` d×Hv each) but hold exactly Qwen3-Next's ``in_proj_qkvz`` +
  ``in_proj_ba`` parameters (ssm.py's Gated DeltaNet count). The dense model has a gated MLP of
  ``intermediate_size`` in every layer; the MoE model a Qwen3-Next sparse block in every layer
  (``Qwen3_5MoeDecoderLayer`` builds ``Qwen3_5MoeSparseMoeBlock`` unconditionally: the config class
  deletes ``decoder_sparse_step`` and ``mlp_only_layers``): router d×E, E experts, one shared expert
  with a d→1 sigmoid gate.
- ``minimax`` (MiniMax-Text-01): ``layer_types`` (default ``MiniMaxConfig.__post_init__``: layer i full
  attention when i is even, lightning attention when odd) pick per layer a plain GQA attention (q/k/v/o
  without biases or norms; a sliding window of ``sliding_window`` when set) or lightning attention
  (ssm.py ``LightningSpec``: H = num_attention_heads heads of head_dim, ``block_size``); a Mixtral-style
  MoE (router d×E, no bias) in every layer.
- ``kimi_linear`` (Kimi-Linear): ``layer_types``, else the checkpoint's ``linear_attn_config``
  (``full_attn_layers`` / ``kda_layers``, 1-indexed), else layer i full attention when i > 0 and i % 4 == 0
  (``KimiLinearConfig.__post_init__``): MLA (DeepSeek-V2's projections, ``q_proj`` when q_lora_rank is
  null; biases of kv_a_proj and o_proj with ``attention_bias``), the other layers Kimi Delta Attention
  (ssm.py ``KDASpec``; head_dim / num_heads / short_conv_kernel_size from ``linear_attn_config`` when
  given); ``mlp_layer_types`` (default: the first ``first_k_dense_replace`` = 1 layers dense) pick a gated
  MLP or DeepSeek-style experts (router with a stored score-correction bias, shared experts
  n_shared × ``moe_intermediate_size`` wide); the LM head is never tied (``_tied_weights_keys = {}``).
"""
from __future__ import annotations

from .fields import core, flag, mla_fields, sized
from .layout import group_layers, top_k
from .spec import MoE
from .ssm import DeltaNetSpec, KDASpec, LightningSpec
from .validate import Reader

_DELTANET_KEYS = (("num_k_heads", "linear_num_key_heads"), ("num_v_heads", "linear_num_value_heads"),
                  ("head_k_dim", "linear_key_head_dim"), ("head_v_dim", "linear_value_head_dim"),
                  ("d_conv", "linear_conv_kernel_dim"))


def deltanet_spec(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> DeltaNetSpec:
    """The Gated DeltaNet shapes of a Qwen3-Next-style config (``linear_*`` keys)."""
    s = DeltaNetSpec(**{f: sized(r, fam, defaults, size_defaults, key, kind="heads" if "heads" in key else "width")
                        for f, key in _DELTANET_KEYS})
    r.divides("linear_num_key_heads", s.num_k_heads, "linear_num_value_heads", s.num_v_heads,
              "each key head serves an equal group of value heads")
    return s


def hybrid_types(r: Reader, n: int, defaults: dict) -> list[str]:
    """``layer_types`` (linear_attention / full_attention), else every ``full_attention_interval``-th
    layer full attention."""
    types = r.str_list("layer_types", length=n, allowed=("linear_attention", "full_attention"))
    if types is None:
        every = r.int("full_attention_interval", default=defaults["full_attention_interval"], kind="layers")
        types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    return types


def qwen3_5(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """Qwen3.5 dense (``qwen3_5_text``) and MoE (``qwen3_5_moe_text``): module docstring."""
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    types = hybrid_types(r, n, defaults)
    ssm = deltanet_spec(r, fam, defaults, size_defaults)
    moe, ff = None, 0
    if fam == "qwen3_5_moe_text":
        n_exp = sized(r, fam, defaults, size_defaults, "num_experts", kind="experts")
        if n_exp < 2:
            raise r.error("num_experts", n_exp, "is too few experts for a mixture of experts",
                          f"an integer >= 2 (model_type {fam!r} builds a router and experts in every layer)")
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"),
                  expert_intermediate_size=sized(r, fam, defaults, size_defaults, "moe_intermediate_size"),
                  num_shared_experts=1,
                  shared_intermediate_size=sized(r, fam, defaults, size_defaults, "shared_expert_intermediate_size"),
                  shared_expert_gate=True)
    else:
        ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    per = [("full", None, moe is not None, "attention" if t == "full_attention" else "gated_deltanet", True)
           for t in types]
    bias = flag(r, defaults, "attention_bias")
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["kv"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=ff, gated_mlp=True, qkv_bias=bias, out_bias=bias, qk_norm="head",
                attention_gate=True, tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
                ssm=ssm, moe=moe, layers=group_layers(per))


def minimax(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """MiniMax-Text-01 (``minimax``): module docstring."""
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    types = r.str_list("layer_types", length=n, allowed=("linear_attention", "full_attention"))
    if types is None:
        types = ["full_attention" if (i + 1) % 2 else "linear_attention" for i in range(n)]
    ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    n_exp = sized(r, fam, defaults, size_defaults, "num_local_experts", kind="experts")
    if n_exp < 2:
        raise r.error("num_local_experts", n_exp, "is too few experts for a mixture of experts",
                      f"an integer >= 2 (model_type {fam!r} builds a router and experts in every layer)")
    moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"), expert_intermediate_size=ff)
    ssm = LightningSpec(num_heads=c["h"], head_dim=c["hd"],
                        block_size=r.int("block_size", default=defaults["block_size"], kind="tokens"))
    w = r.opt_int("sliding_window", kind="tokens")
    att = ("window", w) if w else ("full", None)
    per = [(*att, True, "attention", True) if t == "full_attention" else ("full", None, True, "lightning", True)
           for t in types]
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["kv"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=ff, gated_mlp=True,
                tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
                ssm=ssm if "linear_attention" in types else None, moe=moe, layers=group_layers(per))


def _kimi_types(r: Reader, n: int, lin: dict) -> list[str]:
    types = r.str_list("layer_types", length=n, allowed=("linear_attention", "full_attention"))
    if types is not None:
        return types
    if "full_attn_layers" in lin and "kda_layers" in lin:
        types = [None] * n
        for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", "linear_attention")):
            for i in lin[key]:
                if not isinstance(i, int) or isinstance(i, bool) or not 1 <= i <= n:
                    raise r.error(f"linear_attn_config.{key}", i, "is not a layer number", f"an integer in 1..{n}")
                types[i - 1] = kind
        if None in types:
            raise r.error("linear_attn_config", f"<layer {types.index(None) + 1}>", "is in neither list",
                          "every layer 1..n in full_attn_layers or kda_layers")
        return types
    return ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n)]


def kimi_linear(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """Kimi-Linear (``kimi_linear``): module docstring."""
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    lin = r.raw.get("linear_attn_config") or {}
    if not isinstance(lin, dict):
        raise r.error("linear_attn_config", lin, "is not an object", "a JSON object (head_dim, num_heads, ...)")
    types = _kimi_types(r, n, lin)
    mla = mla_fields(r)
    lin_size = {"head_dim": ("linear_head_dim", "head_dim"), "num_heads": ("linear_num_heads", "num_heads"),
                "d_conv": ("linear_conv_kernel_dim", "short_conv_kernel_size")}
    kda = {}
    for f, (key, sub) in lin_size.items():
        kda[f] = (r.check_int(f"linear_attn_config.{sub}", lin[sub], "heads" if f == "num_heads" else "width")
                  if sub in lin else sized(r, fam, defaults, size_defaults, key, kind="heads" if f == "num_heads" else "width"))
    mlp_types = r.str_list("mlp_layer_types", length=n, allowed=("dense", "sparse"))
    if mlp_types is None:
        first = r.int("first_k_dense_replace", default=defaults["first_k_dense_replace"], kind="layers", lo=0)
        mlp_types = ["dense" if i < first else "sparse" for i in range(n)]
    moe = None
    if "sparse" in mlp_types:
        n_exp = sized(r, fam, defaults, size_defaults, "num_experts", "num_local_experts", kind="experts")
        ff_e = sized(r, fam, defaults, size_defaults, "moe_intermediate_size")
        # the checkpoint's spellings (KimiLinearConfig.attribute_map) and the aliases transformers maps to them
        n_sh = r.int("num_shared_experts", "n_shared_experts", default=defaults["n_shared_experts"], kind="experts")
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_token", "num_experts_per_tok"),
                  expert_intermediate_size=ff_e,
                  num_shared_experts=n_sh, shared_intermediate_size=ff_e if n_sh else 0, router_bias=True)
    per = [("full", None, m == "sparse", "attention" if t == "full_attention" else "kda", True)
           for t, m in zip(types, mlp_types)]
    bias = flag(r, defaults, "attention_bias")
    if r.bool("tie_word_embeddings", False):
        r.warn("tie_word_embeddings=true is not applied: KimiLinearForCausalLM never ties its output head "
               "(transformers modeling_kimi_linear.py: _tied_weights_keys = {}); the LM head is counted")
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["h"],
                head_dim=mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"], vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size") if "dense" in mlp_types else 0,
                gated_mlp=True, qkv_bias=bias, out_bias=bias, mla=mla, tie_embeddings=False,
                ssm=KDASpec(**kda) if "linear_attention" in types else None, moe=moe, layers=group_layers(per))


LINEAR_ATTENTION = {"qwen3_5_text": qwen3_5, "qwen3_5_moe_text": qwen3_5, "minimax": minimax,
                    "kimi_linear": kimi_linear}
