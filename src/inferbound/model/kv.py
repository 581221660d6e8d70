"""KV-cache size (O(context)) and the fixed recurrent state of state-space layers (O(1)).

The seed article: 2·2·n_layers·n_heads·d_head bytes per token at fp16 (one 2 for K and V, one for
2-byte values). Generalized here:

- only layers with softmax attention cache K and V (``LayerGroup.has_attention``); Mamba, Mamba-2 and
  Gated DeltaNet layers keep a fixed-size state instead (below);
- GQA/MQA: only ``num_kv_heads`` heads are cached: 2·n_kv·d_head·bytes per token and layer;
- MLA (DeepSeek-V2/V3): one latent of ``kv_lora_rank + qk_rope_head_dim`` values per token and layer
  (K and V are both reconstructed from it), so no factor 2;
- window layers (sliding or chunked attention) hold at most ``window`` tokens: a sequence of length L
  costs min(L, window) tokens there (the W−1 kept between steps plus the token being decoded, which is
  what an engine allocates: transformers' DynamicSlidingWindowLayer keeps W−1);
- the KV dtype sets the bytes per value;
- DeepSeek-V3.2's DSA indexer (``sparse_attn.py``) keeps its own key per token and attention layer
  beside the MLA latent, in its own fp8 format (``indexer_bytes_per_token_layer``), at any KV dtype;
- Gemma 3n's KV-sharing layers (``kv_sharing.py``) reuse an earlier layer's cache and add none;
- a layer group with heads of its own (``geometry.py``: Gemma 4, MiMo-V2-Flash) caches n_kv·(d_qk + d_v)
  values per token with its own n_kv, d_qk and d_v (none in Gemma 4's KV-sharing layers): summed per group.

State per sequence (``state_bytes_per_sequence``), summed over the state-space layers: conv state
(K−1)·conv_dim plus the recurrent state (E·N, H·P·N or Hv·Dk·Dv values), see ``ssm.py``; it does not
grow with the context.

Functions accept numpy arrays for the context length.
"""
from __future__ import annotations

import numpy as np

from ..base.dtypes import bytes_per_element
from .geometry import heads_of, kv_values, uniform
from .sparse_attn import indexer_cache_bytes_per_token
from .spec import LayerGroup, ModelSpec
from .ssm import conv_state_values, recurrent_state_values


def kv_values_per_token_layer(m: ModelSpec, g: LayerGroup | None = None) -> int:
    """Cached values per token in one attention layer (all KV heads, K and V); of group ``g``'s layers
    where it has heads of its own (geometry.py)."""
    if m.mla is not None:
        return m.mla.kv_lora_rank + m.mla.qk_rope_head_dim
    if g is not None and g.attn is not None:
        return kv_values(heads_of(m, g))
    return 2 * m.num_kv_heads * m.head_dim


def indexer_bytes_per_token_layer(m: ModelSpec) -> float:
    """Bytes of DSA indexer key one token adds in one attention layer (0 without an indexer)."""
    return 0.0 if m.indexer is None else indexer_cache_bytes_per_token(m.indexer)


def kv_bytes_per_token(m: ModelSpec, kv_dtype: str = "bf16") -> float:
    """Bytes one token adds to the cache across all attention layers while the context is within every
    window (0 for a model without attention), the DSA indexer's keys included."""
    if not uniform(m.layers):  # heads per layer group (geometry.py)
        return float(sum(g.count * kv_values_per_token_layer(m, g) for g in m.layers if g.has_attention)
                     * bytes_per_element(kv_dtype))
    return (kv_values_per_token_layer(m) * bytes_per_element(kv_dtype)
            + indexer_bytes_per_token_layer(m)) * (m.num_attention_layers - _kv_shared(m))


def _kv_shared(m: ModelSpec) -> int:
    """Attention layers that reuse another layer's KV cache (Gemma 3n), 0 elsewhere."""
    return 0 if m.gemma3n is None else m.gemma3n.num_kv_shared


def cached_tokens(group: LayerGroup, context):
    """Tokens a layer of ``group`` keeps for a sequence of ``context`` tokens: L (full attention),
    min(L, window) (sliding / chunked), 0 (no attention)."""
    if not group.has_attention:
        return np.zeros_like(np.asarray(context)) if np.ndim(context) else 0
    if group.attention == "full":
        return context
    return np.minimum(context, group.window)


def kv_bytes_for_context(m: ModelSpec, context, kv_dtype: str = "bf16"):
    """Bytes of KV cache for one sequence of ``context`` tokens (scalar or array), all layers."""
    per = kv_values_per_token_layer(m) * bytes_per_element(kv_dtype) + indexer_bytes_per_token_layer(m)
    if not uniform(m.layers):  # heads per layer group (geometry.py)
        b = bytes_per_element(kv_dtype)
        return sum(g.count * kv_values_per_token_layer(m, g) * b * cached_tokens(g, context) for g in m.layers)
    own = sum(g.count * per * cached_tokens(g, context) for g in m.layers)
    if m.gemma3n is None:
        return own
    return own - sum(c * per * cached_tokens(LayerGroup(count=1, attention=a, window=w), context)
                     for a, w, c in m.gemma3n.kv_shared)


def kv_bytes_per_rank(m: ModelSpec, context, kv_dtype: str, tp: int):
    """KV bytes of one sequence on one GPU of a TP group of ``tp`` when layer groups have KV heads of
    their own (geometry.py): each group's bytes split over min(tp, its n_kv) ranks (KV heads split tp
    ways, replicated past n_kv). A uniform model: kv_bytes_for_context / min(tp, n_kv) (MLA's latent: not
    split)."""
    if uniform(m.layers):
        return kv_bytes_for_context(m, context, kv_dtype) / (1 if m.mla is not None else min(tp, m.num_kv_heads))
    b = bytes_per_element(kv_dtype)
    return sum(g.count * kv_values_per_token_layer(m, g) * b * cached_tokens(g, context) / min(tp, heads_of(m, g).kv)
               for g in m.layers)


def state_bytes_per_sequence(m: ModelSpec, dtype: str = "bf16", ssm_dtype: str | None = None,
                             full_conv_window: bool = False) -> float:
    """Fixed bytes of recurrent state one sequence holds, all state-space layers (0 for a transformer).

    Conv state at ``dtype``; recurrent state at ``ssm_dtype``, else the dtype the config asks for
    (``mamba_ssm_cache_dtype``), else ``dtype``. ``full_conv_window``: count K conv columns, as
    transformers' cache does, instead of the K−1 engines keep.
    """
    if m.ssm is None:
        return 0.0
    n = m.num_ssm_layers
    conv = conv_state_values(m.ssm, full_conv_window) * bytes_per_element(dtype)
    rec = recurrent_state_values(m.ssm) * bytes_per_element(ssm_dtype or m.ssm.state_dtype or dtype)
    return float(n * (conv + rec))


def cache_bytes_for_context(m: ModelSpec, context, kv_dtype: str = "bf16", state_dtype: str = "bf16"):
    """KV cache plus recurrent state of one sequence of ``context`` tokens: what a request holds. The
    state follows the model dtype, not the KV dtype (vLLM ``mamba_cache_dtype: auto``)."""
    return kv_bytes_for_context(m, context, kv_dtype) + state_bytes_per_sequence(m, state_dtype)
