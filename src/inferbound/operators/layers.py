"""The layers' work that depends only on the step's tokens: projections, MLP or experts, norms, their
collectives, the embedding and the LM head.

With T tokens in the step and TP degree t (Megatron sharding: heads and MLP columns split t ways, KV
heads split but replicated when t > n_kv; MLA's latent cache is replicated):

- GEMMs (QKV, output, state-space projections, MLP, experts, router, LM head): 2·T·(parameters on this
  GPU) FLOPs, reading the weights once per step (``weight_bytes``) plus input and output activations;
- MoE: a step of T tokens, each routed to k of E experts, touches E·(1-(1-k/E)^T) experts on average
  (uniform routing); their weights are what is read; FLOPs are 2·T·k·(expert parameters);
- norms, residual adds and activation functions: a few FLOPs and one read-write of the activations;
- JetMoE's attention experts (model/moa.py): q and o of the k experts a token picks run, the ones the
  step's tokens touch, E·(1-(1-k/E)^T), are read (the router, its bias and kv_proj always).
"""
from __future__ import annotations

import numpy as np

from ..deploy.config import Dtypes, Parallelism
from ..deploy.eplb import expert_slots, moe_imbalance
from ..deploy.sampling import ROWS_SPLIT
from ..base.dtypes import bytes_per_element, component_weight_bytes
from ..model.geometry import heads_of, projection_widths
from ..model import moa
from ..model.params import attention_params, expert_params, mlp_params, router_params
from ..model.ssm import lightning_buffer_values, ssm_params
from ..model.spec import LayerGroup, ModelSpec
from .attention import attention_shape
from .gemma3n import layer_extra_ops, model_extra_ops
from .per_layer_input import ple_layer_ops, ple_model_ops
from .op import Op, _act_bytes, _collective, _comm_bytes, _group_label, _merged_groups, _tp_reduce, gemm_shape, weight_format


def _tokens(x):
    """A token count as float64: a Python float when it is one number (the same IEEE arithmetic as a
    0-d array, without numpy's per-operation overhead), else an array."""
    a = np.asarray(x, dtype=float)
    return float(a) if a.ndim == 0 else a


def experts_touched(tokens, num_experts: int, top_k: int):
    """Expected distinct experts hit by ``tokens`` tokens routing top-k of E uniformly: E·(1-(1-k/E)^T)."""
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** np.asarray(tokens, dtype=float))


