"""Speculative simulator steps kept by what determines them: the same floats as pricing every step.

- sim/stepcost.StepPricer.price keeps a step's (seconds, watts) by (n, Σ c_j, chunks, mode) where every
  attention kind of target and draft is full attention (else by the contexts themselves), and
  step/table.StepModel._stage_works keeps the body and head Work of a plain-number T and S. A run with
  both (the default) and a run that prices every step anew (StepPricer._priced on every call, nothing kept
  in the step models, every cache emptied first) give the same summary, ==, on EAGLE, a draft model,
  n-gram, tree drafting, DeepSeek MTP and a sliding-window model (the contexts as key);
- the (n, Σ c_j) key by hand: contexts {100, 300} and {200, 200} have n = 2, Σ = 400, so their verify and
  draft loads are equal and so are their prices (==); a window model is keyed by its contexts, since there
  Σ min(c_j + 1, W) is not a function of Σ c_j (W = 4096: {100, 8000} reads 101 + 4096 = 4197 tokens per
  layer, {4050, 4050} reads 4051 + 4051 = 8102, both Σ c_j = 8100).
"""
from __future__ import annotations

import pytest

import inferbound.step.table as table
from inferbound import make_deployment
from inferbound.base import caches
from inferbound.operators import attention_kinds, kind_reads
from inferbound.sim import simulate
from inferbound.sim.stepcost import StepPricer

CASES = {
    "eagle": (dict(model="llama-3.1-8b", gpu="h100_sxm"), dict(speculative="eagle", spec_tokens=4, acceptance=0.75)),
    "draft": (dict(model="llama-3.1-8b", gpu="h100_sxm"),
              dict(speculative="draft:llama-3.2-1b", spec_tokens=3, acceptance=0.6)),
    "ngram": (dict(model="llama-3.1-8b", gpu="h100_sxm"),
              dict(speculative="ngram", spec_tokens=3, acceptance=0.5, spec_match_rate=0.6)),
    "tree": (dict(model="llama-3.1-8b", gpu="h100_sxm"),
             dict(speculative="eagle", spec_tokens=3, acceptance=0.7, spec_topk=2, spec_draft_tokens=6)),
    "mtp": (dict(model="deepseek-r1", gpu="h200_sxm", num_gpus=8, tp=8), dict(speculative="mtp", acceptance=0.8)),
    "window": (dict(model="google/gemma-2-9b", gpu="h100_sxm"),
               dict(speculative="eagle", spec_tokens=3, acceptance=0.7)),
}
# lengths drawn (so steps differ in their chunks and contexts) and a 512-token budget (prompts split into
# chunks with cached tokens before them)
LOAD = dict(rate=3.0, requests=60, input_dist="normal:700:300", output_dist="normal:120:40",
            max_num_batched_tokens=512, seed=3)


# every case under the same budget (a tree's verify pass budgets its N = 6 tokens per sequence: test below)
BUDGET: dict = {}


def _load(name):
    return {**LOAD, "max_num_batched_tokens": BUDGET.get(name, LOAD["max_num_batched_tokens"])}


def _dep(name):
    dep_kw, spec = CASES[name]
    return make_deployment(**dep_kw, engine_options=spec)


def _every_step(self, dec_ctx, chunks, mode):
    return self._priced(dec_ctx, chunks, mode)


@pytest.mark.parametrize("name", list(CASES))
def test_kept_prices_equal_pricing_every_step(monkeypatch, name):
    caches.clear()
    kept = simulate(_dep(name), **_load(name)).summary
    assert kept["completed"] == LOAD["requests"]
    assert kept["speculative"]
    with monkeypatch.context() as mp:
        caches.clear()
        mp.setattr(StepPricer, "price", _every_step)
        mp.setattr(table, "_keep", lambda memo, key, value: None)
        fresh = simulate(_dep(name), **_load(name)).summary
    caches.clear()
    assert kept == fresh


def _pricer(name):
    from inferbound.sim.config import sim_config
    from inferbound.sim.event_loop import replica_extras, step_model_of
    from inferbound.sim.blocks import block_bytes_per_gpu
    dep = _dep(name)
    cfg = sim_config(dep)
    sm = step_model_of(dep, cfg.max_num_batched_tokens)
    return StepPricer(sm, cfg, replica_extras(dep, cfg, block_bytes_per_gpu(dep, cfg.block_size)))


@pytest.mark.parametrize("name", ["eagle", "draft", "ngram", "tree"])
def test_sum_key_by_hand(name):
    p = _pricer(name)
    assert p._by_sum
    for chunks in ((), ((0, 512),), ((256, 128), (0, 64))):
        for mode in ("stream", "isolated"):
            assert p._priced([100.0, 300.0], chunks, mode) == p._priced([200.0, 200.0], chunks, mode)
    # and a different Σ is a different step: one more cached token reads more
    assert p._priced([100.0, 301.0], (), "stream")[0] > p._priced([100.0, 300.0], (), "stream")[0]


def test_window_model_keyed_by_contexts():
    import numpy as np
    p = _pricer("window")
    assert not p._by_sum
    win = [k for k in attention_kinds(p.dep.model) if k[0] != "full"]
    assert win and win[0][1] == 4096
    reads = lambda ctx: float(np.sum(kind_reads(win[0], np.asarray(ctx, dtype=float) + 1.0)))
    assert reads([100.0, 8000.0]) == 101 + 4096
    assert reads([4050.0, 4050.0]) == 4051 + 4051
    assert p.price([100.0, 8000.0], (), "stream") != p.price([4050.0, 4050.0], (), "stream")


def test_tree_verify_budgets_its_n_tokens_per_sequence():
    """A tree verify pass puts N = spec_draft_tokens tokens per sequence in the step, not k + 1: with k = 3, N = 6 and a
    512-token budget the scheduler once budgeted 4 per sequence and met a 514-token step (the step table refuses
    steps past its budget). Now every step's scheduled tokens fit: 6 per verifying sequence + prompt chunks <= 512."""
    out = simulate(_dep("tree"), **LOAD)
    assert out.summary["completed"] == LOAD["requests"]
