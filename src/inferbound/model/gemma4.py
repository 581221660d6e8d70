"""Read a Gemma 4 text config (``gemma4_text``, ``gemma4_unified_text``, and the ``gemma4`` /
``gemma4_unified`` wrappers' text_config) into ModelSpec fields, as transformers 5.24.0 builds it
(``models/gemma4/configuration_gemma4.py``, ``modeling_gemma4.py``; ``gemma4_unified/`` the same layer
without per-layer embeddings or MoE).

- Layer types: ``layer_types``, else every 6th layer full attention, the others a ``sliding_window``;
  the last layer is always full (the config class forces it, with a warning: so does this reader).
- Heads per layer (``geometry.py``): ``per_layer_config`` (layer index -> ``head_dim`` /
  ``num_key_value_heads``, what ``to_dict`` writes); a config without it gets the config class's
  derivation: full-attention layers take ``global_head_dim`` (class default 512) and, with
  ``attention_k_eq_v``, ``num_global_key_value_heads`` KV heads.
- ``attention_k_eq_v``: full-attention layers build no ``v_proj`` (values = the key projection).
- KV sharing: the last ``num_kv_shared_layers`` layers reuse the cache of the last earlier layer of their
  type (no k/v projection, no k norm, no cache); every type must occur before them (``kv_sharing_modes``).
  ``use_double_wide_mlp``: those layers' MLP is 2 × ``intermediate_size`` wide (``Gemma4TextMLP``).
- Per layer: q/k RMSNorms over the layer's head_dim (``v_norm`` has no weight), a gated MLP, four
  RMSNorms, a stored ``layer_scalar``; per-layer embeddings where ``hidden_size_per_layer_input`` > 0
  (``per_layer_input.py``). All projections take ``attention_bias`` but o_proj too; the MLP has none.

- ``enable_moe_block`` (``gemma4_text``): every layer adds experts beside its dense MLP (``_moe``).

Refused in one line: ``use_bidirectional_attention: all`` (not a causal LM), and double-wide MLPs in
KV-sharing layers of a MoE model (not counted).
"""
from __future__ import annotations

from .fields import core, sized
from .geometry import AttentionGeometry
from .layout import group_runs, top_k
from .per_layer_input import PerLayerInput
from .spec import LayerGroup, MoE
from .validate import Reader

_TYPES = ("full_attention", "sliding_attention")
#: per_layer_config entries this reader prices (anything else is refused, naming it)
_PER_LAYER_KEYS = ("head_dim", "num_key_value_heads")


def _layer_types(r: Reader, n: int) -> list[str]:
    types = r.str_list("layer_types", length=n, allowed=_TYPES)
    if types is None:  # Gemma4TextConfig.__post_init__: sliding_window_pattern 6 (5 local : 1 global)
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
    if types[-1] != "full_attention":
        r.warn(f"layer_types[{n - 1}]={types[-1]!r}: the last layer of Gemma 4 is always full attention "
               f"(transformers forces it); read as full_attention")
        types = [*types[:-1], "full_attention"]
    return types


def _per_layer(r: Reader, fam: str, n: int, types: list[str], hd: int, kv: int, k_eq_v: bool,
               size_defaults: dict, defaults: dict) -> list[tuple[int, int]]:
    """(head_dim, KV heads) of each layer (module docstring)."""
    given = r.dict("per_layer_config")
    if given is None:
        g_hd = sized(r, fam, defaults, size_defaults, "global_head_dim")
        g_kv = r.opt_int("num_global_key_value_heads", kind="heads") if k_eq_v else None
        return [(g_hd, g_kv or kv) if t == "full_attention" else (hd, kv) for t in types]
    out = [(hd, kv)] * n
    for key, row in given.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) < n) or not isinstance(row, dict):
            raise r.error("per_layer_config", f"<key {key!r}>", "is not a layer index with an object of overrides",
                          f"keys '0'..'{n - 1}' mapping to {{head_dim, num_key_value_heads}}")
        extra = sorted(set(row) - set(_PER_LAYER_KEYS))
        if extra:
            raise r.error(f"per_layer_config.{key}.{extra[0]}", row[extra[0]], "is a per-layer override that is not counted",
                          f"overrides of {', '.join(_PER_LAYER_KEYS)}")
        i = int(key)
        out[i] = (r.check_int(f"per_layer_config.{key}.head_dim", row.get("head_dim", hd), "width"),
                  r.check_int(f"per_layer_config.{key}.num_key_value_heads", row.get("num_key_value_heads", kv), "heads"))
    return out


