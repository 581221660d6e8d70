"""Runs of decode-only steps (sim/decode_run.py) give what the step-by-step scheduler gives.

Each configuration runs twice, ``SimConfig.decode_runs`` off (every step planned by
Replica.start_step's three phases: the reference) and on (the default), and every request's arrival,
admission, first token, finish (so TTFT, TPOT and E2E), the pooled inter-token gaps (ITL samples), every
step's sample and the summary's figures must agree to 1e-9 relative. A configuration also asserts that
runs of more than one step really happened, and that every block went back to the pool.
The block arithmetic of a run (which step takes how many blocks) and its step loads are checked against
numbers worked out by hand here.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import inferbound.sim as sim_pkg
import inferbound.sim.scheduler as scheduler
from inferbound.deploy.deployment import make_deployment
from inferbound.sim import simulate
from inferbound.sim.decode_run import blocks_per_step, run_load
from inferbound.step.contract import of_sequences

REL = 1e-9


def _pair(monkeypatch, dep, **kw):
    """(reference, fast) SimResults of ``simulate(dep, **kw)``, and the longest run the fast one made."""
    real, runs = sim_pkg.sim_config, []
    real_run = scheduler.decode_run

    def counting(rep, t, horizon):
        before = len(rep.ledger.sample_array())
        out = real_run(rep, t, horizon)
        if out is not None:
            runs.append(len(rep.ledger.sample_array()) - before)
        return out

    out = []
    for on in (False, True):
        with monkeypatch.context() as m:
            m.setattr(sim_pkg, "sim_config", lambda *a, _on=on, **k: replace(real(*a, **k), decode_runs=_on))
            m.setattr(scheduler, "decode_run", counting)
            out.append(simulate(dep, **kw))
        if not on:
            assert not runs  # the reference never takes the fast path
    return out[0], out[1], max(runs, default=0)


def _same(ref, fast):
    a, b = ref.requests(), fast.requests()
    for key in ("arrival_s", "admit_s", "first_token_s", "finish_s", "ttft_s", "e2e_s", "tpot_s"):
        np.testing.assert_allclose(b[key], a[key], rtol=REL, atol=0, equal_nan=True, err_msg=key)
    np.testing.assert_array_equal(b["preemptions"], a["preemptions"])
    ga, gb = np.sort(ref.run.ledger.gap_values()), np.sort(fast.run.ledger.gap_values())
    assert ga.size == gb.size
    np.testing.assert_allclose(gb, ga, rtol=REL, atol=1e-15)
    sa, sb = ref.run.ledger.sample_array(), fast.run.ledger.sample_array()
    sa, sb = sa[np.lexsort((sa[:, 7], sa[:, 0]))], sb[np.lexsort((sb[:, 7], sb[:, 0]))]
    assert sa.shape == sb.shape
    np.testing.assert_allclose(sb, sa, rtol=REL, atol=0)
    for k, v in ref.summary.items():
        if isinstance(v, float):
            assert fast.summary[k] == pytest.approx(v, rel=REL, abs=1e-12), k
        elif isinstance(v, (int, str, bool)) or v is None:
            assert fast.summary[k] == v, k
    for rep in fast.run.replicas:  # every block returned through the BlockManager
        cached = sum(rep.cache.blocks.values()) if rep.cache is not None else 0
        assert rep.pool.free + cached == rep.pool.num_blocks


@pytest.fixture(scope="module")
def dep8b():
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm")


CASES = {
    # open loop, varied lengths: arrivals and finishes cut the runs
    "rate": dict(rate=20.0, requests=150, input_len=512, output_len=200, output_dist="uniform:20:400", seed=1),
    # a low rate: long runs, priced in one vectorized call past the first SCALAR_STEPS steps
    "long_runs": dict(rate=0.5, requests=12, input_len=300, output_len=600, seed=3),
    # closed loop with think time: finishes bring arrivals forward
    "concurrency": dict(concurrency=12, think_time=0.3, requests=120, input_len=400, output_len=150,
                        output_dist="uniform:50:250", seed=2),
    # two replicas, closed loop without think time: other replicas' finishes bound the runs
    "replicas": dict(concurrency=16, requests=120, input_len=256, output_len=120, output_dist="uniform:30:200",
                     replicas=2, seed=4),
    # chunked prefill of prompts longer than the budget
    "chunked": dict(rate=8.0, requests=60, input_len=3000, output_len=150, max_num_batched_tokens=1024, seed=5),
    # KV pressure: the pool runs out inside runs, recompute preemption
    "recompute": dict(rate=float("inf"), requests=40, input_len=1024, output_len=300, num_blocks=600,
                      preemption="recompute", seed=6),
    "swap": dict(rate=float("inf"), requests=40, input_len=1024, output_len=300, num_blocks=600,
                 preemption="swap", seed=6),
    # disaggregated prefill / decode
    "disaggregated": dict(rate=10.0, requests=80, input_len=800, output_len=120, prefill_replicas=1,
                          decode_replicas=2, seed=7),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_runs_equal_step_by_step(monkeypatch, dep8b, case):
    ref, fast, longest = _pair(monkeypatch, dep8b, **CASES[case])
    assert ref.summary["completed"] == fast.summary["completed"] == CASES[case]["requests"]
    assert longest > 1  # runs happened
    if case == "long_runs":
        assert longest > 24  # past the scalar steps: the vectorized StepModel.price call was used
    if case == "recompute" or case == "swap":
        assert ref.summary["preemptions"] > 0
    _same(ref, fast)


@pytest.mark.parametrize("name,kw,opts", [
    # sliding-window attention (the window's kind_reads in the run's load), long runs
    ("gemma", dict(model="google/gemma-2-9b", gpu="h100_sxm"), None),
    # pipeline parallelism: the step model's general path, in a stream and isolated
    ("pp2", dict(model="llama-3.1-8b", gpu="h100_sxm", pp=2), None),
    # prefix caching under KV pressure (hits, fills, LRU eviction)
    ("prefix", dict(model="llama-3.1-8b", gpu="h100_sxm"), dict(prefix_hit_rate=0.5)),
    # speculative decoding: the step-by-step path throughout (runs need one token per step)
    ("speculative", dict(model="llama-3.1-8b", gpu="h100_sxm"), dict(speculative="eagle", spec_tokens=3,
                                                                    acceptance=0.7)),
    # TensorRT-LLM: every block reserved at admission
    ("reserve_full", dict(model="llama-3.1-8b", gpu="h100_sxm", engine="trtllm@0.17"), None),
    # vLLM V0: prefill-first steps, no chunked prefill
    ("prefill_first", dict(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.6.3"), None),
])
def test_runs_equal_step_by_step_features(monkeypatch, name, kw, opts):
    dep = make_deployment(**kw, engine_options=opts)
    load = dict(rate=1.0, requests=30, input_len=700, output_len=300, output_dist="uniform:100:500", seed=8)
    if name == "prefix":
        load.update(rate=float("inf"), num_blocks=900)
    ref, fast, longest = _pair(monkeypatch, dep, **load)
    assert fast.summary["completed"] == 30
    assert (longest == 0) if name == "speculative" else (longest > 24)
    if name == "prefix":
        assert ref.summary["prefix_hit_rate"] > 0
    _same(ref, fast)


def test_blocks_per_step_by_hand():
    # block size 4; sequences need their next block in 0, 2 and 5 steps (r = H·bs − C); 10 steps.
    # step:    0  1  2  3  4  5  6  7  8  9
    # r=0:     1           1           1        (0, 4, 8)
    # r=2:           1           1              (2, 6)
    # r=5:                    1           1     (5, 9)
    # a_s:     1  0  1  0  1  1  1  0  1  1
    assert blocks_per_step(np.array([0.0, 2.0, 5.0]), 4, 10) == [1, 0, 1, 0, 1, 1, 1, 0, 1, 1]
    # every r < bs (the periodic shortcut): r = 1, 1, 3 -> a_s = 0 2 0 1 0 2 0 1 0
    assert blocks_per_step(np.array([1.0, 3.0, 1.0]), 4, 9) == [0, 2, 0, 1, 0, 2, 0, 1, 0]



def test_phases_by_hand():
    """decode_run's _Phases: the r_j read once. Block size 4, r = 0, 2, 3, 2 (every r < bs): hist = 1 0 2 1, so
    a_s = hist[s mod 4] = 1 0 2 1 1 0 2 1 1 0 and the first k steps take 0 1 1 3 4 5 5 7 8 9 9 blocks
    (⌊k/4⌋·4 + Σ_i<(k mod 4) hist[i]); r = 0, 2, 5 (one r >= bs): no histogram, the same lists as
    blocks_per_step and taken_by; a negative r (blocks short of the cached tokens): None."""
    from inferbound.sim.decode_run import _Phases, taken_by
    tight = _Phases.of(np.array([0.0, 2.0, 3.0, 2.0]), 4)
    assert tight.hist == [1, 0, 2, 1]
    assert tight.per_step(10) == [1, 0, 2, 1, 1, 0, 2, 1, 1, 0]
    assert [tight.taken(k) for k in range(11)] == [0, 1, 1, 3, 4, 5, 5, 7, 8, 9, 9]
    assert tight.fitting(10, 9, False) == (None, 10)  # all 9 blocks of the 10 steps fit 9 free ones
    cum, steps = tight.fitting(10, 4, False)  # 9 blocks for 10 steps, 4 free: steps 0..3 take 1, 1, 3, 4
    assert cum.tolist() == [1, 1, 3, 4, 5, 5, 7, 8, 9, 9] and steps == 4
    loose = _Phases.of(np.array([0.0, 2.0, 5.0]), 4)
    assert loose.hist is None and loose.per_step(10) == [1, 0, 1, 0, 1, 1, 1, 0, 1, 1]
    assert [loose.taken(k) for k in range(11)] == [0, 1, 1, 2, 2, 3, 4, 5, 5, 6, 7]
    assert _Phases.of(np.array([3.0, -1.0]), 4) is None
    rng = np.random.default_rng(4)
    for _ in range(50):  # the histogram's integers equal blocks_per_step's and taken_by's on random runs
        bs, steps = int(rng.integers(1, 33)), int(rng.integers(1, 400))
        first = rng.integers(0, bs, int(rng.integers(1, 40))).astype(float)
        ph = _Phases.of(first, bs)
        assert ph.hist is not None and ph.per_step(steps) == blocks_per_step(first, bs, steps)
        assert ph.taken(steps) == taken_by(first, bs, steps)


def test_replicas_of_one_deployment_share_one_step_model(dep8b):
    """sim/event_loop.step_model_of keeps one StepModel per (deployment, tokens): equal deployments (a fleet
    pool's replicas, repeated simulations) get the same object; another size or deployment another."""
    from inferbound.sim.event_loop import step_model_of
    a = step_model_of(dep8b, 8192)
    assert step_model_of(make_deployment(model="llama-3.1-8b", gpu="h100_sxm"), 8192) is a
    assert step_model_of(dep8b, 4096) is not a
    assert step_model_of(make_deployment(model="llama-3.1-8b", gpu="a100_80gb_sxm"), 8192) is not a


def test_run_stops_where_the_pool_runs_out(dep8b):
    """A run takes its blocks through one BlockManager.allocate and stops before the step that would take
    more than are free (that step then preempts, step by step)."""
    res = simulate(dep8b, rate=float("inf"), requests=8, input_len=64, output_len=200, num_blocks=60, seed=0)
    # 8 prompts of 64 tokens take 8·4 = 32 blocks of 16; 8·(64 + 199)/16 > 60: preemption must happen
    assert res.summary["preemptions"] > 0 and res.summary["completed"] == 8
    rep = res.run.replicas[0]
    assert rep.pool.free == rep.pool.num_blocks == 60
    assert res.run.ledger.sample_array()[:, 6].max() <= 60


def test_run_load_is_each_steps_load():
    dep = make_deployment(model="google/gemma-2-9b", gpu="h100_sxm")
    ctx = np.array([100.0, 4090.0, 7000.0])
    load = run_load(dep.model, ctx, np.array([0.0, 3.0, 10.0]))
    for i, s in enumerate((0.0, 3.0, 10.0)):
        one = of_sequences(dep.model, ctx + s)
        assert load.tokens == one.tokens == 3 and load.sampled == one.sampled and load.sequences == one.sequences
        for kind, (d, p, c) in one.attention.items():
            got = tuple(float(x[i]) for x in load.attention[kind])
            assert got == (d, p, c), (kind, s)
    # by hand, the 4096-token window at s = 10: min(111, W) + min(4101, W) + min(7011, W) = 111 + 2·4096
    window = [k for k in load.attention if k[0] != "full"][0]
    assert window[1] == 4096 and float(load.attention[window][0][2]) == 111 + 2 * 4096
    assert float(load.attention[("full", None)][0][2]) == 111 + 4101 + 7011
