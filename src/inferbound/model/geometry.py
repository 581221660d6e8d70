"""Per-layer attention geometry: layers of one model whose heads differ (Gemma 4, MiMo-V2-Flash).

Most models have one ``head_dim`` and one ``num_kv_heads`` for every layer (``ModelSpec``); a layer group
without an :class:`AttentionGeometry` (``LayerGroup.attn is None``) uses them, and every formula keeps its
uniform form. A group with one states what differs in its layers:

- ``head_dim``: the query/key head width d_qk (Gemma 4's full-attention layers: ``global_head_dim`` 512
  against 256 in its sliding layers, transformers 5.24.0 ``Gemma4TextConfig.__post_init__``
  ``per_layer_config``);
- ``v_head_dim``: the value head width d_v when it is not d_qk (MiMo-V2-Flash: 192 / 128);
- ``kv_heads``: KV heads n_kv (MiMo-V2-Flash's sliding layers: 2 × ``num_key_value_heads``; Gemma 4's
  full layers with ``attention_k_eq_v``: ``num_global_key_value_heads``);
- ``sinks``: a learned sink logit per query head in these layers only (MiMo-V2-Flash's sliding layers);
- ``k_eq_v``: no ``v_proj``; the values are the key projection, normed apart (Gemma 4
  ``attention_k_eq_v``, full layers): the cache still holds K and V;
- ``kv_shared``: the layer reuses the KV cache of the last earlier layer of its type (Gemma 4
  ``num_kv_shared_layers``, ``kv_sharing_modes`` "reuse"): it builds no k/v projection nor k norm and
  caches nothing, but its attention reads the shared cache like its own.

Per layer of the group (h query heads, hidden d):

- KV values cached per token: n_kv·(d_qk + d_v) (0 when ``kv_shared``);
- attention weights: q d·h·d_qk (×2 with an output gate), k d·n_kv·d_qk, v d·n_kv·d_v (none when
  ``k_eq_v``; neither k nor v when ``kv_shared``), o h·d_v·d; biases on each output; q/k norms over d_qk
  (``head``), all heads (``full``) or per head (``per_head``), the k norm absent when ``kv_shared``; h
  sinks when the group has them.

This module holds the shapes and formulas; ``kv.py``, ``params.py`` and operators/ call them with the
group (imported by spec.py: no import of it here).
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects)

from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field


class AttentionGeometry(BaseModel):
    """What the attention of one layer group has of its own (module docstring); None: the model's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    head_dim: int | None = Field(default=None, ge=1, description="query/key head width")
    v_head_dim: int | None = Field(default=None, ge=1, description="value head width (None: head_dim)")
    kv_heads: int | None = Field(default=None, ge=1)
    sinks: bool | None = None
    k_eq_v: bool = False
    kv_shared: bool = False


class Heads(NamedTuple):
    """The resolved attention shape of one layer: query heads, KV heads, d_qk, d_v and its switches."""

    q: int
    kv: int
    qk_dim: int
    v_dim: int
    sinks: bool
    k_eq_v: bool = False
    kv_shared: bool = False


def heads_of(m, g=None) -> Heads:
    """The attention shape of a layer of group ``g`` of model ``m`` (the model's where ``g`` has none)."""
    a = None if g is None else g.attn
    if a is None:
        return Heads(m.num_heads, m.num_kv_heads, m.head_dim, m.head_dim, m.attention_sinks)
    qk = m.head_dim if a.head_dim is None else a.head_dim
    return Heads(m.num_heads, m.num_kv_heads if a.kv_heads is None else a.kv_heads, qk,
                 qk if a.v_head_dim is None else a.v_head_dim, m.attention_sinks if a.sinks is None else a.sinks,
                 a.k_eq_v, a.kv_shared)


def kv_values(hs: Heads) -> int:
    """Cached values per token in one layer: n_kv·(d_qk + d_v), none for a layer that shares another's."""
    return 0 if hs.kv_shared else hs.kv * (hs.qk_dim + hs.v_dim)


def projection_widths(hs: Heads, gate: bool) -> tuple[int, int, int, int]:
    """Output widths of q, k, v and the input width of o for one layer (module docstring)."""
    q = hs.q * hs.qk_dim * (2 if gate else 1)
    k = 0 if hs.kv_shared else hs.kv * hs.qk_dim
    v = 0 if hs.kv_shared or hs.k_eq_v else hs.kv * hs.v_dim
    return q, k, v, hs.q * hs.v_dim


def qk_norm_values(kind: str, hs: Heads, norm_width) -> int:
    """The q and k norms of one layer: ``norm_width(w)`` is one norm's parameters over width w."""
    has_k = not hs.kv_shared
    if kind == "head":
        return norm_width(hs.qk_dim) * (1 + has_k)
    if kind == "full":
        return norm_width(hs.q * hs.qk_dim) + norm_width(hs.kv * hs.qk_dim) * has_k
    if kind == "per_head":
        return (hs.q + hs.kv * has_k) * hs.qk_dim
    return 0


def uniform(layers) -> bool:
    """No layer group has a geometry of its own (the common case)."""
    return all(g.attn is None for g in layers)
