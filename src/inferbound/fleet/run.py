"""The fleet run: a day of traffic through one router over every pool's replicas, with autoscaling.

Each replica is one simulated engine (fleet/replica.py: sim/'s scheduler and step model on the pool's
deployment, under the pool's engine settings, sim/config.sim_config with one replica).

Synchronization (docs/fleet.md, "In step"):
- Closed-loop sessions (``sessions:``) take fleet/closed_loop.py's run: every arrival instant a window, the
  replicas reporting completions, for every router.
- State-free routers (round-robin, session-affinity) without autoscaling route every request up front,
  then every replica runs on its own, in parallel: exact, one trip to each worker.
- Routers that read replica state (least-outstanding, least-kv, power-of-two, prefix-affinity) advance all
  replicas in step, in windows of Δ (``router_refresh``; default data/fleet.yaml routers.metric_refresh_s.
  default): the arrivals of [T, T + Δ) are routed on the replicas' state at T plus the router's own count of
  what it dispatched since (routers.View), then the replicas run to the next window. Δ = 0 makes a window of
  each arrival instant: the state at that instant (events strictly before it), which is the simulator's own
  rule for its replicas (sim/event_loop.py least_loaded); Δ > 0 routes on state up to Δ old, as a router
  refreshing its metrics every Δ does. The cost is one round trip to the workers per window holding
  arrivals (windows without arrivals are skipped), so Δ trades exactness for speed; tests/test_fleet_run.py
  measures both.
- With autoscaling, the replicas are also brought to each decision time (every interval) to read the
  metric; a replica that becomes ready, or starts draining, changes the routable set from that instant.

Every request is routed to exactly one replica; the pools' requests sum to the traffic's (checked).

Progress (``progress=callback(done, total)``, as sim/ and search/ take one): ``total`` is the traffic's
requests, ``done`` those arriving before the time every replica has been advanced to, called after each
window; routed up front, the replicas are advanced in PROGRESS_CHUNKS steps of equal arrival counts to report
it (a replica run in pieces gives what one run gives, fleet/replica.py, so no figure changes; those trips
route nothing and are not counted in ``windows``). A callback that raises (web/budget.py Deadline) stops the
run and the workers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..deploy.deployment import make_deployment
from ..sim.config import runtime_with, sim_config
from .autoscale import Scaler, metric_value
from .backends import make_backend
from .closed_loop import ClosedLoop, sync_default
from .routers import View, defaults as router_defaults, make_router
from .spec import FleetSpec
from .startup import startup_s
from .traces import read_trace
from .traffic import Arrivals, from_trace, generate, with_pool_prefixes


@dataclass
class Slot:
    """One replica of the fleet: its pool, when it was provisioned (billed from), ready (routable from),
    and when it began to drain (None: serving to the end)."""

    pool: int
    provisioned_s: float
    ready_s: float
    drain_s: float | None = None


@dataclass
class FleetRun:
    """What the run produced, for result.py: the traffic, each request's slot, the slots and their results."""

    spec: FleetSpec
    arrivals: Arrivals
    pools: list  # (deployment, SimConfig) per pool
    slot_of: np.ndarray  # per request
    slots: list[Slot]
    results: dict  # slot -> (table, summary, busy_s, J per GPU, GPUs)
    refresh_s: float | None  # Δ of the in-step windows (None: routed up front)
    windows: int  # round trips to the workers
    notes: list[str] = field(default_factory=list)


def build_pools(spec: FleetSpec) -> list[tuple]:
    """(deployment, one-replica SimConfig, runtime) of each pool; errors name the pool."""
    out = []
    for p in spec.pools:
        try:
            dep = make_deployment(**p.deploy_kwargs())
            sk = p.sim_kwargs()
            rt = runtime_with(dep, block_size=sk.get("block_size"), token_budget=sk.get("max_num_batched_tokens"),
                              max_num_seqs=sk.get("max_num_seqs"), memory_fraction=sk.get("memory_fraction"),
                              preemption=sk.get("preemption"))
            cfg = sim_config(dep, rt, 1, 0, 0, sk.get("num_blocks"), spec.seed)
        except ValueError as e:
            raise ValueError(f"pools[{p.name}]: {e}") from None
        out.append((dep, cfg, rt))
    return out


def arrivals_of(spec: FleetSpec) -> Arrivals:
    return generate(spec) if spec.traffic.rate is not None else from_trace(spec, read_trace)


#: how many times a run routed up front reports its progress (reporting granularity only: no figure depends on it)
PROGRESS_CHUNKS = 100


def refresh_of(spec: FleetSpec) -> float:
    if spec.router_refresh is not None:
        return spec.router_refresh
    return float(router_defaults()["metric_refresh_s"]["default"])


