"""One fleet replica as a resumable simulation: requests are added window by window and the replica runs
until a time t, then later on (``run_until``); in pieces it gives exactly what one run gives.

It is sim/event_loop.simulate_run's loop for one aggregated replica with open-loop arrivals, kept step
for step: at each instant the step that ends is applied first, then every arrival up to it joins the
queue, then the idle replica plans its next step (sim/scheduler.Replica.start_step) with the horizon
the event loop gives a lone replica, the next arrival. Resuming needs one more rule: a replica advanced
to t does not yet know the arrivals at or after t, so its horizon is the next known arrival or t,
whichever is sooner, and nothing at or after t is applied before the next call. The horizon only bounds
runs of decode-only steps that sim/decode_run.py applies at once with the step-by-step numbers, so the
pieces equal the whole (tests/test_fleet_replica.py checks it against ``simulate``). The requests live in
the replica's own ledger, extended in place (sim/ledger.Ledger.extend).
"""
from __future__ import annotations

import math

import numpy as np

from ..deploy.deployment import Deployment
from ..deploy.topology import pcie_link
from ..sim.blocks import BlockManager, block_bytes_per_gpu
from ..sim.event_loop import Run, SimConfig, _check_fits, replica_extras, step_model_of
from ..sim.ledger import Ledger
from ..sim.scheduler import Replica
from ..workloads.requests import Request
from .itl import GapHistogram, exact_gaps


class LeanLedger(Ledger):
    """A ledger of the per-request state and timestamps, with the inter-token gaps in a logarithmic histogram
    (fleet/itl.py GapHistogram: exact count and mean, percentiles within 0.005 %) instead of one entry per
    step, and no per-step samples (the fleet reads none; at a day's per-replica load they are about 17 kB per
    request, docs/fleet.md "Speed"). The scheduler only writes them, so no other figure the fleet reads changes."""

    keeps_samples = False  # sim/decode_run.py then builds no sample rows for it

    def __init__(self, requests):
        super().__init__(requests)
        self.gap_hist = GapHistogram()

    def record_gaps(self, end, last, start) -> None:
        same = last == start
        k = int(np.count_nonzero(same))
        if k:
            self.gap_hist.add(end - start, k)
        if k < last.size:
            self.gap_hist.add_many(end - last[~same])

    def record_equal_gaps(self, gap, count) -> None:
        self.gap_hist.add(gap, count)

    def record_equal_gap_run(self, gaps, count) -> None:
        self.gap_hist.add_many(np.asarray(gaps, dtype=float), float(count))

    def record_same_time(self, count) -> None:
        if count:
            self.gap_hist.add(0.0, count)

    def record_gap(self, gap) -> None:
        self.gap_hist.add(gap, 1)

    def record_step(self, *fields) -> None:
        pass

    def record_step_values(self, values) -> None:
        pass


