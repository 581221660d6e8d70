"""SGLang's receive interval (``--scheduler-recv-interval k``, deploy/engine_modes.py) in the analytic serving model.

A request that arrives while the engine has work waits for the scheduler's next receive: SGLang's
SchedulerRecvSkipper (python/sglang/srt/managers/scheduler_recv_skipper.py) adds 1 per decode pass and 1000 per
prefill pass to a counter and takes in new requests when it reaches k, then starts again. An arrival at a random
point of a decode stretch finds the counter uniform over 0..k − 1, so it waits on average

    W = busy · (k − 1)/2 · t_d          t_d: the decode step at the operating point

(busy: the share of time the engine has work; an idle engine receives at once, so a closed loop of one client,
whose next request lands on an idle engine, waits nothing). A prefill pass makes the next pass receive, so where
prompts arrive more often than every k steps the real wait is shorter: the simulator, which applies the counter
itself (sim/scheduler.py), gives 0.8-0.9 of W at 4-64 clients (tests/test_recv_interval.py).
"""
from __future__ import annotations


def receive_wait(rt, decode_step_s, busy=1.0):
    """W of the module docstring, seconds (0 without a receive interval); arrays broadcast (a sweep's points)."""
    k = int(rt.recv_interval)
    return 0.0 if k <= 1 else busy * ((k - 1) / 2.0) * decode_step_s
