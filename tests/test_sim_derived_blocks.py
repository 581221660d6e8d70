"""Derived blocks (sim/batch.py DecodeBatch ``derived``): the rotating histogram of block phases and the kept
Σ C_j against a direct count, and simulations with the blocks read off the cached tokens equal, bit for bit, to those that keep the
``blocks`` row up to date (the batch built with ``derive`` off)."""
from __future__ import annotations

import numpy as np
import pytest

import inferbound.sim.scheduler as scheduler
from inferbound.deploy.deployment import make_deployment
from inferbound.sim import simulate
from inferbound.sim.batch import DecodeBatch


def _direct(d: DecodeBatch):
    """(phases, needy, blocks per column) counted from the cached tokens C_j directly: r_j = (−C_j) mod bs."""
    c = d.cached[:d.n].astype(np.int64)
    phases = [int(np.count_nonzero((-c) % d.bs == i)) for i in range(d.bs)]
    return phases, int(np.count_nonzero(c % d.bs == 0)), (-(-(c + d.pending) // d.bs)).tolist()


def test_phases_by_hand():
    # bs = 4; columns with C = 5, 8, 11: r = 3, 0, 1 -> phases [1, 1, 0, 1]; C = 8 starts a block: needy 1;
    # blocks ⌈5/4⌉, ⌈8/4⌉, ⌈11/4⌉ = 2, 2, 3
    d = DecodeBatch(8, 4, derive=True)
    for j, c in enumerate((5, 8, 11)):
        d.add(c, 1, 10, -(-c // 4), j, j, 0.0)
    assert d.derived and d.phases() == [1, 1, 0, 1] and d.needy() == 1
    assert [d.blocks_of(j) for j in range(3)] == [2, 2, 3]
    d.advance(1)  # C = 6, 9, 12: r = 2, 3, 0 -> [1, 0, 1, 1]; 12 starts a block
    assert d.phases() == [1, 0, 1, 1] and d.needy() == 1 and [d.blocks_of(j) for j in range(3)] == [2, 3, 3]
    d.drop(1)  # C = 6, 12 left: r = 2, 0
    assert d.phases() == [1, 0, 1, 0] and d.blocks_sum(np.array([0, 1])) == 2 + 3


def test_rotating_histogram_equals_a_direct_count_on_random_batches():
    rng = np.random.default_rng(11)
    for bs in (1, 3, 16, 32):
        d, nxt = DecodeBatch(64, bs, derive=True), 0
        for _ in range(400):
            op = rng.integers(0, 6)
            if op <= 1 and d.n < 64:  # a sequence joins holding its tokens' blocks
                c = int(rng.integers(1, 3000))
                d.add(c, 1, 1000, -(-(c + d.pending) // bs), nxt, nxt, 0.0)
                nxt += 1
            elif op == 2:
                d.advance(int(rng.integers(1, 2 * bs + 2)))
            elif op == 3 and d.n:
                d.drop(int(rng.integers(0, d.n)))
            elif op == 4 and d.n:
                d.remove(int(rng.integers(0, d.n)))
            elif op == 5 and d.n:
                m = rng.random(d.n) < 0.7
                d.keep(m, np.flatnonzero(~m) if rng.random() < 0.5 else None)
            assert d.derived
            phases, needy, blocks = _direct(d)
            assert d.phases() == phases and d.needy() == needy
            assert [d.blocks_of(j) for j in range(d.n)] == blocks
            assert d.blocks_sum(np.arange(d.n)) == sum(blocks)
            assert d.csum == float(np.add.reduce(d.cached[:d.n]))  # Σ C_j kept: the same float


def test_a_column_with_other_blocks_writes_the_row_out():
    d = DecodeBatch(8, 16, derive=True)
    d.add(20, 1, 10, 2, 0, 0, 0.0)
    d.advance(13)  # C = 33: ⌈33/16⌉ = 3 blocks
    d.add(40, 1, 10, 4, 1, 1, 0.0)  # 4 blocks for 40 tokens (⌈40/16⌉ = 3): not derived any more
    assert not d.derived and d.blocks[:2].tolist() == [3.0, 4.0] and d.blocks_of(1) == 4
    assert d.csum == 33.0 + 40.0
    d.drop(0)
    d.drop(0)
    d.add(16, 1, 10, 1, 2, 2, 0.0)  # the batch was empty: derived again
    assert d.derived and d.needy() == 1 and d.phases()[0] == 1


CASES = {
    "rate": dict(rate=20.0, requests=150, input_len=512, output_len=200, output_dist="uniform:20:400", seed=1),
    "concurrency": dict(concurrency=12, think_time=0.3, requests=120, input_len=400, output_len=150,
                        output_dist="uniform:50:250", seed=2),
    "chunked": dict(rate=8.0, requests=60, input_len=3000, output_len=150, max_num_batched_tokens=1024, seed=5),
    "recompute": dict(rate=float("inf"), requests=40, input_len=1024, output_len=300, num_blocks=600,
                      preemption="recompute", seed=6),
    "swap": dict(rate=float("inf"), requests=40, input_len=1024, output_len=300, num_blocks=600,
                 preemption="swap", seed=6),
    "disaggregated": dict(rate=10.0, requests=80, input_len=800, output_len=120, prefill_replicas=1,
                          decode_replicas=2, seed=7),
    "prefix": dict(rate=20.0, requests=120, input_len=1024, output_len=100, num_blocks=900, prefix_hit_rate=0.5,
                   seed=8),
    "multistep": dict(rate=20.0, requests=100, input_len=512, output_len=120, scheduler_steps=8, seed=9,
                      engine="vllm@0.6.3"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_derived_blocks_equal_the_kept_row(monkeypatch, case):
    kw = dict(CASES[case])
    dkw = {k: kw.pop(k) for k in ("prefix_hit_rate", "scheduler_steps") if k in kw}
    engine = kw.pop("engine", None)  # vLLM V0 for multi-step scheduling (prefill-first steps too)
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options=dkw or None,
                          **({"engine": engine} if engine else {}))
    real, made = scheduler.DecodeBatch, []

    def kept_row(capacity, block_size=0, derive=False):
        made.append(derive)
        return real(capacity, block_size, derive=False)
    fast = simulate(dep, **kw)
    with monkeypatch.context() as m:
        m.setattr(scheduler, "DecodeBatch", kept_row)
        ref = simulate(dep, **kw)
    assert made and all(made)  # the default batches derive their blocks
    assert ref.summary == fast.summary
    a, b = ref.requests(), fast.requests()
    for key in a:
        np.testing.assert_array_equal(np.asarray(b[key]), np.asarray(a[key]), err_msg=key)
    np.testing.assert_array_equal(fast.run.ledger.gap_values(), ref.run.ledger.gap_values())
    np.testing.assert_array_equal(fast.run.ledger.sample_array(), ref.run.ledger.sample_array())
    if case in ("recompute", "swap"):
        assert fast.summary["preemptions"] > 0
    for rep in fast.run.replicas:  # every block returned through the BlockManager
        cached = sum(rep.cache.blocks.values()) if rep.cache is not None else 0
        assert rep.pool.free + cached == rep.pool.num_blocks
