"""Per-family rules: how each HF ``model_type`` lays out its modules, as transformers 5 builds them.

Most families are a pre-norm decoder (attention + MLP, two norms) that differ in a few switches; those
are the :class:`Traits` rows below, each naming the modeling file it follows
(``transformers/models/<family>/modeling_<family>.py``). Families with their own layout (Falcon, OPT,
GPT-2/J, CodeGen, GPT-BigCode, BLOOM; MPT and GPT-Neo in ``classic.py``), a Traits row with a config switch
of its own (StableLM, HyperCLOVA X, BitNet) and the state-space / hybrid families (``hybrids.py``,
``hybrids_more.py``) have a function each. Every causal-LM model_type of transformers is either read here
exactly or refused with its reason (data/refused_families.yaml; tests/test_transformers_wide.py).

A switch is either a constant or the config key that sets it (read as a JSON boolean, absent = the
config class default from data/model_families.yaml). Window and MoE layouts are named rules
(``layout.py``). Every family a config can name is in :data:`SUPPORTED`; anything else is refused by the
loader unless the caller names a family to assume.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .fields import core, flag, mla_fields, sized
from .hybrids import HYBRIDS
from .hybrids_more import HYBRIDS_MORE
from .classic import CLASSIC
from .gemma3n import KV_SHARING
from .linear_attn import LINEAR_ATTENTION
from .rwkv import RWKV
from .sparse_attn import indexer_spec
from .layout import group_layers, moe_layout, window_layout
from .validate import Reader


@dataclass(frozen=True)
class Traits:
    """Switches of a pre-norm decoder family (see module docstring)."""

    gated: bool = True                      # gate/up/down MLP (SwiGLU, GeGLU) vs up/down
    norm: str = "rms"                       # rms | layernorm | layernorm_nobias | none (non-parametric)
    norms: int = 2                          # norms per layer
    qkv_bias: bool | str = "attention_bias"
    out_bias: bool | str = "attention_bias"
    mlp_bias: bool | str = False
    qk_norm: str = "none"                   # none | head | full | per_head
    qk_norm_key: str | None = None          # qk_norm only when this config key is true
    windows: str = "none"                   # rule name in layout.window_layout
    moe: str | None = None                  # rule name in layout.moe_layout
    ff_keys: tuple[str, ...] = ("intermediate_size",)
    lm_head_bias: bool | str = False
    parallel: bool = False                  # attention and MLP read the same normed input
    sinks: bool = False
    mla: bool = False


TRAITS: dict[str, Traits] = {
    "llama": Traits(mlp_bias="mlp_bias"),
    "granite": Traits(mlp_bias="mlp_bias"),
    "smollm3": Traits(mlp_bias="mlp_bias", windows="smollm3"),
    "mistral": Traits(qkv_bias=False, out_bias=False, windows="all"),
    "mixtral": Traits(qkv_bias=False, out_bias=False, windows="all", moe="mixtral"),
    "qwen2": Traits(qkv_bias=True, out_bias=False, windows="qwen2"),
    "qwen2_moe": Traits(qkv_bias="qkv_bias", out_bias=False, windows="qwen2_moe", moe="qwen2_moe"),
    "qwen3": Traits(qk_norm="head", windows="qwen2"),
    "qwen3_moe": Traits(qk_norm="head", windows="qwen3_moe", moe="qwen3_moe"),
    "gemma": Traits(),
    "gemma2": Traits(norms=4, windows="gemma2"),
    "gemma3_text": Traits(norms=4, qk_norm="head", windows="gemma3"),
    "phi": Traits(gated=False, norm="layernorm", norms=1, qkv_bias=True, out_bias=True, mlp_bias=True,
                  qk_norm="head", qk_norm_key="qk_layernorm", lm_head_bias=True, parallel=True),
    "phi3": Traits(qkv_bias=False, out_bias=False, windows="all"),
    "phimoe": Traits(norm="layernorm", windows="all", moe="mixtral", lm_head_bias="lm_head_bias"),
    "granitemoe": Traits(moe="mixtral"),
    "olmo": Traits(norm="none", norms=0),
    "olmo2": Traits(qk_norm="full"),
    "olmoe": Traits(qk_norm="full", moe="olmoe"),
    "cohere": Traits(norm="layernorm_nobias", norms=1, qk_norm="full", qk_norm_key="use_qk_norm", parallel=True),
    "starcoder2": Traits(gated=False, norm="layernorm", qkv_bias="use_bias", out_bias="use_bias",
                         mlp_bias="use_bias", windows="all"),
    "gpt_neox": Traits(gated=False, norm="layernorm", mlp_bias=True),
    "llama4_text": Traits(windows="llama4", moe="llama4", ff_keys=("intermediate_size_mlp",)),
    "gpt_oss": Traits(sinks=True, windows="gpt_oss", moe="gpt_oss"),
    "deepseek_v2": Traits(mla=True, moe="deepseek", mlp_bias="mlp_bias"),  # dense + shared MLPs: mlp_bias
    "deepseek_v3": Traits(mla=True, moe="deepseek"),
    "glm4_moe": Traits(out_bias=False, qk_norm="head", qk_norm_key="use_qk_norm", moe="deepseek"),
    # read exactly over the class defaults of transformers 5.24.0 (tests/test_transformers_wide.py)
    "exaone": Traits(mlp_bias="mlp_bias"),              # ExaoneConfig(LlamaConfig): builds LlamaForCausalLM
    "internlm3": Traits(mlp_bias="mlp_bias"),           # InternLM3Config(LlamaConfig): LlamaForCausalLM
    "iquestcoder": Traits(mlp_bias="mlp_bias"),         # IQuestCoderConfig(LlamaConfig): LlamaForCausalLM
    "glm": Traits(out_bias=False),                      # GlmAttention: o_proj without bias; Phi3MLP gate_up
    "glm4": Traits(norms=4, out_bias=False),            # + post_self_attn / post_mlp norms
    "ernie4_5": Traits(qkv_bias="use_bias", out_bias="use_bias", mlp_bias="use_bias"),
    "seed_oss": Traits(out_bias="attention_out_bias", mlp_bias="mlp_bias"),
    "hunyuan_v1_dense": Traits(qk_norm="head"),         # query_layernorm / key_layernorm over head_dim
    "olmo3": Traits(qk_norm="full", windows="olmo3"),
    "exaone4": Traits(qkv_bias=False, out_bias=False, qk_norm="head", windows="exaone4"),
    "cohere2": Traits(norm="layernorm_nobias", norms=1, qk_norm="full", qk_norm_key="use_qk_norm", parallel=True,
                      windows="cohere2"),
    "ministral": Traits(qkv_bias=False, out_bias=False, windows="all"),
    "ministral3": Traits(qkv_bias=False, out_bias=False, windows="all"),
    "helium": Traits(out_bias=False, mlp_bias="mlp_bias"),
    "arcee": Traits(gated=False, mlp_bias="mlp_bias"),  # NemotronMLP: up/down, ReLU^2
    "cwm": Traits(qkv_bias=False, out_bias=False, mlp_bias="mlp_bias", windows="cwm"),
    "vaultgemma": Traits(windows="gemma2"),             # Gemma 2 without the two post-norms
    "nanochat": Traits(gated=False, norm="none", norms=0),  # weightless RMSNorms, fc1/fc2
    "dots1": Traits(qk_norm="head", moe="deepseek"),  # Qwen3 attention + DeepSeek-V3 MoE
    "glm4_moe_lite": Traits(mla=True, moe="deepseek"),  # DeepseekV3Attention + GLM-4.5 MoE, mlp_layer_types
    "minicpm3": Traits(mla=True, mlp_bias="mlp_bias"),  # DeepseekV2Attention (MLA) + Llama MLP
    "persimmon": Traits(gated=False, norm="layernorm", qkv_bias=True, out_bias=True, mlp_bias=True, qk_norm="head",
                        qk_norm_key="qk_layernorm"),  # fused qkv, LayerNorm q/k over head_dim, relu^2 MLP
    "nemotron": Traits(gated=False, norm="layernorm", mlp_bias="mlp_bias"),  # LayerNorm1P, relu^2 up/down
    "sarvam_mla": Traits(mla=True, moe="deepseek"),      # builds DeepseekV3ForCausalLM
    "granitemoeshared": Traits(moe="granitemoeshared"),
    "jais2": Traits(gated=False, norm="layernorm", mlp_bias="mlp_bias"),  # LayerNorms, NemotronMLP up/down
    "youtu": Traits(mla=True),                          # DeepseekV3Attention (MLA) + dense Qwen3MLP
    "flex_olmo": Traits(qk_norm="full", moe="olmoe"),   # Olmo2 attention + OLMoE experts
    "mellum": Traits(qk_norm="head", moe="qwen3_moe"),  # Qwen3-MoE modules; layer_types / mlp_layer_types
    "aria_text": Traits(mlp_bias="mlp_bias", moe="aria"),  # Aria's language model: Llama attention + MoE
    "exaone_moe": Traits(qkv_bias=False, out_bias=False, qk_norm="head", windows="exaone4", moe="deepseek"),
    "ernie4_5_moe": Traits(qkv_bias="use_bias", out_bias="use_bias", mlp_bias="use_bias", moe="ernie4_5_moe",
                           lm_head_bias="use_bias"),  # its lm_head too takes bias=config.use_bias
    "hunyuan_v1_moe": Traits(qk_norm="head", moe="hunyuan"),  # HunYuanDenseV1's layer with a MoE MLP
    "granite_swa": Traits(mlp_bias="mlp_bias", sinks=True, windows="granite_swa"),       # + a sink logit per head
    "granitemoe_swa": Traits(moe="granitemoeshared", sinks=True, windows="granite_swa"),
    "sarvam_moe": Traits(out_bias=False, qk_norm="head", qk_norm_key="use_qk_norm", moe="deepseek"),  # Glm4Moe
}

#: model_types that name the same architecture under another name (the config says which family)
ALIASES = {"llama4": "llama4_text", "kimi_k2": "deepseek_v3", "gemma3": "gemma3_text",
           "mistral3": "mistral", "qwen3_next_text": "qwen3_next", "qwen3_5": "qwen3_5_text",
           "qwen3_5_moe": "qwen3_5_moe_text", "gemma3n": "gemma3n_text",
           "gemma4": "gemma4_text", "gemma4_unified": "gemma4_unified_text"}


def norm_fields(norm: str, norms: int) -> dict:
    if norm == "none":
        return dict(layernorm_bias=False, norms_per_layer=0, final_norm=False)
    return dict(layernorm_bias=norm == "layernorm", norms_per_layer=norms)


def decoder(r: Reader, fam: str, defaults: dict, size_defaults: dict, t: Traits) -> dict:
    """ModelSpec fields of a :class:`Traits` family."""
    c = core(r, fam, defaults, size_defaults, need_heads=not t.mla)  # MLA: heads need not divide the width
    n, d = c["n"], c["d"]
    ff = sized(r, fam, defaults, size_defaults, *t.ff_keys, kind="width", lo=0)
    mla = _mla(r) if t.mla else None
    if mla is not None:
        c["h"] = r.int("num_attention_heads", kind="heads")
        kv, hd = c["h"], mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
    else:
        kv, hd = c["kv"], c["hd"]
    moe, is_moe, dense_ff = moe_layout(r, fam, t.moe, n, d, defaults, size_defaults, ff)
    windows = window_layout(r, fam, t.windows, n, defaults, size_defaults)
    qk = t.qk_norm if (t.qk_norm_key is None or flag(r, defaults, t.qk_norm_key)) else "none"
    return dict(
        hidden_size=d, num_heads=c["h"], num_kv_heads=kv, head_dim=hd, vocab_size=c["vocab"],
        intermediate_size=dense_ff, gated_mlp=t.gated, qkv_bias=flag(r, defaults, t.qkv_bias),
        out_bias=flag(r, defaults, t.out_bias), mlp_bias=flag(r, defaults, t.mlp_bias),
        **norm_fields(t.norm, t.norms), qk_norm=qk, attention_sinks=t.sinks,
        tie_embeddings=r.bool("tie_word_embeddings", bool(defaults.get("tie_word_embeddings", False))),
        lm_head_bias=flag(r, defaults, t.lm_head_bias), parallel_attention=t.parallel,
        layers=group_layers([(a, w, is_moe(i), "attention", True) for i, (a, w) in enumerate(windows)]),
        moe=moe, mla=mla, mtp_layers=r.int("num_nextn_predict_layers", default=0, kind="small")
        if fam in ("deepseek_v3", "glm4_moe") else 0)


def _mla(r: Reader) -> dict:
    """:func:`fields.mla_fields`, but a config without kv_lora_rank names only that key (the switch that
    makes a family MLA)."""
    if not r.has("kv_lora_rank"):
        raise r.missing(["kv_lora_rank"])
    return mla_fields(r)


# ---------------------------------------------------------------------- families with their own layout
def minimax_m2(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """MiniMax-M2 (modeling_minimax_m2.py): full softmax attention in every layer (no lightning
    attention), q/k RMSNorms over all heads (``q_norm`` n_heads·head_dim, ``k_norm`` n_kv·head_dim), no
    biases; a sparse MoE in every layer whose experts are ``intermediate_size`` wide, the router with a
    stored ``e_score_correction_bias``."""
    out = decoder(r, fam, defaults, size_defaults, Traits(qkv_bias=False, out_bias=False, qk_norm="full", moe="mixtral"))
    out["moe"] = out["moe"].model_copy(update={"router_bias": True})
    return out


def deepseek_v32(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """DeepSeek-V3.2 (modeling_deepseek_v32.py): DeepSeek-V3's MLA and MoE (router with its stored
    score-correction bias; ``mlp_layer_types`` dense/sparse when given, else the first
    ``first_k_dense_replace`` layers dense), and a DSA indexer in every attention layer (sparse_attn.py;
    ``layer_types`` is all ``indexed_attention``)."""
    held = dict.pop(r.raw, "layer_types", None)  # not a window layout: read here, kept out of decoder()
    r.raw.seen.add("layer_types")
    out = decoder(r, fam, defaults, size_defaults, Traits(mla=True, moe="deepseek"))
    n = sum(g.count for g in out["layers"])
    if held is not None:
        r.raw["layer_types"] = held
        r.str_list("layer_types", length=n, allowed=("indexed_attention",))
    types = r.str_list("mlp_layer_types", length=n, allowed=("dense", "sparse"))
    if types is not None:
        out["layers"] = group_layers([("full", None, t == "sparse", "attention", True) for t in types])
    out["moe"] = out["moe"].model_copy(update={"router_bias": True})
    out["indexer"] = indexer_spec(r, fam, defaults, size_defaults, out["mla"]["q_lora_rank"])
    out["mtp_layers"] = r.int("num_nextn_predict_layers", default=defaults.get("num_nextn_predict_layers", 0),
                              kind="small")
    return out


def gpt2(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """GPT-2 (modeling_gpt2.py): Conv1D c_attn/c_proj/c_fc with biases, 2 LayerNorms, learned positions;
    with ``add_cross_attention`` each block adds a cross-attention (GPT2Attention(is_cross_attention=True))
    and ``ln_cross_attn``. GPT-J (modeling_gptj.py): q/k/v/out without bias, one LayerNorm (parallel), LM
    head with a bias; CodeGen (modeling_codegen.py) is GPT-J's layout (fused qkv_proj). GPT-BigCode
    (modeling_gpt_bigcode.py) is GPT-2's with ``multi_query`` (default true): c_attn d -> d + 2·head_dim."""
    c = core(r, fam, defaults, size_defaults, layers=("n_layer", "num_hidden_layers"),
             hidden=("n_embd", "hidden_size"), heads=("n_head", "num_attention_heads"))
    n, d = c["n"], c["d"]
    ff = r.opt_int("n_inner") or 4 * d
    j = fam in ("gptj", "codegen")
    kv = 1 if fam == "gpt_bigcode" and r.bool("multi_query", True) else c["h"]
    return dict(
        hidden_size=d, num_heads=c["h"], num_kv_heads=kv, head_dim=c["hd"], vocab_size=c["vocab"],
        intermediate_size=ff, gated_mlp=False, qkv_bias=not j, out_bias=not j, mlp_bias=True,
        layernorm_bias=True, norms_per_layer=1 if j else 2, parallel_attention=j, lm_head_bias=j,
        cross_attention=False if j else r.bool("add_cross_attention", False),
        learned_positions=0 if j else r.int("n_positions", "max_position_embeddings", default=1024, kind="tokens"),
        tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
        layers=group_layers([("full", None, False, "attention", True)] * n))


