"""Where requests come from: an open loop (arrival times fixed in advance) or closed-loop clients.

- :class:`OpenLoop`: Poisson arrivals or a trace; request i arrives at its own ``arrival_s`` whatever
  the server does (``vllm bench serve --request-rate``). The ledger orders requests by arrival.
- :class:`ClosedLoop`: N clients; each sends a request, waits for its last token, then thinks and
  sends the next one, until all requests are issued (``vllm bench serve --max-concurrency``, NVIDIA
  genai-perf ``--concurrency``, SGLang ``bench_serving --max-concurrency``). All N first requests
  arrive at t = 0, as ``vllm bench serve`` issues them: at ``--request-rate inf`` it creates every
  request's task at once and an ``asyncio.Semaphore(max_concurrency)`` lets N of them run, each next one
  when a running one returns (vllm/benchmarks/serve.py, ``limited_request_func``, commit 009e6d4a), so
  at most N requests are ever in the system. Requests are sent in their given order (the k-th request
  sent is the k-th of the list; its ``arrival_s`` is ignored and set when it is sent).

Think time. A client that gets its last token at t sends its next request at t + Z, Z drawn anew for
every request from an exponential distribution of mean ``think_s``: the think time of the standard
closed interactive queueing model (N terminals, exponential think time of mean Z; Lazowska et al.,
"Quantitative System Performance", 1984, ch. 3 and 4 — the model whose response-time law
N = X·(R + Z) tests/test_sim_closed_loop.py checks). Fixed think times, as this loop used before,
keep clients of equal lengths in lockstep: they all finish together, think alike and find the engine
idle every round, so the wave repeats shifted in time and TTFT does not depend on Z at all (678 ms for
every Z from 0.1 to 30 s, issue 19). Client c draws from its own generator,
``numpy.random.default_rng((seed, c))``, so a client's gaps depend only on the seed and how many
requests it has sent, never on the order other clients finish in. Z = 0 (``think_s`` 0) is the
benchmark's back-to-back client: no draw, the next request is sent at the instant of the last token.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

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
    """``clients`` concurrent clients thinking an exponential time of mean ``think_s`` seconds between a
    response and their next request (module docstring), drawn per client from ``seed``."""

    def __init__(self, clients: int, think_s: float = 0.0, seed: int = 0):
        if isinstance(clients, bool) or int(clients) != clients or clients < 1:
            raise ValueError(f"concurrency={clients!r} must be an integer >= 1")
        if not (math.isfinite(think_s) and think_s >= 0):
            raise ValueError(f"think_time={think_s!r} must be seconds >= 0")
        self.clients, self.think_s, self.seed = int(clients), float(think_s), int(seed)
        self.rngs = [np.random.default_rng((self.seed, c)) for c in range(self.clients)] if think_s > 0 else []

    def start(self, ledger: Ledger) -> None:
        super().start(ledger)
        n = len(ledger)
        first = min(self.clients, n)
        self.reserved = first  # requests promised to a client (sent, or to be sent after its think time)
        self.sent = 0  # requests sent: the next one sent is ledger index ``sent``
        self.client_of = [-1] * n  # the client that sent each request
        self.pending = [(0.0, c) for c in range(first)]  # (send time, client), a heap
        self.think_gaps: list[list[float]] = [[] for _ in range(self.clients)]  # each client's draws, in order

    def next_time(self) -> float:
        return self.pending[0][0] if self.pending else math.inf

    def pop(self) -> int:
        when, client = heapq.heappop(self.pending)
        rid = self.sent
        self.sent += 1
        self.ledger.arrival[rid] = when
        self.client_of[rid] = client
        return rid

    def think(self, client: int) -> float:
        """The client's next think time: exponential of mean think_s from its own generator (0 at think_s 0)."""
        if not self.think_s:
            return 0.0
        z = float(self.rngs[client].exponential(self.think_s))
        self.think_gaps[client].append(z)
        return z

    def mean_think(self) -> float:
        """The mean of the think times drawn in this run (the Z of N = X·(R + Z) over the run); think_s when
        none was drawn."""
        n = sum(len(g) for g in self.think_gaps)
        return sum(sum(g) for g in self.think_gaps) / n if n else self.think_s

    def finished(self, rid: int, t: float) -> None:
        if self.reserved < len(self.ledger):
            self.reserved += 1
            client = self.client_of[rid]
            heapq.heappush(self.pending, (t + self.think(client), client))
