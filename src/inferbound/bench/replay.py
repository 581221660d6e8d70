"""A :class:`~inferbound.bench.load.Protocol` replayed in the serving simulator (sim/): warm-ups first, then
the measured requests, under the tool's own send schedule and concurrency limit.

The client (:class:`Gate`, an arrival source of the simulator): request k is released at its send time
r_k (sampling.send_times) and waits for a slot of the tool's semaphore (``--max-concurrency``; asyncio's
semaphore wakes waiters in order, so requests acquire in release order). With cap C and completions at
c_1 <= c_2 <= ..., request k (0-based) is sent at

    s_k = max(r_k, c_{k-C+1})        (c_j = 0 for j <= 0; no cap: s_k = r_k)

and its TTFT and latency are measured from s_k, as each tool starts its clock inside the semaphore. The
client-side queue time (vLLM ``client_queue_time``) is s_k − r_k. Rate inf and cap C is the closed loop of
C clients; no cap and a finite rate is the open loop.

Warm-ups run to completion before the measured phase, as every tool waits for them (vLLM and SGLang
``asyncio.gather``, perf_analyzer's warm-up phase). They are simulated as their own run: the simulator
carries no state from one run to the next that random prompts could use (no shared prefixes, so no prefix
cache hits), so the measured run is the one the engine would see after them. Their count and simulated
time are reported, and no figure includes them.

Under an engine's stream interval k (SGLang ``--stream-interval``) the client sees chunks of k tokens
(workloads/streaming.chunk_view): the first chunk's time is the first token's (or k − 1 steps later, SGLang
<= 0.4.7), and a tool that records one ITL per chunk (:func:`itl_per_chunk`) gets the gaps between chunks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..deploy.deployment import Deployment
from ..sim.config import sim_config
from ..sim.event_loop import simulate_run
from ..sim.metrics import request_table
from ..sim.sources import Source
from ..workloads.requests import Request
from ..workloads.streaming import chunk_view
from .argv import bench_data
from .load import Protocol


class Gate(Source):
    """Requests released at ``release_s`` (in order), at most ``cap`` in flight (None: no limit)."""

    def __init__(self, release_s, cap: int | None):
        self.release = [float(x) for x in release_s]
        self.cap = None if cap is None else int(cap)

    def start(self, ledger) -> None:
        super().start(ledger)
        self.k, self.completions = 0, []

    def next_time(self) -> float:
        if self.k >= len(self.release):
            return math.inf
        if self.cap is None:
            return self.release[self.k]
        need = self.k - self.cap + 1  # completions that must have happened before request k gets a slot
        if need > len(self.completions):
            return math.inf
        return max(self.release[self.k], self.completions[need - 1] if need >= 1 else 0.0)

    def pop(self) -> int:
        t = self.next_time()
        rid = self.k
        self.ledger.arrival[rid] = t
        self.k += 1
        return rid

    def finished(self, rid: int, t: float) -> None:
        self.completions.append(t)


@dataclass
class Outcome:
    """Per measured request (send order): release, send, first token, finish (s); lengths; pooled gaps (s)."""

    release_s: np.ndarray
    send_s: np.ndarray
    first_s: np.ndarray
    finish_s: np.ndarray
    inputs: np.ndarray
    outputs: np.ndarray
    itl_s: np.ndarray  # every gap between consecutive tokens of every request (each token after the first once)
    sender_done_s: float
    warmups: int
    warmup_s: float  # simulated time of the warm-up phase
    engine: str

    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_s - self.send_s

    @property
    def latency_s(self) -> np.ndarray:
        return self.finish_s - self.send_s

    @property
    def tpot_s(self) -> np.ndarray:
        """(latency − TTFT)/(output − 1) for requests with output > 1 (the tools' TPOT)."""
        keep = self.outputs > 1
        return (self.latency_s[keep] - self.ttft_s[keep]) / (self.outputs[keep] - 1)


def _requests(inputs, outputs) -> list[Request]:
    return [Request(i, 0.0, int(a), int(b)) for i, (a, b) in enumerate(zip(inputs, outputs))]


def _run(dep: Deployment, rt, inputs, outputs, release, cap, progress=None):
    cfg = sim_config(dep, rt)
    return simulate_run(dep, _requests(inputs, outputs), cfg, progress, Gate(release, cap))


def itl_per_chunk(proto: Protocol) -> bool:
    """Whether the load tool records one ITL sample per streamed chunk (data/bench.yaml ``itl_per_chunk``; SGLang's
    native backends split a chunk's gap over its tokens: ``itl_split_backends``), else one per token."""
    tool = bench_data()["load_tools"][proto.tool]
    return bool(tool.get("itl_per_chunk")) and proto.args.get("backend") not in tool.get("itl_split_backends", ())


def replay(dep: Deployment, proto: Protocol, rt=None, progress=None) -> Outcome:
    """Simulate ``proto`` on ``dep`` (runtime ``rt``, default the deployment's); see the module docstring.
    ``progress(done, total)``: the simulator's callback (it may raise to stop a run past a work budget)."""
    rt = rt or dep.runtime
    warm_s = 0.0
    if proto.warmup_inputs.size:
        w = _run(dep, rt, proto.warmup_inputs, proto.warmup_outputs, np.zeros(proto.warmup_inputs.size),
                 proto.warmup_concurrency, progress)
        warm_s = w.end_s - w.start_s
    run = _run(dep, rt, proto.inputs, proto.outputs, proto.send_s, proto.max_concurrency, progress)
    req = request_table(run)
    first, gaps = req["first_token_s"], run.ledger.gap_values()
    if rt.stream_interval > 1:  # the client sees chunks of k tokens (workloads/streaming.py)
        first, chunks = chunk_view(first, req["finish_s"], req["output_len"], rt.stream_interval, rt.stream_first)
        gaps = chunks if itl_per_chunk(proto) else gaps
    return Outcome(np.asarray(proto.send_s, dtype=float), req["arrival_s"], first, req["finish_s"],
                   req["input_len"].astype(np.int64), req["output_len"].astype(np.int64), gaps,
                   float(proto.sender_done_s), int(proto.warmup_inputs.size), float(warm_s), run.config.engine)