class ReplicaRun:
    """A replica of ``dep`` under ``cfg`` (one replica's SimConfig), fed requests as they are routed;
    ``steps``: keep the per-step samples and gaps (a full sim/ ledger, for sim/metrics.summarize)."""

    def __init__(self, dep: Deployment, cfg: SimConfig, index: int = 0, steps: bool = True):
        self.dep, self.cfg = dep, cfg
        self.ledger = Ledger([]) if steps else LeanLedger([])
        sm = step_model_of(dep, cfg.max_num_batched_tokens)  # one per pool's deployment, shared by its replicas
        block_bytes = block_bytes_per_gpu(dep, cfg.block_size)
        swap_s = block_bytes / pcie_link(dep.gpu).effective_bw if cfg.preemption == "swap" else 0.0
        self.rep = Replica(index, sm, BlockManager(cfg.num_blocks, cfg.block_size), self.ledger, cfg, swap_s,
                           "both", replica_extras(dep, cfg, block_bytes))
        self.next = 0  # ledger index of the next request to arrive
        self.pending: tuple | None = None  # (end, finished rids) of the step in flight
        self.done = 0
        self.in_sys = 0
        self.area = 0.0  # ∫ requests in system dt
        self.start = math.nan
        self.t_last = math.nan
        self.scan = 0  # ttft_since: requests before this one have their first token before its last t1
        self.watch = False  # record finishes for ``completions`` (closed-loop sessions only)
        self.finished: list[int] = []  # ledger indices finished since the last ``completions``

    def add(self, requests: list[Request]) -> None:
        """Requests routed here, arriving no earlier than any added before and at or after the last run_until."""
        if requests:
            _check_fits(requests, self.cfg)
            if math.isnan(self.start):
                self.start = self.t_last = requests[0].arrival_s
            self.ledger.extend(requests)

    def run_until(self, until: float = math.inf) -> None:
        """Apply every event before ``until`` (inf: to the end). See the module docstring."""
        rep, arrival = self.rep, self.ledger.arrival
        n = len(arrival)
        i = self.next
        while True:
            t = arrival[i] if i < n else math.inf
            if self.pending is not None and self.pending[0] <= t:
                t = self.pending[0]
            if t >= until or t == math.inf:
                break
            self.area += self.in_sys * (t - self.t_last)
            self.t_last = t
            if self.pending is not None and self.pending[0] <= t:
                finished = self.pending[1]
                self.pending = None
                rep.busy = False
                if finished:
                    rep.outstanding -= len(finished)
                    self.in_sys -= len(finished)
                    self.done += len(finished)
                    if self.watch:
                        self.finished.extend(finished)
            while i < n and arrival[i] <= t:
                rep.arrive(i)  # queued, or held for the scheduler's next receive (sim/scheduler.py)
                rep.outstanding += 1
                self.in_sys += 1
                i += 1
            if not rep.busy:
                step = rep.start_step(t, arrival[i] if i < n else until)
                if step is not None:
                    rep.busy = True
                    self.pending = (step[0], step[1])
        self.next = i

    # -- what a router and an autoscaler read --------------------------------------------------------
    def state(self) -> tuple[int, int, float]:
        """(outstanding requests, waiting requests, KV blocks in use / blocks) now."""
        rep = self.rep
        return rep.outstanding, len(rep.waiting), rep.pool.used() / rep.pool.num_blocks

    def ttft_since(self, t0: float, t1: float) -> list[float]:
        """TTFTs (s) of the requests whose first token came in [t0, t1) (the autoscaler's last interval;
        a step's tokens are stamped when it is planned, so later ones may already be set)."""
        first, arr = self.ledger.first_s, self.ledger.arrival
        out, keep = [], None
        for j in range(self.scan, len(first)):
            f = first[j]
            if f != f or f >= t1:
                if keep is None:
                    keep = j  # the scan restarts here next time
            elif f >= t0:
                out.append(f - arr[j])
        self.scan = keep if keep is not None else len(first)
        return out

    def completions(self) -> list[tuple[int, float]]:
        """(request id, finish s) of the requests finished since the last call (fleet/closed_loop.py)."""
        L = self.ledger
        out = [(L.ids[k], L.finish_s[k]) for k in self.finished]
        self.finished = []
        return out

    def idle(self) -> bool:
        return self.pending is None and self.next == len(self.ledger) and not self.rep.outstanding

    def run(self) -> Run:
        """The finished run, as sim/metrics.summarize reads it."""
        if self.done != len(self.ledger):
            raise RuntimeError(f"fleet replica lost {len(self.ledger) - self.done} of {len(self.ledger)} requests")
        start = 0.0 if math.isnan(self.start) else self.start
        end = start if math.isnan(self.t_last) else self.t_last
        return Run(self.ledger, [self.rep], self.cfg, self.dep.par.replica_gpus, start, end, self.area)

    def gaps(self) -> tuple:
        """This replica's inter-token gaps as fleet/itl.py pools them: exact with step records, else binned."""
        if isinstance(self.ledger, LeanLedger):
            return self.ledger.gap_hist.weighted()
        return exact_gaps(self.ledger)

    def table(self) -> dict[str, np.ndarray]:
        """Per request: id, arrival, admit, first token, finish (s), input and output tokens, prompt tokens
        found in the prefix cache and computed."""
        L = self.ledger
        return {"id": np.asarray(L.ids, dtype=np.int64), "arrival_s": np.asarray(L.arrival, dtype=float),
                "admit_s": np.asarray(L.admit_s, dtype=float), "first_s": np.asarray(L.first_s, dtype=float),
                "finish_s": np.asarray(L.finish_s, dtype=float), "input_len": np.asarray(L.prompt, dtype=np.int64),
                "output_len": np.asarray(L.output, dtype=np.int64),
                "hit_tokens": np.asarray(L.hit_tokens, dtype=float),
                "computed_tokens": np.asarray(L.computed_tokens, dtype=float)}
