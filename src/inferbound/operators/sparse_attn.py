"""DeepSeek Sparse Attention in a step: the indexer's operator and the top-k bound on MLA's attention.

Formulas and sources in ``model/sparse_attn.py``. In a step, per attention layer of a model with an
indexer:

- the indexer scores every visible token: its query-key pairs are the full causal pairs of the layer
  (``attended_pairs`` with no window, the layer's own attention kind), at 2·H_i·D_i + 2·H_i FLOPs each,
  split over TP by head (the reference ``Indexer.n_local_heads = index_n_heads // world_size``), at the
  indexer's score dtype (fp8); it reads the indexer key of every cached token (D_i fp8 values + fp32
  scales, replicated on every TP rank like the MLA latent: ``wk`` is one head) and writes then reads one
  fp32 score per pair for the top-k (``index_score.topk``);
- MLA attends to the top-k tokens only: its pairs and latent reads are those of a window of k tokens,
  Σ min(t, k) and min(L, k) (the attention kind :func:`sparse_kind`, priced like any window), while the
  cache still holds every token (``model/kv.py``).
"""
from __future__ import annotations

import numpy as np

from ..deploy.config import Dtypes, Parallelism
from ..model.sparse_attn import indexer_cache_bytes_per_token, indexer_flops_per_pair, indexer_score_dtype
from ..model.spec import LayerGroup, ModelSpec
from .op import Op, _group_label

#: bytes per indexer score (fp32 index_score, written by the scoring kernel and read by the top-k)
SCORE_BYTES = 4.0


def sparse_kind(m: ModelSpec) -> tuple[str, int]:
    """The attention kind MLA runs under an indexer: ``("sparse", k)``, attending to at most k tokens."""
    return "sparse", m.indexer.topk


def indexer_op(m: ModelSpec, g: LayerGroup, par: Parallelism, pairs, cached) -> Op:
    """The indexer of ``g.count`` layers per GPU for a step whose sequences score ``pairs`` query-key
    pairs (decode and prefill, full causal) and hold ``cached`` tokens, per attention group."""
    ix = m.indexer
    pairs = np.asarray(pairs, dtype=float)
    return Op("indexer", "attention", g.count, flops=pairs * indexer_flops_per_pair(ix) / par.tp,
              act_bytes=2 * SCORE_BYTES * pairs, kv_bytes=np.asarray(cached, dtype=float) * indexer_cache_bytes_per_token(ix),
              group=_group_label(g), dtype=indexer_score_dtype())


def sparse_ops(m: ModelSpec, g: LayerGroup, dt: Dtypes, par: Parallelism, per_kind: dict, groups: float,
               attention_op, kind) -> list[Op]:
    """[indexer, MLA attention] of group ``g``: the indexer from the layer's own (full) sums
    ``per_kind[kind]``, MLA from the top-k kind's (``attention_op(dec, pre, cached, extra)`` builds it
    from those sums, per attention group; ``extra``: a speculative verify pass's extra decode queries)."""
    dec, pre, cached = (np.asarray(x, dtype=float) / groups for x in per_kind[kind][:3])
    s_dec, s_pre, s_cached, *extra = (np.asarray(x, dtype=float) / groups for x in per_kind[sparse_kind(m)])
    return [indexer_op(m, g, par, dec + pre, cached), attention_op(s_dec, s_pre, s_cached, extra[0] if extra else None)]
