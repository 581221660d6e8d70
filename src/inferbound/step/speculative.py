"""Speculative decoding, its step costs: the target's verify pass and the draft's passes.

(The settings, τ and the draft's memory: deploy/speculative.py, whose docstring has the formulas.)
A step of D decoding sequences at c cached tokens:

    verify   the target adds q = k + 1 tokens per sequence (a tree: N, its verified tokens) after its c
             cached ones, D·q rows through every GEMM and D·q logits rows (the target's distribution at
             every drafted position); its attention is the engines' decode kernel with q query tokens per
             sequence reading each sequence's KV once (vLLM's backends that support it take requests of up
             to 1 + num_speculative_tokens query tokens as decodes: vllm/v1/attention/backend.py
             _init_reorder_batch_threshold(1, supports_spec_as_decode=True), FlashInfer, FlashMLA, Triton;
             SGLang's target_verify forward mode; FlashMLA's seq_len_q for MLA): per kind, decode pairs D·(q·c +
             q(q + 1)/2), reads D·(c + q), and the fourth attention entry D·(q − 1), the query tokens beyond
             one per sequence (pricing/kernels/loadattention.verify_part), not the prefill kernel
    n-gram   m·D sequences verify, (1 − m)·D decode one token (speculative.py: no proposal without a match)
    draft    k passes of the draft over the D sequences (one token each at context c; a tree's passes
             2..k carry its t candidates per sequence, a q = t read of the draft's KV), the first pass
             also carrying the step's prompt tokens (the draft must build its own KV of every prompt),
             priced through the same step contract on the draft's own ModelSpec; the engine's per-step
             fixed costs (step overhead, host work) are paid once per engine step, not per draft pass
    t_step = t_verify + t_draft          TPOT = t_step / τ          tok/s per user = τ / t_step
"""
from __future__ import annotations

import numpy as np

from ..base.caches import cache
from ..deploy.speculative import Drafter, drafter_of
from ..operators import attention_kinds, sequence_attention
from ..pricing.kernel_pricing import host_cost
from . import contract
from .contract import StepLoad, add_work, scale_cost, with_time
from .table import StepModel


def verify_load(m, decode, context, k: int, match=1.0, queries: int | None = None):
    """The target's verify pass (module docstring): ``decode`` sequences at ``context`` cached tokens, a
    share ``match`` of them adding q = ``queries`` (default k + 1) tokens read as a decode, the rest one;
    D_v·q + D_d new tokens and logits rows (arrays allowed)."""
    decode = np.asarray(decode, dtype=float)
    q = float(queries or k + 1)
    dv, dd = decode * match, decode * (1.0 - match)
    att = {}
    for kind in attention_kinds(m):
        v_pairs, v_reads = sequence_attention(kind, context, q)
        d_pairs, d_reads = sequence_attention(kind, context, 1.0)
        att[kind] = (dv * v_pairs + dd * d_pairs, dv * 0.0, dv * v_reads + dd * d_reads, dv * (q - 1.0))
    tokens = dv * q + dd
    groups = ((dv, q, context), (dd, 1.0, context)) if m.ssm is not None else ()
    return StepLoad(tokens, tokens, decode, att, groups)


def verify_sequences_load(m, dec_ctx, queries: int, chunk_past=(), chunk_new=(), match: float = 1.0) -> StepLoad:
    """A simulator step (contract.of_sequences' form): the sequences at the contexts ``dec_ctx`` verify
    ``queries`` tokens read as a decode (verify_load; a share ``match`` of them, the rest decode one: the
    n-gram's expected step), beside prefill chunks (``chunk_past[j]`` cached, ``chunk_new[j]`` new)."""
    dec = np.asarray(dec_ctx, dtype=float)
    q = float(queries)
    kinds = attention_kinds(m)
    att, tokens = contract.sequence_sums(np.zeros(0), chunk_past, chunk_new, kinds)
    n = float(dec.size)
    for kind in kinds:
        pairs, reads = sequence_attention(kind, dec, q)
        d_pairs, d_reads = sequence_attention(kind, dec, 1.0)
        _, pre, cached = att[kind]
        att[kind] = (float(match * np.sum(pairs) + (1.0 - match) * np.sum(d_pairs)), pre,
                     float(match * np.sum(reads) + (1.0 - match) * np.sum(d_reads)) + cached, n * match * (q - 1.0))
    rows = n * (1.0 + match * (q - 1.0))
    groups = ()
    if m.ssm is not None:
        groups = ((n, rows / n if n else 1.0, float(dec.mean()) if dec.size else 0.0),) + tuple(
            (1.0, float(c), float(p)) for p, c in zip(chunk_past, chunk_new))
    return StepLoad(tokens + rows, rows + len(chunk_new), n + len(chunk_new), att, groups)


