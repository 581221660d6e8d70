"""Parameter counts, total and active per token, by component.

Counts follow the HF ``transformers`` module shapes: attention q/k/v/o (or MLA's low-rank
projections), MLP (gated: 3·d·ff, plain: 2·d·ff), experts (E routed + shared), router (d·E),
norms, embeddings and LM head. "Active" counts what one token touches: all but the (E-k) routed
experts it skips, and without the input embedding table (a row lookup, no matmul; this is the
convention of the gpt-oss model card: 5.13B active = attention + 4/128 of MLP + unembedding). A table
tied to the LM head is the unembedding matmul, so it stays in the active count.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .spec import ModelSpec


@dataclass(frozen=True)
class ParamCount:
    """Parameters by component (counts, not bytes)."""

    embedding: int
    lm_head: int
    attention: int
    dense_mlp: int
    routed_experts: int
    shared_experts: int
    router: int
    norms: int
    mtp: int
    active_routed: float
    tied: bool = False
    position_embedding: int = 0

    @property
    def total(self) -> int:
        """All parameters of the main model (the MTP module counted apart, as model cards do)."""
        return (self.embedding + self.lm_head + self.attention + self.dense_mlp + self.routed_experts
                + self.shared_experts + self.router + self.norms)

    @property
    def lookup_only(self) -> int:
        """Embedding parameters only read by row lookup: the token table when it is not tied to the
        LM head (a tied table is the unembedding matmul too), plus any learned position table."""
        return self.position_embedding if self.tied else self.embedding

    @property
    def active(self) -> float:
        """Parameters one token touches: total less skipped experts and the lookup-only embedding."""
        return self.total - self.routed_experts + self.active_routed - self.lookup_only

    def to_dict(self) -> dict:
        return {**asdict(self), "total": self.total, "active": self.active}


def attention_params(m: ModelSpec) -> int:
    """One layer's attention weights (+ biases)."""
    d, h = m.hidden_size, m.num_heads
    if m.mla is not None:
        a = m.mla
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        q = d * h * qk if a.q_lora_rank is None else d * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * h * qk
        kv = d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank \
            + a.kv_lora_rank * h * (a.qk_nope_head_dim + a.v_head_dim)
        return q + kv + h * a.v_head_dim * d
    q_out, kv_out = h * m.head_dim, 2 * m.num_kv_heads * m.head_dim
    w = d * (q_out + kv_out) + q_out * d
    return w + (q_out + kv_out) * m.qkv_bias + d * m.out_bias


def mlp_params(d: int, ff: int, gated: bool, bias: bool) -> int:
    """One MLP: gated 3·d·ff (+2ff+d bias), plain 2·d·ff (+ff+d bias)."""
    mats = 3 if gated else 2
    return mats * d * ff + ((mats - 1) * ff + d) * bias


def norm_params(m: ModelSpec) -> int:
    """One norm over the hidden size: weight (+ bias for LayerNorm)."""
    return m.hidden_size * (2 if m.layernorm_bias else 1)


def count_params(m: ModelSpec) -> ParamCount:
    d = m.hidden_size
    n_moe = sum(g.count for g in m.layers if g.moe)
    n_dense = m.num_layers - n_moe
    attn = attention_params(m) * m.num_layers
    dense = mlp_params(d, m.intermediate_size, m.gated_mlp, m.mlp_bias) * n_dense
    routed = shared = router = 0
    active_routed = 0.0
    per_moe_layer = 0
    if m.moe is not None:
        e = m.moe
        one = mlp_params(d, e.expert_intermediate_size, m.gated_mlp, e.expert_bias)
        routed = one * e.num_experts * n_moe
        active_routed = one * e.top_k * n_moe
        shared = mlp_params(d, e.shared_intermediate_size, m.gated_mlp, e.expert_bias) \
            * e.num_shared_experts * n_moe
        router = (d * e.num_experts + e.num_experts * e.router_bias) * n_moe
        per_moe_layer = (routed + shared + router) // max(n_moe, 1)
    norms = norm_params(m) * (m.norms_per_layer * m.num_layers + 1)
    if m.mla is not None:  # q_a and kv_a layernorms are inside attention_params
        pass
    mtp = 0
    if m.mtp_layers:  # DeepSeek-V3 MTP: one decoder layer + eh_proj (2d x d) + enorm, hnorm, final norm
        layer = attention_params(m) + (per_moe_layer or mlp_params(d, m.intermediate_size, m.gated_mlp,
                                                                    m.mlp_bias))
        mtp = m.mtp_layers * (layer + 2 * d * d + norm_params(m) * (m.norms_per_layer + 3))
    return ParamCount(
        embedding=m.vocab_size * d + m.learned_positions * d,
        lm_head=(0 if m.tie_embeddings else m.vocab_size * d) + m.vocab_size * m.lm_head_bias,
        attention=attn, dense_mlp=dense, routed_experts=routed, shared_experts=shared, router=router,
        norms=norms, mtp=mtp, active_routed=active_routed, tied=m.tie_embeddings,
        position_embedding=m.learned_positions * d)
