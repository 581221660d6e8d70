"""Short outputs: the steady state's decodes stay within the token-budget cap (a step past the budget is not
run by the engine, and the step table refuses to price it). Before, `estimate --scenario serving --output 16`
failed with "steps of up to 8588 tokens exceed the tabulated max_tokens=8193"."""
import numpy as np
import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.workloads import serving as S, steady_state as ss


def test_budget_cap_worked_by_hand_and_never_passed():
    dep = make_deployment("llama-3.1-8b", "h100_sxm")  # vLLM default profile: token budget 8192, one group
    mix = ss.as_mix(1024, 16)
    r = S._Replica(dep, mix, False, 0, 0)
    # p = 1/(o − 1) = 1/15 new prompts per decode step; a mixed step carries D decodes + D·p·1024 prompt tokens:
    # D_max = 8192 / (1 + 1024/15) = 8192 / 69.2667 = 118.27
    assert abs(r.caps["token budget"] - 8192 / (1 + 1024 / 15)) < 1e-6
    assert abs(r.caps["token budget"] - 118.27) < 0.01
    p = r.at(np.array([r.c_max]))
    assert float(np.max(p["d"])) <= r.caps["token budget"] + 1e-9


def test_serving_with_sixteen_output_tokens_runs():
    """It runs, and its figures keep the serving identities by hand: open loop at R = 1 request/s with O = 16,
    output tok/s = R·O = 16; E2E = TTFT + (O − 1)·TPOT = TTFT + 15·TPOT; requests in service C = R·E2E (Little)."""
    est = S.serving(make_deployment("llama-3.1-8b", "h100_sxm"), rate=1.0, input_len=1024, output_len=16)
    assert est.ttft_s["mean"] > 0 and est.tpot_s > 0
    assert est.output_tok_s == pytest.approx(1.0 * 16, rel=1e-9)
    assert est.e2e_s["mean"] == pytest.approx(est.ttft_s["mean"] + 15 * est.tpot_s, rel=1e-9)
    # C = λ·E2E(C) is solved as a fixed point (serving.py r.solve): Little's law holds to its tolerance
    assert est.in_service == pytest.approx(1.0 * est.e2e_s["mean"], rel=1e-4)
