"""The ``jetmoe`` reader (layout and formulas in ``moa.py``)."""
from __future__ import annotations

from .fields import sized
from .layout import group_layers
from .moa import AttentionExperts
from .spec import MoE
from .validate import Reader


def jetmoe(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    n = r.int("num_hidden_layers", kind="layers")
    d = r.int("hidden_size", kind="width")
    vocab = sized(r, fam, defaults, size_defaults, "vocab_size", kind="vocab")
    kv = sized(r, fam, defaults, size_defaults, "num_key_value_heads", kind="heads")
    hd = sized(r, fam, defaults, size_defaults, "kv_channels", "head_dim")
    ff = sized(r, fam, defaults, size_defaults, "intermediate_size")
    n_exp = r.int("num_local_experts", default=defaults["num_local_experts"], kind="experts", lo=1)
    k = r.int("num_experts_per_tok", default=defaults["num_experts_per_tok"], kind="experts", lo=1)
    if k > n_exp:
        raise r.error("num_experts_per_tok", k, f"exceeds the {n_exp} experts", f"an integer in 1..{n_exp}")
    h = r.raw.get("num_attention_heads")
    if h is not None and h != kv * k:
        raise r.error("num_attention_heads", h, f"is not num_key_value_heads x num_experts_per_tok = {kv * k}",
                      f"{kv * k} (JetMoeConfig derives it)")
    # JetMoE's MLP needs >= 2 experts to be a spec MoE; one expert is a dense MLP in all but the router
    if n_exp < 2:
        raise r.error("num_local_experts", n_exp, "is too few experts for a mixture of experts", "an integer >= 2")
    return dict(
        hidden_size=d, num_heads=kv * k, num_kv_heads=kv, head_dim=hd, vocab_size=vocab, intermediate_size=0,
        gated_mlp=True, norms_per_layer=2,
        tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
        layers=group_layers([("full", None, True, "attention", True)] * n),
        moe=MoE(num_experts=n_exp, top_k=k, expert_intermediate_size=ff),
        attention_experts=AttentionExperts(num_experts=n_exp, top_k=k),
        extra_params=n * d)  # JetMoeMoE.bias, one d-vector per layer


JETMOE = {"jetmoe": jetmoe}