def gemma4(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d, h, kv, hd = c["n"], c["d"], c["h"], c["kv"], c["hd"]
    if r.str("use_bidirectional_attention") == "all":
        raise r.error("use_bidirectional_attention", "all", "makes every token attend both ways (not a causal LM)",
                      "null or 'vision'")
    ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    types = _layer_types(r, n)
    window = r.int("sliding_window", default=defaults["sliding_window"], kind="tokens")
    k_eq_v = r.bool("attention_k_eq_v", False)
    heads = _per_layer(r, fam, n, types, hd, kv, k_eq_v, size_defaults, defaults)
    for i, (_, k) in enumerate(heads):
        if h % k:
            raise r.error(f"per_layer_config.{i}.num_key_value_heads", k, f"does not divide the {h} query heads",
                          f"a divisor of {h}")
    shared = r.int("num_kv_shared_layers", default=0, kind="layers", lo=0)
    if shared >= n:
        raise r.error("num_kv_shared_layers", shared, f"leaves no layer of the {n} to produce a cache",
                      f"an integer in 0..{n - 1}")
    if shared and set(types[:n - shared]) != set(types):
        raise r.error("num_kv_shared_layers", shared, "leaves a layer type with no earlier layer producing its cache",
                      "a count whose sharing layers' types all occur before them")
    wide = r.bool("use_double_wide_mlp", False)
    moe = _moe(r, fam, defaults, size_defaults, ff) if fam == "gemma4_text" and r.bool("enable_moe_block", False) else None
    if moe is not None and wide and shared:
        raise r.error("use_double_wide_mlp", True, "is not counted together with enable_moe_block and KV-sharing layers "
                      "(their dense MLP beside the experts would be twice as wide)", "false, or num_kv_shared_layers 0")
    per_layer = []
    for i, t in enumerate(types):
        reuse, full = i >= n - shared, t == "full_attention"
        l_hd, l_kv = heads[i]
        geo = AttentionGeometry(head_dim=None if l_hd == hd else l_hd, kv_heads=None if l_kv == kv else l_kv,
                                k_eq_v=k_eq_v and full, kv_shared=reuse)
        per_layer.append(LayerGroup(count=1, attention="full" if full else "window", window=None if full else window,
                                    attn=None if geo == AttentionGeometry() else geo, moe=moe is not None,
                                    mlp_width=2 * ff if wide and reuse else None))
    ple = None
    if fam == "gemma4_text":
        p = (r.opt_int("hidden_size_per_layer_input", kind="width", lo=0) if "hidden_size_per_layer_input" in r.raw
             else sized(r, fam, defaults, size_defaults, "hidden_size_per_layer_input"))
        if p:  # Gemma4TextModel: per-layer embeddings only when the width is non-zero
            ple = PerLayerInput(width=p, vocab=sized(r, fam, defaults, size_defaults, "vocab_size_per_layer_input",
                                                     kind="vocab"))
    bias = r.bool("attention_bias", bool(defaults.get("attention_bias", False)))
    return dict(hidden_size=d, num_heads=h, num_kv_heads=kv, head_dim=hd, vocab_size=c["vocab"], intermediate_size=ff,
                gated_mlp=True, qkv_bias=bias, out_bias=bias, norms_per_layer=4, qk_norm="head", layer_scalars=True,
                tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
                per_layer_input=ple, moe=moe, layers=group_runs(per_layer))


def _moe(r: Reader, fam: str, defaults: dict, size_defaults: dict, ff: int) -> MoE:
    """Gemma 4's MoE block (``enable_moe_block``, every layer): ``num_experts`` experts of
    ``moe_intermediate_size`` (gate_up fused, no bias), top ``top_k_experts``, beside the dense MLP, which
    runs on every token and is counted as one always-on shared expert of ``intermediate_size``; the router
    (``Gemma4TextRouter``): proj d × E (no bias), a stored input ``scale`` (d) and ``per_expert_scale``
    (E, counted as a router bias), its norm without weight; three more RMSNorms per layer."""
    n_exp = sized(r, fam, defaults, size_defaults, "num_experts", kind="experts")
    if n_exp < 2:
        raise r.error("num_experts", n_exp, "is too few experts for a mixture of experts", "an integer >= 2")
    return MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "top_k_experts"), num_shared_experts=1,
               expert_intermediate_size=sized(r, fam, defaults, size_defaults, "moe_intermediate_size"),
               shared_intermediate_size=ff, router_bias=True, router_scale=True, block_norms=3)


GEMMA4 = {"gemma4_text": gemma4, "gemma4_unified_text": gemma4}
