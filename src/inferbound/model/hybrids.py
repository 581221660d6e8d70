"""State-space and hybrid families: which layers run Mamba, Mamba-2, Gated DeltaNet or attention.

Each function follows its transformers 5 modeling file (``models/<family>/modeling_<family>.py``):

- ``mamba`` / ``falcon_mamba``: every block is RMSNorm + Mamba-1 mixer, no MLP; E = ``intermediate_size``
  when the config stores it (it overrides expand), else int(expand·d);
  Δ rank ``time_step_rank`` ("auto" = ceil(d/16)); FalconMamba's extra B/C/Δ norms have no weights.
- ``mamba2``: every block is RMSNorm + Mamba-2 mixer, no MLP; E = int(expand·d).
- ``jamba``: attention where i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere (with RMSNorm
  weights on Δ, B, C); MoE where i % expert_layer_period == expert_layer_offset and num_experts > 1;
  2 norms per layer; attention without biases.
- ``qwen3_next``: ``layer_types`` (or every ``full_attention_interval``-th layer, default 4) full gated
  attention (q_proj doubled for the output gate, q/k norms over head_dim), the others Gated DeltaNet;
  Qwen2-MoE-style experts with a gated shared expert.
- ``nemotron_h``: one block per entry of ``layers_block_type`` / ``hybrid_override_pattern``
  (M Mamba-2, * attention, - MLP, E MoE), each RMSNorm + that mixer; MLP and experts are up/down (relu²);
  one shared expert of ``moe_shared_expert_intermediate_size`` (biases with ``mlp_bias``, the routed
  experts never); router with a stored score-correction bias; Mamba-2 width mamba_num_heads·mamba_head_dim;
  the output head is never tied (``_tied_weights_keys = {}``), whatever ``tie_word_embeddings`` says.
- ``falcon_h1``: every layer runs attention and Mamba-2 side by side, then a gated MLP; Mamba-2 width
  ``mamba_d_ssm`` (else int(mamba_expand·d)); its in_proj bias is ``mamba_proj_bias``, out_proj's
  ``projectors_bias``; the gated norm only with ``mamba_rms_norm``.
- ``granitemoehybrid``: ``layer_types`` mamba/attention; every layer has the Granite MoE (when
  num_local_experts > 0) plus an always-on gated ``shared_mlp``; Mamba-2 width int(mamba_expand·d).
"""
from __future__ import annotations

import math

from .fields import core, flag, sized
from .layout import top_k, group_layers, moe_layout
from .spec import MoE
from .ssm import DeltaNetSpec, Mamba2Spec, MambaSpec
from .validate import Reader

_NO_ATTENTION = dict(num_heads=1, num_kv_heads=1, head_dim=1)  # placeholders: no attention layers
_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _expand(r: Reader, fam: str, size_defaults: dict, key: str, d: int) -> int:
    """Inner width int(expand · d) from the expansion factor ``key`` (its class default, warned)."""
    e = r.number(key, default=None, lo=0.0)
    if e is None:
        e = size_defaults[key]
        r.warn(f"{key} absent: using the {fam} config class default {e} (transformers)")
    width = int(e * d)
    if width < 1:
        raise r.error(key, e, "gives an empty inner width", "a positive expansion factor")
    return width


def _dt_rank(r: Reader, key: str, d: int) -> int:
    v = r.raw.get(key)
    if v is None or v == "auto":
        return math.ceil(d / 16)
    return r.check_int(key, v, "width")


def _state_dtype(r: Reader, key: str) -> str | None:
    v = r.str(key)
    if v is None:
        return None
    if v not in _DTYPES:
        raise r.error(key, v, "is not a known dtype", ", ".join(_DTYPES))
    return _DTYPES[v]


def _tie(r: Reader, defaults: dict) -> bool:
    return r.bool("tie_word_embeddings", bool(defaults.get("tie_word_embeddings", False)))


def mamba(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults, need_heads=False)
    d = c["d"]
    # MambaConfig / FalconMambaConfig.__post_init__ set intermediate_size = int(expand * hidden) and then apply
    # the file's keys, so a stored intermediate_size wins (tiiuae/falcon-mamba-7b: expand 16, intermediate 8192)
    d_inner = r.opt_int("intermediate_size", kind="width") or _expand(r, fam, size_defaults, "expand", d)
    ssm = MambaSpec(d_inner=d_inner,
                    d_state=sized(r, fam, defaults, size_defaults, "state_size"),
                    d_conv=sized(r, fam, defaults, size_defaults, "conv_kernel"),
                    dt_rank=_dt_rank(r, "time_step_rank", d), conv_bias=flag(r, defaults, "use_conv_bias"),
                    proj_bias=flag(r, defaults, "use_bias"))
    return dict(hidden_size=d, **_NO_ATTENTION, vocab_size=c["vocab"], intermediate_size=0, gated_mlp=False,
                norms_per_layer=1, tie_embeddings=_tie(r, defaults), ssm=ssm,
                layers=group_layers([("full", None, False, "mamba", False)] * c["n"]))


