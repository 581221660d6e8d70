"""LongCat-Flash (``longcat_flash``), as transformers 5.24.0 builds it (``models/longcat_flash/
modeling_longcat_flash.py``; Meituan's LongCat-Flash technical report, arXiv:2509.01322).

Each of the ``num_layers`` decoder blocks (``LongcatFlashDecoderLayer``) holds two sub-layers, each an MLA
attention (DeepSeek-V3's: q_a/q_b with ``q_lora_rank``, kv_a_proj_with_mqa and kv_b, o_proj; q_a, kv_a and
o with ``attention_bias``; q_a and kv_a RMSNorms) and a dense gated MLP of ``ffn_hidden_size``, with two
RMSNorms; and one **shortcut-connected MoE** that reads the first sub-layer's MLP input and whose output
is added after the second sub-layer. Its work is the same as a MoE beside that first dense MLP on the same
input, so the block is read as two layers of the spec:

- layer 2i: MLA + a MoE whose one *shared expert* is ``mlps[0]`` (ffn_hidden_size wide, run on every token)
  and whose routed experts are E = ``n_routed_experts`` gated experts of ``expert_ffn_hidden_size``;
- layer 2i + 1: MLA + the dense MLP ``mlps[1]``.

The KV cache is then 2·num_layers MLA latents per token (kv_lora_rank + qk_rope_head_dim each): the cache
layers transformers keeps (``layer_idx * 2 + i``).

**Zero-computation experts**: the router (``classifier``, d × (E + Z), bias ``router_bias``, default none)
scores E real and Z = ``zero_expert_num`` identity experts, keeps a stored ``e_score_correction_bias`` of
E + Z, and picks top ``moe_topk`` of the E + Z; an identity expert returns its input scaled, with no weights.
A token therefore runs k·E/(E + Z) real experts on average (``spec.MoE.routed_k``): 8 for LongCat-Flash's
12 of 512 + 256, its report's ~27 B activated average.

**Stored but never read**: ``LongcatFlashExperts`` allocates ``gate_up_proj`` for all E + Z experts
(``torch.empty(total_experts, 2 * I, d)``) but runs only the first E (``expert_idx >= num_routed_experts``:
the identity); ``down_proj`` holds E. The checkpoint (meituan-longcat/LongCat-Flash-Chat) and vLLM's
FusedMoE hold E experts, so E is what is counted: Z·2·I·d per MoE layer fewer than PyTorch's state_dict,
the convention tests/_meta_count.py states and subtracts.
"""
from __future__ import annotations

from .fields import flag, mla_fields, sized
from .layout import group_layers
from .spec import MoE
from .validate import Reader


def longcat_flash(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    """ModelSpec fields: 2·num_layers MLA layers, the even ones with the (shortcut) MoE."""
    blocks = r.int("num_layers", kind="layers")
    if r.has("num_hidden_layers") and r.int("num_hidden_layers", kind="layers") != 2 * blocks:
        raise r.error("num_hidden_layers", r.raw["num_hidden_layers"], f"is not 2 x num_layers={blocks}",
                      f"{2 * blocks} (LongcatFlashConfig derives it: two attention sub-layers per block)")
    d = r.int("hidden_size", kind="width")
    h = r.int("num_attention_heads", kind="heads")
    vocab = sized(r, fam, defaults, size_defaults, "vocab_size", kind="vocab")
    mla = mla_fields(r)
    if mla["q_lora_rank"] is None:
        raise r.error("q_lora_rank", None, "is null, but LongcatFlashMLA always builds q_a_proj/q_b_proj",
                      "a positive integer")
    ff = sized(r, fam, defaults, size_defaults, "ffn_hidden_size", "intermediate_size")
    ff_e = sized(r, fam, defaults, size_defaults, "expert_ffn_hidden_size", "moe_intermediate_size")
    n_exp = sized(r, fam, defaults, size_defaults, "n_routed_experts", "num_local_experts", kind="experts")
    zero = r.int("zero_expert_num", default=defaults["zero_expert_num"], kind="experts", lo=0)
    if n_exp < 2:
        raise r.error("n_routed_experts", n_exp, "is too few experts for a mixture of experts",
                      "an integer >= 2 (LongcatFlashExperts builds E weight slices)")
    key = r.key_of("moe_topk", "num_experts_per_tok") or "moe_topk"
    k = r.int(key, default=defaults["moe_topk"], kind="experts", lo=1)
    if k > n_exp + zero:
        raise r.error(key, k, f"exceeds the {n_exp} + {zero} experts of the router's pool",
                      f"an integer in 1..{n_exp + zero}")
    kind = r.str("zero_expert_type", "identity")
    if kind != "identity":
        raise r.error("zero_expert_type", kind, "is not priced", "'identity' (the only kind transformers builds)")
    router_bias = r.bool("router_bias", False)  # getattr(config, "router_bias", False): the classifier's bias
    moe = MoE(num_experts=n_exp, top_k=k, expert_intermediate_size=ff_e, num_shared_experts=1,
              shared_intermediate_size=ff, router_bias=True, zero_experts=zero)  # router_bias: the stored correction
    bias = flag(r, defaults, "attention_bias")
    if zero:
        r.warn(f"zero-computation experts: each token picks {k} of {n_exp} + {zero} experts; priced at the "
               f"{moe.routed_k:g} real experts a pool balanced over them gives (k·E/(E + Z), LongCat-Flash "
               f"arXiv:2509.01322), the per-token count varies")
    return dict(
        hidden_size=d, num_heads=h, num_kv_heads=h, head_dim=mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"],
        vocab_size=vocab, intermediate_size=ff, gated_mlp=True, qkv_bias=bias, out_bias=bias, mlp_bias=False,
        norms_per_layer=2, tie_embeddings=r.bool("tie_word_embeddings", bool(defaults["tie_word_embeddings"])),
        layers=group_layers([("full", None, i % 2 == 0, "attention", True) for i in range(2 * blocks)]),
        moe=moe, mla=mla, extra_params=blocks * (n_exp + zero) * router_bias)


LONGCAT = {"longcat_flash": longcat_flash}
