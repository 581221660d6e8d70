"""MoE decoders read on top of ``families.decoder``'s DeepSeek MoE rule, each as transformers 5.24.0 builds it.

- ``solar_open`` (``models/solar_open/modeling_solar_open.py``): Llama attention (q/k/v biases
  ``attention_bias``, o_proj none), a MoE in **every** layer (SolarOpenDecoderLayer builds SolarOpenMoE
  unconditionally; the config has no dense width and no ``first_k_dense_replace``): E = ``n_routed_experts``
  gated experts of ``moe_intermediate_size``, one shared MLP of ``n_shared_experts`` × that width, the router
  d·E with a stored ``e_score_correction_bias`` (E).
- ``axk1`` (``models/axk1/modeling_axk1.py``): DeepSeek-V3's MLA and MoE; ``mlp_layer_types`` (its
  __post_init__ derives it from ``first_k_dense_replace``, default 1) says dense / sparse per layer; the MoE
  block adds a ``post_mlp_layernorm`` (RMSNorm, d) that the dense layers do not have (``MoE.post_norm``).
- ``hy_v3`` (``models/hy_v3/modeling_hy_v3.py``): Qwen3 attention (q/k RMSNorms over head_dim, all four
  projections with ``attention_bias``), ``mlp_layer_types`` (default: layer 0 dense, the rest sparse); a
  MoE layer holds E = ``num_experts`` bias-free experts of ``moe_intermediate_size``, one shared MLP of
  ``num_shared_experts`` × that width with ``mlp_bias`` (HYV3MLP), the router d·E and a stored
  ``e_score_correction_bias`` buffer (E).
- ``kolibri1`` (``models/kolibri1/modeling_kolibri1.py``): bias-free q/k/v/o with q/k RMSNorms over head_dim,
  4 RMSNorms per layer (input, post-attention, post_self_attn, post_mlp), ``layer_types`` absent = every 5th
  layer full attention, the others a ``sliding_window``; a MoE in every layer (Kolibri1SparseMoeBlock):
  E = ``num_experts`` experts of ``moe_intermediate_size``, one shared MLP of
  ``shared_expert_intermediate_size``, the router d·E with a stored ``e_score_correction_bias`` (E).
- ``flint`` (``models/flint/modeling_flint.py``): q/k/v/o with ``attention_bias``, q/k RMSNorms over
  head_dim, one learned sink logit per head (``sinks``, gpt-oss's); Qwen2-MoE's layer rule
  (``mlp_only_layers``, default [0, 1], and ``decoder_sparse_step``) with a shared MLP of
  ``shared_expert_intermediate_size`` added without a gate, router d·E without bias.
- ``cohere2_moe`` (``models/cohere2_moe/modeling_cohere2_moe.py``): Cohere 2's parallel block (one norm,
  attention beside the MLP; the norm is an RMSNorm when ``rms_norm_eps`` is set, else a bias-free
  LayerNorm: d weights either way), q/k/v/o with ``attention_bias``, no q/k norms; ``mlp_layer_types``
  dense layers a gated MLP of ``prefix_dense_intermediate_size`` (null: ``intermediate_size``), sparse ones
  E = ``num_experts`` experts of ``intermediate_size`` (no bias), top ``num_experts_per_tok``, router d·E
  without bias, and with ``num_shared_experts`` > 0 ONE shared MLP of that many × ``intermediate_size``.
- ``beam`` (``models/beam/modeling_beam.py``): bias-free q/k/v/o with q/k RMSNorms over head_dim and an
  output gate: ``gate_proj`` d → h·head_dim without bias (``attention_gate``, as AFMoE's) plus one
  ``gate_bias`` per head (``attention_gate_bias``); 4 RMSNorms per layer; ``mlp_layer_types`` dense layers a
  gated MLP of ``intermediate_size``, sparse ones E = ``num_experts`` experts of ``moe_intermediate_size``,
  no shared expert, the router d·E with a stored ``e_score_correction_bias`` (E).
- ``laguna`` (``models/laguna/modeling_laguna.py``): q/k/v/o with ``attention_bias``, q/k RMSNorms over
  head_dim, and a bias-free ``g_proj``: d → h with ``gating`` true / "per-head" (``attention_head_gate``:
  a softplus scale per head), else d → h·head_dim (``attention_gate``); 2 RMSNorms per layer;
  ``mlp_layer_types`` dense layers a gated MLP of ``intermediate_size``, sparse ones E = ``num_experts``
  experts of ``moe_intermediate_size``, ONE shared MLP of ``shared_expert_intermediate_size``, the router
  d·E with a stored ``e_score_correction_bias`` (E). Per-layer head counts that differ are refused.
- ``glm_moe_dsa`` (``models/glm_moe_dsa/modeling_glm_moe_dsa.py``, GLM-5): DeepSeek-V3.2's layout, read by
  ``families.deepseek_v32`` (MLA, a DSA indexer in every layer: ``sparse_attn.py``, the MoE from
  ``mlp_layer_types`` / ``first_k_dense_replace``); its ``indexer_types`` "shared" layers (no indexer, the
  previous full layer's top-k reused; arXiv:2603.12201) are refused in one line, not counted.
"""
from __future__ import annotations

