"""Which layers slide, chunk or route to experts: the per-layer rules of each family's config class.

Window rules (transformers 5 ``configuration_<family>.py``, the ``layer_types`` its ``__post_init__``
derives when the config has none; an explicit ``layer_types`` always wins):

- ``all`` (Mistral, Mixtral, Phi-3, PhiMoE, Starcoder2): every layer slides when ``sliding_window`` is set;
- ``qwen2`` (Qwen2, Qwen3): with ``use_sliding_window``, layers i >= ``max_window_layers`` slide;
- ``qwen2_moe``: with ``use_sliding_window``, layers with (i+1) odd and i < ``max_window_layers``;
- ``qwen3_moe``: with ``use_sliding_window``, every layer;
- ``smollm3``: with ``use_sliding_window``, the NoPE layers (``no_rope_layers[i] == 0``);
- ``olmo3`` (every 4th layer global), ``cohere2`` / ``exaone4`` (every ``sliding_window_pattern``-th,
  default 4), ``cwm`` / ``granite_swa`` (layers i % 4 == 0 global): the rest slide (``PERIODIC``);
- ``gemma2`` / ``gpt_oss``: even layers slide (i+1 odd); ``gemma3``: all but every
  ``sliding_window_pattern``-th layer (default 6: 5 local : 1 global);
- ``llama4``: RoPE layers (``no_rope_layers[i] == 1``; absent, every ``no_rope_layer_interval``-th layer,
  default 4, is NoPE) use chunked attention of ``attention_chunk_size`` tokens, NoPE layers are global.

MoE rules (modeling files' decoder layers): ``mixtral``/``olmoe`` every layer; ``qwen2_moe``/``qwen3_moe``
layer i unless in ``mlp_only_layers`` and when (i+1) % ``decoder_sparse_step`` == 0; ``deepseek``
i >= ``first_k_dense_replace``; for every rule an explicit ``mlp_layer_types`` (dense / sparse per layer) wins; ``llama4`` ``moe_layers`` or (i+1) % ``interleave_moe_layer_step`` == 0;
``gpt_oss`` every layer; ``ernie4_5_moe``, ``hunyuan``, ``aria`` and ``afmoe``: see moe_layout; ``granitemoeshared`` every layer, plus one shared expert of
``shared_intermediate_size`` when it is > 0 (GraniteMoeShared, GraniteMoeSWA).
"""
from __future__ import annotations

from .spec import LayerGroup, MoE
from .fields import sized
from .validate import Reader

#: (config key of the period or None, default period, offset): layer i is global where (i + offset) % period
#: == 0, the others slide (the configuration files' __post_init__, transformers 5.24.0)
PERIODIC = {"olmo3": (None, 4, 1), "cohere2": ("sliding_window_pattern", 4, 1),
            "exaone4": ("sliding_window_pattern", 4, 1), "cwm": (None, 4, 0), "granite_swa": (None, 4, 0),
            "afmoe": ("global_attn_every_n_layers", 4, 1)}
#: families whose router stores an ``e_score_correction_bias`` buffer (E values per MoE layer)
SCORE_CORRECTION_BIAS = ("deepseek_v3", "glm4_moe", "glm4_moe_lite", "dots1", "sarvam_mla", "sarvam_moe", "solar_open",
                         "axk1", "exaone_moe")
#: layer_types entries, legacy names included (transformers' _LEGACY_LAYER_TYPE_REMAP)
ATTENTION_TYPES = {"full_attention": "full", "attention": "full", "sliding_attention": "window",
                   "chunked_attention": "chunked"}


def group_layers(per_layer: list[tuple]) -> tuple[LayerGroup, ...]:
    """Run-length encode per-layer (attention, window, moe, mixer, mlp) descriptors into ordered groups."""
    groups: list[list] = []
    for desc in per_layer:
        if groups and groups[-1][0] == desc:
            groups[-1][1] += 1
        else:
            groups.append([desc, 1])
    return tuple(LayerGroup(count=c, attention=a, window=w, moe=e, mixer=x, mlp=p)
                 for (a, w, e, x, p), c in groups)


def _window(r: Reader, size_defaults: dict, defaults: dict) -> int | None:
    """``sliding_window``: its value (null = none); absent, the class default (warned when a size)."""
    if "sliding_window" in r.raw:
        return r.opt_int("sliding_window", kind="tokens")
    if size_defaults.get("sliding_window") is not None:
        r.warn(f"sliding_window absent: using the config class default {size_defaults['sliding_window']} "
               f"(transformers); set it to null if the model attends to every token")
        return size_defaults["sliding_window"]
    return defaults.get("sliding_window")


