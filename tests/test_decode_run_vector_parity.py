"""StepModel.decode_run_array (a run's decode-only steps priced in one numpy evaluation) is a tabulation of
StepModel.decode_run's scalar closure, not a second formula: on random runs (batch sizes eager and
CUDA-graph, contexts crossing gemma's 4096 window, a GPU priced by the attention Roof) every step's seconds
and watts equal the closure's ``price(s)`` (==; numpy's float64 + − × ÷, ceil and, on CPUs where numpy has
no SIMD pow/expm1, ``**`` and expm1 are the C library's that Python calls; elsewhere 1e-15 relative is
allowed). The run's step ends summed by np.add.accumulate equal the event loop's e_s = e_{s−1} + t_s."""
from __future__ import annotations

import numpy as np

from inferbound.sim.ledger import SAMPLE_FIELDS
import pytest

from inferbound import make_deployment
from inferbound.pricing.energy import array_power, scalar_power
from inferbound.step.table import StepModel

try:  # numpy's SIMD pow/expm1 (SVML) run only on AVX512_SKX CPUs
    from numpy._core._multiarray_umath import __cpu_features__ as _cpu
except ImportError:  # pragma: no cover - older numpy
    from numpy.core._multiarray_umath import __cpu_features__ as _cpu
REL = 1e-15 if _cpu.get("AVX512_SKX") else 0.0

# deepseek-v3 (MLA, q ~ 2): compute and memory sides close, the pows taken; the GQA models: far apart, the
# shortcut of decode_only_array (no pow where every ratio is below 2^(−56/q))
MODELS = [("llama-3.1-8b", "h100_sxm"), ("google/gemma-2-9b", "h100_sxm"), ("llama-3.1-8b", "mi300x"),
          ("deepseek-v3", "h100_sxm")]


@pytest.fixture(scope="module", params=MODELS, ids=lambda p: f"{p[0]}@{p[1]}")
def sm(request):
    name, gpu = request.param
    return StepModel(make_deployment(model=name, gpu=gpu, calibration="none"), 4096)


def _same(a: float, b: float) -> bool:
    return a == b if REL == 0.0 else abs(a - b) <= REL * abs(b)


def test_array_prices_equal_the_scalar_closure_on_random_runs(sm):
    rng = np.random.default_rng(22)
    for n in (1, 3, 8, 31, 64, 200, 511):
        ctx = rng.integers(1, 7000, n).astype(float)
        price, prices = sm.decode_run(ctx), sm.decode_run_array(ctx)
        s = np.sort(rng.choice(1024, 60, replace=False)).astype(float)
        d, w = prices(s)
        assert d.shape == w.shape == s.shape
        for i, si in enumerate(s.tolist()):
            t_ref, w_ref = price(int(si))
            assert _same(float(d[i]), t_ref) and _same(float(w[i]), w_ref), (n, si, float(d[i]), t_ref)


