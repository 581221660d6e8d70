"""Multi-step scheduling in the analytic serving model (vLLM V0 ``--num-scheduler-steps N``;
deploy/engine_modes.py, data/engines.yaml ``scheduler_steps``, https://github.com/vllm-project/vllm/pull/7000).

One scheduler call runs N decode steps of t seconds each and admits no prompt in between; the batch's tokens
reach the client at the call's end (vLLM v0.6.0). With N = 1 every figure is the single-step one.

    decode-step rest an arrival waits out   N·t/2       (the call in flight, seen at a uniform point)
    inter-token gap as a benchmark records  N·t         (one gap per streamed chunk of N tokens:
                                                         sglang.bench_serving / vLLM benchmark_serving.py
                                                         ``itl.append(timestamp - most_recent_timestamp)``)
    TPOT = (E2E − TTFT)/(O − 1)              t + (N − 1)·t/(2·(O − 1))
    E2E                                      + (N − 1)·t/2  (the last call runs its N steps whatever step
                                                         the request ends in: (N − 1)/2 unused on average)

Example: N = 10, t = 14 ms: a burst every 140 ms (ITL 140 ms), TTFT +70 ms of mean wait for the call in
flight, E2E +63 ms.
"""
from __future__ import annotations


def steps_of(rt) -> int:
    """N of a Runtime (1 without multi-step scheduling)."""
    return int(getattr(rt, "scheduler_steps", 1) or 1)


def call_rest(t, rt):
    """Mean rest of the scheduler call in flight an arrival waits out: N·t/2 (t: one decode step)."""
    return steps_of(rt) * t / 2


def chunk_gap(t, rt):
    """The inter-token gap a streaming benchmark records: N·t, one per chunk of N tokens."""
    return steps_of(rt) * t


def tail(t, rt):
    """E2E's unused steps of the last call: (N − 1)·t/2."""
    return (steps_of(rt) - 1) * t / 2