def layer_ops(m: ModelSpec, g: LayerGroup, dt: Dtypes, par: Parallelism, tokens,
              moe_imbalance: float = 1.0) -> list[Op]:
    """Operators of ``g.count`` decoder layers of one kind except the attention kernel and the
    state-space scan, per GPU, with their collectives, for ``tokens`` new tokens of one attention group
    (the replica's tokens / attention_dp groups): attention projections (layers with attention),
    state-space projections (state-space layers: ssm_params, as ordinary GEMMs), the MLP or experts
    (layers with one), norms. Weights are stored at the weight format where the deployment quantizes
    that component (dtypes.component_weight_bytes). Under EP the busiest GPU carries ``moe_imbalance``
    times the mean expert load.
    """
    tp = par.tp
    d = m.hidden_size
    ab = _act_bytes(dt)
    kvb = bytes_per_element(dt.kv_dtype)
    cb = _comm_bytes(dt)
    tokens = _tokens(tokens)
    label = _group_label(g)
    ops: list[Op] = []

    if g.has_attention:  # --- attention projections (the attention kernel itself: attention_op)
        wb = component_weight_bytes(dt, "attention")
        _, _, _, _, _, kv_vals, attn_out_width = attention_shape(m, par, g)
        attn_p = attention_params(m, g)
        if g.attn is not None:  # heads of its own (model/geometry.py); a KV-sharing layer writes no KV
            q_w, k_w, v_w, o_in = projection_widths(heads_of(m, g), m.attention_gate)
            o_params = o_in * d + d * m.out_bias
            qkv_out = (q_w + k_w + v_w) / tp
            kv_vals = kv_vals * (not g.attn.kv_shared)
        elif m.mla is not None:
            a = m.mla
            o_params = m.num_heads * a.v_head_dim * d
            qkv_out = m.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) / tp + a.kv_lora_rank + a.qk_rope_head_dim
        else:
            o_params = m.num_heads * m.head_dim * d + d * m.out_bias
            qkv_out = (m.num_heads * (2 if m.attention_gate else 1) + 2 * m.num_kv_heads) * m.head_dim / tp
        qkv_params = (attn_p - o_params) / tp
        qkv_read, o_read = qkv_params, o_params / tp  # weights read: all of them, but JetMoE's (below)
        if m.attention_experts is not None:  # JetMoE MoA (model/moa.py): k q/o pairs run, the touched ones read
            a, pair = m.attention_experts, d * m.num_kv_heads * m.head_dim
            qkv_params -= moa.skipped_params(a, d, m.num_kv_heads * m.head_dim) / tp  # k q's, kv_proj, router
            touched = experts_touched(tokens * par.attention_groups, a.num_experts, a.top_k)
            qkv_read = qkv_params + (touched - a.top_k) * pair / tp
            o_read = touched * pair / tp
        ops.append(Op("attn_qkv", "gemm", g.count, flops=2 * tokens * qkv_params,
                      weight_bytes=qkv_read * wb, act_bytes=tokens * (d + qkv_out) * ab,
                      kv_bytes=tokens * kv_vals * kvb, group=label,
                      shape=gemm_shape(dt, "attention", tokens, (qkv_params / d, d))))
        ops.append(Op("attn_out", "gemm", g.count, flops=2 * tokens * o_params / tp,
                      weight_bytes=o_read * wb, act_bytes=tokens * (attn_out_width / tp + d) * ab,
                      group=label, shape=gemm_shape(dt, "attention", tokens, (d, o_params / tp / d))))
        ops.extend(_tp_reduce("attn", g, par, tokens * d * cb, label))
    if g.ssm_kind is not None:  # --- state-space projections (the scan itself: operators_ssm)
        p = (ssm_params(m.ssm, d) - lightning_buffer_values(m.ssm)) / tp  # decay constants are no GEMM
        ops.append(Op("ssm_proj", "gemm", g.count, flops=2 * tokens * p,
                      weight_bytes=p * component_weight_bytes(dt, "ssm"),
                      act_bytes=tokens * (2 * d + 2 * p / d) * ab, group=label,
                      shape=gemm_shape(dt, "ssm", tokens, (p / d, d))))
        ops.extend(_tp_reduce("ssm", g, par, tokens * d * cb, label))

    # --- MLP or experts
    if g.moe:
        ops.extend(_moe_ops(m, g, dt, par, tokens, moe_imbalance, label))
    elif g.mlp:
        gathered = par.dp_gathered_mlp
        t_mlp = tokens * par.attention_groups if gathered else tokens
        sh = par.mlp_shard
        if gathered:
            ops.append(_dp_gather("mlp", g, par, t_mlp * d * cb, label))
        ff = m.intermediate_size if g.mlp_width is None else g.mlp_width  # Gemma 4's double-wide layers
        p = mlp_params(d, ff, m.gated_mlp, m.mlp_bias) / sh
        ops.append(Op("mlp", "gemm", g.count, flops=2 * t_mlp * p, weight_bytes=p * component_weight_bytes(dt, "dense_mlp"),
                      act_bytes=t_mlp * (2 * d + 3 * ff / sh) * ab, group=label,
                      shape=gemm_shape(dt, "dense_mlp", t_mlp, *_mlp_gemms(d, ff / sh, m.gated_mlp))))
        ops.extend(_dp_reduce_scatter("mlp", g, par, t_mlp * d * cb, label) if gathered
                   else _tp_reduce("mlp", g, par, tokens * d * cb, label))

    ops.extend(layer_extra_ops(m, g, dt, tokens))  # Gemma 3n AltUp / LAuReL / per-layer input (gemma3n.py)
    ops.extend(ple_layer_ops(m, g, dt, tokens))  # Gemma 4 per-layer input gate and projection (per_layer_input.py)

    # --- norms, residual adds, activation function: ~8 FLOPs and 3 touches per element
    post_moe = bool(g.moe and m.moe is not None and m.moe.post_norm)  # AXK1's post_mlp_layernorm (model/moe_more.py)
    post_moe += m.moe.block_norms if g.moe and m.moe is not None else 0  # Gemma 4's three (model/gemma4.py)
    elems = tokens * d * (m.norms_per_layer + 1 + post_moe)
    ops.append(Op("norms_residual", "elementwise", g.count, flops=8 * elems, act_bytes=3 * elems * ab,
                  group=label))
    return ops


