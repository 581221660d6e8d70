"""``steady_state.prompt_steps`` prices a prompt's full chunks as one array over (D, chunk index) and its partial
chunk once (task P1: ``--token-budget 1`` with a 131,072-token prompt looped 131,072 times per call). It must
give the floats of the chunk-by-chunk loop it replaced, written out here as the reference."""
import numpy as np
import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.pricing.energy import power_w
from inferbound.step.contract import uniform
from inferbound.step.table import StepModel
from inferbound.workloads import steady_state
from inferbound.workloads.features import Features
from inferbound.workloads.max_throughput import MAX_THROUGHPUT_GRID


def loop_steps(sm, decode, context, chunk, prompt, cached=0.0, fx=None):
    """The reference: chunk k = min(chunk, rest) after P + the chunks before it, one step priced per iteration."""
    dec = np.asarray(decode, dtype=float)
    rest = np.full(np.broadcast(dec, chunk).shape, float(prompt))
    past = np.full_like(rest, float(cached))
    secs, joules = np.zeros_like(rest), np.zeros_like(rest)
    dep = sm.dep
    while np.any(rest > 0):
        c = np.minimum(chunk, rest)
        on = c > 0
        if fx is None or not fx.active:
            cost = sm.price(uniform(dep.model, decode=dec, context=context, prompts=on.astype(float), new=c,
                                    past=past))
        else:
            cost = sm.price(fx.decode_load(dep.model, dec, context)
                            + uniform(dep.model, prompts=on.astype(float), new=c, past=past))
            dm = fx.drafter.model if fx.drafter is not None else None
            cost = fx.finish(sm, cost, dec, None if dm is None else uniform(dm, decode=dec, context=context),
                             None if dm is None else uniform(dm, prompts=on.astype(float), new=c, past=past))
        watts = power_w(dep.gpu, dep.compute_dtype, cost.flops, cost.bytes, cost.time)
        secs += np.where(on, cost.time, 0.0)
        joules += np.where(on, cost.time * watts, 0.0)
        past, rest = past + c, rest - c
    return secs, joules


@pytest.fixture(scope="module")
def sm64():
    dep = make_deployment("llama-3.1-8b", "h100_sxm", engine_options={"token_budget": 64})
    return StepModel(dep, 65, grid_points=MAX_THROUGHPUT_GRID)


D = np.array([0.0, 0.5, 1.0, 3.7, 20.0, 63.0])


@pytest.mark.parametrize("context, chunk, prompt, cached", [
    (3000.0, np.maximum(64 - D, 1.0), 300.0, 0.0),          # chunks of 64 − D: 5 to 300 of them a row
    (3000.0, np.maximum(64 - D, 1.0), 300.0, 37.0),         # after 37 cached tokens
    (3000.0, np.maximum(64 - D, 1.0) / 3 + 0.1, 177.3, 0.0),  # fractional chunks and prompt: sums in loop order
    (np.linspace(10, 5000, D.size), np.maximum(64 - D, 1.0), 200.0, 0.0),  # a context per row
    (3000.0, 50.0, 10.0, 0.0),                              # shorter than one chunk: the partial chunk only
    (3000.0, 50.0, 150.0, 0.0),                             # three full chunks, no partial one
    (3000.0, 50.0, 0.0, 0.0),                               # no prompt: no step
])
def test_equals_the_chunk_loop(sm64, context, chunk, prompt, cached):
    dec = D if np.ndim(chunk) else D[D <= 64 - chunk]  # a step holds at most the budget + 1 tokens (the table's)
    want = loop_steps(sm64, dec, context, chunk, prompt, cached)
    got = steady_state.prompt_steps(sm64, dec, context, chunk, prompt, cached)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_equals_the_loop_in_small_blocks(sm64, monkeypatch):
    monkeypatch.setattr(steady_state, "PROMPT_CELLS", 7)  # one chunk column per call for 6 rows: many calls
    chunk = np.maximum(64 - D, 1.0) / 3 + 0.1
    want = loop_steps(sm64, D, 3000.0, chunk, 177.3, 5.0)
    got = steady_state.prompt_steps(sm64, D, 3000.0, chunk, 177.3, 5.0)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_plain_numbers_as_search_calls_it(sm64):
    # search/evaluate.py: prompt_steps(sm, 0.0, 0.0, budget, I − P, P): 0-d in, 0-d out
    want = loop_steps(sm64, 0.0, 0.0, 64.0, 1000.0, 96.0)
    got = steady_state.prompt_steps(sm64, 0.0, 0.0, 64.0, 1000.0, 96.0)
    assert np.shape(got[0]) == () and np.shape(got[1]) == ()
    assert float(got[0]) == pytest.approx(float(want[0]), rel=1e-12)
    assert float(got[1]) == pytest.approx(float(want[1]), rel=1e-12)


def test_is_the_sum_of_its_chunk_steps(sm64):
    # I = 126 tokens in chunks of 62 beside D = 2 decodes at 1000: chunks (62 after 0), (62 after 62), (2 after 124);
    # TTFT's prefill part is Σ_k t(2 decodes + chunk k), energy Σ_k t_k·W_k
    m, dep = sm64.dep.model, sm64.dep
    parts = [sm64.price(uniform(m, decode=2.0, context=1000.0, prompts=1.0, new=n, past=p))
             for n, p in ((62.0, 0.0), (62.0, 62.0), (2.0, 124.0))]
    secs = sum(float(c.time) for c in parts)
    joules = sum(float(c.time * power_w(dep.gpu, dep.compute_dtype, c.flops, c.bytes, c.time)) for c in parts)
    got = steady_state.prompt_steps(sm64, np.array([2.0]), 1000.0, 62.0, 126.0)
    assert float(got[0][0]) == pytest.approx(secs, rel=1e-12)
    assert float(got[1][0]) == pytest.approx(joules, rel=1e-12)


def test_equals_the_loop_with_speculation_and_prefix_hits(monkeypatch):
    dep = make_deployment("llama-3.1-8b", "h100_sxm", engine_options={
        "token_budget": 256, "speculative": "draft:llama-3.2-1b", "spec_tokens": 3, "acceptance": 0.7,
        "prefix_hit_rate": 0.5})
    fx = Features(dep, dep.runtime, steady_state.as_mix(2000, 200))
    assert fx.active and fx.cached[0] > 0  # the features path: verify passes, draft passes, a prefix hit
    sm = StepModel(dep, 257, grid_points=MAX_THROUGHPUT_GRID)
    chunk = np.maximum(256 - D * fx.tokens_per_decode(), 1.0)
    for cells in (steady_state.PROMPT_CELLS, 5):
        monkeypatch.setattr(steady_state, "PROMPT_CELLS", cells)
        want = loop_steps(sm, D, 1500.0, chunk, fx.new[0], fx.cached[0], fx)
        got = steady_state.prompt_steps(sm, D, 1500.0, chunk, fx.new[0], fx.cached[0], fx)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # rows that all decode nothing take the draft's prefill-only branch, as in the loop
    want = loop_steps(sm, np.zeros(3), 1500.0, 256.0, fx.new[0], fx.cached[0], fx)
    got = steady_state.prompt_steps(sm, np.zeros(3), 1500.0, 256.0, fx.new[0], fx.cached[0], fx)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_a_chunk_of_no_tokens_is_refused(sm64):
    with pytest.raises(ValueError, match=r"^chunk=0: allowed: chunk > 0 tokens"):
        steady_state.prompt_steps(sm64, D, 3000.0, 0.0, 100.0)