def _mamba2(r: Reader, fam: str, defaults: dict, size_defaults: dict, *, d_inner: int, heads: tuple,
            head_dim: tuple, groups: tuple, state: tuple, conv: tuple, conv_bias: str, in_bias: str,
            out_bias: str, gated_norm: bool, state_dtype: str | None = None,
            chunk: tuple = ("chunk_size",)) -> Mamba2Spec:
    h = sized(r, fam, defaults, size_defaults, *heads, kind="heads")
    hd_key = r.key_of(*head_dim)
    if hd_key is not None and r.raw[hd_key] != "auto":
        hd = r.check_int(hd_key, r.raw[hd_key], "width")
    elif any(k in size_defaults for k in head_dim):
        hd = sized(r, fam, defaults, size_defaults, *head_dim)
    else:
        r.divides(r.key_of(*heads) or heads[0], h, "mamba inner width", d_inner,
                  "the Mamba-2 head width is inner width / heads")
        hd = d_inner // h
    g = sized(r, fam, defaults, size_defaults, *groups, kind="heads")
    r.divides(r.key_of(*groups) or groups[0], g, r.key_of(*heads) or heads[0], h,
              "Mamba-2 heads share B and C in equal groups")
    return Mamba2Spec(d_inner=d_inner, d_state=sized(r, fam, defaults, size_defaults, *state), n_groups=g,
                      n_heads=h, head_dim=hd, d_conv=sized(r, fam, defaults, size_defaults, *conv),
                      conv_bias=flag(r, defaults, conv_bias), in_proj_bias=flag(r, defaults, in_bias),
                      out_proj_bias=flag(r, defaults, out_bias), gated_norm=gated_norm, state_dtype=state_dtype,
                      chunk_size=r.int(*chunk, default=256, kind="tokens"))


def mamba2(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults, need_heads=False)
    d = c["d"]
    ssm = _mamba2(r, fam, defaults, size_defaults, d_inner=_expand(r, fam, size_defaults, "expand", d),
                  heads=("num_heads",), head_dim=("head_dim",), groups=("n_groups",), state=("state_size",),
                  conv=("conv_kernel",), conv_bias="use_conv_bias", in_bias="use_bias", out_bias="use_bias",
                  gated_norm=True)
    return dict(hidden_size=d, **_NO_ATTENTION, vocab_size=c["vocab"], intermediate_size=0, gated_mlp=False,
                norms_per_layer=1, tie_embeddings=_tie(r, defaults), ssm=ssm,
                layers=group_layers([("full", None, False, "mamba2", False)] * c["n"]))


def _attention(c: dict) -> dict:
    return dict(num_heads=c["h"], num_kv_heads=c["kv"], head_dim=c["hd"])


