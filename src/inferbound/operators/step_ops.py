"""All operators of a step, in execution order: body (layers.py), attention (attention.py) and
state-space scans (ssm.py) of each layer group, the LM head on the last stage. Every quantity broadcasts
over numpy arrays of batch / new / past, so one call prices a whole sweep.
"""
from __future__ import annotations

import numpy as np

from ..deploy.config import Dtypes, Parallelism
from ..model.spec import LayerGroup, ModelSpec
from .attention import attention_ops, uniform_attention
from .layers import body_ops, head_ops
from .op import Op, _merged_groups
from .ssm import mixer_ops


def stage_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, tokens, sampled, per_kind: dict,
              layers: list[LayerGroup] | None = None, first: bool = True, last: bool = True,
              moe_imbalance: float = 1.0, seqgroups=(), sampler=(0.0, 0.0)) -> list[Op]:
    """Every operator of one pipeline stage (or the whole model) for a step that adds ``tokens`` tokens,
    samples ``sampled`` sequences, whose attention sums are ``per_kind`` and whose sequences are
    ``seqgroups`` ((count, new, past) each: what state-space scans need), in execution order (each
    group's attention kernel after its QKV projection, its scan after its state-space projection);
    ``sampler``: the sampler's bytes per logit (layers.head_ops)."""
    layers = _merged_groups(m) if layers is None else layers
    body = body_ops(m, dt, par, tokens, layers, first, last, moe_imbalance)
    att = attention_ops(m, dt, par, layers, per_kind, tokens, sampled)
    scans = mixer_ops(m, dt, par, layers, seqgroups)
    return in_order(body, att, scans) + (head_ops(m, dt, par, sampled, sampler) if last else [])


def in_order(body: list, att: list, scans: list, name=lambda x: x.name) -> list:
    """The body's operators with each group's attention kernel after its QKV projection and its scan
    after its state-space projection (execution order); ``name`` reads an item's operator name (priced
    operators: ``lambda p: p.op.name``)."""
    att, scans = iter(att), iter(scans)
    ops = []
    for op in body:
        ops.append(op)
        if name(op) == "attn_qkv":
            ops.append(next(att))
            if name(ops[-1]) == "indexer":  # DSA: the indexer's op precedes its layer's attention
                ops.append(next(att))
        elif name(op) == "ssm_proj":
            ops.append(next(scans))
    return ops


def forward_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, batch, new, past, logits_per_seq=1,
                layers: list[LayerGroup] | None = None, first: bool = True, last: bool = True,
                moe_imbalance: float = 1.0) -> list[Op]:
    """All operators of one uniform forward step on one GPU: ``batch`` sequences (the replica's) each add
    ``new`` tokens after ``past`` cached ones; ``logits_per_seq`` logits rows each."""
    batch = np.asarray(batch, dtype=float)
    tokens = batch * np.asarray(new, dtype=float)
    return stage_ops(m, dt, par, tokens, batch * logits_per_seq, uniform_attention(m, batch, new, past), layers,
                     first, last, moe_imbalance, ((batch, new, past),))


def prefill_ops(m, dt, par, batch, input_len, **stage) -> list[Op]:
    """Prefill of ``batch`` prompts of ``input_len`` tokens (logits for the last token of each)."""
    return forward_ops(m, dt, par, batch, input_len, 0, **stage)


def decode_ops(m, dt, par, batch, context, **stage) -> list[Op]:
    """One decode step: ``batch`` sequences each add one token after ``context`` cached tokens."""
    return forward_ops(m, dt, par, batch, 1, context, **stage)