def _dp_gather(name: str, g: LayerGroup, par: Parallelism, size_bytes, label: str) -> Op:
    """All-gather of the attention groups' hidden states before a DP-gathered MLP (dp_gathered_mlp):
    S = T·dp·d·(comm bytes), the gathered tensor every rank of the tp·dp group ends with (sglang
    dp_attention.py ``dp_gather_partial``: ``all_gather_into_tensor`` over the TP group, MAX_LEN padding)."""
    return _collective(f"{name}_dp_all_gather", "all_gather", g.count, size_bytes, "moe", par.moe_group, label)


def _dp_reduce_scatter(name: str, g: LayerGroup, par: Parallelism, size_bytes, label: str) -> list[Op]:
    """Reduce-scatter of the TP-sharded MLP's partial sums back to each attention group's tokens, S = the
    same T·dp·d·(comm bytes) (sglang dp_attention.py ``dp_reduce_scatter_tensor``: ``reduce_scatter_tensor``
    over the TP group); it takes the place of the TP all-reduce. With attention TP t > 1 each rank got
    1/(t·dp) of the tokens, and an all-gather of the group's S/dp bytes over its t ranks restores them."""
    ops = [_collective(f"{name}_dp_reduce_scatter", "reduce_scatter", g.count, size_bytes, "moe", par.moe_group, label)]
    if par.tp > 1:
        ops.append(_collective(f"{name}_dp_attn_all_gather", "all_gather", g.count, size_bytes / par.dp, "tp",
                               par.tp, label))
    return ops


def _mlp_gemms(d: int, ff, gated: bool) -> tuple:
    """(n, k) of an MLP's GEMMs per GPU: the fused gate+up (or up) projection, then the down projection."""
    return ((2 * ff if gated else ff, d), (d, ff))


