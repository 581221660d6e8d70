"""Where requests come from: an open loop (arrival times fixed in advance) or closed-loop clients.

- :class:`OpenLoop`: Poisson arrivals or a trace; request i arrives at its own ``arrival_s`` whatever
  the server does (``vllm bench serve --request-rate``). The ledger orders requests by arrival.
- :class:`ClosedLoop`: N clients; each sends a request, waits for its last token, then (after
  ``think_s``) sends the next one, until all requests are issued (``vllm bench serve
  --max-concurrency``, NVIDIA genai-perf ``--concurrency``, SGLang ``bench_serving
  --max-concurrency``). The first N requests arrive at t = 0; request k > N arrives when the k−N-th
  completion's client is free again, so at most N requests are ever in the system. Requests keep
  their given order; their ``arrival_s`` is ignored and set when they are sent.
"""
from __future__ import annotations

import heapq
import math

from .ledger import Ledger
from ..workloads.requests import Request


class Source:
    """Issues arrivals to the event loop: ``next_time()`` (inf when none is pending), ``pop()`` (the next
    request's ledger index), ``finished(rid, t)`` (a request completed at t)."""

    def order(self, requests: list[Request]) -> list[Request]:
        return list(requests)

    def start(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def next_time(self) -> float:
        raise NotImplementedError

    def pop(self) -> int:
        raise NotImplementedError

    def finished(self, rid: int, t: float) -> None:
        pass


class OpenLoop(Source):
    def order(self, requests):
        return sorted(requests, key=lambda r: r.arrival_s)

    def start(self, ledger: Ledger) -> None:
        super().start(ledger)
        self.i, self.arrival, self.n = 0, ledger.arrival, len(ledger)

    def next_time(self) -> float:
        return self.arrival[self.i] if self.i < self.n else math.inf

    def pop(self) -> int:
        self.i += 1
        return self.i - 1


class ClosedLoop(Source):
    """``clients`` concurrent clients with ``think_s`` seconds between a response and the next request."""

    def __init__(self, clients: int, think_s: float = 0.0):
        if isinstance(clients, bool) or int(clients) != clients or clients < 1:
            raise ValueError(f"concurrency={clients!r} must be an integer >= 1")
        if not (math.isfinite(think_s) and think_s >= 0):
            raise ValueError(f"think_time={think_s!r} must be seconds >= 0")
        self.clients, self.think_s = int(clients), float(think_s)

    def start(self, ledger: Ledger) -> None:
        super().start(ledger)
        n = len(ledger)
        self.issued = min(self.clients, n)
        self.pending = [(0.0, rid) for rid in range(self.issued)]
        for rid in range(self.issued):
            ledger.arrival[rid] = 0.0

    def next_time(self) -> float:
        return self.pending[0][0] if self.pending else math.inf

    def pop(self) -> int:
        return heapq.heappop(self.pending)[1]

    def finished(self, rid: int, t: float) -> None:
        if self.issued < len(self.ledger):
            nxt = self.issued
            self.issued += 1
            when = t + self.think_s
            self.ledger.arrival[nxt] = when
            heapq.heappush(self.pending, (when, nxt))
