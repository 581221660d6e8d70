"""One step contract: the tabulated step model equals the direct one, and every workload agrees.

- StepModel (tables over T) vs step.price (every operator priced) within 0.5 % for pp in {1, 2, 4},
  tp in {1, 2}, a dense and a MoE model, prefill, decode and mixed steps, both pipeline modes;
- the simulator's scalar path (StepModel.step) vs step.price on the same sequences;
- simulate with every request at t = 0 reproduces estimate's TTFT and TPOT (pp 1, 2, 4);
- the pipeline formula by hand for a stream and an isolated step.
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound import estimate
from inferbound import make_deployment, max_throughput
from inferbound.step import contract as step
from inferbound.sim import simulate
from inferbound.step.table import StepModel
from inferbound.workloads import steady_state
from inferbound.workloads.max_throughput import MAX_THROUGHPUT_GRID
from inferbound.pricing.collectives import comm_pricer_of
from inferbound.deploy.runtime import offline_runtime

LAYOUTS = [(pp, tp) for pp in (1, 2, 4) for tp in (1, 2)]


@pytest.fixture(scope="module", params=["llama-3.1-8b", "mixtral-8x7b-v0.1"])
def model(request):
    return request.param


def _dep(model, pp, tp):
    return make_deployment(model=model, gpu="h100_sxm", pp=pp, tp=tp, calibration="none")


def _loads(m):
    """A prefill, a decode and a mixed step (decodes at three contexts plus two chunks)."""
    return {"prefill": step.uniform(m, prompts=4, new=512),
            "decode": step.uniform(m, decode=16, context=2000),
            "mixed": step.of_sequences(m, [100.0, 900.0, 3000.0], [0, 512], [700, 256])}


@pytest.mark.parametrize("pp,tp", LAYOUTS)
@pytest.mark.parametrize("mode", ["stream", "isolated"])
def test_tabulated_step_equals_direct_step(model, pp, tp, mode):
    dep = _dep(model, pp, tp)
    exact, grid = StepModel(dep, 4096), StepModel(dep, 4096, grid_points=MAX_THROUGHPUT_GRID)
    for name, load in _loads(dep.model).items():
        direct = step.price(dep, load, mode)
        for sm in (exact, grid):
            tab = sm.price(load, mode)
            assert float(tab.time) == pytest.approx(float(direct.time), rel=5e-3), (name, sm.exact)
            assert float(tab.flops) == pytest.approx(float(direct.flops), rel=5e-3)
            assert float(tab.bytes) == pytest.approx(float(direct.bytes), rel=5e-3)
        if pp == 1:  # integer token counts index the exact table: equal to rounding
            assert float(exact.price(load, mode).time) == pytest.approx(float(direct.time), rel=1e-9)


@pytest.mark.parametrize("pp,tp", LAYOUTS)
def test_simulator_scalar_step_equals_direct_step(model, pp, tp):
    dep = _dep(model, pp, tp)
    sm = StepModel(dep, 4096)
    dec, chunks = [100.0, 900.0, 3000.0], [(0, 700), (512, 256)]
    load = step.of_sequences(dep.model, dec, [p for p, _ in chunks], [n for _, n in chunks])
    for mode in ("stream", "isolated"):
        t, watts = sm.step(np.array(dec), chunks, mode)
        direct = step.price(dep, load, mode)
        assert t == pytest.approx(float(direct.time), rel=5e-3 if pp > 1 else 1e-9)
        assert 0 < watts <= dep.gpu.power.tdp_w


def test_uniform_step_is_vectorized_like_single_steps(model):
    dep = _dep(model, 2, 1)
    sm = StepModel(dep, 8192, grid_points=MAX_THROUGHPUT_GRID)
    dec = np.array([1.0, 7.0, 40.0, 200.0])
    t, w = sm.uniform(dec, 1500.0, dec / 255, 1024.0)
    for i, d in enumerate(dec):
        t1, w1 = sm.uniform(d, 1500.0, d / 255, 1024.0)
        assert float(t[i]) == pytest.approx(float(t1), rel=1e-12)
        assert float(w[i]) == pytest.approx(float(w1), rel=1e-12)


@pytest.mark.parametrize("pp", [1, 2, 4])
def test_simulate_static_batch_equals_estimate(pp):
    """8 requests at t = 0 under a budget that holds all 8 prompts: one isolated prefill step, then
    127 decode steps in the stream, exactly estimate's static batch."""
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", pp=pp, calibration="none")
    e = estimate(dep, batch=8, input_len=1024, output_len=128)
    r = simulate(dep, rate=float("inf"), requests=8, input_len=1024, output_len=128)
    assert r["ttft_ms_mean"] == pytest.approx(e.ttft_s * 1e3, rel=1e-2)
    assert r["tpot_ms_mean"] == pytest.approx(e.tpot_s * 1e3, rel=1e-2)
    assert r["e2e_ms_mean"] == pytest.approx(e.e2e_s * 1e3, rel=1e-2)