def layer_types_windows(r: Reader, n: int, types: list[str]) -> list[tuple[str, int | None]]:
    """(kind, window) per layer from an explicit attention-only ``layer_types``."""
    kinds = [ATTENTION_TYPES[t] for t in types]
    out = []
    for k in kinds:
        if k == "window":
            w = r.opt_int("sliding_window", kind="tokens")
            if w is None:
                raise r.error("sliding_window", r.raw.get("sliding_window"), "is not set",
                              "a window size in tokens (layer_types has sliding_attention layers)")
            out.append(("window", w))
        elif k == "chunked":
            c = r.opt_int("attention_chunk_size", kind="tokens")
            if c is None:
                raise r.error("attention_chunk_size", r.raw.get("attention_chunk_size"), "is not set",
                              "a chunk size in tokens (layer_types has chunked_attention layers)")
            out.append(("chunked", c))
        else:
            out.append(("full", None))
    return out


def window_layout(r: Reader, fam: str, rule: str, n: int, defaults: dict,
                  size_defaults: dict) -> list[tuple[str, int | None]]:
    """(attention kind, window) for each of the ``n`` layers (module docstring for the rules)."""
    types = r.str_list("layer_types", length=n, allowed=tuple(ATTENTION_TYPES))
    if types is not None:
        return layer_types_windows(r, n, types)
    full = [("full", None)] * n
    if rule == "none":
        return full
    if rule == "llama4":
        chunk = (r.opt_int("attention_chunk_size", kind="tokens") if "attention_chunk_size" in r.raw
                 else defaults.get("attention_chunk_size"))
        rope = _rope_layers(r, n, defaults)
        return [("chunked", chunk) if rope[i] and chunk else ("full", None) for i in range(n)]
    sw = _window(r, size_defaults, defaults)
    if sw is None:
        return full
    slide = ("window", sw)
    if rule == "all":
        return [slide] * n
    if rule in ("gemma2", "gpt_oss"):
        return [slide if (i + 1) % 2 else ("full", None) for i in range(n)]
    if rule in PERIODIC:
        key, period, offset = PERIODIC[rule]
        p = r.int(key, default=defaults.get(key, period), kind="layers") if key else period
        return [("full", None) if (i + offset) % p == 0 else slide for i in range(n)]
    if rule == "gemma3":
        pattern = r.int("sliding_window_pattern", default=defaults["sliding_window_pattern"], kind="layers")
        return [slide if (i + 1) % pattern else ("full", None) for i in range(n)]
    if not r.bool("use_sliding_window", bool(defaults.get("use_sliding_window", False))):
        return full
    if rule == "qwen3_moe":
        return [slide] * n
    if rule == "smollm3":
        rope = _rope_layers(r, n, defaults)
        return [("full", None) if rope[i] else slide for i in range(n)]
    mwl = r.int("max_window_layers", default=defaults.get("max_window_layers", n), kind="layers", lo=0)
    if rule == "qwen2":
        return [slide if i >= mwl else ("full", None) for i in range(n)]
    if rule == "qwen2_moe":
        return [slide if (i + 1) % 2 and i < mwl else ("full", None) for i in range(n)]
    raise AssertionError(f"unknown window rule {rule!r}")


def _rope_layers(r: Reader, n: int, defaults: dict) -> list[int]:
    """1 for a RoPE layer, 0 for a NoPE layer (Llama 4, SmolLM3 ``no_rope_layers``)."""
    listed = r.int_list("no_rope_layers", 0, 1)
    if listed:
        if len(listed) != n:
            raise r.error("no_rope_layers", f"<list of {len(listed)}>", f"has {len(listed)} entries",
                          f"{n} entries (one per layer)")
        return listed
    interval = r.int("no_rope_layer_interval", default=defaults.get("no_rope_layer_interval", 4), kind="layers")
    return [int((i + 1) % interval != 0) for i in range(n)]