def prefill_verify_load(m, decode, context, k: int):
    """The same verify pass priced as the prefill kernel takes a chunk of k + 1 tokens (the pricing before
    issue 20: contract.uniform(prompts=D, new=k+1, past=c)); kept for comparison (tests, benchmarks)."""
    decode = np.asarray(decode, dtype=float)
    return contract.uniform(m, prompts=decode, new=float(k + 1), past=context, sampled=decode * (k + 1))


def spec_verify_load(m, spec, decode, context):
    """verify_load of the setting ``spec`` (speculative.Spec: k, match rate, verified tokens)."""
    return verify_load(m, decode, context, spec.k, spec.match, spec.verify_tokens)


def draft_step_model(dr: Drafter, max_tokens: int) -> StepModel:
    """The draft's tabulated step contract (table.StepModel), kept per (draft deployment, size)."""
    key = int(max_tokens)
    return _DRAFT_TABLES.get_or((dr.deployment, key), lambda: StepModel(
        dr.deployment, key, grid_points=None if key <= 4096 else 192))


_DRAFT_TABLES = cache("draft step models", 64)


def draft_fixed_s(dr: Drafter, sequences):
    """The engine's per-step fixed cost inside a draft pass (step overhead + host work of the head's
    ``host`` op: h·(step_s + seq_s·S/groups), kernel_pricing.host_cost), paid once per engine step."""
    d = dr.deployment
    step_s, seq_s = host_cost(d.engine or "", d.calibration) if d.engine else (0.0, 0.0)
    h = d.gpu.efficiency.host_factor
    logits = np.asarray(sequences, dtype=float) / d.par.attention_groups
    return d.gpu.efficiency.step_overhead_s + h * (step_s + seq_s * logits)


def draft_cost(dr: Drafter, price, decode_load, decodes, prompt_load=None, rest_load=None):
    """StepCost of one engine step's drafting: k passes over ``decode_load`` (the D decoding sequences,
    one token each, built on ``dr.model``), the first with ``prompt_load`` beside it; passes 2..k over
    ``rest_load`` where given (a tree's t candidates per sequence: verify_load(dr.model, D, c, t − 1)),
    else ``decode_load``; ``price`` prices a load on the draft (a StepModel's ``price`` or step.price on
    ``dr.deployment``). None for ngram."""
    if dr.model is None:
        return None
    k = dr.spec.k
    first = decode_load if prompt_load is None else decode_load + prompt_load
    c1 = price(first)
    seqs1 = first.sequences
    total = with_time(c1, -draft_fixed_s(dr, seqs1), "overhead")
    if k > 1:
        rest = price(decode_load if rest_load is None else rest_load)
        total = add_work(total, scale_cost(with_time(rest, -draft_fixed_s(dr, decodes), "overhead"), k - 1))
    return total


def widened(load: StepLoad, t: int) -> StepLoad:
    """A decode-only load of D sequences (one token each at c cached) with t query tokens per sequence read
    as a decode (a tree's draft pass over its t candidates): per kind pairs t·Σ(c + 1) + D·t(t − 1)/2 (=
    Σ (t·c + t(t + 1)/2)), reads Σ(c + 1) + D·(t − 1), extra queries D·(t − 1); t·T tokens and rows."""
    d, t = load.sequences, float(t)
    att = {kind: (v[0] * t + d * t * (t - 1.0) / 2.0, v[1], v[2] + d * (t - 1.0), d * (t - 1.0))
           for kind, v in load.attention.items()}
    groups = tuple((c, n * t, p) for c, n, p in load.seqgroups)
    return StepLoad(load.tokens * t, load.sampled * t, load.sequences, att, groups)


