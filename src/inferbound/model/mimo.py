"""Read a MiMo-V2-Flash config (``mimo_v2_flash``) into ModelSpec fields, as transformers 5.24.0 builds it
(``models/mimo_v2_flash/configuration_mimo_v2_flash.py``, ``modeling_mimo_v2_flash.py``).

- Layer types: ``layer_types``, else layer 0 and every 6th layer full attention, the rest a sliding window
  of ``sliding_window`` tokens (``sliding_window_size`` + 1 where the config gives that key: the SGLang
  reference attends to that many previous tokens plus the query).
- Heads (``geometry.py``): q/k heads of ``head_dim`` (class default 192), values of ``v_head_dim`` (128),
  so the cache holds n_kv·(192 + 128) values per token and layer; the sliding layers have 2 ×
  ``num_key_value_heads`` KV heads and one learned sink logit per query head, the full layers neither.
  q/k/v take ``attention_bias``, o_proj has no bias; no q/k norms.
- MLP: ``mlp_layer_types`` (default: layer 0 dense, the rest sparse); a dense layer is a gated MLP of
  ``intermediate_size``, a sparse one ``n_routed_experts`` gated experts of ``moe_intermediate_size``
  (top ``num_experts_per_tok``), no shared expert, a bias-free router (E × d) and its stored
  ``e_score_correction_bias`` (E). Two RMSNorms per layer, a final norm, an untied head by default.
"""
from __future__ import annotations

from .fields import core, sized
from .geometry import AttentionGeometry
from .layout import group_runs, top_k
from .spec import LayerGroup, MoE
from .validate import Reader

_TYPES = ("full_attention", "sliding_attention")


def mimo_v2_flash(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    c = core(r, fam, defaults, size_defaults)
    n, d, h, kv = c["n"], c["d"], c["h"], c["kv"]
    hd = c["hd"]
    v_hd = sized(r, fam, defaults, size_defaults, "v_head_dim")
    types = r.str_list("layer_types", length=n, allowed=_TYPES)
    if types is None:
        types = ["full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]
    if r.raw.get("sliding_window_size") is not None:
        window = r.int("sliding_window_size", kind="tokens") + 1
    else:
        window = sized(r, fam, defaults, size_defaults, "sliding_window", kind="tokens")
    if "sliding_attention" in types:
        r.divides("2 x num_key_value_heads", 2 * kv, "num_attention_heads", h,
                  "the sliding layers have twice the KV heads, each serving an equal group of query heads")
    kinds = r.str_list("mlp_layer_types", length=n, allowed=("dense", "sparse"))
    if kinds is None:
        kinds = ["dense"] + ["sparse"] * (n - 1)
    moe = None
    if "sparse" in kinds:
        n_exp = sized(r, fam, defaults, size_defaults, "n_routed_experts", "num_local_experts", kind="experts")
        moe = MoE(num_experts=n_exp, top_k=top_k(r, n_exp, "num_experts_per_tok"), router_bias=True,
                  expert_intermediate_size=sized(r, fam, defaults, size_defaults, "moe_intermediate_size"))
    ff = sized(r, fam, defaults, size_defaults, "intermediate_size") if "dense" in kinds else 0
    full, slide = AttentionGeometry(v_head_dim=v_hd), AttentionGeometry(v_head_dim=v_hd, kv_heads=2 * kv, sinks=True)
    per_layer = [LayerGroup(count=1, attention="window" if t == "sliding_attention" else "full",
                            window=window if t == "sliding_attention" else None,
                            attn=slide if t == "sliding_attention" else full, moe=k == "sparse")
                 for t, k in zip(types, kinds)]
    bias = r.bool("attention_bias", bool(defaults.get("attention_bias", False)))
    return dict(hidden_size=d, num_heads=h, num_kv_heads=kv, head_dim=hd, vocab_size=c["vocab"], intermediate_size=ff,
                gated_mlp=True, qkv_bias=bias, out_bias=False, moe=moe,
                tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
                layers=group_runs(per_layer))


MIMO = {"mimo_v2_flash": mimo_v2_flash}