def top_k(r: Reader, n_exp: int, *keys: str) -> int:
    key = r.key_of(*keys)
    if key is None:
        raise r.error(keys[0], None, f"is absent but the config has {n_exp} experts",
                      f"the experts each token is routed to, 1..{n_exp}")
    k = r.int(key, kind="experts", lo=1)
    if k > n_exp:
        raise r.error(key, k, f"exceeds the {n_exp} experts", f"an integer in 1..{n_exp}")
    return k


def moe_layout(r: Reader, fam: str, rule: str | None, n: int, d: int, defaults: dict, size_defaults: dict,
               ff: int):
    """(MoE or None, is_moe(layer index), dense MLP width) for a family's MoE rule."""
    no = (None, lambda i: False, ff)
    if rule is None:
        return no
    keys = {"mixtral": ("num_local_experts", "num_experts"), "olmoe": ("num_experts", "num_local_experts"),
            "qwen2_moe": ("num_experts", "num_local_experts"), "qwen3_moe": ("num_experts", "num_local_experts"),
            "deepseek": ("n_routed_experts", "num_local_experts", "num_experts"), "llama4": ("num_local_experts",),
            "granitemoeshared": ("num_local_experts",), "ernie4_5_moe": ("moe_num_experts", "num_experts"),
            "hunyuan": ("num_experts", "num_local_experts"), "aria": ("moe_num_experts",), "afmoe": ("num_experts",),
            "gpt_oss": ("num_local_experts", "num_experts")}[rule]
    n_exp = sized(r, fam, defaults, size_defaults, *keys, kind="experts")
    if n_exp == 0 and rule in ("qwen2_moe", "qwen3_moe"):
        return no
    if n_exp < 2:
        raise r.error(r.key_of(*keys) or keys[0], n_exp, "is too few experts for a mixture of experts",
                      f"an integer >= 2 (model_type {fam!r} builds a router and experts)")
    k = top_k(r, n_exp, "num_experts_per_tok", "experts_per_token", "moe_k", "moe_topk")
    e = dict(num_experts=n_exp, top_k=k, expert_intermediate_size=ff)
    is_moe = lambda i: True  # noqa: E731
    if rule in ("qwen2_moe", "qwen3_moe"):
        e["expert_intermediate_size"] = sized(r, fam, defaults, size_defaults, "moe_intermediate_size")
        if rule == "qwen2_moe":
            sh = sized(r, fam, defaults, size_defaults, "shared_expert_intermediate_size", lo=0)
            if sh:
                e.update(num_shared_experts=1, shared_intermediate_size=sh, shared_expert_gate=True)
        step = r.int("decoder_sparse_step", default=defaults.get("decoder_sparse_step", 1), kind="layers")
        dense_only = set(r.int_list("mlp_only_layers", 0, n - 1) or [])
        is_moe = lambda i: i not in dense_only and (i + 1) % step == 0  # noqa: E731
    elif rule == "deepseek":
        ff_e = sized(r, fam, defaults, size_defaults, "moe_intermediate_size")
        n_sh = r.int("n_shared_experts", "num_shared_experts", default=defaults.get("n_shared_experts", 0), kind="experts")
        e.update(expert_intermediate_size=ff_e, num_shared_experts=n_sh, shared_intermediate_size=ff_e if n_sh else 0,
                 router_bias=fam in SCORE_CORRECTION_BIAS)
        if fam == "deepseek_v2" and n_sh and r.bool("mlp_bias", bool(defaults.get("mlp_bias", False))):
            # DeepseekV2MLP takes bias=config.mlp_bias, the shared experts too: ONE MLP of n_shared x width
            # (its biases are 2·n·ff + d, not n·(2·ff + d))
            e.update(shared_expert_bias=True, num_shared_experts=1, shared_intermediate_size=ff_e * n_sh)
        first = r.int("first_k_dense_replace", default=defaults.get("first_k_dense_replace", 0), kind="layers", lo=0)
        freq = r.int("moe_layer_freq", default=1, kind="layers")
        if freq != 1:
            r.warn(f"moe_layer_freq={freq} is ignored by transformers (MoE in every layer from "
                   f"first_k_dense_replace={first} on); counted as transformers builds it")
        is_moe = lambda i: i >= first  # noqa: E731
    elif rule == "llama4":
        e.update(expert_intermediate_size=sized(r, fam, defaults, size_defaults, "intermediate_size"),
                 num_shared_experts=1)
        e["shared_intermediate_size"] = e["expert_intermediate_size"]
        listed = r.int_list("moe_layers", 0, n - 1)
        if listed is not None:
            chosen = set(listed)
            is_moe = lambda i: i in chosen  # noqa: E731
        else:
            step = r.int("interleave_moe_layer_step", default=defaults.get("interleave_moe_layer_step", 1),
                         kind="layers")
            is_moe = lambda i: (i + 1) % step == 0  # noqa: E731
    elif rule == "gpt_oss":
        e.update(expert_bias=True, router_bias=True)
    elif rule == "ernie4_5_moe":
        # Ernie4_5_MoeSparseMoeBlock: experts of moe_intermediate_size, ONE shared MLP of n_shared x that
        # width with use_bias, moe_statics.e_score_correction_bias (E, a parameter); MoE where
        # (i + 1) % moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: last)
        ff_e = sized(r, fam, defaults, size_defaults, "moe_intermediate_size")
        n_sh = r.int("moe_num_shared_experts", default=defaults.get("moe_num_shared_experts", 0), kind="experts", lo=0)
        e.update(expert_intermediate_size=ff_e, router_bias=True,
                 shared_expert_bias=r.bool("use_bias", bool(defaults.get("use_bias", False))))
        if n_sh:
            e.update(num_shared_experts=1, shared_intermediate_size=ff_e * n_sh)
        start = r.int("moe_layer_start_index", default=defaults.get("moe_layer_start_index", 0), kind="layers", lo=0)
        end = r.raw.get("moe_layer_end_index", defaults.get("moe_layer_end_index", -1))
        end = n - 1 if end == -1 else r.int("moe_layer_end_index", kind="layers", lo=0)
        every = r.int("moe_layer_interval", default=defaults.get("moe_layer_interval", 1), kind="layers")
        is_moe = lambda i: (i + 1) % every == 0 and start <= i <= end  # noqa: E731
    elif rule == "hunyuan":  # HunYuanMoEV1Moe: every layer; experts and ONE shared MLP of intermediate_size
        e.update(num_shared_experts=1, shared_intermediate_size=ff)
    elif rule == "aria":  # AriaTextMoELayer: every layer; ONE shared MLP of n_shared x intermediate_size (mlp_bias)
        n_sh = r.int("moe_num_shared_experts", default=defaults.get("moe_num_shared_experts", 0), kind="experts", lo=0)
        if n_sh:
            e.update(num_shared_experts=1, shared_intermediate_size=ff * n_sh,
                     shared_expert_bias=r.bool("mlp_bias", bool(defaults.get("mlp_bias", False))))
    elif rule == "afmoe":  # AfmoeSparseMoeBlock: ONE shared MLP of n x moe width, a stored expert_bias (E)
        ff_e = sized(r, fam, defaults, size_defaults, "moe_intermediate_size")
        n_sh = r.int("num_shared_experts", default=defaults.get("num_shared_experts", 0), kind="experts", lo=0)
        e.update(expert_intermediate_size=ff_e, router_bias=True)
        if n_sh:
            e.update(num_shared_experts=1, shared_intermediate_size=ff_e * n_sh)
        first = r.int("num_dense_layers", default=defaults.get("num_dense_layers", 0), kind="layers", lo=0)
        is_moe = lambda i: i >= first  # noqa: E731
    elif rule == "granitemoeshared":  # GraniteMoeSharedMLP: gated input_linear (2·sh) + output_linear, no bias
        sh = r.int("shared_intermediate_size", default=defaults.get("shared_intermediate_size", 0), kind="width", lo=0)
        if sh:
            e.update(num_shared_experts=1, shared_intermediate_size=sh)
    kinds = r.str_list("mlp_layer_types", length=n, allowed=("dense", "sparse"))
    if kinds is not None:  # an explicit list wins (GLM-4.7-Flash glm4_moe_lite, Mellum, EXAONE-MoE)
        is_moe = lambda i: kinds[i] == "sparse"  # noqa: E731
    return MoE(**e), is_moe, ff


def group_runs(per_layer: list[LayerGroup]) -> tuple[LayerGroup, ...]:
    """Run-length encode per-layer groups (count 1 each, any fields: heads and MLP width of their own
    included) into ordered groups, as ``group_layers`` does for the plain descriptors."""
    runs: list[list] = []
    for g in per_layer:
        if runs and runs[-1][0] == g:
            runs[-1][1] += g.count
        else:
            runs.append([g, g.count])
    return tuple(g.model_copy(update={"count": c}) for g, c in runs)
