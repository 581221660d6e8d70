"""KV transfers of disaggregated serving as a link queue: fair share (processor sharing) on lanes.

Each replica has ``lanes`` KV lanes (workloads/disagg.transfer_lanes: one per attention group; a TP group's
GPUs carry one request's shards side by side, each on its own NIC). A transfer from prefill replica p to
decode replica d needs ``work`` seconds at a lane's full rate, work = max(b_s/(β·η)_s, b_r/(β·η)_r)
(b: the bytes one GPU sends or receives, workloads/disagg.transfer_bytes; β·η: the link's effective
bandwidth, deploy/topology), then the link latency α. While n transfers use a replica's lanes, each gets

    share = min(1, lanes / n)          (a transfer never runs faster than one lane)

of a lane at that replica, and moves at min(share_p, share_d) of full rate. Two transfers on one lane
thus each take twice their time alone: time = bytes / (bw / concurrent transfers), the discipline of
data/disagg.yaml kv_transfer.queue (RDMA queue pairs sharing one NIC round-robin). Rates change only when
a transfer starts or ends; between such events every transfer's remaining work falls linearly, so the next
completion is exact (no time step).
"""
from __future__ import annotations

import math


class Transfers:
    """The transfers in flight and their rates (module docstring)."""

    def __init__(self, lanes: dict[int, int]):
        self.lanes = lanes  # replica index -> lanes
        self.active: dict[int, list] = {}  # rid -> [remaining work s, src, dst, blocks, started, latency]
        self.rate: dict[int, float] = {}
        self.t = 0.0
        self.gen = 0  # bumped at every change: a completion event of an older generation is stale

    def _advance(self, t: float) -> None:
        dt = t - self.t
        if dt > 0:
            for rid, a in self.active.items():
                a[0] -= dt * self.rate[rid]
        self.t = max(self.t, t)

    def _rerate(self) -> None:
        users: dict[int, int] = {}
        for a in self.active.values():
            users[a[1]] = users.get(a[1], 0) + 1
            users[a[2]] = users.get(a[2], 0) + 1
        share = {r: min(1.0, self.lanes[r] / n) for r, n in users.items()}
        self.rate = {rid: min(share[a[1]], share[a[2]]) for rid, a in self.active.items()}
        self.gen += 1

    def start(self, t: float, rid: int, src: int, dst: int, blocks: int, work_s: float, latency_s: float) -> None:
        """Transfer ``rid`` (``work_s`` seconds at full rate) starts at ``t`` from ``src`` to ``dst``."""
        self._advance(t)
        self.active[rid] = [work_s, src, dst, blocks, t, latency_s]
        self._rerate()

    def next_done(self) -> float:
        """When the next transfer's bytes are through at the current rates (inf when none is in flight)."""
        if not self.active:
            return math.inf
        return self.t + min(a[0] / self.rate[rid] for rid, a in self.active.items())

    def finish(self, t: float) -> list[tuple[int, int, int, int, float, float]]:
        """The transfers whose bytes are through at ``t``: (rid, src, dst, blocks, started, latency)."""
        self._advance(t)
        done = [rid for rid, a in self.active.items() if a[0] <= 1e-9]  # through, up to rounding (ns)
        out = []
        for rid in done:
            rem, src, dst, blocks, started, lat = self.active.pop(rid)
            out.append((rid, src, dst, blocks, started, lat))
        if done:
            self._rerate()
        return out
