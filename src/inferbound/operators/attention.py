"""Attention: which query-key pairs a step scores and which cached tokens it reads, and its operator.

Every new token of a sequence scores against the tokens it can see (causal, window-limited):
K_eff = Σ_{t=past+1}^{past+new} min(t, window) pairs per sequence and head (full: Σ t; chunked
attention, Llama 4: only its own chunk), at 2·(d_qk + d_v) FLOPs each (QKᵀ and PV); the kernel reads
the cached K and V (MLA: the latent) of the tokens it attends to and reads/writes the output. A step's
attention is summed per attention kind over its sequences (``sequence_attention``), so one operator
per layer group prices decodes and prefill chunks of any lengths together.

The operator states its kernel shape for curve pricing (``shape``): heads and KV heads per GPU, head
dims of the decode (absorbed, for MLA) and prefill forms, cache bytes per token, the window, and the
step's sums (decode pairs, prefill pairs, cached tokens read, new tokens, sampled sequences), all per
attention group. The decode kernel's batch is not among the sums: it is taken as D = min(sampled,
new tokens) when the step has decodes (exact for decode-only steps, where every sequence adds one token
and samples; a mixed step counts its P prefill chunks as decodes too, P·per-sequence cost, a few
microseconds), and the prefill kernel's query tokens as new tokens − D. A speculative verify pass
(step/speculative.py) adds a fourth sum, the decodes' query tokens beyond one per sequence E: its
decodes are priced by the decode kernel with q = 1 + E/D queries each (D = min(sampled, tokens) − E,
pricing/kernels/loadattention.verify_part), not as prefill chunks.
"""
from __future__ import annotations

import numpy as np

from ..deploy.config import Dtypes, Parallelism
from ..base.dtypes import bytes_per_element
from ..model.geometry import heads_of
from ..model.kv import kv_values_per_token_layer
from ..model.spec import LayerGroup, ModelSpec
from .op import Op, _act_bytes, _group_label
from .sparse_attn import sparse_kind, sparse_ops


def _chunk_prefix(x, chunk: int):
    """Σ_{t=1}^{x} (((t−1) mod C) + 1) = q·C(C+1)/2 + r(r+1)/2 with x = q·C + r (arrays or floats:
    ``//`` and ``%`` are numpy's floor_divide and mod on arrays, the same on floats)."""
    q, r = x // chunk, x % chunk
    return q * chunk * (chunk + 1) / 2 + r * (r + 1) / 2


def attended_pairs(past, new, window: int | None, chunked: bool = False, xp=np):
    """Query-key pairs per sequence and head for tokens past+1 .. past+new.

    full: Σ t;  sliding window W: Σ min(t, W);  chunked attention (Llama 4, chunk C): a token sees only
    its own chunk, Σ (((t−1) mod C) + 1). ``xp``: numpy (arrays) or kernels.loadattention.SCALAR (one
    sequence as Python floats, the simulator's step; the same formulas).
    """
    if xp is np:
        past, new = np.asarray(past, dtype=float), np.asarray(new, dtype=float)
    if chunked:
        return _chunk_prefix(past + new, window) - _chunk_prefix(past, window)
    if window is None:
        return new * past + new * (new + 1) / 2
    # new tokens whose position is still within the window: clip(W − past, 0, new)
    n_in = np.clip(window - past, 0, new) if xp is np else xp.minimum(xp.maximum(window - past, 0.0), new)
    return n_in * past + n_in * (n_in + 1) / 2 + (new - n_in) * window


def attention_reads(g: LayerGroup, length):
    """Cached tokens an attention kernel reads for a sequence of ``length`` tokens: all of them, the
    last W (sliding window), or those of the current chunk, ((L−1) mod C) + 1 (chunked)."""
    return kind_reads(kind_of(g), length)


def kind_reads(kind: tuple[str, int | None], length, xp=np):
    """attention_reads for an attention kind (attention, window); ``xp`` as attended_pairs."""
    attention, window = kind
    if xp is not np:  # one sequence's length, a Python float
        return (length - 1) % window + 1 if attention == "chunked" else \
            length if attention == "full" else xp.minimum(length, float(window))
    if attention == "chunked":
        return np.mod(np.asarray(length, dtype=float) - 1, window) + 1
    if attention == "full":
        return length
    return np.minimum(length, window)


def kind_of(g: LayerGroup) -> tuple[str, int | None]:
    """The attention kind of a layer group: what its attention pairs and cache reads depend on."""
    return g.attention, g.window


def attention_kinds(m: ModelSpec) -> list[tuple[str, int | None]]:
    """Distinct attention kinds of a model's attention layers, in first-seen order; with a DSA indexer
    also the top-k kind its MLA attends under (sparse_attn.py)."""
    kinds = list(dict.fromkeys(kind_of(g) for g in m.layers if g.has_attention))
    return kinds + [sparse_kind(m)] if m.indexer is not None and kinds else kinds


def sequence_attention(kind: tuple[str, int | None], past, new, xp=np):
    """(query-key pairs, cached tokens read) per sequence and head for one layer of ``kind`` when a
    sequence adds ``new`` tokens after ``past`` cached ones (attended_pairs, attention_reads); ``xp`` as
    attended_pairs (floats ``past``, ``new`` with SCALAR)."""
    attention, window = kind
    pairs = attended_pairs(past, new, window if attention != "full" else None, attention == "chunked", xp)
    length = np.asarray(past, dtype=float) + np.asarray(new, dtype=float) if xp is np else past + new
    return pairs, kind_reads(kind, length, xp)


