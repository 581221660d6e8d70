"""The model's memory under a layout, per GPU: weights, KV cache and peak activations.

- weights: parameters on this GPU × bytes per weight (quantized weights include their scales;
  embeddings, LM head and norms stay 16-bit). TP splits all matrices t ways (vocab-parallel embedding);
  norms are replicated; the most loaded pipeline stage counts.
- KV: batch × kv_bytes_for_context(context) / KV shard, where the shard is min(tp, n_kv_heads) (KV heads
  replicate past that) and 1 for MLA (the latent is replicated on every rank).
- activations: the largest live set of one forward step of T tokens, T·(4·d + 2·ff/t + qkv/t)·bytes
  (residual, normed input, MLP intermediate, projections), plus fp32 logits of the sequences sampled.

Functions of (model, dtypes, parallelism) only; the engine's allocation and the fit are memory.py.
"""
from __future__ import annotations

import numpy as np

from .config import Dtypes, Parallelism
from ..base.dtypes import bytes_per_element, component_weight_bytes
from ..model.kv import kv_bytes_per_rank, state_bytes_per_sequence
from ..model.params import count_params, layer_params, norm_params
from ..model.spec import ModelSpec
from ..model.towers import tower_bytes_per_gpu
from .eplb import expert_slots
from .layout import stage_layers


def kv_shard(m: ModelSpec, par: Parallelism) -> int:
    """Ways the KV cache is split over the TP group."""
    if m.mla is not None:
        return 1
    return min(par.tp, m.num_kv_heads)


def _stages(m: ModelSpec, par: Parallelism):
    return stage_layers(m, par) if par.pp > 1 else [list(m.layers)]


def weight_bytes_per_gpu(m: ModelSpec, dt: Dtypes, par: Parallelism) -> float:
    """Weight bytes on the most loaded GPU (the heaviest pipeline stage).

    Per layer (model.params.layer_params): attention and state-space projections split over tp, dense
    MLP and shared experts over tp (tp·dp with attention data parallel without EP: Parallelism.mlp_shard); routed experts over the GPUs sharing a MoE layer (tp, or tp·dp with
    attention data parallel: (E + N)/ep experts per GPU with N redundant copies (EPLB, deploy/eplb.py),
    each split expert_tp ways); router over tp; norms
    replicated. Each component at its stored format (dtypes.component_weight_bytes: the weight format
    where the deployment, or the checkpoint, quantizes it; else 16-bit). The first stage adds the
    embedding (and OPT-style embedding projections, BLOOM's embedding LayerNorm, replicated) and a
    multimodal checkpoint's towers (model/towers.py tower_bytes_per_gpu: linear layers over tp, as vLLM
    builds them), the last the LM head and final norm (vocab-parallel over tp; Parallelism.head_shard).
    """
    hb = bytes_per_element(dt.high_precision)
    p = count_params(m)
    # EPLB's redundant copies (deploy/eplb.py): E + N physical experts hold the routed weights' (E + N)/E
    copies = expert_slots(m.moe.num_experts, par.redundant_experts) / m.moe.num_experts if m.moe else 1.0

    def layer_bytes(g) -> float:
        lp = layer_params(m, g)
        b = (lp.attention * component_weight_bytes(dt, "attention") + lp.ssm * component_weight_bytes(dt, "ssm")
             + lp.router * hb) / par.tp
        b += (lp.dense_mlp * component_weight_bytes(dt, "dense_mlp")
              + lp.shared_experts * component_weight_bytes(dt, "shared_experts")) / par.mlp_shard
        b += lp.routed_experts * copies * component_weight_bytes(dt, "routed_experts") / par.moe_group
        return g.count * (b + lp.norms * hb)

    stages = _stages(m, par)
    loads = []
    for i, groups in enumerate(stages):
        load = sum(layer_bytes(g) for g in groups)
        if i == 0:
            load += (p.embedding + p.embed_projection) * hb / par.tp + norm_params(m) * hb * m.embedding_norm
            load += tower_bytes_per_gpu(m.towers, hb, par.tp)  # a multimodal checkpoint's towers (model/towers.py)
            # Gemma 3n (model/kv_sharing.py): per-layer embeddings and AltUp/LAuReL modules (replicated, on the
            # first stage), less the k/v projections its KV-sharing layers do not build (0 for other models)
            shared = p.attention - sum(g.count * layer_params(m, g).attention for g in m.layers)
            load += (p.per_layer_embedding + p.layer_extras) * hb + shared * component_weight_bytes(dt, "attention") / par.tp
        if i == len(stages) - 1:
            load += p.lm_head * hb / par.head_shard + norm_params(m) * hb * m.final_norm
        loads.append(load)
    return float(max(loads))


def kv_bytes_per_gpu(m: ModelSpec, dt: Dtypes, par: Parallelism, batch, context):
    """KV bytes on the most loaded GPU: the attention group's share of the batch, the heaviest stage's
    layers, split over the KV heads (kv_shard); plus the fixed recurrent state of state-space layers
    (model.kv.state_bytes_per_sequence, sharded over TP by head, as vLLM does), which does not grow with
    the context."""
    seqs = np.asarray(batch, dtype=float) / par.attention_groups
    per_stage = []
    for groups in _stages(m, par):
        stage = m if par.pp == 1 else m.model_copy(update={"layers": tuple(groups)})  # one stage: the model
        kv = kv_bytes_per_rank(stage, context, dt.kv_dtype, par.tp)  # each group over min(tp, its KV heads)
        per_stage.append(kv + state_bytes_per_sequence(stage, dt.high_precision) / par.tp)
    heaviest = per_stage[0] if len(per_stage) == 1 else np.max(np.stack(np.broadcast_arrays(*per_stage)), axis=0)
    return seqs * heaviest


def activation_bytes(m: ModelSpec, dt: Dtypes, par: Parallelism, tokens, sequences):
    """Peak live activations of a step of ``tokens`` tokens sampling ``sequences`` logits rows."""
    ab = max(bytes_per_element(dt.act), 1.0)
    ff = m.intermediate_size
    if m.moe is not None:
        ff = max(ff, m.moe.top_k * m.moe.expert_intermediate_size)
    width = 4 * m.hidden_size + (2 * ff + (m.num_heads + 2 * m.num_kv_heads) * m.head_dim) / par.tp
    return np.asarray(tokens, dtype=float) * width * ab + np.asarray(sequences, dtype=float) * m.vocab_size / par.tp * 4