def draft_rest_load(dr: Drafter, decode, context):
    """The draft's passes 2..k: one token per sequence, or a tree's t candidates (:func:`widened`), None
    when they are the first pass's decode load."""
    t = dr.spec.topk
    return None if t <= 1 or dr.model is None else widened(contract.uniform(dr.model, decode=decode,
                                                                             context=context), t)


def draft_prefill_cost(dr: Drafter, price, prompt_load):
    """StepCost of the draft's own pass over a step's prompt tokens (``prompt_load`` on ``dr.model``),
    the engine's per-step fixed cost left out; None for ngram."""
    if dr.model is None:
        return None
    return with_time(price(prompt_load), -draft_fixed_s(dr, prompt_load.sequences), "overhead")


def step_cost(dep, decode, context, prompts_load=None):
    """(StepCost of verify + draft, τ) of a step of ``decode`` sequences at ``context`` through the direct
    step contract (contract.price), arrays allowed; the plain decode step and 1 without speculation."""
    dr = drafter_of(dep)
    if dr is None:
        return contract.decode(dep, decode, context), 1.0
    s = dr.spec
    load = verify_load(dep.model, decode, context, s.k, 1.0, s.verify_tokens)
    if prompts_load is not None:
        load = load + prompts_load
    cost = contract.price(dep, load, "stream")
    cost = with_verify_host(dep, cost, decode, s.verify_tokens - 1)
    if s.match < 1.0:
        # n-gram: the step proposes with probability m, else it is a plain decode step (a static batch's
        # expected step, exact at batch 1): m·t_verify + (1 − m)·t_decode; the steady state prices the
        # mixed load of m·D verifying sequences instead (spec_verify_load; within 4 % of this at batch 1)
        plain = contract.uniform(dep.model, decode=decode, context=context)
        plain = contract.price(dep, plain if prompts_load is None else plain + prompts_load, "stream")
        cost = add_work(scale_cost(cost, s.match), scale_cost(plain, 1.0 - s.match))
    if dr.model is not None:
        dl = contract.uniform(dr.model, decode=decode, context=context)
        cost = add_work(cost, draft_cost(dr, lambda ld: contract.price(dr.deployment, ld, "stream"), dl, decode,
                                         rest_load=draft_rest_load(dr, decode, context)))
    return cost, s.tau


def with_verify_host(dep, cost, decode, k: int):
    """The verify step's cost with the engine's per-sequence host work counted once per sequence, not
    per logits row (the head's host op sees D·(k + 1) rows: k·D·seq_s·h/groups too many)."""
    if not dep.engine:
        return cost
    _, seq_s = host_cost(dep.engine, dep.calibration)
    if not seq_s:
        return cost
    extra = dep.gpu.efficiency.host_factor * seq_s * k * np.asarray(decode, dtype=float) / dep.par.attention_groups
    return with_time(cost, -extra, "overhead")


def crossover_batch(dep, context, limit: int = 4096) -> int | None:
    """Smallest batch at ``context`` where speculation no longer raises tok/s: t_step(B)/τ ≥ t_decode(B)
    (the same batch, so per-user and per-GPU ratios agree); None if it still helps at ``limit``."""
    if drafter_of(dep) is None:
        return None

    def worse(b):
        cost, tau = step_cost(dep, b, context)
        return np.asarray(cost.time) / tau >= np.asarray(contract.decode(dep, b, context).time)
    grid = np.unique(np.round(np.geomspace(1, limit, 40)))
    hit = np.nonzero(worse(grid))[0]
    if hit.size == 0:
        return None
    hi = int(grid[hit[0]])
    lo = int(grid[hit[0] - 1]) if hit[0] > 0 else 0
    if hi - lo <= 1:
        return hi
    fine = np.arange(lo + 1, hi + 1, dtype=float)
    return int(fine[np.nonzero(worse(fine))[0][0]])