def bloom(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """BLOOM (modeling_bloom.py): fused qkv with bias, 4·d MLP with biases, 2 LayerNorms, a LayerNorm on
    the embeddings, ALiBi (no position parameters)."""
    c = core(r, fam, defaults, size_defaults, layers=("n_layer", "num_hidden_layers"),
             hidden=("hidden_size", "n_embed"), heads=("n_head", "num_attention_heads"))
    d = c["d"]
    return dict(
        hidden_size=d, num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
        intermediate_size=4 * d, gated_mlp=False, qkv_bias=True, out_bias=True, mlp_bias=True,
        layernorm_bias=True, norms_per_layer=2, embedding_norm=True,
        tie_embeddings=r.bool("tie_word_embeddings", True),
        layers=group_layers([("full", None, False, "attention", True)] * c["n"]))


def falcon(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """Falcon (modeling_falcon.py): fused qkv of (2·kv + heads)·head_dim (new decoder architecture),
    d + 2·head_dim (multi-query) or 3·d; MLP of ``ffn_hidden_size`` (default 4·d), all biases = ``bias``;
    LayerNorms: 2 (sequential), ``num_ln_in_parallel_attn`` (parallel; 2 by default with the new
    decoder architecture, else 1)."""
    c = core(r, fam, defaults, size_defaults, hidden=("hidden_size", "n_embed"))
    d, h = c["d"], c["h"]
    new = r.bool("new_decoder_architecture", False)
    mq = r.bool("multi_query", True)
    if new:
        kv = r.int("num_kv_heads", default=h, kind="heads")
        r.divides("num_kv_heads", kv, "num_attention_heads", h, "each KV head serves an equal group of query heads")
    else:
        kv = 1 if mq else h
    parallel = r.bool("parallel_attn", True)
    n_ln = r.opt_int("num_ln_in_parallel_attn", kind="small", lo=1)
    if n_ln is None:
        n_ln = 2 if new else 1
    if n_ln not in (1, 2):
        raise r.error("num_ln_in_parallel_attn", n_ln, "is not allowed", "1 or 2")
    bias = r.bool("bias", False)
    return dict(
        hidden_size=d, num_heads=h, num_kv_heads=kv, head_dim=c["hd"], vocab_size=c["vocab"],
        intermediate_size=r.int("ffn_hidden_size", default=4 * d, kind="width"), gated_mlp=False,
        qkv_bias=bias, out_bias=bias, mlp_bias=bias, layernorm_bias=True,
        norms_per_layer=n_ln if parallel else 2, parallel_attention=parallel,
        tie_embeddings=r.bool("tie_word_embeddings", True),
        layers=group_layers([("full", None, False, "attention", True)] * c["n"]))


def opt(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """OPT (modeling_opt.py): q/k/v/out and fc1/fc2 with ``enable_bias``, 2 LayerNorms per layer
    (non-affine when ``layer_norm_elementwise_affine`` is false), learned positions (max_pos + 2 rows,
    the offset of OPTLearnedPositionalEmbedding), embeddings of ``word_embed_proj_dim`` projected in and
    out when it differs from the hidden size, a final LayerNorm only with ``do_layer_norm_before`` (not
    opt-350m) and not ``_remove_final_layer_norm``."""
    c = core(r, fam, defaults, size_defaults)
    d = c["d"]
    bias = r.bool("enable_bias", True)
    affine = r.bool("layer_norm_elementwise_affine", True)
    final = r.bool("do_layer_norm_before", True) and not r.bool("_remove_final_layer_norm", False)
    wepd = r.int("word_embed_proj_dim", default=d, kind="width")
    return dict(
        hidden_size=d, num_heads=c["h"], num_kv_heads=c["h"], head_dim=c["hd"], vocab_size=c["vocab"],
        intermediate_size=sized(r, fam, defaults, size_defaults, "ffn_dim"), gated_mlp=False,
        qkv_bias=bias, out_bias=bias, mlp_bias=bias, layernorm_bias=affine,
        norms_per_layer=2 if affine else 0, final_norm=final and affine,
        learned_positions=r.int("max_position_embeddings", default=2048, kind="tokens") + 2,
        word_embed_proj_dim=wepd if wepd != d else None,
        tie_embeddings=r.bool("tie_word_embeddings", True),
        layers=group_layers([("full", None, False, "attention", True)] * c["n"]))


def _hyperclovax(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """HyperCLOVA X (modeling_hyperclovax.py): Granite's layer, plus post_norm1/post_norm2 with
    ``use_post_norm``."""
    post = flag(r, defaults, "use_post_norm")
    return decoder(r, fam, defaults, size_defaults, Traits(mlp_bias="mlp_bias", norms=4 if post else 2))


def _stablelm(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """StableLM (modeling_stablelm.py): LayerNorms with bias; q/k/v biases with ``use_qkv_bias``, o_proj
    without; ``use_parallel_residual``: one norm, attention beside the MLP; ``qk_layernorm``: a bias-free
    LayerNorm per q and k head (StableLmLayerNormPerHead)."""
    par = flag(r, defaults, "use_parallel_residual")
    return decoder(r, fam, defaults, size_defaults, Traits(
        norm="layernorm", qkv_bias="use_qkv_bias", out_bias=False, norms=1 if par else 2, parallel=par,
        qk_norm="per_head", qk_norm_key="qk_layernorm"))


def _bitnet(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """BitNet (modeling_bitnet.py): Llama's layer, gated MLP without bias, plus attn_sub_norm (d, before
    o_proj) and ffn_sub_norm (the MLP width, before down_proj) in every layer."""
    return {**decoder(r, fam, defaults, size_defaults, Traits(mlp_bias=False)), "sub_norms": True}


def _afmoe(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """AFMoE (modeling_afmoe.py): q/k norms over head_dim, an output gate_proj d -> heads·head_dim (counted as
    ``attention_gate``, as Qwen3-Next's), 4 norms per layer, DeepSeek-style MoE (rule ``afmoe``)."""
    if flag(r, defaults, "attention_bias"):  # q/k/v/o would take a bias, gate_proj not: no field says that yet
        raise r.error("attention_bias", True, "is not counted for afmoe (its gate_proj has no bias, q/k/v/o would)",
                      "false, as Arcee's published AFMoE configs")
    t = Traits(norms=4, qk_norm="head", windows="afmoe", moe="afmoe")
    return {**decoder(r, fam, defaults, size_defaults, t), "attention_gate": True}


def _traits_family(t: Traits) -> Callable:
    return lambda r, fam, defaults, size_defaults: decoder(r, fam, defaults, size_defaults, t)


def builders() -> dict[str, Callable[[Reader, str, dict, dict], dict]]:
    out = {fam: _traits_family(t) for fam, t in TRAITS.items()}
    out.update(gpt2=gpt2, gptj=gpt2, codegen=gpt2, gpt_bigcode=gpt2, bloom=bloom, falcon=falcon, opt=opt, deepseek_v32=deepseek_v32, minimax_m2=minimax_m2, **HYBRIDS, **LINEAR_ATTENTION, **RWKV, **KV_SHARING)
    out.update(HYBRIDS_MORE, **CLASSIC, hyperclovax=_hyperclovax, stablelm=_stablelm, bitnet=_bitnet, afmoe=_afmoe)
    return out


SUPPORTED: tuple[str, ...] = tuple(sorted(set(TRAITS) | set(LINEAR_ATTENTION) | set(RWKV) | set(KV_SHARING) | {"gpt2", "gptj", "bloom", "falcon", "opt", "deepseek_v32", "minimax_m2", "mamba",
                                                         "falcon_mamba", "mamba2", "jamba", "qwen3_next",
                                                         "nemotron_h", "falcon_h1", "granitemoehybrid"}))
SUPPORTED = tuple(sorted({*SUPPORTED, "codegen", "gpt_bigcode", "hyperclovax", "stablelm", "bitnet", "afmoe", *HYBRIDS_MORE, *CLASSIC}))  # gpt2(); hybrids_more.py
