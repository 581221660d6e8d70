"""Gated-DeltaNet hybrids read with ``linear_attn.py``'s DeltaNet shapes, each as transformers 5.24.0 builds it.

- ``olmo_hybrid`` (OLMo hybrid, ``models/olmo_hybrid/modeling_olmo_hybrid.py``): ``layer_types`` (default
  ``OlmoHybridConfig.__post_init__``: layer i full attention where i % 4 == 3, and the last layer when no
  other is) pick per layer OLMo 2's attention (q/k/v/o with ``attention_bias``, q_norm over all query heads
  and k_norm over all key heads: ``qk_norm="full"``; post_attention_layernorm and post_feedforward_layernorm)
  or a Gated DeltaNet (``OlmoHybridGatedDeltaNet``: q/k d×Kd, v and g d×Vd, a/b d×Hv, one conv1d over
  2Kd+Vd channels, A_log and dt_bias Hv each, o_norm Dv, o_proj Vd×d, no biases: exactly ssm.py's Gated
  DeltaNet count; input_layernorm and post_attention_layernorm); a gated MLP of ``intermediate_size`` in
  every layer. DeltaNet sizes absent: Hk = Hv = ``num_attention_heads``, Dk = int(0.75·d / Hk),
  Dv = 2·Dk (__post_init__). State per DeltaNet layer: conv (K−1)·(2Kd+Vd) and Hv·Dk·Dv (ssm.py).
- ``lara_mini`` (``models/lara_mini/modeling_lara_mini.py``): ``layer_types`` (default: the released period-5
  pattern linear, sliding, linear, full, sliding) pick Qwen3.5's Gated DeltaNet (split projections, the
  ``linear_*`` sizes), or attention without an output gate (q/k/v/o with ``attention_bias``, q/k RMSNorms over
  head_dim), full or over a ``sliding_window``; a MoE in every layer: E = ``num_experts`` experts of
  ``moe_intermediate_size``, router d·E, ONE shared MLP of ``shared_expert_intermediate_size`` added
  without a gate; 2 RMSNorms per layer.
- ``bailing_hybrid`` (Ling / Ring linear, ``models/bailing_hybrid/modeling_bailing_hybrid.py``):
  ``layer_types`` (default: every ``layer_group_size``-th layer full attention) pick MLA with a head-wise
  output gate (``g_proj`` d→h, sigmoid: ``attention_head_gate``; q_proj when q_lora_rank is null; biases of
  q_a/kv_a/o_proj with ``attention_bias``) or Kimi Delta Attention with full-rank gates (ssm.py
  ``KDASpec.full_rank_gates``: H = ``linear_num_heads`` heads of ``linear_head_dim``, kernel
  ``linear_conv_kernel_dim``; absent: the query heads, ``head_dim``, ``short_conv_kernel_size``);
  ``mlp_layer_types`` (default: the first ``first_k_dense_replace`` dense) pick a gated MLP or DeepSeek-style
  experts (router with a stored ``e_score_correction_bias``, ONE shared MLP of ``num_shared_experts`` ×
  ``moe_intermediate_size``). Its MTP layers are checkpoint-only (ignored on load) and not counted; the LM
  head is never tied (``_tied_weights_keys = {}``: a config's tie_word_embeddings true is warned, not applied).
"""
from __future__ import annotations

from .fields import core, flag, mla_fields, sized
from .layout import group_layers, top_k
from .linear_attn import deltanet_spec
from .spec import MoE
from .ssm import DeltaNetSpec, KDASpec
from .validate import Reader


