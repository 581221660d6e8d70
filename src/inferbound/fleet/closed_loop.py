"""Closed-loop sessions: turn k + 1 of a session arrives a think time after turn k's LAST token (its reply),
as a user answers what they read: the closed interactive model of sim/sources.py (a client waits for its
reply, thinks, sends the next request) and the multi-turn replay of ShareGPT conversations in the
benchmarks (vLLM benchmarks/multi_turn: a client sends a conversation's next turn after the previous reply
completes). The think times are fleet/traffic.py's exponential draws of mean ``sessions.think_time``; the
prompts (the whole previous context plus a new message) do not depend on time, so they are the plan's.

The driver learns completions from the replicas (backends.Group.step ``done``), so the synchronization is
the in-step one of run.py with every arrival instant a window, for every router: at each instant a the
replicas are brought to a, report the turns finished before a, and each finished turn's next one is
scheduled at e + Z'. The replicas cannot be run past a before a's requests are routed (fed arrivals must
come in order), so a finish e learned at a whose next turn is due at e + Z' < a arrives at a, late by
a − (e + Z'); while turns are in flight and the next arrival is further than ``sessions.sync`` away
(data/fleet.yaml ``sessions.sync_s``), the replicas are also brought forward by ``sync`` to learn
completions, so no turn is later than min(sync, the gap to the next arrival). The run notes how many turns
were late and by how much; tests/test_fleet_sessions.py measures it against ``sync``. The cost: one round
trip to the workers per arrival instant plus one per ``sync`` while only turns in flight remain.

A turn whose closed-loop arrival falls at or after ``traffic.duration`` does not arrive (nor the session's
later turns); the run notes how many. The requests are renumbered in realized arrival order at the end.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import replace

import numpy as np

from ..base.datafiles import data_yaml
from .routers import View
from .traffic import Arrivals


def sync_default() -> float:
    return float(data_yaml("fleet.yaml")["sessions"]["sync_s"])


def plan_links(arrivals: Arrivals) -> tuple[np.ndarray, np.ndarray]:
    """(next turn's id or -1, think time before it) per request: consecutive turns of a session in the plan's
    order; the plan's arrival gap is the turn's think-time draw."""
    n = len(arrivals)
    nxt, gap = np.full(n, -1, dtype=np.int64), np.zeros(n)
    last: dict[int, int] = {}
    for r in arrivals.requests:
        s = int(arrivals.session[r.id])
        if s < 0:
            continue
        if s in last:
            p = last[s]
            nxt[p], gap[r.id] = r.id, r.arrival_s - arrivals.requests[p].arrival_s
        last[s] = r.id
    return nxt, gap


class ClosedLoop:
    """The closed-loop run over ``be`` (module docstring). ``scale(t, states)`` is run.py's autoscaler step."""

    def __init__(self, arrivals: Arrivals, sync: float):
        self.arr, self.sync = arrivals, sync
        self.nxt, self.gap = plan_links(arrivals)
        has_prev = np.zeros(len(arrivals), dtype=bool)
        has_prev[self.nxt[self.nxt >= 0]] = True
        self.heap = [(r.arrival_s, r.id) for r in arrivals.requests if not has_prev[r.id]]
        heapq.heapify(self.heap)
        self.in_flight = 0  # routed turns with a next turn, not yet finished
        self.realized: dict[int, float] = {}
        self.late: list[float] = []
        self.dropped = 0

    def learn(self, finished, at: float) -> None:
        """Schedule the next turn of each finished one (module docstring)."""
        for rid, e in finished:
            f = int(self.nxt[rid])
            if f < 0:
                continue
            self.in_flight -= 1
            t = e + self.gap[f]
            if t < at:
                self.late.append(at - t)
                t = at
            if t >= self.arr.duration_s:
                while f >= 0:  # this turn and the session's later ones never arrive
                    self.dropped += 1
                    f = int(self.nxt[f])
                continue
            heapq.heappush(self.heap, (t, f))

    def run(self, slots, router, be, new, pools, scalers, scale, progress=None) -> int:
        """Route and advance to the end; returns the round trips. Fills ``slot_of`` (by plan id) and ``realized``."""
        self.slot_of = np.full(len(self.arr), -1, dtype=np.int64)
        interval = scalers[0].interval if scalers else math.inf
        next_tick, last_tick = interval, 0.0
        end_of_ticks = self.arr.duration_s if scalers else -math.inf
        feed: dict[int, list] = {}
        at, trips, n = 0.0, 0, len(self.arr)
        while True:
            a = self.heap[0][0] if self.heap else math.inf
            horizon = at + self.sync if self.in_flight else math.inf
            tick = next_tick if next_tick <= end_of_ticks else math.inf
            T = min(a, horizon, tick)
            if T == math.inf:
                break
            routable = [k for k, s in enumerate(slots) if s.ready_s <= T and s.drain_s is None]
            want = [k for k, s in enumerate(slots) if s.drain_s is None] if T == tick else (
                routable if router.stateful and T == a else [])
            states = be.step(new, feed, T, want, last_tick if T == tick else None, done=True)
            new, feed, trips, at = [], {}, trips + 1, T
            self.learn(states.pop(-1), at)
            if T == tick:
                scale(T, states, new)
                last_tick, next_tick = T, T + interval
                continue
            if T < a or not self.heap or self.heap[0][0] > T:
                continue
            window = []
            while self.heap and self.heap[0][0] <= T:
                t, rid = heapq.heappop(self.heap)
                window.append(replace(self.arr.requests[rid], arrival_s=t))
            if not routable:
                raise ValueError(f"no replica is ready at t={T:.1f} s (autoscale.min=0 and none started); allowed: "
                                 f"autoscale.min >= 1")
            view = None
            if router.stateful:
                out, kv = np.zeros(len(slots)), np.zeros(len(slots))
                for k, st in states.items():
                    out[k], kv[k] = st[0], st[2]
                view = View(out, kv, np.array([pools[s.pool][1].block_size for s in slots]),
                            np.array([pools[s.pool][1].num_blocks for s in slots]))
            for r, s in zip(window, router.route(window, self.arr.session, routable, view)):
                self.slot_of[r.id] = s
                feed.setdefault(s, []).append(r)
                self.realized[r.id] = r.arrival_s
                self.in_flight += int(self.nxt[r.id] >= 0)
            if progress is not None:
                progress(len(self.realized), n)
        if new or feed:
            be.step(new, feed, math.inf, [])
            trips += 1
        return trips

    def realize(self) -> tuple[Arrivals, np.ndarray, np.ndarray, list[str]]:
        """(the arrivals that came, renumbered in arrival order; their slots; plan id -> new id or -1; notes)."""
        order = sorted(self.realized, key=lambda rid: (self.realized[rid], rid))
        remap = np.full(len(self.arr), -1, dtype=np.int64)
        remap[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
        reqs = tuple(replace(self.arr.requests[rid], id=k, arrival_s=self.realized[rid]) for k, rid in enumerate(order))
        session = self.arr.session[np.asarray(order, dtype=np.int64)] if order else np.zeros(0, dtype=np.int64)
        notes = [f"sessions (closed loop): each turn after the previous turn's last token plus its think time; "
                 f"{len(self.late)} of {len(order)} turns arrived late (their think time ended between two "
                 f"synchronizations), by at most {max(self.late, default=0.0):.3g} s, mean "
                 f"{(sum(self.late) / len(self.late)) if self.late else 0.0:.3g} s (sessions.sync {self.sync:g} s)"]
        if self.dropped:
            notes.append(f"sessions: {self.dropped} later turns would arrive at or after traffic.duration "
                         f"{self.arr.duration_s:g} s: not sent")
        plan_notes = [x for x in self.arr.notes if not x.startswith("sessions:")]
        out = Arrivals(reqs, session, self.arr.duration_s, tuple(plan_notes), self.arr.source)
        return out, self.slot_of[np.asarray(order, dtype=np.int64)], remap, notes