def _moe_ops(m: ModelSpec, g: LayerGroup, dt: Dtypes, par: Parallelism, tokens, imbalance: float,
             label: str) -> list[Op]:
    """Router, routed experts (TP- or EP-sharded), shared experts and their collectives.

    The MoE layer sees every token of its group: T_moe = T·(attention groups). Each GPU of the group
    holds (E + N)/ep experts (N redundant EPLB copies, deploy/eplb.py), each split over expert_tp = group/ep
    GPUs. Per GPU: FLOPs 2·T_moe·k·P_e/group·imbalance (imbalance: eplb.moe_imbalance); weights read: experts
    touched by T_moe tokens ·(E + N)/E (the copies of a hot expert are each read) / ep, /expert_tp.
    EP moves token copies with an all-to-all dispatch and combine of (T_moe/ep)·k·d values per GPU.
    Attention data parallel without EP (``dp_gathered_mlp``): an all-gather of T_moe·d values before the
    router, router and shared experts on all T_moe tokens (shared experts split tp·dp ways), and one
    reduce-scatter of T_moe·d values after the experts (sglang communicator.py, dp_attention.py).
    Identity (zero-computation) experts (LongCat-Flash): the router scores E + Z, and k counts real experts
    only, k·E/(E + Z) (``MoE.routed_k``): the identity's scaled copy is added beside the grouped GEMM and
    never dispatched (vLLM fused_moe/layer.py ``zero_experts_compute_triton``).
    """
    e, d = m.moe, m.hidden_size
    k = e.routed_k  # real experts per token: top_k, or k·E/(E + Z) beside identity experts (spec.MoE.routed_k)
    ab = _act_bytes(dt)
    cb = _comm_bytes(dt)
    ops: list[Op] = []
    group = par.moe_group
    t_moe = tokens * par.attention_groups
    imb = moe_imbalance(par, imbalance)  # 1 without EP; EPLB's residual with redundant experts (deploy/eplb.py)
    slots = expert_slots(e.num_experts, par.redundant_experts)  # E + N physical experts (EPLB copies)
    gathered = par.dp_gathered_mlp  # the layer runs on every group's T_moe tokens (SGLang DP attention, MoE TP)
    t_in = t_moe if gathered else tokens
    if gathered:
        ops.append(_dp_gather("moe", g, par, t_moe * d * cb, label))
    router = router_params(m)
    ops.append(Op("router", "gemm", g.count, flops=2 * t_in * router,
                  weight_bytes=router * bytes_per_element(dt.high_precision),
                  act_bytes=t_in * (d + e.pool) * ab, group=label,
                  shape=gemm_shape(dt, None, t_in, (router / d, d))))
    per_expert = expert_params(m)
    width = e.latent_size or d  # Nemotron-H latent MoE: experts read a narrower projection
    touched = experts_touched(t_moe, e.num_experts, k) * slots / e.num_experts  # copies of hot experts too
    if par.ep > 1:
        a2a = t_moe / par.ep * k * d * cb
        dispatch = _collective("moe_dispatch_all_to_all", "all_to_all", g.count, a2a, "ep", par.ep, label)
        if par.ep_a2a == "deepep":  # once per remote node (pricing/comm.py all_to_all): the routing it needs
            dispatch.comm["node_dedup"] = (float(e.num_experts), float(k))
        ops.append(dispatch)
    ops.append(Op("experts", "gemm", g.count, flops=2 * t_moe * k * per_expert / group * imb,
                  weight_bytes=touched / par.ep * per_expert / par.expert_tp * component_weight_bytes(dt, "routed_experts"),
                  act_bytes=t_moe * k / par.ep * imb * (2 * width + 2 * e.expert_intermediate_size / par.expert_tp) * ab,
                  group=label, shape={"moe": {"tokens": t_moe, "hidden": float(width),
                                              "inter": float(e.expert_intermediate_size), "topk": float(k),
                                              "experts": float(slots), "tp": float(par.expert_tp),
                                              "ep": float(par.ep), "gated": bool(m.gated_mlp), "imbalance": imb,
                                              # share of T_moe this GPU routes and permutes (its own T under
                                              # attention-DP EP; all of T_moe otherwise)
                                              "routed_share": 1.0 if gathered else 1.0 / par.attention_groups},
                                      **weight_format(dt, "routed_experts")}))
    if par.ep > 1:
        combine = _collective("moe_combine_all_to_all", "all_to_all", g.count, a2a, "ep", par.ep, label)
        combine.comm.update({k: v for k, v in dispatch.comm.items() if k == "node_dedup"})
        ops.append(combine)
        if par.expert_tp > 1:
            ops.append(_collective("expert_all_reduce", "all_reduce", g.count, t_moe / par.ep * k * d * cb,
                                   "expert_tp", par.expert_tp, label))
    if e.num_shared_experts:
        ways = par.mlp_shard
        sh = mlp_params(d, e.shared_intermediate_size, m.gated_mlp, e.expert_bias) * e.num_shared_experts / ways
        ops.append(Op("shared_experts", "gemm", g.count, flops=2 * t_in * sh,
                      weight_bytes=sh * component_weight_bytes(dt, "shared_experts"),
                      act_bytes=t_in * (2 * d + 2 * e.shared_intermediate_size * e.num_shared_experts / ways) * ab,
                      group=label, shape=gemm_shape(dt, "shared_experts", t_in, *_mlp_gemms(
                          d, e.shared_intermediate_size * e.num_shared_experts / ways, m.gated_mlp))))
    if gathered:  # experts and shared experts reduce together, scattered back to the groups
        ops.extend(_dp_reduce_scatter("moe", g, par, t_moe * d * cb, label))
    elif par.ep == 1:  # experts and shared experts reduce together over TP
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
    tokens = _tokens(np.asarray(tokens, dtype=float) / par.attention_groups)
    ops = []
    if first:
        ops.append(Op("embedding", "embedding", 1, weight_bytes=tokens * d * hb, act_bytes=tokens * d * ab))
        if par.tp > 1:  # vocab-parallel embedding: partial rows summed over TP
            ops.append(_collective("embedding_all_reduce", "all_reduce", 1, tokens * d * _comm_bytes(dt), "tp",
                                   par.tp, ""))
        ops.extend(model_extra_ops(m, dt, tokens))  # Gemma 3n per-layer embeddings and projections
        ops.extend(ple_model_ops(m, dt, tokens))  # Gemma 4's (per_layer_input.py)
    for g in (_merged_groups(m) if layers is None else layers):
        ops.extend(layer_ops(m, g, dt, par, tokens, moe_imbalance))
    if last:
        ops.append(Op("final_norm", "elementwise", 1, flops=8 * tokens * d, act_bytes=3 * tokens * d * ab))
    return ops


