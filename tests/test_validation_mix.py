"""The length-mix rule of validation/mix_requests.py, worked by hand, and its use by open-loop validation rows."""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.sim import simulate
from inferbound.validation.dataset import parse_row
from inferbound.validation.mix_requests import class_counts, mix_requests
from inferbound.validation.predict import predict_rows, row_lengths
from inferbound.workloads.lengths import Mix
from inferbound.workloads.requests import poisson_noted


def test_class_counts_are_the_largest_remainder_rounding():
    # (0.75, 0.25) of 8: 6.0 and 2.0 exactly
    assert class_counts((0.75, 0.25), 8).tolist() == [6, 2]
    # (0.5, 0.3, 0.2) of 7: 3.5, 2.1, 1.4 -> floors 3, 2, 1 (6); the one left goes to the largest fraction, 0.5
    assert class_counts((0.5, 0.3, 0.2), 7).tolist() == [4, 2, 1]
    # a tie (1.5, 1.5 of 3) goes to the earlier class; unnormalized shares are divided by their sum
    assert class_counts((1.0, 1.0), 3).tolist() == [2, 1]
    with pytest.raises(ValueError, match="weights="):
        class_counts((0.5, -0.1), 4)
    with pytest.raises(ValueError, match="n="):
        class_counts((1.0,), 0)


def test_mix_requests_keep_the_arrivals_and_the_shares():
    mix = Mix((0.75, 0.25), (100.4, 300.6), (64.0, 511.5), "two classes")
    reqs = mix_requests(mix, rate=2.0, n=8, seed=3)
    fixed, _ = poisson_noted(2.0, 8, 1, 2, 3)
    assert [r.arrival_s for r in reqs] == [r.arrival_s for r in fixed]  # the same Poisson times as a fixed run
    pairs = sorted((r.input_len, r.output_len) for r in reqs)
    assert pairs == [(100, 64)] * 6 + [(301, 512)] * 2  # 6 and 2 requests, lengths rounded (511.5 -> 512)
    assert [r.output_len for r in reqs] != [64] * 6 + [512] * 2  # shuffled over the run, not in class blocks


def _e2e(dep_kwargs, rate, n, trace=None, input_len=128, output_len=64):
    s = simulate(rate=rate, requests=n, input_len=input_len, output_len=output_len, trace=trace, seed=0,
                 **dep_kwargs).summary
    return s


def test_percentiles_over_a_mix_follow_the_class_shares():
    """Isolated requests (one every ~500 s, each done in seconds): every request of a class has the E2E of a
    fixed-length run of that class. 40 requests, 3/4 of O = 64 and 1/4 of O = 512: 30 short then 10 long in E2E
    order. numpy's p50 sits at rank 0.5·39 = 19.5, inside the 30 short ones (ranks 0-29): E2E_short; p90 at rank
    0.9·39 = 35.1, inside the long ones (30-39): E2E_long; the mean is (30·E2E_short + 10·E2E_long) / 40."""
    dep = {"model": "llama-3.1-8b", "gpu": "h100_sxm", "num_gpus": 1}
    rate, n = 0.002, 40
    mix = Mix((0.75, 0.25), (128.0, 128.0), (64.0, 512.0), "short and long")
    run = _e2e(dep, rate, n, trace=mix_requests(mix, rate, n, seed=0))
    short = _e2e(dep, rate, n, output_len=64)["e2e_ms_mean"]
    long = _e2e(dep, rate, n, output_len=512)["e2e_ms_mean"]
    assert long > 5 * short  # the classes are far apart, so a wrong share would show
    assert run["e2e_ms_p50"] == pytest.approx(short, rel=0.01)
    assert run["e2e_ms_p90"] == pytest.approx(long, rel=0.01)
    assert run["e2e_ms_p99"] == pytest.approx(long, rel=0.01)
    assert run["e2e_ms_mean"] == pytest.approx((30 * short + 10 * long) / 40, rel=0.01)


def _row(**over):
    raw = {"case": "t-1", "source": "test", "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "h100_sxm",
           "num_gpus": "1", "framework": "vLLM 0.6.3", "scenario": "serving", "request_rate": "2",
           "num_requests": "300", "metric": "e2e_ms_p50", "value": "1000", "input_len": "", "output_len": ""}
    raw.update(over)
    row = parse_row(raw, 2)
    assert not hasattr(row, "reason"), getattr(row, "reason", "")
    return row


def test_a_prompt_class_profile_takes_the_rows_output_mean():
    # mlperf_llama2_70b_openorca: 16 measured prompt classes, outputs unpublished -> the row's 290.3 in each class
    mix = row_lengths(_row(dataset="mlperf_llama2_70b_openorca", output_len="290.3"))
    assert len(mix.weights) == 16 and set(mix.outputs) == {290.3}
    assert mix.mean_input == pytest.approx(222.3, abs=0.1)
    assert "not published" in mix.notes[0]


def test_open_loop_rows_name_the_length_distribution_used():
    mlperf = _row(dataset="mlperf_llama2_70b_openorca", output_len="290.3", metric="ttft_ms_p99")
    share = _row(dataset="sharegpt", metric="ttft_ms_p99")
    p_mlperf, p_share = predict_rows([mlperf, share])
    assert p_mlperf.covered and "16 length classes" in p_mlperf.reason
    assert p_share.covered and "no length distribution is cited" in p_share.reason
    # prompts drawn from the 66-689 token classes give a wider TTFT tail than every prompt at their 222.3-token
    # mean (the same arrivals, seed 0): the p99 request's prompt is of the top class (688.7 tokens, 3.1x the
    # mean's prefill tokens); TTFT also holds the front end and the decode steps it shares, so the tail is
    # wider by less than 3.1x, but by more than 10 % (a one-class run would give the same tail: ratio 1)
    one = predict_rows([_row(input_len="222.3", output_len="290.3", metric="ttft_ms_p99")])[0]
    assert one.covered and "one class at 222.3 in" in one.reason
    assert 1.1 * one.predicted < p_mlperf.predicted < 3.1 * one.predicted
    assert np.isfinite(p_share.predicted)
