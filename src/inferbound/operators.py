"""The work of one forward step, per GPU, per operator: FLOPs and bytes, nothing about time.

A step runs ``batch`` sequences that each add ``new`` tokens after ``past`` cached tokens:
prefill is new=S, past=0; decode is new=1, past=L; a chunk of chunked prefill is anything between.
With T = batch·new tokens in the step and TP degree t (Megatron sharding: heads and MLP columns split
t ways, KV heads split but replicated when t > n_kv; MLA's latent cache is replicated):

- GEMMs (QKV, output, MLP, experts, router, LM head): 2·T·(parameters on this GPU) FLOPs, reading the
  weights once per step (``weight_bytes``) plus input and output activations (``act_bytes``);
- attention: every new token of a sequence scores against the tokens it can see (causal, window-limited):
  K_eff = Σ_{t=past+1}^{past+new} min(t, window) pairs per sequence and head, at 2·(d_qk + d_v) FLOPs
  each; it reads the cached K and V (``kv_bytes``) and writes the new tokens' K and V;
- MoE: a step of T tokens, each routed to k of E experts, touches E·(1-(1-k/E)^T) experts on average
  (uniform routing); their weights are what is read; FLOPs are 2·T·k·(expert parameters);
- norms, residual adds and activation functions: a few FLOPs and one read-write of the activations.

Every quantity broadcasts over numpy arrays of batch / new / past, so one call prices a whole sweep.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .config import Dtypes, Parallelism
from .dtypes import bytes_per_element, weight_bytes_per_element
from .model.kv import cached_tokens, kv_values_per_token_layer
from .model.params import attention_params, mlp_params
from .model.spec import LayerGroup, ModelSpec


@dataclass
class Op:
    """One operator of a step, per GPU. ``count`` identical instances (layers) run one after another."""

    name: str
    kind: str  # gemm | attention | elementwise | embedding | collective
    count: int
    flops: object = 0.0
    weight_bytes: object = 0.0
    act_bytes: object = 0.0
    kv_bytes: object = 0.0
    group: str = ""  # which layer group (e.g. "full", "window128", "moe")
    comm: dict = field(default_factory=dict)  # collectives: kind, bytes, group size, scope

    @property
    def bytes(self):
        return self.weight_bytes + self.act_bytes + self.kv_bytes


def _chunk_prefix(x, chunk: int):
    """Σ_{t=1}^{x} (((t−1) mod C) + 1) = q·C(C+1)/2 + r(r+1)/2 with x = q·C + r."""
    q, r = np.floor_divide(x, chunk), np.mod(x, chunk)
    return q * chunk * (chunk + 1) / 2 + r * (r + 1) / 2


def attended_pairs(past, new, window: int | None, chunked: bool = False):
    """Query-key pairs per sequence and head for tokens past+1 .. past+new.

    full: Σ t;  sliding window W: Σ min(t, W);  chunked attention (Llama 4, chunk C): a token sees only
    its own chunk, Σ (((t−1) mod C) + 1).
    """
    past, new = np.asarray(past, dtype=float), np.asarray(new, dtype=float)
    if chunked:
        return _chunk_prefix(past + new, window) - _chunk_prefix(past, window)
    if window is None:
        return new * past + new * (new + 1) / 2
    n_in = np.clip(window - past, 0, new)  # new tokens whose position is still within the window
    return n_in * past + n_in * (n_in + 1) / 2 + (new - n_in) * window


def attention_reads(g: LayerGroup, length):
    """Cached tokens an attention kernel reads for a sequence of ``length`` tokens: all of them, the
    last W (sliding window), or those of the current chunk, ((L−1) mod C) + 1 (chunked)."""
    return kind_reads(kind_of(g), length)


def kind_reads(kind: tuple[str, int | None], length):
    """attention_reads for an attention kind (attention, window)."""
    attention, window = kind
    if attention == "chunked":
        return np.mod(np.asarray(length, dtype=float) - 1, window) + 1
    if attention == "full":
        return length
    return np.minimum(length, window)


def experts_touched(tokens, num_experts: int, top_k: int):
    """Expected distinct experts hit by ``tokens`` tokens routing top-k of E uniformly: E·(1-(1-k/E)^T)."""
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** np.asarray(tokens, dtype=float))


def _group_label(g: LayerGroup) -> str:
    att = "full" if g.attention == "full" else f"{g.attention}{g.window}"
    return att + ("/moe" if g.moe else "")


def _merged_groups(m: ModelSpec) -> list[LayerGroup]:
    """Identical layer groups merged (order does not matter for a whole-model step)."""
    counts: dict[tuple, int] = {}
    for g in m.layers:
        key = (g.attention, g.window, g.moe)
        counts[key] = counts.get(key, 0) + g.count
    return [LayerGroup(count=c, attention=a, window=w, moe=e) for (a, w, e), c in counts.items()]


def _comm_bytes(dt: Dtypes) -> float:
    """Bytes per value of tensors crossing GPUs: 16-bit (engines reduce in bf16/fp16), fp32 if asked."""
    return bytes_per_element(dt.high_precision)


def _collective(name: str, kind: str, count: int, size_bytes, group: str, n: int, label: str) -> Op:
    return Op(name, "collective", count, group=label,
              comm={"kind": kind, "bytes": size_bytes, "group": group, "size": n})


def _tp_reduce(name: str, g: LayerGroup, par: Parallelism, size_bytes, label: str) -> list[Op]:
    """The TP reduction after a row-parallel GEMM: all-reduce, or RS + AG with sequence parallelism."""
    if par.tp <= 1:
        return []
    if par.sequence_parallel:
        return [_collective(f"{name}_reduce_scatter", "reduce_scatter", g.count, size_bytes, "tp", par.tp, label),
                _collective(f"{name}_all_gather", "all_gather", g.count, size_bytes, "tp", par.tp, label)]
    return [_collective(f"{name}_all_reduce", "all_reduce", g.count, size_bytes, "tp", par.tp, label)]


def attention_shape(m: ModelSpec, par: Parallelism):
    """(query heads per GPU, d_qk decode, d_v decode, d_qk prefill, d_v prefill, cached values per token
    and layer on a GPU, attention output width) of one attention layer under TP.

    MHA/GQA: d_qk = d_v = head_dim; KV heads split t ways but replicated when t > n_kv. MLA: decode runs
    absorbed (scores against the latent, d_qk = kv_lora_rank + rope, d_v = kv_lora_rank), prefill expanded
    (d_qk = nope + rope, d_v = v_head_dim); the latent is replicated on every TP rank.
    """
    tp = par.tp
    if m.mla is not None:
        a = m.mla
        return (m.num_heads / tp, a.kv_lora_rank + a.qk_rope_head_dim, a.kv_lora_rank,
                a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim, kv_values_per_token_layer(m),
                m.num_heads * a.v_head_dim)
    return (m.num_heads / tp, m.head_dim, m.head_dim, m.head_dim, m.head_dim,
            2 * max(1.0, m.num_kv_heads / tp) * m.head_dim, m.num_heads * m.head_dim)


def attention_op(m: ModelSpec, g: LayerGroup, dt: Dtypes, par: Parallelism, decode_pairs, prefill_pairs,
                 cached, tokens) -> Op:
    """The attention kernel of ``g.count`` layers of one kind, per GPU, from what its sequences add up to.

    ``decode_pairs`` / ``prefill_pairs``: query-key pairs of decoding sequences and of prefill chunks
    (attended_pairs summed over them), ``cached``: cached tokens the kernel reads (attention_reads summed),
    ``tokens``: new tokens; all per attention group. FLOPs 2·h_loc·(d_qk + d_v) per pair (QKᵀ and PV);
    it reads the cached K and V (or MLA latent) and reads/writes the attention output.
    """
    h_loc, dqk_d, dv_d, dqk_p, dv_p, kv_vals, out_width = attention_shape(m, par)
    ab = _act_bytes(dt)
    kvb = bytes_per_element(dt.kv_dtype)
    return Op("attention", "attention", g.count,
              flops=2 * h_loc * ((dqk_d + dv_d) * decode_pairs + (dqk_p + dv_p) * prefill_pairs),
              act_bytes=2 * tokens * out_width / par.tp * ab, kv_bytes=cached * kv_vals * kvb, group=_group_label(g))


def _act_bytes(dt: Dtypes) -> float:
    """Bytes per activation value: the activation dtype (fp4 activations are stored as 8-bit)."""
    return bytes_per_element(dt.act) if dt.act != "fp4" else 1.0


def layer_ops(m: ModelSpec, g: LayerGroup, dt: Dtypes, par: Parallelism, tokens,
              moe_imbalance: float = 1.0) -> list[Op]:
    """Operators of ``g.count`` decoder layers of one kind except the attention kernel, per GPU, with
    their collectives, for ``tokens`` new tokens of one attention group (the replica's tokens /
    attention_dp groups). Under EP the busiest GPU carries ``moe_imbalance`` times the mean expert load.
    """
    tp = par.tp
    d = m.hidden_size
    ab = _act_bytes(dt)
    wb = weight_bytes_per_element(dt.weight)
    kvb = bytes_per_element(dt.kv_dtype)
    cb = _comm_bytes(dt)
    tokens = np.asarray(tokens, dtype=float)
    label = _group_label(g)
    _, _, _, _, _, kv_vals, attn_out_width = attention_shape(m, par)
    ops: list[Op] = []

    # --- attention projections (the attention kernel itself: attention_op)
    attn_p = attention_params(m)
    if m.mla is not None:
        a = m.mla
        o_params = m.num_heads * a.v_head_dim * d
        qkv_out = m.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) / tp + a.kv_lora_rank + a.qk_rope_head_dim
    else:
        o_params = m.num_heads * m.head_dim * d + d * m.out_bias
        qkv_out = (m.num_heads + 2 * m.num_kv_heads) * m.head_dim / tp
    qkv_params = (attn_p - o_params) / tp
    ops.append(Op("attn_qkv", "gemm", g.count, flops=2 * tokens * qkv_params,
                  weight_bytes=qkv_params * wb, act_bytes=tokens * (d + qkv_out) * ab,
                  kv_bytes=tokens * kv_vals * kvb, group=label))
    ops.append(Op("attn_out", "gemm", g.count, flops=2 * tokens * o_params / tp,
                  weight_bytes=o_params / tp * wb, act_bytes=tokens * (attn_out_width / tp + d) * ab,
                  group=label))
    ops.extend(_tp_reduce("attn", g, par, tokens * d * cb, label))

    # --- MLP or experts
    if g.moe:
        ops.extend(_moe_ops(m, g, dt, par, tokens, moe_imbalance, label))
    else:
        p = mlp_params(d, m.intermediate_size, m.gated_mlp, m.mlp_bias) / tp
        ops.append(Op("mlp", "gemm", g.count, flops=2 * tokens * p, weight_bytes=p * wb,
                      act_bytes=tokens * (2 * d + 3 * m.intermediate_size / tp) * ab, group=label))
        ops.extend(_tp_reduce("mlp", g, par, tokens * d * cb, label))

    # --- norms, residual adds, activation function: ~8 FLOPs and 3 touches per element
    elems = tokens * d * (m.norms_per_layer + 1)
    ops.append(Op("norms_residual", "elementwise", g.count, flops=8 * elems, act_bytes=3 * elems * ab,
                  group=label))
    return ops


def _moe_ops(m: ModelSpec, g: LayerGroup, dt: Dtypes, par: Parallelism, tokens, imbalance: float,
             label: str) -> list[Op]:
    """Router, routed experts (TP- or EP-sharded), shared experts and their collectives.

    The MoE layer sees every token of its group: T_moe = T·(attention groups). Each GPU of the group
    holds E/ep experts, each split over expert_tp = group/ep GPUs. Per GPU: FLOPs
    2·T_moe·k·P_e/group·imbalance; weights read: experts touched by T_moe tokens / ep, /expert_tp.
    EP moves token copies with an all-to-all dispatch and combine of (T_moe/ep)·k·d values per GPU.
    """
    e, d = m.moe, m.hidden_size
    ab = _act_bytes(dt)
    wb = weight_bytes_per_element(dt.weight)
    cb = _comm_bytes(dt)
    ops: list[Op] = []
    group = par.moe_group
    t_moe = tokens * par.attention_groups
    imb = imbalance if par.ep > 1 else 1.0
    router = d * e.num_experts
    ops.append(Op("router", "gemm", g.count, flops=2 * tokens * router,
                  weight_bytes=router * bytes_per_element(dt.high_precision),
                  act_bytes=tokens * (d + e.num_experts) * ab, group=label))
    per_expert = mlp_params(d, e.expert_intermediate_size, m.gated_mlp, e.expert_bias)
    touched = experts_touched(t_moe, e.num_experts, e.top_k)
    if par.ep > 1:
        a2a = t_moe / par.ep * e.top_k * d * cb
        ops.append(_collective("moe_dispatch_all_to_all", "all_to_all", g.count, a2a, "ep", par.ep, label))
    ops.append(Op("experts", "gemm", g.count, flops=2 * t_moe * e.top_k * per_expert / group * imb,
                  weight_bytes=touched / par.ep * per_expert / par.expert_tp * wb,
                  act_bytes=t_moe * e.top_k / par.ep * imb * (2 * d + 2 * e.expert_intermediate_size / par.expert_tp) * ab,
                  group=label))
    if par.ep > 1:
        ops.append(_collective("moe_combine_all_to_all", "all_to_all", g.count, a2a, "ep", par.ep, label))
        if par.expert_tp > 1:
            ops.append(_collective("expert_all_reduce", "all_reduce", g.count, t_moe / par.ep * e.top_k * d * cb,
                                   "expert_tp", par.expert_tp, label))
    if e.num_shared_experts:
        sh = mlp_params(d, e.shared_intermediate_size, m.gated_mlp, e.expert_bias) * e.num_shared_experts / par.tp
        ops.append(Op("shared_experts", "gemm", g.count, flops=2 * tokens * sh, weight_bytes=sh * wb,
                      act_bytes=tokens * (2 * d + 2 * e.shared_intermediate_size * e.num_shared_experts / par.tp) * ab,
                      group=label))
    if par.ep == 1:  # experts and shared experts reduce together over TP
        ops.extend(_tp_reduce("moe", g, par, tokens * d * cb, label))
    else:
        if e.num_shared_experts:
            ops.extend(_tp_reduce("shared_expert", g, par, tokens * d * cb, label))
        if par.tp > 1:  # each TP rank got back its 1/tp of the tokens; attention needs all of them
            ops.append(_collective("moe_all_gather", "all_gather", g.count, tokens * d * cb, "tp", par.tp, label))
    return ops


def body_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, tokens, layers: list[LayerGroup] | None = None,
             first: bool = True, last: bool = True, moe_imbalance: float = 1.0) -> list[Op]:
    """Everything of a step on one GPU that depends only on its ``tokens`` (the replica's new tokens):
    the embedding (``first`` stage), every layer's projections, MLP/experts, norms and collectives
    (``layers``: one pipeline stage's, default the whole model), the final norm (``last`` stage).
    With attention data parallel each attention group runs tokens/dp of them."""
    d = m.hidden_size
    hb = bytes_per_element(dt.high_precision)
    ab = _act_bytes(dt)
    tokens = np.asarray(tokens, dtype=float) / par.attention_groups
    ops = []
    if first:
        ops.append(Op("embedding", "embedding", 1, weight_bytes=tokens * d * hb, act_bytes=tokens * d * ab))
        if par.tp > 1:  # vocab-parallel embedding: partial rows summed over TP
            ops.append(_collective("embedding_all_reduce", "all_reduce", 1, tokens * d * _comm_bytes(dt), "tp",
                                   par.tp, ""))
    for g in (_merged_groups(m) if layers is None else layers):
        ops.extend(layer_ops(m, g, dt, par, tokens, moe_imbalance))
    if last:
        ops.append(Op("final_norm", "elementwise", 1, flops=8 * tokens * d, act_bytes=3 * tokens * d * ab))
    return ops


def head_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, sampled) -> list[Op]:
    """The LM head of the last stage for ``sampled`` sequences (one logits row each; the replica's count)
    and, under TP, the all-gather of the vocab-parallel fp32 logits for sampling."""
    tp = par.tp
    d = m.hidden_size
    logits = np.asarray(sampled, dtype=float) / par.attention_groups
    vocab_loc = m.vocab_size / tp
    ops = [Op("lm_head", "gemm", 1, flops=2 * logits * d * vocab_loc,
              weight_bytes=d * vocab_loc * bytes_per_element(dt.high_precision),
              act_bytes=logits * (d * _act_bytes(dt) + vocab_loc * 4))]
    if tp > 1:  # gather the vocab-parallel logits for sampling
        ops.append(_collective("logits_all_gather", "all_gather", 1, logits * m.vocab_size * 4, "tp", tp, ""))
    return ops


def kind_of(g: LayerGroup) -> tuple[str, int | None]:
    """The attention kind of a layer group: what its attention pairs and cache reads depend on."""
    return g.attention, g.window


def attention_kinds(m: ModelSpec) -> list[tuple[str, int | None]]:
    """Distinct attention kinds of a model's layers, in first-seen order."""
    return list(dict.fromkeys(kind_of(g) for g in m.layers))


def sequence_attention(kind: tuple[str, int | None], past, new):
    """(query-key pairs, cached tokens read) per sequence and head for one layer of ``kind`` when a
    sequence adds ``new`` tokens after ``past`` cached ones (attended_pairs, attention_reads)."""
    attention, window = kind
    pairs = attended_pairs(past, new, window if attention != "full" else None, attention == "chunked")
    return pairs, kind_reads(kind, np.asarray(past, dtype=float) + np.asarray(new, dtype=float))


def attention_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, layers: list[LayerGroup], per_kind: dict,
                  tokens) -> list[Op]:
    """One attention op per layer group of ``layers``, from the step's sums per attention kind
    (``per_kind[kind] = (decode_pairs, prefill_pairs, cached)``, replica-wide) and its ``tokens``."""
    groups = par.attention_groups
    ops = []
    for g in layers:
        dec, pre, cached = per_kind[kind_of(g)]
        ops.append(attention_op(m, g, dt, par, np.asarray(dec, dtype=float) / groups,
                                np.asarray(pre, dtype=float) / groups, np.asarray(cached, dtype=float) / groups,
                                np.asarray(tokens, dtype=float) / groups))
    return ops


def uniform_attention(m: ModelSpec, batch, new, past) -> dict:
    """Per-kind attention sums of ``batch`` sequences each adding ``new`` tokens after ``past``:
    decode pairs when new = 1, prefill pairs otherwise (MLA decodes absorbed, prefills expanded)."""
    batch, new = np.asarray(batch, dtype=float), np.asarray(new, dtype=float)
    out = {}
    for kind in attention_kinds(m):
        pairs, cached = sequence_attention(kind, past, new)
        is_dec = new <= 1
        out[kind] = (np.where(is_dec, batch * pairs, 0.0), np.where(is_dec, 0.0, batch * pairs), batch * cached)
    return out


def stage_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, tokens, sampled, per_kind: dict,
              layers: list[LayerGroup] | None = None, first: bool = True, last: bool = True,
              moe_imbalance: float = 1.0) -> list[Op]:
    """Every operator of one pipeline stage (or the whole model) for a step that adds ``tokens`` tokens,
    samples ``sampled`` sequences and whose attention sums are ``per_kind``, in execution order
    (each group's attention kernel after its QKV projection)."""
    layers = _merged_groups(m) if layers is None else layers
    body = body_ops(m, dt, par, tokens, layers, first, last, moe_imbalance)
    att = iter(attention_ops(m, dt, par, layers, per_kind, tokens))
    ops = []
    for op in body:
        ops.append(op)
        if op.name == "attn_qkv":
            ops.append(next(att))
    return ops + (head_ops(m, dt, par, sampled) if last else [])


def forward_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, batch, new, past, logits_per_seq=1,
                layers: list[LayerGroup] | None = None, first: bool = True, last: bool = True,
                moe_imbalance: float = 1.0) -> list[Op]:
    """All operators of one uniform forward step on one GPU: ``batch`` sequences (the replica's) each add
    ``new`` tokens after ``past`` cached ones; ``logits_per_seq`` logits rows each."""
    batch = np.asarray(batch, dtype=float)
    tokens = batch * np.asarray(new, dtype=float)
    return stage_ops(m, dt, par, tokens, batch * logits_per_seq, uniform_attention(m, batch, new, past), layers,
                     first, last, moe_imbalance)


def prefill_ops(m, dt, par, batch, input_len, **stage) -> list[Op]:
    """Prefill of ``batch`` prompts of ``input_len`` tokens (logits for the last token of each)."""
    return forward_ops(m, dt, par, batch, input_len, 0, **stage)


def decode_ops(m, dt, par, batch, context, **stage) -> list[Op]:
    """One decode step: ``batch`` sequences each add one token after ``context`` cached tokens."""
    return forward_ops(m, dt, par, batch, 1, context, **stage)