def olmo_hybrid(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d, h = c["n"], c["d"], c["h"]
    types = r.str_list("layer_types", length=n, allowed=("linear_attention", "full_attention"))
    if types is None:
        types = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(n)]
        if "full_attention" not in types:
            types[-1] = "full_attention"
    hk = r.opt_int("linear_num_key_heads", kind="heads") or h
    hv = r.opt_int("linear_num_value_heads", kind="heads") or h
    dk = r.opt_int("linear_key_head_dim", kind="width") or int(0.75 * d / hk)
    dv = r.opt_int("linear_value_head_dim", kind="width") or 2 * dk
    r.divides("linear_num_key_heads", hk, "linear_num_value_heads", hv, "each key head serves an equal group of value heads")
    ssm = DeltaNetSpec(num_k_heads=hk, num_v_heads=hv, head_k_dim=dk, head_v_dim=dv,
                       d_conv=r.int("linear_conv_kernel_dim", default=defaults["linear_conv_kernel_dim"], kind="small"))
    bias = flag(r, defaults, "attention_bias")
    per = [("full", None, False, "attention" if t == "full_attention" else "gated_deltanet", True) for t in types]
    return dict(hidden_size=d, num_heads=h, num_kv_heads=c["kv"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size"), gated_mlp=True,
                qkv_bias=bias, out_bias=bias, qk_norm="full",
                tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
                ssm=ssm, layers=group_layers(per))


LARA_PATTERN = ("linear_attention", "sliding_attention", "linear_attention", "full_attention", "sliding_attention")


def lara_mini(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    types = r.str_list("layer_types", length=n, allowed=LARA_PATTERN[:4])
    if types is None:
        types = [LARA_PATTERN[i % len(LARA_PATTERN)] for i in range(n)]
    window = None
    if "sliding_attention" in types:
        window = sized(r, fam, defaults, size_defaults, "sliding_window", kind="tokens")
    n_exp = sized(r, fam, defaults, size_defaults, "num_experts", kind="experts")
    sh = sized(r, fam, defaults, size_defaults, "shared_expert_intermediate_size", lo=0)
    moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"),
              expert_intermediate_size=sized(r, fam, defaults, size_defaults, "moe_intermediate_size"),
              num_shared_experts=1 if sh else 0, shared_intermediate_size=sh)
    kinds = {"linear_attention": ("full", None, "gated_deltanet"), "full_attention": ("full", None, "attention"),
             "sliding_attention": ("window", window, "attention")}
    bias = flag(r, defaults, "attention_bias")
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["kv"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=0, gated_mlp=True, qkv_bias=bias, out_bias=bias, qk_norm="head",
                tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
                ssm=deltanet_spec(r, fam, defaults, size_defaults), moe=moe,
                layers=group_layers([(kinds[t][0], kinds[t][1], True, kinds[t][2], True) for t in types]))


def bailing_hybrid(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults, need_heads=False)  # MLA: heads need not divide the width
    n, d = c["n"], c["d"]
    h = r.int("num_attention_heads", kind="heads")
    types = r.str_list("layer_types", length=n, allowed=("linear_attention", "full_attention"))
    if types is None:
        every = r.int("layer_group_size", default=defaults["layer_group_size"], kind="layers")
        types = ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)]
    mlp_types = r.str_list("mlp_layer_types", length=n, allowed=("dense", "sparse"))
    if mlp_types is None:
        first = r.int("first_k_dense_replace", default=defaults["first_k_dense_replace"], kind="layers", lo=0)
        mlp_types = ["dense" if i < first else "sparse" for i in range(n)]
    mla = mla_fields(r)
    moe = None
    if "sparse" in mlp_types:
        # the checkpoint's spellings and their BailingHybridConfig.attribute_map names
        n_exp = sized(r, fam, defaults, size_defaults, "num_experts", "num_local_experts", kind="experts")
        ff_e = sized(r, fam, defaults, size_defaults, "moe_intermediate_size")
        n_sh = r.int("num_shared_experts", "n_shared_experts", default=defaults["num_shared_experts"], kind="experts",
                     lo=0)
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_token", "num_experts_per_tok"),
                  expert_intermediate_size=ff_e, num_shared_experts=1 if n_sh else 0,
                  shared_intermediate_size=ff_e * n_sh, router_bias=True)
    ssm = None
    if "linear_attention" in types:  # __post_init__: linear_head_dim = head_dim, linear_num_heads = heads
        ssm = KDASpec(num_heads=r.opt_int("linear_num_heads", kind="heads") or h,
                      head_dim=sized(r, fam, defaults, size_defaults, "linear_head_dim", "head_dim"),
                      d_conv=sized(r, fam, defaults, size_defaults, "linear_conv_kernel_dim", "short_conv_kernel_size",
                                   kind="small"),
                      full_rank_gates=True)
    per = [("full", None, m == "sparse", "attention" if t == "full_attention" else "kda", True)
           for t, m in zip(types, mlp_types)]
    bias = flag(r, defaults, "attention_bias")
    if r.bool("tie_word_embeddings", False):
        r.warn("tie_word_embeddings=true is not applied: BailingHybridForCausalLM never ties its output head "
               "(transformers modeling_bailing_hybrid.py: _tied_weights_keys = {}); the LM head is counted")
    return dict(hidden_size=d, num_heads=h, num_kv_heads=h, head_dim=mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"],
                vocab_size=c["vocab"], gated_mlp=True, qkv_bias=bias, out_bias=bias, mla=mla,
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size") if "dense" in mlp_types else 0,
                attention_head_gate=True, tie_embeddings=False,
                ssm=ssm, moe=moe, layers=group_layers(per))


LINEAR_ATTENTION_MORE = {"olmo_hybrid": olmo_hybrid, "lara_mini": lara_mini, "bailing_hybrid": bailing_hybrid}