def test_pipeline_stage_speedup_is_not_free():
    """PP shortens a static prefill only by fill and drain (m = 2 micro-batches of a batch of 8 over 2
    stages: 3 stage slots of 4 sequences, against 2 slots of 8 on one GPU), never by the stage count."""
    one = estimate(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", calibration="none"), batch=8,
                   input_len=1024, output_len=128)
    two = estimate(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", pp=2, calibration="none"), batch=8,
                   input_len=1024, output_len=128)
    assert 0.7 < two.ttft_s / one.ttft_s < 0.8   # ~ 3/4, not 1/2


def test_stream_and_isolated_formulas_by_hand():
    dep = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2, calibration="none")
    load = step.uniform(dep.model, decode=32, context=1000)
    m = 2.0                                         # min(32 sequences, pp = 2)
    half, kind = step.graph_step(dep, load.scaled(1 / m))  # 16 decodes: a captured CUDA-graph size (no padding)
    assert half.tokens == 16 and kind != 0
    parts = [step.price_ops(step.stage_ops(dep.model, dep.dtypes, dep.par, half.tokens, half.sampled,
                                           half.attention, layers, first, last,
                                           dep.gpu.efficiency.moe_imbalance), dep.gpu, dep.compute_dtype,
                            dep.dtypes.kv_dtype, comm_pricer_of(dep))
             for layers, first, last in step.stages_of(dep)]
    # each stage's fixed costs summed by the graph rule (tests/test_graph_costs.py checks graph_delta by hand)
    t = [float(p.time) + float(step.graph_delta(dep, i, kind)) for i, p in enumerate(parts)]
    s = float(step.send_seconds(dep, half.tokens))
    o = dep.gpu.efficiency.step_overhead_s
    assert float(step.price(dep, load, "stream").time) == pytest.approx(max(m * max(t), sum(t) + s) + o, rel=1e-12)
    assert float(step.price(dep, load, "isolated").time) == pytest.approx(sum(t) + (m - 1) * max(t) + s + o,
                                                                          rel=1e-12)


def test_search_evaluator_equals_max_throughput():
    from inferbound.search.evaluate import Workload, evaluate_layout
    dep = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2, calibration="none",
                          engine_options={"token_budget": 8192})
    mt = max_throughput(dep, input_len=1024, output_len=256, num_requests=10**9)
    assert offline_runtime(dep) == dep.runtime      # vLLM 0.33 on H100: the same budget online and offline
    pts = evaluate_layout(dep, Workload(input_len=1024, output_len=256))
    i = int(np.argmax(pts.tok_s))
    assert pts.tok_s[i] == pytest.approx(mt.output_tok_s, rel=1e-9)
    assert pts.step_s[i] == pytest.approx(mt.step_time_s, rel=1e-9)


def test_attention_dp_kv_cap_counts_every_group():
    """With attention data parallel over 8 groups each group holds its own sequences: the replica's KV
    cap is 8x one GPU's, not one GPU's."""
    dep = make_deployment(model="deepseek-ai/DeepSeek-V3", gpu="h200_sxm", tp=1, dp=8, ep=8, attention_dp=True,
                          weight_dtype="fp8", act_dtype="fp8", calibration="none")
    rt = dep.runtime
    seqs, capacity, kv_seq = steady_state.kv_sequences(dep, 1024, 1024, rt)
    assert seqs == pytest.approx(8 * capacity / kv_seq, rel=1e-12)
    caps, _, _ = steady_state.caps(dep, 1024, 1024, rt)
    assert caps["kv-cache"] == int(8 * capacity / kv_seq / (1 + 1 / 1023))
