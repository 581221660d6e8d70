"""The load of a step: what prices it, apart from its price (step/contract.py prices it).

A step of one replica runs D decoding sequences (sequence i has c_i tokens cached and adds one) and prefill
chunks (sequence j adds n_j tokens after p_j cached ones). Its :class:`StepLoad` holds T = D + Σ_j n_j new
tokens, S sampled sequences (one logits row each), the number of sequences (for micro-batching) and, per
attention kind of the model (full, window W, chunk C), the query-key pairs of the decodes and of the chunks and
the cached tokens the kernel reads: operators.sequence_attention summed over the sequences (full attention: a
decode at c reads and pairs c + 1 tokens; a chunk pairs n·p + n(n + 1)/2 and reads p + n). ``uniform`` builds
the load of a static batch or a steady state (counts may be fractional averages and arrays: a sweep prices
every concurrency at once), ``of_sequences`` a simulator step's.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

import numpy as np

from ..model.spec import ModelSpec
from ..operators import attention_kinds, kind_reads, sequence_attention
from ..pricing.kernels.loadattention import SCALAR


@dataclass(frozen=True)
class StepLoad:
    """What a replica's step computes, reduced to what prices it (module docstring)."""

    tokens: object
    sampled: object
    sequences: object
    attention: dict  # {(attention, window): (decode pairs, prefill pairs, cached tokens read)}
    seqgroups: tuple = ()  # ((count, new, past), ...): the sequences, for state-space scans

    def __add__(self, other: "StepLoad") -> "StepLoad":
        """Two sets of sequences in one step."""
        att = {k: tuple(a + b for a, b in zip_longest(self.attention[k], other.attention[k], fillvalue=0.0))
               for k in self.attention}  # a verify pass's fourth entry (step/speculative.py) kept
        return StepLoad(self.tokens + other.tokens, self.sampled + other.sampled, self.sequences + other.sequences,
                        att, self.seqgroups + other.seqgroups)

    def scaled(self, f) -> "StepLoad":
        """The load of one of 1/f micro-batches."""
        return StepLoad(self.tokens * f, self.sampled * f, self.sequences * f,
                        {k: tuple(x * f for x in v) for k, v in self.attention.items()},
                        tuple((c * f, n, p) for c, n, p in self.seqgroups))


def uniform(m: ModelSpec, decode=0.0, context=0.0, prompts=0.0, new=0.0, past=0.0, sampled=None) -> StepLoad:
    """``decode`` sequences at ``context`` cached tokens each add one token; ``prompts`` sequences each add
    ``new`` tokens after ``past`` cached ones. Every sequence samples unless ``sampled`` says otherwise."""
    decode, prompts = np.asarray(decode, dtype=float), np.asarray(prompts, dtype=float)
    new = np.asarray(new, dtype=float)
    att = {}
    for kind in attention_kinds(m):
        d_pairs, d_cached = sequence_attention(kind, context, 1.0)
        p_pairs, p_cached = sequence_attention(kind, past, new)
        att[kind] = (decode * d_pairs, prompts * p_pairs, decode * d_cached + prompts * p_cached)
    seqs = decode + prompts
    groups = ((decode, 1.0, context), (prompts, new, past)) if m.ssm is not None else ()
    return StepLoad(decode + prompts * new, seqs if sampled is None else np.asarray(sampled, dtype=float), seqs, att,
                    groups)


def of_sequences(m: ModelSpec, decode_ctx, chunk_past=(), chunk_new=(), sampled=None, kinds=None) -> StepLoad:
    """A step of decoding sequences with ``decode_ctx`` cached tokens each and prefill chunks
    (``chunk_past[j]`` cached, ``chunk_new[j]`` new); ``sampled`` defaults to every sequence.

    A decode's pairs equal its reads (one new token sees exactly the cached tokens the kernel reads,
    operators.sequence_attention), so they are summed once. ``kinds``: attention_kinds(m), if known.
    """
    dec = np.asarray(decode_ctx, dtype=float)
    att, tokens = sequence_sums(dec, chunk_past, chunk_new, kinds or attention_kinds(m))
    seqs = float(dec.size + len(chunk_new))
    groups = ()
    if m.ssm is not None:  # decodes all have history; each chunk its own (new, past)
        groups = ((float(dec.size), 1.0, 1.0),) + tuple((1.0, float(n), float(p)) for p, n in
                                                        zip(chunk_past, chunk_new))
    return StepLoad(tokens, seqs if sampled is None else float(sampled), seqs, att, groups)


SCALAR_CHUNKS = 4  # sequence_sums: at most this many chunks are summed as Python floats


def sequence_sums(dec: np.ndarray, chunk_past, chunk_new, kinds) -> tuple[dict, float]:
    """({kind: (decode pairs, prefill pairs, cached tokens read)}, new tokens) of :func:`of_sequences`:
    decodes at the contexts ``dec`` (a float array) and chunks (``chunk_past[j]``, ``chunk_new[j]``).
    Every term is a whole number, so the sums are exact in any order (no rounding below 2^53). A few
    chunks (up to ``SCALAR_CHUNKS``, the simulator's steps) are summed one by one as Python floats
    (sequence_attention over kernels.loadattention.SCALAR: the same formulas, no numpy per chunk)."""
    n_chunks = len(chunk_new)
    scalar = 0 < n_chunks <= SCALAR_CHUNKS
    if scalar:
        past, new = [float(p) for p in chunk_past], [float(n) for n in chunk_new]
    elif n_chunks:
        past, new = np.asarray(chunk_past, dtype=float), np.asarray(chunk_new, dtype=float)
    n_dec = dec.size
    # full attention reads every token: Σ_j (c_j + 1) = Σ_j c_j + n (whole numbers: exact), no array built
    full = float(np.add.reduce(dec)) + n_dec if n_dec else 0.0
    after = None  # a decode's length once it adds its token, built for a window or chunk kind
    att = {}
    for kind in kinds:
        if not n_dec:
            d = 0.0
        elif kind[0] == "full":
            d = full
        else:
            if after is None:
                after = dec + 1.0
            d = float(np.add.reduce(kind_reads(kind, after)))
        if scalar:
            pairs = cached = 0.0
            if kind[0] == "full":  # sequence_attention written out: pairs n·p + n(n + 1)/2, reads p + n
                for p, n in zip(past, new):
                    pairs += n * p + n * (n + 1) / 2
                    cached += p + n
            else:
                for p, n in zip(past, new):
                    a, c = sequence_attention(kind, p, n, SCALAR)
                    pairs += a
                    cached += c
            att[kind] = (d, pairs, d + cached)
        elif n_chunks:
            p_pairs, p_cached = sequence_attention(kind, past, new)
            att[kind] = (d, float(p_pairs.sum()), d + float(p_cached.sum()))
        else:
            att[kind] = (d, 0.0, d)
    return att, float(n_dec + (sum(new) if scalar else new.sum() if n_chunks else 0.0))