def head_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, sampled, sampler=(0.0, 0.0)) -> list[Op]:
    """The LM head of the last stage for ``sampled`` sequences (one logits row each; the replica's count),
    the engine's host work for them (scheduling, sampling: once per step, per attention-DP rank) and,
    under TP, the all-gather of the vocab-parallel fp32 logits for sampling. With ``dp_gathered_mlp``
    (SGLang DP attention, no EP) the head is split tp·dp ways and runs on every group's rows: an
    all-gather of their hidden states (rows·d values) first, then the logits all-gather over tp·dp
    (sglang layers/logits_processor.py: ``dp_gather_replicate`` unless --enable-dp-lm-head). ``sampler``:
    bytes per fp32 logit the engine's sampler moves beyond the plain path (below 128 rows, from 128 rows;
    deploy/sampling.py), a memory-bound ``sampler`` op over this rank's rows·V logits when not zero."""
    ways = par.head_shard
    d = m.hidden_size
    logits = _tokens(np.asarray(sampled, dtype=float) / par.attention_groups)  # this rank's rows
    rows = _tokens(sampled) if par.dp_gathered_mlp else logits                  # the head's rows
    vocab_loc = m.vocab_size / ways
    ops = []
    if par.dp_gathered_mlp:
        ops.append(_collective("logits_dp_all_gather", "all_gather", 1, rows * d * _comm_bytes(dt), "moe", ways, ""))
    ops += [Op("lm_head", "gemm", 1, flops=2 * rows * d * vocab_loc,
               weight_bytes=d * vocab_loc * bytes_per_element(dt.high_precision),
               act_bytes=rows * (d * _act_bytes(dt) + vocab_loc * 4), shape=gemm_shape(dt, None, rows, (vocab_loc, d))),
            Op("host", "host", 1, shape={"host": logits})]
    if ways > 1:  # gather the vocab-parallel logits for sampling
        ops.append(_collective("logits_all_gather", "all_gather", 1, rows * m.vocab_size * 4,
                               "moe" if par.dp_gathered_mlp else "tp", ways, ""))
    small, large = sampler
    if small or large:  # every rank samples its rows over the whole vocabulary (the gathered logits)
        per_logit = (small if logits < ROWS_SPLIT else large) if isinstance(logits, float) else \
            np.where(logits < ROWS_SPLIT, small, large)
        ops.append(Op("sampler", "elementwise", 1, act_bytes=logits * m.vocab_size * per_logit))
    return ops