from .families import Traits, decoder, deepseek_v32
from .fields import flag, sized
from .layout import group_layers
from .validate import Reader


def solar_open(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """Every layer sparse; ``intermediate_size`` is the expert width (no dense layer reads it)."""
    t = Traits(out_bias=False, moe="deepseek", ff_keys=("moe_intermediate_size",))
    out = decoder(r, fam, defaults, size_defaults, t)
    out["layers"] = group_layers([(g.attention, g.window, True, "attention", True)
                                  for g in out["layers"] for _ in range(g.count)])
    out["moe"] = out["moe"].model_copy(update={"router_bias": True})
    return out


def axk1(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """Without ``mlp_layer_types``: layer i sparse where i >= ``first_k_dense_replace`` (default 1) and
    i % ``moe_layer_freq`` == 0 (default 1), as Axk1Config.__post_init__ derives it."""
    if "mlp_layer_types" not in r.raw:
        n = r.int("num_hidden_layers", kind="layers")
        first = r.int("first_k_dense_replace", default=defaults["first_k_dense_replace"], kind="layers", lo=0)
        freq = r.int("moe_layer_freq", default=1, kind="layers")
        for k in ("first_k_dense_replace", "moe_layer_freq"):  # read here: the MoE rule must not re-read them
            dict.pop(r.raw, k, None)
            r.raw.seen.add(k)
        r.raw["mlp_layer_types"] = ["sparse" if i >= first and i % freq == 0 else "dense" for i in range(n)]
    out = decoder(r, fam, defaults, size_defaults, Traits(mla=True, moe="deepseek"))
    out["moe"] = out["moe"].model_copy(update={"router_bias": True, "post_norm": True})
    return out


def hy_v3(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """The shared experts are ONE MLP of n_shared × width: with ``mlp_bias`` its biases are 2·n·ff + d."""
    out = decoder(r, fam, defaults, size_defaults, Traits(qk_norm="head", mlp_bias="mlp_bias", moe="deepseek"))
    e = out["moe"]
    update = {"router_bias": True, "shared_expert_bias": flag(r, defaults, "mlp_bias")}
    if e.num_shared_experts:
        update.update(num_shared_experts=1, shared_intermediate_size=e.shared_intermediate_size * e.num_shared_experts)
    out["moe"] = e.model_copy(update=update)
    return out


def kolibri1(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """Every layer sparse, ``layer_types`` absent = every 5th layer full, the others a window."""
    if "layer_types" not in r.raw:
        n = r.int("num_hidden_layers", kind="layers")
        r.raw["layer_types"] = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n)]
    t = Traits(qkv_bias=False, out_bias=False, norms=4, qk_norm="head", moe="deepseek",
               ff_keys=("moe_intermediate_size",))
    out = decoder(r, fam, defaults, size_defaults, t)
    out["layers"] = group_layers([(g.attention, g.window, True, "attention", True)
                                  for g in out["layers"] for _ in range(g.count)])
    sh = sized(r, fam, defaults, size_defaults, "shared_expert_intermediate_size", lo=0)
    out["moe"] = out["moe"].model_copy(update={"router_bias": True, "num_shared_experts": 1 if sh else 0,
                                               "shared_intermediate_size": sh})
    return out


def flint(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """``layer_types`` absent: full where i < 2, i % 4 == 1 or i is the last layer; ``mlp_only_layers``
    absent: [0, 1] (FlintConfig.__post_init__)."""
    n = r.int("num_hidden_layers", kind="layers")
    if "layer_types" not in r.raw:
        r.raw["layer_types"] = ["full_attention" if i < 2 or i % 4 == 1 or i == n - 1 else "sliding_attention"
                                for i in range(n)]
    if r.raw.get("mlp_only_layers") is None:
        r.raw["mlp_only_layers"] = [i for i in (0, 1) if i < n]
    out = decoder(r, fam, defaults, size_defaults, Traits(qk_norm="head", sinks=True, moe="qwen2_moe"))
    if out["moe"] is not None:  # the shared expert is added in full, without Qwen2-MoE's sigmoid gate
        out["moe"] = out["moe"].model_copy(update={"shared_expert_gate": False})
    return out


def cohere2_moe(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """Absent ``layer_types`` / ``mlp_layer_types`` are derived from ``first_k_dense_replace`` (default 0) as
    Cohere2MoeConfig.__post_init__ does: k dense prefix layers windowed by
    ``prefix_dense_sliding_window_pattern``, the rest by ``sliding_window_pattern`` (layer j of a run is
    full where (j + 1) % pattern == 0)."""
    n = r.int("num_hidden_layers", kind="layers")
    first = r.int("first_k_dense_replace", default=0, kind="layers", lo=0)
    if first > n:
        raise r.error("first_k_dense_replace", first, f"exceeds the {n} layers", f"an integer in 0..{n}")
    if "layer_types" not in r.raw:
        pre = r.int("prefix_dense_sliding_window_pattern", default=defaults["prefix_dense_sliding_window_pattern"],
                    kind="layers")
        rest = r.int("sliding_window_pattern", default=defaults["sliding_window_pattern"], kind="layers")
        r.raw["layer_types"] = ([("sliding_attention" if (i + 1) % pre else "full_attention") for i in range(first)]
                                + [("sliding_attention" if (i + 1) % rest else "full_attention")
                                   for i in range(n - first)])
    if r.raw.get("mlp_layer_types") is None:
        r.raw["mlp_layer_types"] = ["dense" if i < first else "sparse" for i in range(n)]
    t = Traits(norm="layernorm_nobias", norms=1, parallel=True, moe="mixtral")
    out = decoder(r, fam, defaults, size_defaults, t)
    ff = out["intermediate_size"]
    prefix = r.opt_int("prefix_dense_intermediate_size", kind="width")
    n_sh = r.int("num_shared_experts", default=defaults["num_shared_experts"], kind="experts", lo=0)
    out["intermediate_size"] = ff if prefix is None else prefix
    if n_sh:
        out["moe"] = out["moe"].model_copy(update={"num_shared_experts": 1, "shared_intermediate_size": ff * n_sh})
    return out


def beam(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """``layer_types`` absent: every 6th layer and the last full, the others a window; ``mlp_layer_types``
    absent: the first min(3, L) dense (BeamConfig.__post_init__)."""
    n = r.int("num_hidden_layers", kind="layers")
    if flag(r, defaults, "attention_bias"):  # q/k/v/o would take a bias, gate_proj not: no field says that
        raise r.error("attention_bias", True, "is not counted for beam (its gate_proj has no bias, q/k/v/o would)",
                      "false, as BeamConfig's default")
    if "layer_types" not in r.raw:
        r.raw["layer_types"] = ["full_attention" if (i + 1) % 6 == 0 or i == n - 1 else "sliding_attention"
                                for i in range(n)]
    if r.raw.get("mlp_layer_types") is None:
        r.raw["mlp_layer_types"] = ["dense" if i < min(3, n) else "sparse" for i in range(n)]
    out = decoder(r, fam, defaults, size_defaults, Traits(norms=4, qk_norm="head", moe="deepseek"))
    out["moe"] = out["moe"].model_copy(update={"router_bias": True})
    return {**out, "attention_gate": True, "attention_gate_bias": True}


def laguna(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """``layer_types`` absent: every layer full; ``mlp_layer_types`` absent: layer 0 dense, the rest sparse
    (LagunaConfig.__post_init__); ``num_attention_heads_per_layer`` must repeat ``num_attention_heads``."""
    n = r.int("num_hidden_layers", kind="layers")
    h = r.int("num_attention_heads", kind="heads")
    per_layer = r.int_list("num_attention_heads_per_layer", 1, 1 << 20)
    if per_layer is not None and per_layer != [h] * n:
        raise r.error("num_attention_heads_per_layer", f"<list of {len(per_layer)}>",
                      "is not counted when it differs from num_attention_heads in any layer",
                      f"{n} entries each equal to num_attention_heads={h}, or null")
    gating = r.raw.get("gating", defaults["gating"])
    r.raw.seen.add("gating")
    if gating not in (True, False, "per-head"):
        raise r.error("gating", gating, "is not a gating mode", "true, false or 'per-head'")
    per_head = gating is True or gating == "per-head"
    if not per_head and flag(r, defaults, "attention_bias"):  # g_proj d -> h·head_dim has no bias, q/k/v/o would
        raise r.error("attention_bias", True, "is not counted for laguna with per-element gating "
                      "(its g_proj has no bias, q/k/v/o would)", "false, or gating true / 'per-head'")
    if "layer_types" not in r.raw:
        r.raw["layer_types"] = ["full_attention"] * n
    if r.raw.get("mlp_layer_types") is None:
        r.raw["mlp_layer_types"] = ["dense"] + ["sparse"] * (n - 1)
    out = decoder(r, fam, defaults, size_defaults, Traits(qk_norm="head", moe="deepseek"))
    sh = sized(r, fam, defaults, size_defaults, "shared_expert_intermediate_size", lo=0)
    out["moe"] = out["moe"].model_copy(update={"router_bias": True, "num_shared_experts": 1 if sh else 0,
                                               "shared_intermediate_size": sh})
    return {**out, "attention_head_gate": per_head, "attention_gate": not per_head}


def glm_moe_dsa(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """DeepSeek-V3.2's reader (MLA, DSA indexer, MoE) when every layer runs its own indexer; ``indexer_types``
    absent is derived as GlmMoeDsaConfig.__post_init__ does (``index_topk_pattern`` F/S, else layer i full
    where max(i − ``index_skip_topk_offset`` + 1, 0) % ``index_topk_freq`` == 0; defaults 2 and 1)."""
    n = r.int("num_hidden_layers", kind="layers")
    types = r.str_list("indexer_types", length=n, allowed=("full", "shared"))
    key = "indexer_types"
    if types is None and r.raw.get("index_topk_pattern") is not None:
        key, pattern = "index_topk_pattern", r.raw["index_topk_pattern"]
        r.raw.seen.add(key)
        types = [{"F": "full", "S": "shared"}.get(c, c) for c in pattern]
    elif types is None:
        key = "index_topk_freq"
        freq = max(r.int("index_topk_freq", default=1, kind="layers"), 1)
        offset = r.int("index_skip_topk_offset", default=2, kind="layers", lo=0)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n)]
    if any(t != "full" for t in types):
        raise r.error(key, r.raw.get(key), "is not counted: its 'shared' layers reuse an earlier layer's top-k "
                      "and build no indexer", "every layer 'full' (the class default)")
    return deepseek_v32(r, fam, defaults, size_defaults)


MOE_MORE = {"beam": beam, "glm_moe_dsa": glm_moe_dsa, "laguna": laguna, "solar_open": solar_open, "axk1": axk1, "hy_v3": hy_v3, "kolibri1": kolibri1, "flint": flint,
            "cohere2_moe": cohere2_moe}
