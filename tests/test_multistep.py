"""Multi-step scheduling (vLLM V0 --num-scheduler-steps) and eager steps (cuda_graphs off): the engine modes of
deploy/engine_modes.py in the runtime, the simulator (sim/decode_run.py burst), the analytic serving model
(workloads/multistep.py), validation rows and serve commands. Expected values are hand computations."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from inferbound import make_deployment
from inferbound.bench.serve import parse_serve
from inferbound.pricing import graphs as G
from inferbound.sim import simulate
from inferbound.step import contract as step
from inferbound.step.table import StepModel
from inferbound.validation.dataset import parse_row
from inferbound.validation.predict import row_engine_options
from inferbound.workloads import multistep, steady_state
from inferbound.workloads.serving import serving


def _llama(**opts):
    return make_deployment(model="llama-3.1-8b", gpu="a100_80gb_sxm", engine="vllm@0.6.3", calibration="none",
                           engine_options=opts)


# -- the runtime ---------------------------------------------------------------------------------------------
def test_profile_default_is_one_step_and_the_option_sets_n():
    assert _llama().runtime.scheduler_steps == 1  # engines.yaml: num_scheduler_steps: int = 1
    rt = _llama(scheduler_steps=10).runtime
    assert rt.scheduler_steps == 10
    assert any("multi-step scheduling: 10 decode steps" in n for n in rt.notes)


@pytest.mark.parametrize("bad", [0, 2.5, True])
def test_bad_steps_are_refused_naming_the_field(bad):
    with pytest.raises(ValueError, match="scheduler_steps="):
        _llama(scheduler_steps=bad)


def test_v1_engines_have_no_multi_step():
    with pytest.raises(ValueError, match=r"scheduler_steps=10: engine='vllm@0\.8\.5' has no multi-step.*allowed"):
        make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.8.5", engine_options={"scheduler_steps": 10})


def test_cuda_graphs_off_runs_every_step_eagerly():
    rt = _llama(cuda_graphs="off").runtime
    assert rt.cuda_graph_max_batch == 0
    plan = G.plan_of(rt.engine, rt.cuda_graph_max_batch)
    assert (plan.decode, plan.mixed) == (G.EAGER, G.EAGER)
    assert _llama(cuda_graphs="on").runtime.cuda_graph_max_batch == _llama().runtime.cuda_graph_max_batch > 0
    with pytest.raises(ValueError, match="cuda_graphs='maybe' unknown; allowed: on, off"):
        _llama(cuda_graphs="maybe")


def test_eager_decode_sums_every_kernel_fixed_cost():
    """DeepSeek-V3 on 8 H200 (SGLang): the per-kernel fixed costs of tests/test_graph_costs.py, summed eagerly
    at a batch the graphs would capture (32 <= 512) once cuda_graphs is off."""
    fp8, bf16, mla, roof = 4.83561e-6, 2.55042e-6, 1.67909e-5, 2.0e-6
    host_step, host_seq = 1.0e-3, 3.1e-6
    eager = (61 * 2 * fp8 + 61 * mla + 61 * roof + 3 * 2 * fp8 + 58 * bf16 + 58 * 2 * fp8 + 58 * 2 * fp8
             + 2 * roof + bf16)  # 3.0415 ms (61 layers, 58 of them MoE)
    dep = make_deployment(model="deepseek-v3", gpu="h200_sxm", num_gpus=8, tp=8, ep=8, weight_dtype="fp8",
                          act_dtype="fp8", engine="sglang", calibration="none", engine_options={"cuda_graphs": "off"})
    cost = step.decode(dep, 32, 2048)
    assert float(cost.split["overhead"]) == pytest.approx(eager + host_step + host_seq * 32, rel=1e-9)


# -- the analytic model ----------------------------------------------------------------------------------------
def test_multistep_formulas_by_hand():
    rt = _llama(scheduler_steps=10).runtime
    t = 0.014  # 14 ms per decode step
    assert multistep.chunk_gap(t, rt) == pytest.approx(0.140)  # a burst of 10 tokens every 10 * 14 ms
    assert multistep.call_rest(t, rt) == pytest.approx(0.070)  # mean rest of the call in flight: N/2 steps
    assert multistep.tail(t, rt) == pytest.approx(0.063)  # (N - 1)/2 unused steps of the last call
    one = _llama().runtime
    assert (multistep.chunk_gap(t, one), multistep.call_rest(t, one), multistep.tail(t, one)) == \
        pytest.approx((0.014, 0.007, 0.0))


def test_ttft_wait_for_the_call_in_flight_is_n_over_2_steps():
    """steady_state.ttft's wait W = seen·(1 − u)·N·t_0/2 + R_p/(1 − u): at the same load, N = 10 instead of 1
    adds seen·(1 − u)·9·t_0/2."""
    d1, d10 = _llama(), _llama(scheduler_steps=10)
    mix = steady_state.as_mix(512, 128)
    sm = StepModel(d1, d1.runtime.token_budget + 1)
    st = steady_state.steps(sm, d1.runtime, 20.0, mix)
    _, w1, u = steady_state.ttft(sm, d1.runtime, 20.0, mix, st, 2.0, 0.9)
    _, w10, _ = steady_state.ttft(sm, d10.runtime, 20.0, mix, st, 2.0, 0.9)
    t0 = float(st.decode.time)
    assert float(w10 - w1) == pytest.approx(0.9 * (1 - float(u)) * 9 * t0 / 2, rel=1e-9)


def test_serving_itl_is_the_burst_gap_and_tpot_adds_the_last_call():
    s = serving(_llama(scheduler_steps=10), rate=2.0, input_len=512, output_len=129)
    t = s.step_time_s
    assert s.itl_s == pytest.approx(10 * t)  # one gap per chunk of 10 tokens
    assert s.tpot_s == pytest.approx(t + 9 * t / 2 / 128)  # (E2E − TTFT)/(O − 1), O = 129


# -- the simulator ---------------------------------------------------------------------------------------------
def _alone(output_len: int, n: int):
    """One request alone (no other arrival: every decode runs in bursts of n steps)."""
    return simulate(_llama(scheduler_steps=n), rate=0.001, requests=1, input_len=128, output_len=output_len,
                    seed=0).summary


def test_one_request_streams_in_bursts_of_n_tokens():
    """output 21: the prefill's token, then 20 decode tokens in 2 chunks of 10: two gaps, each of 10 steps, so
    mean ITL = (E2E − TTFT)/2 = 10·TPOT (TPOT = (E2E − TTFT)/20)."""
    r = _alone(21, 10)
    assert r["itl_ms_mean"] == pytest.approx(10 * r["tpot_ms_mean"], rel=1e-9)
    assert r["itl_ms_mean"] == pytest.approx((r["e2e_ms_mean"] - r["ttft_ms_mean"]) / 2, rel=1e-9)
    single = _alone(21, 1)
    assert single["itl_ms_mean"] == pytest.approx(single["tpot_ms_mean"], rel=1e-9)  # one token per chunk
    # the same 20 steps either way (the step's context grows alike): the same E2E
    assert r["e2e_ms_mean"] == pytest.approx(single["e2e_ms_mean"], rel=1e-6)


def test_the_last_call_runs_all_n_steps():
    """output 16: 15 decode tokens in calls of 10 steps: 2 calls, 20 steps, the last 5 unused. TPOT = 20·t/15,
    mean ITL = 20·t/2 = 10·t: ITL/TPOT = 15/2 (steps alike within the context's growth: 1 %)."""
    r = _alone(16, 10)
    assert r["itl_ms_mean"] / r["tpot_ms_mean"] == pytest.approx(7.5, rel=1e-9)
    single = _alone(16, 1)  # 15 steps of t
    assert r["e2e_ms_mean"] - r["ttft_ms_mean"] == pytest.approx(
        20 / 15 * (single["e2e_ms_mean"] - single["ttft_ms_mean"]), rel=0.01)


# -- rows and commands -----------------------------------------------------------------------------------------
def _raw(**extra):
    raw = {"case": "x", "source": "s", "model": "llama-3.1-8b", "gpu": "a100_80gb_sxm", "num_gpus": "1",
           "scenario": "serving", "metric": "itl_ms_p50", "value": "129.3", "request_rate": "4",
           "input_len": "512", "output_len": "128", "framework": "vLLM", "engine_version": "0.6.0"}
    raw.update(extra)
    return raw


def test_row_columns_become_engine_options():
    row = parse_row(_raw(scheduler_steps="10", cuda_graphs="off"), 2)
    assert (row.scheduler_steps, row.cuda_graphs) == (10, False)
    assert row_engine_options(row) == {"scheduler_steps": 10, "cuda_graphs": "off"}
    assert row_engine_options(parse_row(_raw(), 2)) == {}
    bad = parse_row(_raw(cuda_graphs="sometimes"), 3)
    assert "cuda_graphs='sometimes' unknown; allowed: on, off" in bad.reason


def test_public_rows_that_ran_multi_step_or_eager_say_so():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "measured_public.csv"
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    for r in rows:  # the column agrees with the launch flags the notes quote
        assert (r.get("scheduler_steps") == "10") == ("--num-scheduler-steps 10" in r["notes"])
        assert (r.get("cuda_graphs") == "off") == any(f in r["notes"] for f in ("--disable-cuda-graph", "--enforce-eager"))


def test_serve_commands_carry_the_flags():
    v = parse_serve("vllm serve meta-llama/Llama-3.1-8B --num-scheduler-steps 10 --enforce-eager")
    assert v.engine_options["scheduler_steps"] == 10 and v.engine_options["cuda_graphs"] == "off"
    s = parse_serve("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --disable-cuda-graph")
    assert s.engine_options["cuda_graphs"] == "off"
    assert "cuda_graphs" not in parse_serve("vllm serve meta-llama/Llama-3.1-8B").engine_options