def jamba(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    ssm = MambaSpec(d_inner=_expand(r, fam, size_defaults, "mamba_expand", d),
                    d_state=sized(r, fam, defaults, size_defaults, "mamba_d_state"),
                    d_conv=sized(r, fam, defaults, size_defaults, "mamba_d_conv"),
                    dt_rank=_dt_rank(r, "mamba_dt_rank", d), conv_bias=flag(r, defaults, "mamba_conv_bias"),
                    proj_bias=flag(r, defaults, "mamba_proj_bias"), inner_norms=True)
    period = {k: r.int(k, default=defaults[k], kind="layers", lo=0 if "offset" in k else 1)
              for k in ("attn_layer_period", "attn_layer_offset", "expert_layer_period", "expert_layer_offset")}
    n_exp = sized(r, fam, defaults, size_defaults, "num_experts", "num_local_experts", kind="experts")
    moe = None
    if n_exp > 1:
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"), expert_intermediate_size=ff)
    per = []
    for i in range(n):
        attn = i % period["attn_layer_period"] == period["attn_layer_offset"]
        is_moe = moe is not None and i % period["expert_layer_period"] == period["expert_layer_offset"]
        per.append(("full", None, is_moe, "attention" if attn else "mamba", True))
    return dict(hidden_size=d, **_attention(c), vocab_size=c["vocab"], intermediate_size=ff, gated_mlp=True,
                tie_embeddings=_tie(r, defaults), ssm=ssm, moe=moe, layers=group_layers(per))


def qwen3_next(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    types = r.str_list("layer_types", length=n, allowed=("linear_attention", "full_attention"))
    if types is None:
        every = r.int("full_attention_interval", default=defaults["full_attention_interval"], kind="layers")
        types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    ssm = DeltaNetSpec(**{f: sized(r, fam, defaults, size_defaults, key, kind="heads" if "heads" in key else "width")
                          for f, key in (("num_k_heads", "linear_num_key_heads"),
                                         ("num_v_heads", "linear_num_value_heads"),
                                         ("head_k_dim", "linear_key_head_dim"),
                                         ("head_v_dim", "linear_value_head_dim"),
                                         ("d_conv", "linear_conv_kernel_dim"))})
    r.divides("linear_num_key_heads", ssm.num_k_heads, "linear_num_value_heads", ssm.num_v_heads,
              "each key head serves an equal group of value heads")
    moe, is_moe, _ = moe_layout(r, fam, "qwen2_moe", n, d, defaults, size_defaults, ff)
    per = [("full", None, is_moe(i), "attention" if t == "full_attention" else "gated_deltanet", True)
           for i, t in enumerate(types)]
    bias = flag(r, defaults, "attention_bias")
    return dict(hidden_size=d, **_attention(c), vocab_size=c["vocab"], intermediate_size=ff, gated_mlp=True,
                qkv_bias=bias, out_bias=bias, qk_norm="head", attention_gate=True,
                tie_embeddings=_tie(r, defaults), ssm=ssm, moe=moe, layers=group_layers(per))


_NEMOTRON = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
_NEMOTRON_TYPES = {"linear_attention": "mamba2", "mamba": "mamba2", "full_attention": "attention",
                   "attention": "attention", "moe": "moe", "mlp": "mlp"}


def _nemotron_blocks(r: Reader) -> list[str]:
    """Block types from ``layers_block_type``/``layer_types`` or ``hybrid_override_pattern``; the
    block count is the list's length (NemotronHConfig derives num_hidden_layers from it)."""
    allowed = tuple(_NEMOTRON_TYPES)
    for key in ("layers_block_type", "layer_types"):
        types = r.str_list(key, allowed=allowed)
        if types:
            return types
    pattern = r.str("hybrid_override_pattern")
    if pattern is None:
        raise r.missing(["hybrid_override_pattern"])
    bad = next((ch for ch in pattern if ch not in _NEMOTRON), None)
    if bad is not None or not pattern:
        raise r.error("hybrid_override_pattern", pattern if len(pattern) <= 80 else f"<{len(pattern)} chars>",
                      f"has an unknown block {bad!r}" if bad else "is empty",
                      "a string of M (Mamba-2), * (attention), - (MLP), E (MoE)")
    return [_NEMOTRON[ch] for ch in pattern]


def nemotron_h(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    types = _nemotron_blocks(r)
    n = r.int("num_hidden_layers", default=len(types), kind="layers")
    if n != len(types):
        raise r.error("num_hidden_layers", n, f"differs from the {len(types)} blocks of the layer pattern",
                      f"{len(types)} (or leave it out)")
    c = core(r, fam, defaults, size_defaults, n=n)
    d = c["d"]
    kinds = [_NEMOTRON_TYPES[t] for t in types]
    ssm = None
    if "mamba2" in kinds:
        heads = sized(r, fam, defaults, size_defaults, "mamba_num_heads", kind="heads")
        hd = sized(r, fam, defaults, size_defaults, "mamba_head_dim")
        ssm = _mamba2(r, fam, defaults, size_defaults, d_inner=heads * hd, heads=("mamba_num_heads",),
                      head_dim=("mamba_head_dim",), groups=("mamba_n_groups", "n_groups"),
                      state=("ssm_state_size",), conv=("mamba_d_conv", "conv_kernel"),
                      conv_bias="mamba_conv_bias" if r.has("mamba_conv_bias") else "use_conv_bias",
                      in_bias="use_bias", out_bias="use_bias", gated_norm=True,
                      state_dtype=_state_dtype(r, "mamba_ssm_cache_dtype"), chunk=("mamba_chunk_size", "chunk_size"))
    moe = None
    if "moe" in kinds:
        n_exp = sized(r, fam, defaults, size_defaults, "n_routed_experts", "num_local_experts", kind="experts")
        sh = sized(r, fam, defaults, size_defaults, "moe_shared_expert_intermediate_size", lo=0)
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"),
                  expert_intermediate_size=sized(r, fam, defaults, size_defaults, "moe_intermediate_size"),
                  num_shared_experts=1 if sh else 0, shared_intermediate_size=sh, router_bias=True,
                  expert_bias=False, shared_expert_bias=flag(r, defaults, "mlp_bias"),
                  latent_size=r.opt_int("moe_latent_size", kind="width"))
    if r.int("num_nextn_predict_layers", default=0, kind="small"):
        r.warn("num_nextn_predict_layers: the MTP blocks are not counted (transformers does not build them)")
    if r.bool("tie_word_embeddings", False):
        r.warn("tie_word_embeddings=true is not applied: NemotronHForCausalLM never ties its output head "
               "(transformers modeling_nemotron_h.py: _tied_weights_keys = {}); the LM head is counted")
    table = {"mamba2": ("full", None, False, "mamba2", False), "attention": ("full", None, False, "attention", False),
             "mlp": ("full", None, False, "none", True), "moe": ("full", None, True, "none", True)}
    return dict(hidden_size=d, **_attention(c), vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size") if "mlp" in kinds else 0,
                gated_mlp=False, mlp_bias=flag(r, defaults, "mlp_bias"), norms_per_layer=1,
                tie_embeddings=False, ssm=ssm, moe=moe,
                layers=group_layers([table[k] for k in kinds]))


def falcon_h1(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    d = c["d"]
    d_ssm = r.opt_int("mamba_d_ssm", kind="width") or _expand(r, fam, size_defaults, "mamba_expand", d)
    ssm = _mamba2(r, fam, defaults, size_defaults, d_inner=d_ssm, heads=("mamba_n_heads",),
                  head_dim=("mamba_d_head",), groups=("mamba_n_groups",), state=("mamba_d_state",),
                  conv=("mamba_d_conv",), conv_bias="mamba_conv_bias", in_bias="mamba_proj_bias",
                  out_bias="projectors_bias", gated_norm=flag(r, defaults, "mamba_rms_norm"),
                  chunk=("mamba_chunk_size",))
    if ssm.n_heads * ssm.head_dim != d_ssm:
        raise r.error("mamba_d_head", ssm.head_dim, f"x mamba_n_heads={ssm.n_heads} != mamba width {d_ssm}",
                      "mamba_d_head * mamba_n_heads == mamba_d_ssm (or mamba_expand * hidden_size)")
    bias = flag(r, defaults, "attention_bias")
    return dict(hidden_size=d, **_attention(c), vocab_size=c["vocab"],
                intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size"), gated_mlp=True,
                qkv_bias=bias, out_bias=bias, mlp_bias=flag(r, defaults, "mlp_bias"),
                tie_embeddings=_tie(r, defaults), ssm=ssm,
                layers=group_layers([("full", None, False, "attention+mamba2", True)] * c["n"]))


def granitemoehybrid(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    allowed = ("mamba", "linear_attention", "attention", "full_attention")
    types = r.str_list("layer_types", length=n, allowed=allowed) or \
        r.str_list("layers_block_type", length=n, allowed=allowed) or ["mamba"] * n
    ssm = None
    if any(t in ("mamba", "linear_attention") for t in types):
        ssm = _mamba2(r, fam, defaults, size_defaults, d_inner=_expand(r, fam, size_defaults, "mamba_expand", d),
                      heads=("mamba_n_heads",), head_dim=("mamba_d_head",), groups=("mamba_n_groups",),
                      state=("mamba_d_state",), conv=("mamba_d_conv",), conv_bias="mamba_conv_bias",
                      in_bias="mamba_proj_bias", out_bias="mamba_proj_bias", gated_norm=True,
                      chunk=("mamba_chunk_size",))
    n_exp = sized(r, fam, defaults, size_defaults, "num_local_experts", kind="experts")
    shared = sized(r, fam, defaults, size_defaults, "shared_intermediate_size", lo=0)
    moe, ff = None, shared
    if n_exp > 0:
        if n_exp < 2:
            raise r.error("num_local_experts", n_exp, "is too few experts for a mixture of experts",
                          "0 (dense shared_mlp only) or an integer >= 2")
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"),
                  expert_intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size"),
                  num_shared_experts=1 if shared else 0, shared_intermediate_size=shared)
        ff = r.opt_int("intermediate_size") or size_defaults["intermediate_size"]
    mixer = {"mamba": "mamba2", "linear_attention": "mamba2", "attention": "attention", "full_attention": "attention"}
    bias = flag(r, defaults, "attention_bias")
    return dict(hidden_size=d, **_attention(c), vocab_size=c["vocab"], intermediate_size=ff, gated_mlp=True,
                qkv_bias=bias, out_bias=bias, tie_embeddings=_tie(r, defaults), ssm=ssm, moe=moe,
                layers=group_layers([("full", None, moe is not None, mixer[t], True) for t in types]))


HYBRIDS = {"mamba": mamba, "falcon_mamba": mamba, "mamba2": mamba2, "jamba": jamba, "qwen3_next": qwen3_next,
           "nemotron_h": nemotron_h, "falcon_h1": falcon_h1, "granitemoehybrid": granitemoehybrid}
