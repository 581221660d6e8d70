"""Speculative decoding, its step costs: the target's verify pass and the draft's passes.

(The settings, τ and the draft's memory: deploy/speculative.py, whose docstring has the formulas.)
A step of D decoding sequences at c cached tokens:

    verify   the target adds k + 1 tokens per sequence after its c cached ones: a chunk of k + 1 new
             tokens (attention pairs as a prefill chunk, contract.uniform(prompts=D, new=k+1, past=c)),
             with D·(k + 1) logits rows (the target's distribution at every drafted position)
    draft    k passes of the draft over the D sequences (one token each at context c), the first pass
             also carrying the step's prompt tokens (the draft must build its own KV of every prompt),
             priced through the same step contract on the draft's own ModelSpec; the engine's per-step
             fixed costs (step overhead, host work) are paid once per engine step, not per draft pass
    t_step = t_verify + t_draft          TPOT = t_step / τ          tok/s per user = τ / t_step
"""
from __future__ import annotations

import numpy as np

from ..base.caches import cache
from ..deploy.speculative import Drafter, drafter_of
from ..pricing.kernel_pricing import host_cost
from . import contract
from .contract import add_work, scale_cost, with_time
from .table import StepModel


def verify_load(m, decode, context, k: int):
    """The target's verify pass: ``decode`` sequences at ``context`` cached tokens each add k + 1 tokens
    (a chunk), D·(k + 1) logits rows (arrays allowed)."""
    decode = np.asarray(decode, dtype=float)
    return contract.uniform(m, prompts=decode, new=float(k + 1), past=context, sampled=decode * (k + 1))


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


def draft_cost(dr: Drafter, price, decode_load, decodes, prompt_load=None):
    """StepCost of one engine step's drafting: k passes over ``decode_load`` (the D decoding sequences,
    one token each, built on ``dr.model``), the first with ``prompt_load`` beside it; ``price`` prices
    a load on the draft (a StepModel's ``price`` or step.price on ``dr.deployment``). None for ngram."""
    if dr.model is None:
        return None
    k = dr.spec.k
    first = decode_load if prompt_load is None else decode_load + prompt_load
    c1 = price(first)
    seqs1 = first.sequences
    total = with_time(c1, -draft_fixed_s(dr, seqs1), "overhead")
    if k > 1:
        rest = price(decode_load)
        total = add_work(total, scale_cost(with_time(rest, -draft_fixed_s(dr, decodes), "overhead"), k - 1))
    return total


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
    load = verify_load(dep.model, decode, context, s.k)
    if prompts_load is not None:
        load = load + prompts_load
    cost = contract.price(dep, load, "stream")
    cost = with_verify_host(dep, cost, decode, s.k)
    if dr.model is not None:
        dl = contract.uniform(dr.model, decode=decode, context=context)
        cost = add_work(cost, draft_cost(dr, lambda ld: contract.price(dr.deployment, ld, "stream"), dl, decode))
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
