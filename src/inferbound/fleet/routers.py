"""Routing policies: which replica of the fleet gets each request, as the routers in front of serving
engines document it. Defaults are data/fleet.yaml ``routers`` (each cited there).

A router sees the routable replicas (ready, not draining; every pool's, in pool order) and, for the
policies that read replica state, a :class:`View` of them: each replica's outstanding requests (queued +
running) and KV-cache use as of the last refresh (run.py advances the replicas in step to it), plus the
router's own count of what it dispatched since, as real routers track their in-flight requests.

- ``round-robin``: request k to candidate k mod n. vLLM production-stack ``--routing-logic roundrobin``
  (src/vllm_router/routers/routing_logic.py, RoundRobinRouter: sorted endpoints, k from 0); SGLang sgl-router
  and vllm-project/router ``--policy round_robin``; NVIDIA Dynamo's frontend default ``--router-mode
  round_robin`` (docs.nvidia.com/dynamo, Router Guide).
- ``least-outstanding``: the fewest outstanding requests, lowest index on ties: llm-d's inference scheduler
  queue scorer (llm-d.ai docs, "Request Scheduler": endpoints scored by queue depth), the least-loaded rule of
  SGLang's cache-aware router when load is imbalanced, and Dynamo's KV router cost term ``normalized_waiting``
  (docs.nvidia.com/dynamo, "KV Router Performance Tuning": logit = 2·overlap − gpu_cache_usage −
  normalized_waiting); the simulator's own multi-replica rule (sim/event_loop.py).
- ``least-kv``: the lowest KV-cache use (blocks in use / blocks, plus the prompt blocks of the requests
  dispatched since the refresh): llm-d's kv-cache-utilization scorer (llm-d.ai docs, "Request Scheduler":
  endpoint state includes KV-cache), Dynamo's ``gpu_cache_usage`` term (same page).
- ``power-of-two``: two distinct candidates drawn at random (``numpy.random.default_rng(seed)``), the one
  with fewer outstanding requests (the first drawn on ties): SGLang sgl-router and vllm-project/router
  ``--policy power_of_two`` ("samples two workers, routes to the lighter one", lightseekorg/smg docs,
  load-balancing); Mitzenmacher, IEEE TPDS 12(10), 2001.
- ``prefix-affinity``: SGLang sgl-router ``cache_aware`` (sgl-router/py_src/sglang_router/launch_router.py
  @094b723a, thresholds in data/fleet.yaml): while the load is balanced, the replica whose approximate
  prefix tree (the router's own record of the prefixes it sent where) matches the largest share of the
  prompt (in whole KV blocks of the engine), if that share is >= cache_threshold, else the least loaded;
  when max − min outstanding > balance_abs_threshold and max > balance_rel_threshold·min, the least loaded.
  The tree here records per replica the longest prefix of each prefix id sent there, without eviction
  (sgl-router evicts only beyond max_tree_size, 2^24 nodes; a note says so). vLLM production-stack's
  ``prefixaware`` and Dynamo's KV router (overlap score) route on the same prefix overlap.
- ``session-affinity``: a request of a session to the replica its session id hashes to on a consistent hash
  ring (vLLM production-stack ``--routing-logic session``, SessionRouter over uhashring.HashRing;
  vllm-project/router ``consistent_hash`` on X-Session-ID): here rendezvous hashing (Thaler and Ravishankar,
  1998), which moves only the sessions of a replica that leaves. A request without a session goes to the
  replica with the lowest QPS over the router's request-stats window (production-stack: "If there is no
  session id ... it will pick a server with lowest qps"), counted from the router's own dispatches.

``stateful`` routers read replica state, so run.py advances the replicas in step (windows of the metric
refresh interval); the others are a function of the requests and the routable set alone.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..base.datafiles import data_yaml
from ..workloads.requests import Request

STATEFUL = ("least-outstanding", "least-kv", "power-of-two", "prefix-affinity")
_M64 = (1 << 64) - 1


def defaults() -> dict:
    return data_yaml("fleet.yaml")["routers"]


def mix64(x: int) -> int:
    """SplitMix64's finaliser (Steele, Lea and Flood, OOPSLA 2014): a fixed, well-mixed 64-bit hash."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def rendezvous(key: int, candidates: list[int]) -> int:
    """The candidate of highest hash(key, candidate): rendezvous (highest-random-weight) hashing."""
    h = mix64(key & _M64)
    return max(candidates, key=lambda c: (mix64(h ^ mix64(c)), -c))


