"""Gemma 3n's extra modules in a step (shapes and sources: ``model/kv_sharing.py``).

Per layer, AltUp's router and coefficient products, LAuReL's low-rank pair and the per-layer input gate
and projection are small GEMMs: 2·T·(their parameters) FLOPs, their weights read once per step, kept
whole on every TP rank (transformers' Gemma 3n TP plan shards only attention and the MLP). Once per step,
on the first stage: the per-layer embedding rows (T·L·p values, a lookup), and the per-layer model
projection and the (n − 1) AltUp projections (and, on the last, the unembed ones: counted together
here) as GEMMs. The KV-sharing layers' missing k/v projections are not taken off the attention GEMM
(they are 2·d·n_kv·head_dim of each such layer's weights, a few percent of its attention).
"""
from __future__ import annotations

from ..base.dtypes import bytes_per_element
from ..deploy.config import Dtypes
from ..model.kv_sharing import layer_extra_params, model_extra_params
from ..model.spec import LayerGroup, ModelSpec
from .op import Op, _act_bytes, _group_label, gemm_shape


def layer_extra_ops(m: ModelSpec, g: LayerGroup, dt: Dtypes, tokens) -> list[Op]:
    """AltUp + LAuReL + per-layer input GEMMs of ``g.count`` layers for ``tokens`` tokens (none without Gemma 3n)."""
    if m.gemma3n is None:
        return []
    d, p = m.hidden_size, layer_extra_params(m.gemma3n, m.hidden_size)
    return [Op("gemma3n_extras", "gemm", g.count, flops=2 * tokens * p,
               weight_bytes=p * bytes_per_element(dt.high_precision), act_bytes=tokens * 4 * d * _act_bytes(dt),
               group=_group_label(g), shape=gemm_shape(dt, None, tokens, (p / d, d)))]


def model_extra_ops(m: ModelSpec, dt: Dtypes, tokens) -> list[Op]:
    """The per-layer embedding lookup and the model-level projections, once per step."""
    if m.gemma3n is None:
        return []
    s, d, n = m.gemma3n, m.hidden_size, m.num_layers
    p = model_extra_params(s, d, n)
    hb = bytes_per_element(dt.high_precision)
    return [Op("per_layer_embedding", "embedding", 1, weight_bytes=tokens * n * s.per_layer_width * hb,
               act_bytes=tokens * n * s.per_layer_width * _act_bytes(dt)),
            Op("gemma3n_projections", "gemm", 1, flops=2 * tokens * p, weight_bytes=p * hb,
               act_bytes=tokens * (d + n * s.per_layer_width) * _act_bytes(dt), shape=gemm_shape(dt, None, tokens, (p / d, d)))]
