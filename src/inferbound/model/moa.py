"""JetMoE (``jetmoe``): a mixture of attention heads (MoA) beside a mixture of MLP experts, as transformers
5.24.0 builds it (``models/jetmoe/modeling_jetmoe.py``; Shen et al. 2024, JetMoE, arXiv:2404.07413).

**MoA** (``JetMoeAttention`` + ``JetMoeMoA``): per layer E = ``num_local_experts`` attention experts, each a
query projection ``input_linear`` d → kv·hd and an output projection ``output_linear`` kv·hd → d
(kv = ``num_key_value_heads``, hd = ``kv_channels``), a router ``layer`` d → E without bias, one stored
output bias (d), and one shared ``kv_proj`` d → 2·kv·hd. A token picks k = ``num_experts_per_tok`` experts:
its k·kv query heads attend over the kv cached heads (keys repeated k times, a GQA of k·kv over kv
heads: ``num_attention_heads`` = kv·k, JetMoeConfig.__post_init__), so the KV cache is kv·hd keys and
values per token and layer, and each token runs k query and output projections of E stored:

    attention parameters = 2·d·kv·hd (kv_proj) + E·2·d·kv·hd (experts) + d·E (router) + d (bias)

The dense-attention formula with h = k·kv heads counts k of the E experts' q and o; ``extra_params``
adds the other E − k, the router and the bias (what is stored), and ``skipped_params`` is the E − k a
token does not run (out of the active count). Step work (operators/layers.py): FLOPs of k experts per
token, weights read of the experts a step's T tokens touch, E·(1 − (1 − k/E)^T) (uniform routing, as
the MLP experts).

**MLP** (``JetMoeMoE``): E gated experts of ``intermediate_size`` (input_linear d → 2·ff, output_linear
ff → d, no biases), top k, a router d → E without bias and one stored output bias (d, in
``ModelSpec.extra_params``). Two RMSNorms per layer, a final one; embeddings tied by default.
"""
# (no `from __future__ import annotations`: pydantic reads the annotations as objects)

from pydantic import BaseModel, ConfigDict, Field


class AttentionExperts(BaseModel):
    """JetMoE's mixture of attention heads: E stored q/o expert pairs of kv·hd, k run per token."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_experts: int = Field(ge=1)
    top_k: int = Field(ge=1)


def extra_params(a: AttentionExperts, d: int, q_width: int) -> int:
    """Stored beyond the k q/o pairs the dense formula counts: (E − k)·2·d·q_width + router d·E + bias d."""
    return (a.num_experts - a.top_k) * 2 * d * q_width + d * a.num_experts + d


def skipped_params(a: AttentionExperts, d: int, q_width: int) -> int:
    """The q/o pairs a token does not run: (E − k)·2·d·q_width."""
    return (a.num_experts - a.top_k) * 2 * d * q_width
