"""Parameter counts, total and active per token, by component and per layer group.

Counts follow the module shapes transformers 5 builds (exactness is tested against it on the meta
device, tests/test_model_exact.py):

- attention (per attention layer): q/k/v/o (+ biases), or MLA's low-rank projections with their two
  norms; GPT-2's cross-attention block (``add_cross_attention``) is a second one of the same shape
  (q_attn d×d + c_attn d×2d + c_proj d×d, with biases) plus its LayerNorm; DeepSeek-V3.2's DSA
  indexer beside MLA (``sparse_attn.py``); q/k norms (``head``: 2·head_dim; ``full``: (n_heads + n_kv)·head_dim; doubled for LayerNorm
  with bias; ``per_head``: (n_heads + n_kv)·head_dim weights, never a bias); gpt-oss sinks (n_heads); Qwen3-Next's output gate doubles q_proj;
- a layer group with heads of its own (Gemma 4, MiMo-V2-Flash: ``geometry.py``): its d_qk, d_v, KV heads,
  sinks, no v_proj (``k_eq_v``) or no k/v projection and k norm (``kv_shared``); Gemma 4's per-layer
  embeddings (``per_layer_input.py``), one stored scalar per layer, its router's input scale (d);
- state-space mixers (Mamba, Mamba-2, Gated DeltaNet): ``ssm.py``;
- MLP (gated: 3·d·ff, plain: 2·d·ff, + biases); experts (E routed + shared, the shared ones with their
  own bias switch: Nemotron-H's shared expert follows ``mlp_bias``, its routed experts have none); router d·E (+E bias, or
  DeepSeek-V3's stored e_score_correction_bias), Qwen's shared-expert gate (d), Nemotron-H's latent
  projections (2·d·latent);
- norms (d each, 2d for LayerNorm with bias; BitNet's sub-norms d + MLP width per layer), embeddings (vocab × width, learned positions), the LM head
  (absent when tied; + vocab with a bias), OPT-350m's project_in/out (2·d·word_embed_proj_dim).

"Active" counts what one token touches: all but the (E−k) routed experts it skips, and without the
input embedding table (a row lookup, no matmul; the convention of the gpt-oss model card: 5.13B active =
attention + 4/128 of MLP + unembedding). A table tied to the LM head is the unembedding matmul, so it
stays in the active count.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from . import per_layer_input as ple
from .geometry import heads_of, projection_widths, qk_norm_values
from . import moa
from .kv_sharing import layer_extra_params, model_extra_params, per_layer_embedding_params, shared_layer_saving
from .sparse_attn import indexer_params
from .spec import LayerGroup, ModelSpec
from .ssm import ssm_params


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
    ssm: int = 0
    embed_projection: int = 0
    per_layer_embedding: int = 0   # Gemma 3n embed_tokens_per_layer (kv_sharing.py): a lookup table
    layer_extras: int = 0          # Gemma 3n AltUp, LAuReL, per-layer input projections (kv_sharing.py)
    attention_skipped: int = 0     # JetMoE: the attention experts' q/o pairs a token does not run (moa.py)

    @property
    def total(self) -> int:
        """All parameters of the main model (the MTP module counted apart, as model cards do)."""
        return (self.embedding + self.lm_head + self.attention + self.ssm + self.dense_mlp
                + self.routed_experts + self.shared_experts + self.router + self.norms + self.embed_projection
                + self.per_layer_embedding + self.layer_extras)

    @property
    def lookup_only(self) -> int:
        """Embedding parameters only read by row lookup: the token table when it is not tied to the
        LM head (a tied table is the unembedding matmul too), plus any learned position table."""
        return (self.position_embedding if self.tied else self.embedding) + self.per_layer_embedding

    @property
    def active(self) -> float:
        """Parameters one token touches: total less skipped experts and the lookup-only embedding."""
        return self.total - self.routed_experts + self.active_routed - self.lookup_only - self.attention_skipped

    def to_dict(self) -> dict:
        return {**asdict(self), "total": self.total, "active": self.active}


@dataclass(frozen=True)
class LayerParams:
    """Parameters of ONE layer of a group, by component."""

    attention: int = 0
    ssm: int = 0
    dense_mlp: int = 0
    routed_experts: int = 0
    shared_experts: int = 0
    router: int = 0
    norms: int = 0
    active_routed: float = 0

    @property
    def total(self) -> int:
        return (self.attention + self.ssm + self.dense_mlp + self.routed_experts + self.shared_experts
                + self.router + self.norms)


def norm_params(m: ModelSpec, width: int | None = None) -> int:
    """One norm over ``width`` (default: the hidden size): weight (+ bias for LayerNorm)."""
    return (width or m.hidden_size) * (2 if m.layernorm_bias else 1)


def qk_norm_params(m: ModelSpec) -> int:
    """The q and k norms of one attention layer."""
    if m.qk_norm == "head":
        return 2 * norm_params(m, m.head_dim)
    if m.qk_norm == "full":
        return norm_params(m, m.num_heads * m.head_dim) + norm_params(m, m.num_kv_heads * m.head_dim)
    if m.qk_norm == "per_head":  # StableLmLayerNormPerHead: LayerNorm(head_dim, bias=False) per head
        return (m.num_heads + m.num_kv_heads) * m.head_dim
    return 0


def attention_params(m: ModelSpec, g: LayerGroup | None = None) -> int:
    """One attention layer's weights (+ biases, q/k norms, sinks); of group ``g``'s layers where it has
    heads of its own (geometry.py)."""
    d, h = m.hidden_size, m.num_heads
    if g is not None and g.attn is not None:
        hs = heads_of(m, g)
        q, k, v, o_in = projection_widths(hs, m.attention_gate)
        return (d * (q + k + v) + o_in * d + (q + k + v) * m.qkv_bias + d * m.out_bias
                + qk_norm_values(m.qk_norm, hs, lambda w: norm_params(m, w)) + h * hs.sinks
                + h * m.attention_gate_bias + d * h * m.attention_head_gate)
    if m.mla is not None:
        a = m.mla
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank is None:
            q = d * h * qk
        else:
            q = d * a.q_lora_rank + a.q_lora_rank * m.qkv_bias + a.q_lora_rank + a.q_lora_rank * h * qk
        kv = (d * (a.kv_lora_rank + a.qk_rope_head_dim) + (a.kv_lora_rank + a.qk_rope_head_dim) * m.qkv_bias
              + a.kv_lora_rank + a.kv_lora_rank * h * (a.qk_nope_head_dim + a.v_head_dim))
        ix = indexer_params(m.indexer, d, a.q_lora_rank) if m.indexer is not None else 0  # DSA (sparse_attn.py)
        return q + kv + h * a.v_head_dim * d + d * m.out_bias + ix + d * h * m.attention_head_gate
    q_out, kv_out = h * m.head_dim * (2 if m.attention_gate else 1), 2 * m.num_kv_heads * m.head_dim
    w = d * (q_out + kv_out) + h * m.head_dim * d
    moa_extra = (moa.extra_params(m.attention_experts, d, m.num_kv_heads * m.head_dim)
                 if m.attention_experts is not None else 0)  # JetMoE: the other E − k experts, router, bias
    return (w + (q_out + kv_out) * m.qkv_bias + d * m.out_bias + qk_norm_params(m) + moa_extra
            + h * m.attention_sinks + h * m.attention_gate_bias + d * h * m.attention_head_gate)


def mlp_params(d: int, ff: int, gated: bool, bias: bool) -> int:
    """One MLP: gated 3·d·ff (+2ff+d bias), plain 2·d·ff (+ff+d bias)."""
    mats = 3 if gated else 2
    return mats * d * ff + ((mats - 1) * ff + d) * bias


def expert_params(m: ModelSpec) -> int:
    """One routed expert (on the latent width when the MoE has one)."""
    e = m.moe
    return mlp_params(e.latent_size or m.hidden_size, e.expert_intermediate_size, m.gated_mlp, e.expert_bias)


def router_params(m: ModelSpec) -> int:
    """One MoE layer's gating: router d·E (+E), over E + Z with identity experts (LongCat-Flash), shared-expert
    gate d, latent projections 2·d·latent."""
    e, d = m.moe, m.hidden_size
    latent = (2 * d * e.latent_size + (e.latent_size + d) * m.mlp_bias) if e.latent_size else 0
    return d * e.pool + e.pool * e.router_bias + d * e.shared_expert_gate + latent + d * e.router_scale


def layer_params(m: ModelSpec, g: LayerGroup) -> LayerParams:
    """Parameters of one layer of group ``g``."""
    d = m.hidden_size
    out = dict(attention=attention_params(m, g) * (1 + m.cross_attention) if g.has_attention else 0,
               ssm=ssm_params(m.ssm, d) if g.ssm_kind is not None else 0,
               norms=norm_params(m) * (m.norms_per_layer + m.cross_attention)
               + (norm_params(m) + norm_params(m, m.intermediate_size)) * m.sub_norms)
    if g.moe:
        e = m.moe
        one = expert_params(m)
        out.update(routed_experts=one * e.num_experts, active_routed=one * e.routed_k, router=router_params(m),
                   shared_experts=mlp_params(d, e.shared_intermediate_size, m.gated_mlp,
                                             e.expert_bias if e.shared_expert_bias is None else e.shared_expert_bias)
                   * e.num_shared_experts)
        out["norms"] += norm_params(m) * (e.post_norm + e.block_norms)  # AXK1 post_mlp_layernorm; Gemma 4's three
    elif g.mlp:
        ff = m.intermediate_size if g.mlp_width is None else g.mlp_width
        out["dense_mlp"] = mlp_params(d, ff, m.gated_mlp, m.mlp_bias) + m.mlp_act_params
    return LayerParams(**out)


def count_params(m: ModelSpec) -> ParamCount:
    d = m.hidden_size
    sums = dict.fromkeys(("attention", "ssm", "dense_mlp", "routed_experts", "shared_experts", "router",
                          "norms", "active_routed"), 0)
    moe_layer = None
    for g in m.layers:
        lp = layer_params(m, g)
        if g.moe:
            moe_layer = lp
        for k in sums:
            sums[k] += getattr(lp, k) * g.count
    sums["norms"] += norm_params(m) * (m.final_norm + m.embedding_norm)
    width = m.word_embed_proj_dim or d
    proj = 2 * d * width if width != d else 0
    mtp = 0
    if m.mtp_layers:  # DeepSeek-V3 MTP: one decoder layer + eh_proj (2d x d) + enorm, hnorm, final norm
        body = moe_layer if moe_layer is not None else layer_params(m, LayerGroup(count=1))
        mtp = m.mtp_layers * (body.total + 2 * d * d + norm_params(m) * 3)
    extra = {}
    if m.gemma3n is not None:  # Gemma 3n: KV-sharing layers build no k/v projections; its extra modules
        g3 = m.gemma3n
        sums["attention"] -= g3.num_kv_shared * shared_layer_saving(d, m.num_kv_heads, m.head_dim, m.qkv_bias)
        extra = dict(per_layer_embedding=per_layer_embedding_params(g3, m.num_layers),
                     layer_extras=m.num_layers * layer_extra_params(g3, d) + model_extra_params(g3, d, m.num_layers))
    elif m.per_layer_input is not None or m.layer_scalars:  # Gemma 4 (per_layer_input.py), a scalar per layer
        n, s = m.num_layers, m.per_layer_input
        extra = dict(per_layer_embedding=0 if s is None else ple.table_params(s, n),
                     layer_extras=m.layer_scalars * n + (0 if s is None else n * ple.layer_params(s, d)
                                                         + ple.model_projection_params(s, d, n)))
    extra["layer_extras"] = extra.get("layer_extras", 0) + m.extra_params  # ModelSpec.extra_params (decoders_own.py)
    if m.attention_experts is not None:  # JetMoE MoA (moa.py)
        extra["attention_skipped"] = m.num_attention_layers * moa.skipped_params(
            m.attention_experts, d, m.num_kv_heads * m.head_dim)
    return ParamCount(
        embedding=m.vocab_size * width + m.learned_positions * d, **extra,
        lm_head=(0 if m.tie_embeddings else m.vocab_size * width) + m.vocab_size * m.lm_head_bias,
        mtp=mtp, tied=m.tie_embeddings, position_embedding=m.learned_positions * d, embed_projection=proj,
        **sums)
