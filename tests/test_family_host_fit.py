"""Host work fitted per engine family (calibration/fit.py ``family_host_parameters``, ``base``): a fit keyed by
the family (``vllm``) that every version inherits (kernel_pricing.host_cost falls back to it), the base
calibration's other factors held fixed, and the prior-weighted least squares checked by hand.
"""
from __future__ import annotations

import csv
import dataclasses
import math

import numpy as np
import pytest

from inferbound.calibration import Calibration
from inferbound.calibration import fit as F
from inferbound.pricing.kernel_pricing import host_cost
from inferbound.validation import predict_rows, read_csv

ENGINE = "vllm@0.33.0"  # framework "test" names no profile: the default engine (engines.yaml default)
BASE = Calibration(kernel_factors={"gemm": 1.3})  # a factor the family fit must keep, not refit
TRUE = Calibration(kernel_factors={"gemm": 1.3}, engines={"vllm": {"step_s": 0.002, "seq_s": 1.0e-5}})
SETUPS = [(1, 128, 128), (1, 2048, 64), (4, 1024, 128), (8, 128, 512), (32, 256, 256), (64, 512, 64),
          (128, 128, 128), (256, 128, 32)]


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """Static-batch Llama-3.1-8B rows on h100_sxm whose measured values are the predictions under TRUE."""
    d = tmp_path_factory.mktemp("fam")
    base = dict(source="synthetic", model="meta-llama/Llama-3.1-8B", gpu="h100_sxm", num_gpus="1", tp="1", pp="1",
                weight_dtype="bf16", framework="test", scenario="static_batch", value="1")
    raw = [dict(base, case=f"c{b}_{s}_{n}", batch_size=str(b), input_len=str(s), output_len=str(n), metric=m)
           for b, s, n in SETUPS for m in ("ttft_ms", "output_tok_s_per_gpu")]
    path = d / "rows.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(raw[0]))
        w.writeheader()
        w.writerows(raw)
    rs, bad = read_csv(path)
    assert not bad
    return [dataclasses.replace(p.row, value=p.predicted) for p in predict_rows(rs, calibration=TRUE)]


def test_a_family_entry_is_what_its_versions_price_with():
    assert host_cost(ENGINE, TRUE) == (0.002, 1.0e-5)
    # a version's own entry wins over its family's
    both = Calibration(engines={"vllm": {"step_s": 0.002, "seq_s": 1e-5}, ENGINE: {"step_s": 0.003, "seq_s": 0.0}})
    assert host_cost(ENGINE, both) == (0.003, 0.0)


def test_family_parameters_are_its_host_work_with_the_engines_yaml_priors(rows):
    params = F.family_host_parameters(rows, "vllm")
    assert [p.name for p in params] == ["engines.vllm.step_s", "engines.vllm.seq_s"]
    step_s, _ = host_cost("vllm")
    assert params[0].prior == step_s
    assert F.family_host_parameters(rows, "sglang") == []  # no row runs it: nothing to fit
    assert F.family_host_parameters(rows[:F.MIN_ROWS_PER_ENGINE - 1], "vllm") == []


def test_family_fit_recovers_the_host_work_over_a_fixed_base(rows):
    cal, report = F.fit(rows, prior_sigma=None, params=F.family_host_parameters(rows, "vllm"), base=BASE,
                        max_evals=100)
    assert cal.engines["vllm"]["step_s"] == pytest.approx(0.002, rel=0.03)
    assert cal.engines["vllm"]["seq_s"] == pytest.approx(1.0e-5, rel=0.05)
    assert ENGINE not in cal.engines and cal.kernel_factors == {"gemm": 1.3}
    assert BASE.engines == {}  # the base is copied, not changed
    assert set(report["parameters"]) == {"engines.vllm.step_s", "engines.vllm.seq_s"}


def test_prior_weighted_fit_by_hand(monkeypatch):
    """Three rows whose log error is log(step_s / 2 ms), prior 1 ms with σ = PRIOR_SIGMA['step_s'] = 1:
    minimize 3(θ − ln 0.002)² + (θ − ln 0.001)²  ⇒  θ = (3 ln 0.002 + ln 0.001)/4,
    step_s = 0.002^(3/4) · 0.001^(1/4) = 1.6818 ms; without the prior, 2 ms exactly."""
    monkeypatch.setattr(F, "log_errors", lambda rs, cal: np.full(3, math.log(cal.engines["vllm"]["step_s"] / 0.002)))
    monkeypatch.setattr(F, "host_cost", lambda key: (0.001, 0.0))
    params = [F.Param("vllm", "step_s", 0.001)]
    cal, _ = F.fit([None] * 3, params=params, base=BASE)
    assert F.PRIOR_SIGMA["step_s"] == 1.0
    assert cal.engines["vllm"]["step_s"] == pytest.approx(0.002 ** 0.75 * 0.001 ** 0.25, rel=1e-4)
    assert cal.engines["vllm"]["seq_s"] == 0.0  # not fitted: its prior (host_cost), as the pricer needs both
    free, _ = F.fit([None] * 3, params=params, base=BASE, prior_sigma=None)
    assert free.engines["vllm"]["step_s"] == pytest.approx(0.002, rel=1e-4)
