"""KV-cache size.

The seed article: 2·2·n_layers·n_heads·d_head bytes per token at fp16 (one 2 for K and V, one for
2-byte values). Generalized here:

- GQA/MQA: only ``num_kv_heads`` heads are cached: 2·n_kv·d_head·bytes per token and layer;
- MLA (DeepSeek-V2/V3): one latent of ``kv_lora_rank + qk_rope_head_dim`` values per token and layer
  (K and V are both reconstructed from it), so no factor 2;
- window layers (sliding or chunked attention) hold at most ``window`` tokens: a sequence of length L
  costs min(L, window) tokens there;
- the KV dtype sets the bytes per value.

Functions accept numpy arrays for the context length.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import bytes_per_element
from .spec import LayerGroup, ModelSpec


def kv_values_per_token_layer(m: ModelSpec) -> int:
    """Cached values per token in one layer (all KV heads, K and V)."""
    if m.mla is not None:
        return m.mla.kv_lora_rank + m.mla.qk_rope_head_dim
    return 2 * m.num_kv_heads * m.head_dim


def kv_bytes_per_token(m: ModelSpec, kv_dtype: str = "bf16") -> float:
    """Bytes one token adds to the cache across all layers while the context is within every window."""
    return kv_values_per_token_layer(m) * bytes_per_element(kv_dtype) * m.num_layers


def cached_tokens(group: LayerGroup, context):
    """Tokens a layer of ``group`` keeps for a sequence of ``context`` tokens: min(L, window)."""
    if group.attention == "full":
        return context
    return np.minimum(context, group.window)


def kv_bytes_for_context(m: ModelSpec, context, kv_dtype: str = "bf16"):
    """Bytes of cache for one sequence of ``context`` tokens (scalar or array), all layers."""
    per = kv_values_per_token_layer(m) * bytes_per_element(kv_dtype)
    return sum(g.count * per * cached_tokens(g, context) for g in m.layers)