def test_decode_kernel_shortcut_equals_the_pows():
    """decode_only_array's shortcut (1.0 + r**q rounds to 1.0 for r < 2^(−56/q)) against the pows taken
    on every step and against decode_only's floats, for llama-3.1-8b (memory-bound decode: r ~ 0.01-0.07,
    below 2^(−56/20) = 0.1436)."""
    from inferbound.pricing.attention_scalar import decode_only, decode_only_array
    sm = StepModel(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", calibration="none"), 4096)
    sm.decode_run_array(np.array([1.0]))
    consts = sm._att[0][0][7]
    one, short, full = decode_only(consts), decode_only_array(consts), decode_only_array(consts, shortcut=False)
    for n in (1.0, 8.0, 64.0, 300.0):
        dp = n * np.arange(2.0, 9000.0, 97.0)
        (k1, o1), (k2, o2) = short(dp, n, n), full(dp, n, n)
        assert np.array_equal(k1, k2) and o1 == o2
        for i in range(dp.size):
            c, m, o = one(float(dp[i]), n, n)
            assert _same(float(k1[i]), c + m) and _same(o1, o)


def test_array_power_equals_the_scalar_one_including_the_clips():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", calibration="none")
    one, many = scalar_power(dep.gpu, dep.compute_dtype), array_power(dep.gpu, dep.compute_dtype)
    peak, bw = dep.gpu.peak_flops[dep.compute_dtype], dep.gpu.hbm_bw
    t = np.array([1e-3, 2e-3, 1e-40, 5e-3, 1e-2])
    # u_c = 0.3, 2 (clipped to 1), huge (t floored at 1e-30, clipped), 0, 0.5; u_m alike
    flops = np.array([0.3 * 1e-3 * peak, 2.0 * 2e-3 * peak, 1.0, 0.0, 0.5 * 1e-2 * peak])
    moved = np.array([0.9 * 1e-3 * bw, 0.1 * 2e-3 * bw, 1.0, 1.5 * 5e-3 * bw, 0.0])
    got = many(flops, moved, t)
    for i in range(t.size):
        assert _same(float(got[i]), one(float(flops[i]), float(moved[i]), float(t[i])))
    # the clipped steps are at the cap: u_c = 1 with 2x the peak, so power equals u_c = 1 exactly
    assert float(got[1]) == one(1.0 * 2e-3 * peak, 0.1 * 2e-3 * bw, 2e-3)


def test_accumulate_is_the_event_loops_sum_in_order():
    rng = np.random.default_rng(5)
    d = rng.random(1000) * 1e-2
    e0 = 1234.5678
    acc = np.empty(d.size + 1)
    acc[0], acc[1:] = e0, d
    ends = np.add.accumulate(acc)
    e = e0
    for i, x in enumerate(d.tolist()):
        e = e + x
        assert ends[i + 1] == e
    assert float(ends[-1]) == e


def test_simulate_with_array_runs_equals_scalar_runs_bit_for_bit(monkeypatch):
    """The whole simulation with long runs priced by decode_run_array equals the one with every step of
    every run priced by the scalar closure (SHORT_RUN past any run): every request's times and every
    step sample, ==."""
    import inferbound.sim.decode_run as dr
    from inferbound.sim import simulate
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", calibration="none")
    kw = dict(rate=2.0, requests=60, input_len=300, output_len=400, seed=3)
    with monkeypatch.context() as m:
        m.setattr(dr, "SHORT_RUN", 10**9)
        ref = simulate(dep, **kw)
    calls = []
    real = dr._array_steps
    monkeypatch.setattr(dr, "_array_steps", lambda *a: (calls.append(1), real(*a))[1])
    got = simulate(dep, **kw)
    assert calls  # the array path ran
    for name in ("first_s", "finish_s", "last_s", "admit_s"):
        assert getattr(got.run.ledger, name) == getattr(ref.run.ledger, name), name
    a, r = got.run.ledger.sample_array(), ref.run.ledger.sample_array()
    w = SAMPLE_FIELDS.index("watts_per_gpu")
    assert np.array_equal(np.delete(a, w, axis=1), np.delete(r, w, axis=1))  # times, tokens, blocks: ==
    # power: the same formula over an array or a scalar; numpy >= 2.4 evaluates exp over an array with SIMD
    # kernels that differ from the scalar one in the last bit (seen: 421 of 4,658 steps, |rel| 1.2e-16)
    np.testing.assert_allclose(a[:, w], r[:, w], rtol=1e-14, atol=0)
    v1, c1 = got.run.ledger._weighted_gaps()
    v0, c0 = ref.run.ledger._weighted_gaps()
    assert np.array_equal(v1, v0) and np.array_equal(c1, c0)


def test_taken_by_counts_the_blocks_by_hand():
    """taken_by: the blocks of steps 0..k−1 without the per-step list. Block size 4, next blocks in 0, 2 and
    5 steps (tests/test_sim_fastpath.py's example): a_s = 1 0 1 0 1 1 1 0 1 1, so the first k steps take
    0, 1, 1, 2, 2, 3, 4, 5, 5, 6, 7 blocks for k = 0..10."""
    from inferbound.sim.decode_run import blocks_per_step, taken_by
    first = np.array([0.0, 2.0, 5.0])
    assert [taken_by(first, 4, k) for k in range(11)] == [0, 1, 1, 2, 2, 3, 4, 5, 5, 6, 7]
    rng = np.random.default_rng(9)
    for _ in range(50):  # and Σ of blocks_per_step's list on random runs
        bs, steps = int(rng.integers(1, 33)), int(rng.integers(1, 400))
        first = rng.integers(0, 3 * bs, int(rng.integers(1, 40))).astype(float)
        assert taken_by(first, bs, steps) == sum(blocks_per_step(first, bs, steps))


def test_table_prices_equal_the_array_prices(sm):
    """StepModel.decode_run_table (the prices of (n, D) kept by content) gives decode_run_array's floats (==) on
    runs that share blocks and runs that cross them, and None past TABLE_SEQS sequences or for a window kind."""
    from inferbound.step.table_scalar import TABLE_BLOCK, TABLE_SEQS
    rng = np.random.default_rng(18)
    windowed = any(k[0] != "full" for k in sm._kinds)
    for n in (1, 2, 5, TABLE_SEQS):
        for _ in range(6):
            ctx = rng.integers(1, 3000, n).astype(float)
            at = sm.decode_run_table(ctx)
            if windowed:
                assert at is None
                continue
            prices = sm.decode_run_array(ctx)
            s0, m = int(rng.integers(0, 600)), int(rng.integers(1, 2 * TABLE_BLOCK + 3))
            d, w = at(s0, m)
            d_ref, w_ref = prices(np.arange(s0, s0 + m, dtype=float))
            assert np.array_equal(d, d_ref) and np.array_equal(w, w_ref), (n, s0, m)
    assert sm.decode_run_table(np.full(TABLE_SEQS + 1, 100.0)) is None