class View:
    """What a state-reading router knows of every replica (indexed by fleet slot): outstanding requests
    and KV use at the last refresh, plus its own dispatches since (``dispatched``: outstanding += 1, KV +=
    the prompt's blocks / the replica's blocks)."""

    def __init__(self, outstanding: np.ndarray, kv: np.ndarray, block_size: np.ndarray, blocks: np.ndarray):
        self.outstanding = outstanding.astype(np.int64).copy()
        self.kv = kv.astype(float).copy()
        self.block_size, self.blocks = block_size, blocks

    def dispatched(self, slot: int, r: Request) -> None:
        self.outstanding[slot] += 1
        self.kv[slot] += -(-r.input_len // int(self.block_size[slot])) / float(self.blocks[slot])


class Router:
    """Routes a window's arrivals (``route``) over the routable slots; keeps its own history."""

    name = ""
    stateful = False

    def __init__(self, seed: int = 0):
        self.seed = seed

    def route(self, reqs: list[Request], session: np.ndarray, slots: list[int], view: View | None) -> list[int]:
        out = []
        for r in reqs:
            s = self.pick(r, int(session[r.id]), slots, view)
            if view is not None:
                view.dispatched(s, r)
            out.append(s)
        return out

    def pick(self, r: Request, session: int, slots: list[int], view: View | None) -> int:
        raise NotImplementedError


class RoundRobin(Router):
    name = "round-robin"

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.k = int(defaults()["round_robin"]["start"])

    def pick(self, r, session, slots, view):
        s = slots[self.k % len(slots)]
        self.k += 1
        return s


def _least(values, slots: list[int]) -> int:
    """The slot of the smallest value, the lowest slot on ties."""
    best = slots[0]
    for s in slots[1:]:
        if values[s] < values[best]:
            best = s
    return best


class LeastOutstanding(Router):
    name, stateful = "least-outstanding", True

    def pick(self, r, session, slots, view):
        return _least(view.outstanding, slots)


class LeastKV(Router):
    name, stateful = "least-kv", True

    def pick(self, r, session, slots, view):
        return _least(view.kv, slots)


class PowerOfTwo(Router):
    name, stateful = "power-of-two", True

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.rng = np.random.default_rng((seed, 2))
        self.d = int(defaults()["power_of_two"]["choices"])

    def pick(self, r, session, slots, view):
        if len(slots) == 1:
            return slots[0]
        drawn = [slots[int(i)] for i in self.rng.choice(len(slots), size=min(self.d, len(slots)), replace=False)]
        return min(drawn, key=lambda s: view.outstanding[s])  # min keeps the first drawn on ties


class PrefixAffinity(Router):
    name, stateful = "prefix-affinity", True

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        d = defaults()["prefix_affinity"]
        self.threshold = float(d["sglang_cache_threshold"])
        self.abs_t, self.rel_t = float(d["sglang_balance_abs_threshold"]), float(d["sglang_balance_rel_threshold"])
        self.tree: dict[int, dict[int, int]] = {}  # slot -> {prefix id: longest prefix tokens sent there}

    def pick(self, r, session, slots, view):
        load = [view.outstanding[s] for s in slots]
        lo, hi = min(load), max(load)
        if r.prefix_id < 0 or (hi - lo > self.abs_t and hi > self.rel_t * lo):
            s = _least(view.outstanding, slots)
        else:
            match = [self._matched(s, r, int(view.block_size[s])) / r.input_len for s in slots]
            j = int(np.argmax(match))
            s = slots[j] if match[j] >= self.threshold else _least(view.outstanding, slots)
        if r.prefix_id >= 0:
            t = self.tree.setdefault(s, {})
            t[r.prefix_id] = max(t.get(r.prefix_id, 0), r.prefix_len)
        return s


    def _matched(self, slot: int, r: Request, block: int) -> int:
        """Prompt tokens of r the slot's tree holds, in whole blocks of the engine's KV block (data/fleet.yaml
        prefix_affinity.block_tokens: engine, Dynamo's rule)."""
        held = min(self.tree.get(slot, {}).get(r.prefix_id, 0), r.prefix_len)
        return held // block * block


class SessionAffinity(Router):
    name = "session-affinity"

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        stats = defaults()["metric_refresh_s"]
        self.window = float(stats["vllm_production_stack_request_window"])
        self.sent: deque[tuple[float, int]] = deque()  # (arrival, slot) of the router's recent dispatches
        self.qps: dict[int, int] = {}

    def pick(self, r, session, slots, view):
        while self.sent and self.sent[0][0] < r.arrival_s - self.window:
            _, old = self.sent.popleft()
            self.qps[old] -= 1
        s = rendezvous(session, slots) if session >= 0 else _least(self.qps_of(slots), slots)
        self.sent.append((r.arrival_s, s))
        self.qps[s] = self.qps.get(s, 0) + 1
        return s

    def qps_of(self, slots):
        return {s: self.qps.get(s, 0) for s in slots}


ROUTER_CLASSES = {c.name: c for c in (RoundRobin, LeastOutstanding, LeastKV, PowerOfTwo, PrefixAffinity,
                                      SessionAffinity)}


def make_router(name: str, seed: int = 0) -> Router:
    if name not in ROUTER_CLASSES:
        raise ValueError(f"router={name!r} unknown; allowed: {', '.join(ROUTER_CLASSES)}")
    return ROUTER_CLASSES[name](seed)