def run_fleet(spec: FleetSpec, arrivals: Arrivals | None = None, backend: str = "local", workers: int | None = None,
              ray_address: str | None = None, replicas: list[int] | None = None, autoscale: bool = True,
              steps: bool = False, progress=None) -> FleetRun:
    """Simulate the fleet (module docstring). ``replicas``: per pool, replacing the file's (sizing.py);
    ``autoscale`` False ignores the file's autoscale; ``steps`` keeps every replica's step samples and gives
    its sim/ summary in ``results`` (memory: replica.LeanLedger); ``progress(done, total)``: module docstring."""
    arrivals = arrivals if arrivals is not None else arrivals_of(spec)
    pools = build_pools(spec)
    arrivals = with_pool_prefixes(arrivals, [rt for _, _, rt in pools], [p.name for p in spec.pools])
    pools = [(dep, cfg) for dep, cfg, _ in pools]
    counts = list(replicas) if replicas is not None else [p.replicas for p in spec.pools]
    scale = spec.autoscale if autoscale else None
    slots = [Slot(k, 0.0, 0.0) for k, n in enumerate(counts) for _ in range(n)]
    if not slots:
        raise ValueError("pools: every pool has replicas: 0; allowed: at least one replica in the fleet")
    reqs, n = arrivals.requests, len(arrivals)
    router = make_router(spec.router, spec.seed)
    notes = list(arrivals.notes)
    if spec.router == "prefix-affinity":
        notes.append("prefix-affinity: the router's prefix tree keeps every prefix it routed (no eviction; "
                     "sgl-router evicts only beyond 2^24 nodes)")
    slot_of = np.full(n, -1, dtype=np.int64)
    be = make_backend(pools, backend, workers, ray_address, len(slots) if scale is None else max(
        len(slots), scale.max * len(pools)), steps)
    new = [(s, slots[s].pool) for s in range(len(slots))]
    try:
        if not router.stateful and scale is None and spec.sessions is None:
            order = list(range(len(slots)))
            dst = router.route(list(reqs), arrivals.session, order, None)
            slot_of[:] = dst
            _up_front(be, new, _feed(reqs, dst), reqs, progress)
            return FleetRun(spec, arrivals, pools, slot_of, slots, _finish(be, n, progress), None, 1, notes)
        if spec.sessions is not None and spec.traffic.rate is not None:
            return _closed(spec, arrivals, pools, slots, router, be, new, scale, notes, progress)
        delta = refresh_of(spec) if router.stateful else math.inf
        scalers = [Scaler(scale) for _ in pools] if scale is not None else None
        windows = _in_step(spec, arrivals, pools, slots, router, be, new, slot_of, delta, scalers, notes, progress)
        return FleetRun(spec, arrivals, pools, slot_of, slots, _finish(be, n, progress),
                        delta if router.stateful else None, windows, notes)
    finally:
        be.close()


def _closed(spec, arrivals, pools, slots, router, be, new, scale, notes, progress) -> FleetRun:
    """Closed-loop sessions (fleet/closed_loop.py): every arrival instant a window, completions learned."""
    if spec.router_refresh not in (None, 0):
        raise ValueError(f"router_refresh={spec.router_refresh:g}: closed-loop sessions route on the replicas' "
                         f"state at each arrival; allowed: 0 or unset with sessions")
    cl = ClosedLoop(arrivals, spec.sessions.sync if spec.sessions.sync is not None else sync_default())
    scalers = [Scaler(scale) for _ in pools] if scale is not None else None
    startups = [None] * len(pools)

    def step_scale(t, states, new_slots):
        _scale(t, slots, states, scalers, pools, startups, new_slots, spec, notes)
    trips = cl.run(slots, router, be, new, pools, scalers, step_scale, progress)
    results = _finish(be, len(arrivals), progress)
    realized, slot_of, remap, more = cl.realize()
    for table, *_ in results.values():
        table["id"] = remap[table["id"]]
    notes = [x for x in notes if not x.startswith("sessions:")] + more
    return FleetRun(spec, realized, pools, slot_of, slots, results, 0.0 if router.stateful else None, trips, notes)


def _up_front(be, new, feed, reqs, progress) -> None:
    """Every request fed at once; with ``progress``, the replicas advanced to the arrival of every
    n/PROGRESS_CHUNKS-th request in turn, reporting each (module docstring)."""
    if progress is None or not reqs:
        be.step(new, feed, math.inf, [])
        return
    n = len(reqs)
    marks = sorted({min(n, math.ceil(n * (k + 1) / PROGRESS_CHUNKS)) for k in range(PROGRESS_CHUNKS)})
    progress(0, n)
    for m in marks:  # the last mark is n: to the end
        be.step(new, feed, reqs[m].arrival_s if m < n else math.inf, [])
        new, feed = [], {}
        progress(m, n)


