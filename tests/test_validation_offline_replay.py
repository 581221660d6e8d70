"""A finite offline run replayed (validation/offline_replay.py): every prompt at t = 0, lengths from the classes,
throughput = prompts / makespan as vLLM's benchmark_throughput computes it; worked by hand where it can be."""
from __future__ import annotations

import math

import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.runtime import offline_runtime
from inferbound.step import contract as step
from inferbound.validation.dataset import parse_row
from inferbound.validation.mix_requests import mix_requests
from inferbound.validation.offline_replay import (REPLAY_MAX_REQUESTS, offline_deployment, replay_offline,
                                                  replays)
from inferbound.validation.predict import deployment_for, predict_rows, row_lengths
from inferbound.workloads.lengths import Mix, fixed, from_dataset
from inferbound.workloads.max_throughput import max_throughput

# (0.5, 0.3, 0.2) of 7 requests: 3.5, 2.1, 1.4 -> floors 3, 2, 1; the one left to the largest fraction (0.5):
# 4 of (100 in, 10 out), 2 of (200, 20), 1 of (300, 400)
MIX = Mix((0.5, 0.3, 0.2), (100.0, 200.0, 300.0), (10.0, 20.0, 400.0), "three classes")
IN_TOKENS = 4 * 100 + 2 * 200 + 1 * 300  # 1100
OUT_TOKENS = 4 * 10 + 2 * 20 + 1 * 400  # 480


def _dep():
    return make_deployment(model="llama-3.1-8b", gpu="h200_sxm", num_gpus=1)


def test_every_prompt_at_zero_with_the_class_counts():
    reqs = mix_requests(MIX, math.inf, 7, seed=0)
    assert {r.arrival_s for r in reqs} == {0.0}
    assert sorted((r.input_len, r.output_len) for r in reqs) == [(100, 10)] * 4 + [(200, 20)] * 2 + [(300, 400)]


def test_the_offline_runtime_is_the_one_simulated():
    dep = _dep()
    off = offline_deployment(dep, MIX)
    # vLLM's LLM class runs with its offline token budget (engines.yaml token_budget_offline), not the server's
    assert off.runtime.token_budget == offline_runtime(dep).token_budget
    assert off.runtime.token_budget != dep.runtime.token_budget
    assert offline_deployment(dep, MIX, concurrency=4).runtime.max_num_seqs == 4  # a stated cap wins


def test_throughput_is_prompts_over_the_makespan():
    dep = _dep()
    r = replay_offline(dep, MIX, 7)
    T = 7 / r["requests_per_s"]
    # the hand totals over the makespan: 480 output and 1100 + 480 total tokens
    assert r["output_tok_s"] == pytest.approx(OUT_TOKENS / T, rel=1e-12)
    assert r["total_tok_s"] == pytest.approx((IN_TOKENS + OUT_TOKENS) / T, rel=1e-12)
    # the drain: the 400-token request needs 399 decode steps after its first token, each at least a one-sequence
    # decode step at >= 300 cached tokens, so T >= 399 · t_dec(1, 300) (its prefill comes on top)
    t1 = float(step.decode(dep, 1, 300).time)
    assert T >= 399 * t1
    # and the mean E2E (from t = 0) is at most the makespan
    assert r["e2e_ms"] <= T * 1e3 * (1 + 1e-9)
    assert "replayed: 7 prompts at t = 0" in r["_note"] and "3 length classes" in r["_note"]


def test_which_rows_are_replayed():
    assert replays(MIX, 200) and replays(MIX, REPLAY_MAX_REQUESTS)
    assert not replays(MIX, REPLAY_MAX_REQUESTS + 1)  # long runs: the analytic finite run
    assert not replays(MIX, None)  # no stated run
    assert not replays(fixed(229.7, 203.1), 200)  # one class: the analytic one-wave run is exact for it


def _row(**over):
    raw = {"case": "t-1", "source": "test", "model": "meta-llama/Llama-3.1-8B", "gpu": "h200_sxm",
           "num_gpus": "1", "framework": "vLLM", "scenario": "max_throughput", "request_rate": "inf",
           "num_requests": "60", "metric": "requests_per_s", "value": "10", "input_len": "", "output_len": "",
           "dataset": "arxiv_summarization"}
    raw.update(over)
    row = parse_row(raw, 2)
    assert not hasattr(row, "reason"), getattr(row, "reason", "")
    return row


def test_a_validation_row_is_replayed_and_says_so():
    row = _row()
    (p,) = predict_rows([row])
    assert p.covered and "replayed: 60 prompts at t = 0" in p.reason and "arxiv_summarization" in p.reason
    direct = replay_offline(deployment_for(row), row_lengths(row), 60)
    assert p.predicted == direct["requests_per_s"]
    # over the cap, or with one class: the analytic run, and the reason says why
    (q,) = predict_rows([_row(num_requests=str(REPLAY_MAX_REQUESTS + 1))])
    assert q.covered and "not replayed" in q.reason and "replayed:" not in q.reason
    (s,) = predict_rows([_row(dataset="sharegpt", num_requests="200")])
    assert "not replayed (its lengths are one class, no spread cited)" in s.reason


def test_the_replay_agrees_with_the_analytic_one_wave_run():
    """200 prompts fit one wave (vLLM's offline cap is above 200 here): the analytic run (max_throughput.finite_run:
    prefill steps, then the batch shrinking class by class) and the simulated one price the same drain."""
    dep, mix = _dep(), from_dataset("arxiv_summarization")
    a = max_throughput(dep, num_requests=200, lengths=mix)
    assert a.concurrency >= 200  # one wave
    analytic = a.run_output_tok_s / a.output_len
    replayed = replay_offline(dep, mix, 200)["requests_per_s"]
    assert replayed == pytest.approx(analytic, rel=0.03)
    assert replayed < 0.8 * a.requests_per_s  # and both well below the steady state, which has no drain
