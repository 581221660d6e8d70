"""Read a Gemma 3n text config (``gemma3n_text``) into ModelSpec fields: the layout and formulas are
``kv_sharing.py``'s; window pattern ``layer_types`` (default ``Gemma3nTextConfig.__post_init__``: every
5th layer full attention, the others a ``sliding_window`` of 512), the last ``num_kv_shared_layers``
layers reuse the KV cache of the last earlier layer of their type (``kv_sharing_modes``).
"""
from __future__ import annotations

from .fields import core, sized
from .kv_sharing import Gemma3nSpec
from .layout import ATTENTION_TYPES, group_layers
from .validate import Reader


def gemma3n(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d = c["n"], c["d"]
    ff = r.raw.get("intermediate_size")
    if isinstance(ff, list):  # the config class stores one width per layer
        if len(ff) != n or len(set(map(str, ff))) != 1:
            raise r.error("intermediate_size", f"<list of {len(ff)}>", "differs between layers or from the layer count",
                          f"one width, or {n} equal widths (per-layer MLP widths are not priced)")
        ff = r.check_int("intermediate_size", ff[0], "width")
    else:
        ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    types = r.str_list("layer_types", length=n, allowed=tuple(ATTENTION_TYPES))
    if types is None:
        types = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n)]
    window = r.int("sliding_window", default=defaults["sliding_window"], kind="tokens")
    kinds = [("full", None) if ATTENTION_TYPES[t] == "full" else ("window", window) for t in types]
    shared = r.int("num_kv_shared_layers", default=defaults["num_kv_shared_layers"], kind="layers", lo=0)
    if shared >= n:
        raise r.error("num_kv_shared_layers", shared, f"leaves no layer of the {n} to produce a cache",
                      f"an integer in 0..{n - 1}")
    consumers = kinds[n - shared:]
    if not set(consumers) <= set(kinds[:n - shared]):
        raise r.error("num_kv_shared_layers", shared, "leaves a layer type with no earlier layer producing its cache",
                      "a count whose sharing layers' types all occur before them")
    counts: dict = {}
    for k in consumers:
        counts[k] = counts.get(k, 0) + 1
    spec = Gemma3nSpec(altup_inputs=sized(r, fam, defaults, size_defaults, "altup_num_inputs", kind="small"),
                       laurel_rank=sized(r, fam, defaults, size_defaults, "laurel_rank"),
                       per_layer_width=sized(r, fam, defaults, size_defaults, "hidden_size_per_layer_input"),
                       per_layer_vocab=sized(r, fam, defaults, size_defaults, "vocab_size_per_layer_input", kind="vocab"),
                       kv_shared=tuple((a, w, k) for (a, w), k in counts.items()))
    bias = r.bool("attention_bias", bool(defaults.get("attention_bias", False)))
    return dict(hidden_size=d, num_heads=c["h"], num_kv_heads=c["kv"], head_dim=c["hd"], vocab_size=c["vocab"],
                intermediate_size=ff, gated_mlp=True, qkv_bias=bias, out_bias=bias, norms_per_layer=4, qk_norm="head",
                tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])), gemma3n=spec,
                layers=group_layers([(a, w, False, "attention", True) for a, w in kinds]))


KV_SHARING = {"gemma3n_text": gemma3n}