def _finish(be, n: int, progress) -> dict:
    out = be.finish()
    if progress is not None:
        progress(n, n)
    return out


def _feed(reqs, dst) -> dict:
    out: dict[int, list] = {}
    for r, s in zip(reqs, dst):
        out.setdefault(int(s), []).append(r)
    return out


def _in_step(spec, arrivals, pools, slots, router, be, new, slot_of, delta, scalers, notes, progress=None) -> int:
    """The windowed run (module docstring); returns the number of round trips."""
    reqs, n = arrivals.requests, len(arrivals)
    arr = np.fromiter((r.arrival_s for r in reqs), dtype=float, count=n)
    block_size = [pools[p][1].block_size for p in range(len(pools))]
    blocks = [pools[p][1].num_blocks for p in range(len(pools))]
    interval = scalers[0].interval if scalers else math.inf
    next_tick = interval
    last_tick = 0.0
    startups = [None] * len(pools)
    feed: dict[int, list] = {}
    trips = 0
    i = 0
    end_of_ticks = arrivals.duration_s if scalers else -math.inf

    def routable(t: float) -> list[int]:
        return [k for k, s in enumerate(slots) if s.ready_s <= t and s.drain_s is None]

    while i < n or next_tick <= end_of_ticks:
        a = arr[i] if i < n else math.inf
        if next_tick <= a and next_tick <= end_of_ticks:
            live = [k for k, s in enumerate(slots) if s.drain_s is None]
            states = be.step(new, feed, next_tick, live, last_tick)
            new, feed, trips = [], {}, trips + 1
            _scale(next_tick, slots, states, scalers, pools, startups, new, spec, notes)
            last_tick, next_tick = next_tick, next_tick + interval
            continue
        ready_next = min((s.ready_s for s in slots if s.ready_s > a and s.drain_s is None), default=math.inf)
        if router.stateful:
            T = a if delta == 0 else math.floor(a / delta) * delta
            cand = routable(a)
            states = be.step(new, feed, T, cand)
            new, feed, trips = [], {}, trips + 1
            out = np.zeros(len(slots))
            kv = np.zeros(len(slots))
            for k, st in states.items():
                out[k], kv[k] = st[0], st[2]
            view = View(out, kv, np.array([block_size[s.pool] for s in slots]),
                        np.array([blocks[s.pool] for s in slots]))
            end = a if delta == 0 else T + delta
        else:
            cand, view, end = routable(a), None, math.inf
        end = min(end, next_tick, ready_next)
        j = i + 1
        while j < n and (arr[j] < end or arr[j] == a):
            j += 1
        if not cand:
            raise ValueError(f"no replica is ready at t={a:.1f} s (autoscale.min=0 and none started); allowed: "
                             f"autoscale.min >= 1")
        window = list(reqs[i:j])
        dst = router.route(window, arrivals.session, cand, view)
        for r, s in zip(window, dst):
            slot_of[r.id] = s
            feed.setdefault(s, []).append(r)
        if progress is not None:
            progress(i, n)  # the replicas stand at the arrival of request i (or a tick before it)
        i = j
    if new or feed:
        be.step(new, feed, math.inf, [])
        trips += 1
    return trips


def _scale(t, slots, states, scalers, pools, startups, new, spec, notes) -> None:
    """One autoscaler decision at t for every pool (autoscale.py)."""
    for p, scaler in enumerate(scalers):
        mine = [k for k, s in enumerate(slots) if s.pool == p and s.drain_s is None]
        ready = [states[k] for k in mine if slots[k].ready_s <= t and k in states]
        value = metric_value(scaler.conf.metric, ready)
        want = scaler.desired(t, len(mine), value)
        if want > len(mine):
            if startups[p] is None:
                if spec.autoscale.startup is not None:
                    startups[p] = (float(spec.autoscale.startup), f"replica startup {spec.autoscale.startup:g} s "
                                                                  f"(autoscale.startup)")
                else:
                    startups[p] = startup_s(pools[p][0], spec.autoscale.source)
                notes.append(f"pool {spec.pools[p].name}: {startups[p][1]}")
            for _ in range(want - len(mine)):
                slots.append(Slot(p, t, t + startups[p][0]))
                new.append((len(slots) - 1, p))
        elif want < len(mine):  # starting ones first, then the most recently ready (autoscale.py)
            starting = sorted((k for k in mine if slots[k].ready_s > t), key=lambda k: (slots[k].provisioned_s, k))
            ready_now = sorted((k for k in mine if slots[k].ready_s <= t), key=lambda k: (slots[k].ready_s, k))
            for k in (starting[::-1] + ready_now[::-1])[:len(mine) - want]:
                slots[k].drain_s = t
