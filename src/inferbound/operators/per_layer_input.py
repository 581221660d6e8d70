"""Gemma 4's per-layer embeddings in a step (shapes and sources: ``model/per_layer_input.py``).

Per layer, the per-layer input gate (d × p) and projection (p × d) are two small GEMMs: 2·T·(2·d·p)
FLOPs, their weights read once per step, kept whole on every TP rank (transformers' Gemma 4 TP plan,
``Gemma4TextConfig.base_model_tp_plan``, shards only attention, the MLP and the experts). Once per step,
on the first stage: the per-layer embedding rows (T·L·p values, a lookup) and the per-layer model
projection (d × L·p) as a GEMM. None of this runs in a model without per-layer embeddings.
"""
from __future__ import annotations

from ..base.dtypes import bytes_per_element
from ..deploy.config import Dtypes
from ..model.per_layer_input import layer_params, model_projection_params
from ..model.spec import LayerGroup, ModelSpec
from .op import Op, _act_bytes, _group_label, gemm_shape


def ple_layer_ops(m: ModelSpec, g: LayerGroup, dt: Dtypes, tokens) -> list[Op]:
    """The per-layer input gate and projection of ``g.count`` layers for ``tokens`` tokens."""
    s = m.per_layer_input
    if s is None:
        return []
    d, p = m.hidden_size, layer_params(s, m.hidden_size) - m.hidden_size  # the norm is in norms_residual
    return [Op("per_layer_input", "gemm", g.count, flops=2 * tokens * p,
               weight_bytes=p * bytes_per_element(dt.high_precision),
               act_bytes=tokens * (2 * d + 2 * s.width) * _act_bytes(dt), group=_group_label(g),
               shape=gemm_shape(dt, None, tokens, (s.width, d), (d, s.width)))]


def ple_model_ops(m: ModelSpec, dt: Dtypes, tokens) -> list[Op]:
    """The per-layer embedding lookup and the per-layer model projection, once per step."""
    s = m.per_layer_input
    if s is None:
        return []
    d, n = m.hidden_size, m.num_layers
    p = model_projection_params(s, d, n)
    hb = bytes_per_element(dt.high_precision)
    return [Op("per_layer_embedding", "embedding", 1, weight_bytes=tokens * n * s.width * hb,
               act_bytes=tokens * n * s.width * _act_bytes(dt)),
            Op("per_layer_projection", "gemm", 1, flops=2 * tokens * p, weight_bytes=p * hb,
               act_bytes=tokens * (d + n * s.width) * _act_bytes(dt), shape=gemm_shape(dt, None, tokens, (n * s.width, d)))]