def attention_shape(m: ModelSpec, par: Parallelism, g: LayerGroup | None = None):
    """(query heads per GPU, d_qk decode, d_v decode, d_qk prefill, d_v prefill, cached values per token
    and layer on a GPU, attention output width) of one attention layer (of group ``g``) under TP.

    MHA/GQA: d_qk = d_v = head_dim; KV heads split t ways but replicated when t > n_kv. MLA: decode runs
    absorbed (scores against the latent, d_qk = kv_lora_rank + rope, d_v = kv_lora_rank), prefill expanded
    (d_qk = nope + rope, d_v = v_head_dim); the latent is replicated on every TP rank. A group with heads
    of its own (model/geometry.py: Gemma 4, MiMo-V2-Flash): its n_kv, d_qk and d_v; a KV-sharing layer
    reads the cache of the layer it shares, of the same shape, so its kernel reads as much.
    """
    tp = par.tp
    if m.mla is not None:
        a = m.mla
        return (m.num_heads / tp, a.kv_lora_rank + a.qk_rope_head_dim, a.kv_lora_rank,
                a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim, kv_values_per_token_layer(m),
                m.num_heads * a.v_head_dim)
    if g is not None and g.attn is not None:
        hs = heads_of(m, g)
        return (hs.q / tp, hs.qk_dim, hs.v_dim, hs.qk_dim, hs.v_dim,
                max(1.0, hs.kv / tp) * (hs.qk_dim + hs.v_dim), hs.q * hs.v_dim)
    return (m.num_heads / tp, m.head_dim, m.head_dim, m.head_dim, m.head_dim,
            2 * max(1.0, m.num_kv_heads / tp) * m.head_dim, m.num_heads * m.head_dim)


def attention_op(m: ModelSpec, g: LayerGroup, dt: Dtypes, par: Parallelism, decode_pairs, prefill_pairs,
                 cached, tokens, sampled=None, extra_queries=None) -> Op:
    """The attention kernel of ``g.count`` layers of one kind, per GPU, from what its sequences add up to.

    ``decode_pairs`` / ``prefill_pairs``: query-key pairs of decoding sequences and of prefill chunks
    (attended_pairs summed over them), ``cached``: cached tokens the kernel reads (attention_reads summed),
    ``tokens``: new tokens; all per attention group. FLOPs 2·h_loc·(d_qk + d_v) per pair (QKᵀ and PV);
    it reads the cached K and V (or MLA latent) and reads/writes the attention output. ``sampled``: the
    sequences that sample (None: as many as new tokens, a decode-only step), for the kernel shape.
    ``extra_queries``: the decodes' query tokens beyond one per sequence (a speculative verify pass of k + 1
    tokens per sequence read like a decode: step/speculative.py), the load's sixth entry when given; the
    decode kernel then has D = min(sampled, tokens) − extra_queries sequences.
    """
    h_loc, dqk_d, dv_d, dqk_p, dv_p, kv_vals, out_width = attention_shape(m, par, g)
    ab = _act_bytes(dt)
    kvb = bytes_per_element(dt.kv_dtype)
    kv_heads = 1.0 if m.mla is not None else max(1.0, heads_of(m, g).kv / par.tp)
    shape = {"attention": {"mla": m.mla is not None, "heads": h_loc, "kv_heads": kv_heads, "d_dec": (dqk_d, dv_d),
                           "d_pre": (dqk_p, dv_p), "token_bytes": kv_vals * kvb, "kv_dtype": dt.kv_dtype,
                           "window": float(g.window or 0) if g.attention != "full" else 0.0},
             "load": (decode_pairs, prefill_pairs, cached, tokens, tokens if sampled is None else sampled)
             + (() if extra_queries is None else (extra_queries,))}
    return Op("attention", "attention", g.count,
              flops=2 * h_loc * ((dqk_d + dv_d) * decode_pairs + (dqk_p + dv_p) * prefill_pairs),
              act_bytes=2 * tokens * out_width / par.tp * ab, kv_bytes=cached * kv_vals * kvb, group=_group_label(g),
              shape=shape)


def attention_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, layers: list[LayerGroup], per_kind: dict,
                  tokens, sampled=None) -> list[Op]:
    """One attention op per layer group of ``layers``, from the step's sums per attention kind
    (``per_kind[kind] = (decode_pairs, prefill_pairs, cached[, extra decode queries])``, replica-wide: the
    fourth entry only for a speculative verify pass, attention_op), its ``tokens`` and its ``sampled``
    sequences (None: as many as tokens)."""
    groups = par.attention_groups
    smp = None if sampled is None else np.asarray(sampled, dtype=float) / groups
    ops = []
    for g in layers:
        if not g.has_attention:
            continue
        if m.indexer is not None:  # DSA: the indexer over every token, then MLA over the top-k
            ops.extend(sparse_ops(m, g, dt, par, per_kind, groups, lambda d, p, c, x, g=g: attention_op(
                m, g, dt, par, d, p, c, np.asarray(tokens, dtype=float) / groups, smp, x), kind_of(g)))
            continue
        dec, pre, cached, *extra = per_kind[kind_of(g)]
        ops.append(attention_op(m, g, dt, par, np.asarray(dec, dtype=float) / groups,
                                np.asarray(pre, dtype=float) / groups, np.asarray(cached, dtype=float) / groups,
                                np.asarray(tokens, dtype=float) / groups, smp,
                                np.asarray(extra[0], dtype=float) / groups if extra else None))
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


