"""Discrete-event loop over replicas: arrivals, step ends and KV transfers, in time order.

Events at the same instant are all applied before any idle replica plans its next step, so a request
arriving exactly when a step ends joins the next step. A replica is idle when it has nothing it can
schedule; it plans a step as soon as an event gives it work (arrival, transfer, freed blocks).

Arrivals (``sources.py``): open loop (Poisson, a trace: every arrival time known in advance) or
closed loop (N clients, all starting at t = 0, each sends its next request when its previous one
completes, after a think time drawn per client, exponential of the given mean (0: back to back):
``vllm bench serve --max-concurrency``, genai-perf's concurrency mode). A send time the source sets
when a request finishes is a future event like any other: the loop takes the earlier of the next
arrival and the next step end, so a client still thinking never blocks a step.

Modes
- aggregated: ``replicas`` identical replicas; an arrival goes to the one with the fewest outstanding
  requests (queued + running), lowest index on ties.
- disaggregated (Splitwise / DistServe style): ``prefill_replicas`` replicas run prompts only; the
  step that finishes a prompt emits the first token there, so TTFT is measured on the prefill side
  and excludes the transfer. The request is then given to the least-loaded of ``decode_replicas``
  replicas (SGLang's decode server pre-allocates the KV before the transfer) and its prompt's KV
  crosses the link: one GPU's shard of it (workloads/disagg.transfer_bytes) at the link's effective
  bandwidth, shared fairly with the other transfers on the same lanes of either replica (sim/transfers.py:
  n transfers on one lane each move at bandwidth/n), then the link latency. The transfer (and any wait
  there) therefore lands in the second token's gap, the first ITL. The prefill blocks are freed when
  the transfer completes. Link: the GPU's scale-out NIC (``topology.network_link``) when it has one,
  else PCIe (``topology.pcie_link``). The decode pool may run its own deployment (another layout,
  deploy/pools.py: ``decode`` = (deployment, SimConfig)) with its own step model, block pool and caps.

Events (:class:`StepEnd`, :class:`KVArrival`, and :class:`LinkDone` when the link queue's next transfer is
through) sit in one heap ordered by (time, push order), so
events at the same instant apply in the order they were pushed. A replica may advance several steps in
one event (a run of decode-only steps, sim/decode_run.py) while each starts before its horizon: the
next event that may give it work (``horizon`` in simulate_run); the numbers are the step-by-step ones.

The time-average number of requests in the system (Little's L) is integrated here, event by event,
independently of the per-request timestamps from which W is computed.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from ..base.caches import cache
from ..deploy.deployment import Deployment
from ..deploy.offload import host_link
from ..deploy.speculative import drafter_for
from ..deploy.topology import Link, network_link, pcie_link
from ..step.speculative import draft_step_model
from ..step.table import StepModel
from ..workloads.requests import Request
from .blocks import BlockManager, block_bytes_per_gpu
from .decode_run import may_run
from .ledger import Ledger
from .scheduler import Replica
from .sources import OpenLoop, Source
from .transfers import Transfers
from ..workloads.disagg import transfer_bytes

PREEMPTION = ("recompute", "swap")


@dataclass(frozen=True)
class SimConfig:
    """What every simulated replica runs (config.sim_config builds it from the deployment's engine runtime):
    the engine's scheduling figures, the replica counts, the engine features."""

    block_size: int
    max_num_batched_tokens: int
    max_num_seqs: int
    num_blocks: int  # per replica
    preemption: str = "recompute"
    replicas: int = 1
    prefill_replicas: int = 0
    decode_replicas: int = 0
    reserve_full: bool = False  # admit only with blocks for prompt + every output token (never preempt)
    chunked_prefill: bool = True  # a prompt may be split over steps
    mixed_batches: bool = True  # prefill chunks ride in decode steps (else prefill-first steps)
    engine: str = ""  # the engine and its settings, for the summary
    spec: object = None  # speculative.Spec: k drafted tokens per step at acceptance a (None: off)
    prefix_caching: bool = False  # requests' shared prefixes are cached (sim/prefix.py)
    device_blocks: int | None = None  # blocks on the GPU; the rest of num_blocks is the host tier (offload.py)
    host_overlap: float = 1.0  # ω of the host-tier reads (offload.py)
    seed: int = 0  # the acceptance draws of speculative decoding
    decode_runs: bool = True  # advance runs of decode-only steps at once (sim/decode_run.py); False: step by step
    scheduler_steps: int = 1  # vLLM V0 multi-step: N decode steps per scheduler call (deploy/engine_modes.py)
    recv_interval: int = 1  # SGLang --scheduler-recv-interval: decode steps between receives (sim/scheduler.py)

    @property
    def spec_k(self) -> int:
        return 0 if self.spec is None else int(self.spec.k)

    @property
    def spec_q(self) -> int:
        """Query tokens a verifying sequence puts in the step budget: k + 1, or N for a tree (deploy/speculative.py
        ``verify_tokens``); 1 without speculation."""
        return 1 if self.spec is None else int(self.spec.verify_tokens)

    @property
    def disaggregated(self) -> bool:
        return self.prefill_replicas > 0


@dataclass
class Run:
    """Everything the summary needs from one simulated run."""

    ledger: Ledger
    replicas: list[Replica]
    config: SimConfig
    gpus_per_replica: int
    start_s: float
    end_s: float
    in_system_area: float  # ∫ (requests in system) dt over [start, end]
    link: Link | None = None
    transfer_s: list[float] = field(default_factory=list)


_STEP_MODELS = cache("simulator step models", 16)


def step_model_of(dep: Deployment, max_tokens: int) -> StepModel:
    """The simulator's StepModel of ``dep`` tabulated to ``max_tokens`` tokens, kept by content (base/caches.py):
    equal deployments share one (a step model holds tables of its deployment only, and its decode-run price
    table by content, step/table_scalar.py), so a fleet's replicas of one pool and repeated simulations of one
    deployment build the tables once."""
    key = int(max_tokens)
    return _STEP_MODELS.get_or((dep, key), lambda: StepModel(dep, key))


def kv_link(dep: Deployment) -> Link:
    """Link between a prefill and a decode replica: scale-out NIC if the GPU has one, else PCIe."""
    return network_link(dep.gpu) if dep.gpu.scaleout_bw > 0 else pcie_link(dep.gpu)


def transfer_seconds(dep: Deployment, link: Link, prompt_tokens: int) -> float:
    """One prompt's KV transfer alone on the link: one GPU's shard of the sequence (workloads/disagg.py
    transfer_bytes) / effective bandwidth + latency."""
    return transfer_bytes(dep, prompt_tokens) / link.effective_bw + link.latency


def _check_fits(requests: list[Request], cfg: SimConfig) -> None:
    """Every request must fit one replica's pool alone, else it could never run (vLLM rejects it too)."""
    tokens = np.fromiter((r.input_len + r.output_len - 1 + cfg.spec_k for r in requests), dtype=np.int64,
                         count=len(requests))  # + the k drafted slots of speculative decoding
    need = -(-tokens // cfg.block_size)  # the last token is sampled, never cached
    bad = np.flatnonzero(need > cfg.num_blocks)
    if bad.size:
        r = requests[int(bad[0])]
        raise ValueError(f"request {r.id}: input_len+output_len={r.input_len}+{r.output_len} needs "
                         f"{int(need[bad[0]])} KV blocks of {cfg.block_size} tokens; a replica holds {cfg.num_blocks}")
    if not cfg.chunked_prefill:  # a prompt must then enter in one step: it can never run past the budget
        long = next((r for r in requests if r.input_len > cfg.max_num_batched_tokens), None)
        if long is not None:
            raise ValueError(f"request {long.id}: input_len={long.input_len} exceeds the token budget "
                             f"{cfg.max_num_batched_tokens} of {cfg.engine} without chunked prefill; allowed: "
                             f"input_len <= token budget, --max-batched-tokens >= input_len, or an engine with "
                             f"chunked prefill")


class StepEnd(NamedTuple):
    """A step of ``replica`` ends at ``t``: the ``finished`` requests leave the system; the ``handoffs``
    of a prefill replica, (rid, blocks holding its prompt's KV), start their transfer to the decode side."""

    t: float
    seq: int  # push order: events at the same t apply in the order they were pushed
    replica: Replica
    finished: list[int]  # ledger indices
    handoffs: list[tuple[int, int]]  # (rid, blocks)


class KVArrival(NamedTuple):
    """Request ``rid``'s prompt KV, sent by the prefill ``replica``, reaches decode replica ``dst`` at ``t``:
    the ``blocks`` it held there are freed and the request queues on ``dst``."""

    t: float
    seq: int  # push order, as in StepEnd
    replica: Replica  # the prefill replica the KV left
    rid: int  # ledger index
    blocks: int  # blocks the KV held on the prefill replica
    dst: Replica | None = None  # the decode replica it was given to (at the handoff)


class LinkDone(NamedTuple):
    """The next transfer's bytes are through at ``t`` (sim/transfers.py), if ``gen`` is still current."""

    t: float
    seq: int
    gen: int


def replica_extras(dep: Deployment, cfg: SimConfig, block_bytes: float) -> dict:
    """What the scheduler needs for the engine features: the draft's step model (speculative.Drafter), the
    seconds to read one block from the host tier (offload.py)."""
    out = {"drafter": drafter_for(dep, cfg.spec), "draft_sm": None, "host_s_per_block": 0.0}
    if out["drafter"] is not None and out["drafter"].model is not None:
        out["draft_sm"] = draft_step_model(out["drafter"], cfg.max_num_batched_tokens)
    if cfg.device_blocks is not None and cfg.device_blocks < cfg.num_blocks:
        _, bw, eff, _ = host_link(dep.gpu)
        out["host_s_per_block"] = block_bytes / (bw * eff)
    return out


def simulate_run(dep: Deployment, requests: list[Request], cfg: SimConfig,
                 progress: Callable[[int, int], None] | None = None, source: Source | None = None,
                 decode: tuple | None = None) -> Run:
    """Run every request to completion; see the module docstring. ``source`` issues the arrivals
    (default: each request at its own arrival time, open loop). ``decode``: (deployment, SimConfig) of a
    decode pool with its own layout (disaggregated mode; default: ``dep`` and ``cfg``)."""
    if cfg.preemption not in PREEMPTION:
        raise ValueError(f"preemption={cfg.preemption!r} unknown; allowed: {', '.join(PREEMPTION)}")
    _check_fits(requests, cfg)
    source = source or OpenLoop()
    ledger = Ledger(source.order(requests))
    source.start(ledger)
    step_model = step_model_of(dep, cfg.max_num_batched_tokens)
    block_bytes = block_bytes_per_gpu(dep, cfg.block_size)
    swap_s = block_bytes / pcie_link(dep.gpu).effective_bw if cfg.preemption == "swap" else 0.0
    extras = replica_extras(dep, cfg, block_bytes)

    def make_replica(i: int, role: str) -> Replica:
        return Replica(i, step_model, BlockManager(cfg.num_blocks, cfg.block_size), ledger, cfg, swap_s, role,
                       extras)

    if cfg.disaggregated:
        front = [make_replica(i, "prefill") for i in range(cfg.prefill_replicas)]
        d_dep, d_cfg = decode if decode is not None else (dep, cfg)
        if decode is not None:
            _check_fits(requests, d_cfg)
            d_sm = step_model_of(d_dep, d_cfg.max_num_batched_tokens)
            d_bb = block_bytes_per_gpu(d_dep, d_cfg.block_size)
            d_swap = d_bb / pcie_link(d_dep.gpu).effective_bw if d_cfg.preemption == "swap" else 0.0
            d_extras = replica_extras(d_dep, d_cfg, d_bb)
            back = [Replica(cfg.prefill_replicas + i, d_sm, BlockManager(d_cfg.num_blocks, d_cfg.block_size), ledger,
                            d_cfg, d_swap, "decode", d_extras) for i in range(cfg.decode_replicas)]
        else:
            back = [make_replica(cfg.prefill_replicas + i, "decode") for i in range(cfg.decode_replicas)]
        link, d_link = kv_link(dep), kv_link(d_dep)
        lanes = {r.index: dep.par.attention_groups for r in front}  # one lane per attention group (transfers.py)
        lanes.update({r.index: d_dep.par.attention_groups for r in back})
        links = Transfers(lanes)
        send_bw, recv_bw = link.effective_bw, d_link.effective_bw
        latency = max(link.latency, d_link.latency)
    else:
        front = back = [make_replica(i, "both") for i in range(cfg.replicas)]
        link = None
    replicas = front if front is back else front + back
    transfers: list[float] = []
    by_index: dict[int, tuple] = {}  # rid -> (prefill replica, decode replica) of a transfer in flight
    kv_work: dict = {}  # prompt tokens -> a transfer's seconds at full rate

    def least_loaded(pool: list[Replica]) -> Replica:
        return pool[0] if len(pool) == 1 else min(pool, key=lambda r: r.outstanding)

    n_requests = len(ledger)
    heap: list[StepEnd | KVArrival | LinkDone] = []
    seq = 0  # events pushed so far
    done = in_sys = 0
    area = 0.0
    t_last = start = source.next_time()
    tick = max(1, n_requests // 200)
    touched: list[Replica] = []  # replicas an event may have given work, planned once the instant is applied
    next_arrival = source.next_time()  # only pops and finished requests change it
    pop, push = heapq.heappop, heapq.heappush
    fixed = type(source) is OpenLoop  # arrival times fixed in advance: no finish brings one forward

    def horizon(runner: bool, last: bool) -> float | None:
        """The time before which nothing can give the replica being planned work (its steps may run on
        to it: Replica.start_step), or None. With arrival times fixed in advance and one pool, the next
        arrival; else the next pending event, once every replica that may end a step before it is in the
        heap: with one replica, and for the last runner planned at this instant (with fixed arrivals, every
        runner: decode-only steps hand nothing to the others)."""
        if fixed and not cfg.disaggregated:
            return next_arrival
        if len(replicas) == 1 or (runner and (fixed or last)):
            return heap[0].t if heap and heap[0].t < next_arrival else next_arrival
        return None

    def plan(rep: Replica, t: float, until: float | None) -> None:
        """Plan rep's next step (or run of steps) at t and push its end."""
        nonlocal seq
        step = rep.start_step(t, until)
        if step is not None:
            rep.busy = True
            seq += 1
            push(heap, event_of(StepEnd, (step[0], seq, rep, step[1], step[2])))

    event_of = tuple.__new__  # event_of(StepEnd, fields) is StepEnd(*fields), without its Python-level __new__
    while True:
        t = next_arrival
        if heap and heap[0].t <= t:
            t = heap[0].t
        if t == math.inf:
            break
        area += in_sys * (t - t_last)
        t_last = t
        while heap and heap[0].t <= t:
            event = pop(heap)
            if type(event) is StepEnd:
                _, _, rep, finished, handoffs = event
                rep.busy = False
                if finished:
                    rep.outstanding -= len(finished)
                    in_sys -= len(finished)
                    done += len(finished)
                    for rid in finished:
                        source.finished(rid, t)
                    next_arrival = source.next_time()
                    if progress and done // tick != (done - len(finished)) // tick:
                        progress(done, n_requests)
                if handoffs:
                    rep.outstanding -= len(handoffs)
                    for rid, blocks in handoffs:  # given to a decode replica now, its KV queued on the lanes
                        dst = least_loaded(back)
                        dst.outstanding += 1
                        prompt = ledger.prompt[rid]
                        work = kv_work.get(prompt)
                        if work is None:  # seconds at a lane's full rate, per prompt length (kept: lengths repeat)
                            work = kv_work[prompt] = max(transfer_bytes(dep, prompt) / send_bw,
                                                         transfer_bytes(d_dep, prompt) / recv_bw)
                        links.start(t, rid, rep.index, dst.index, blocks, work, latency)
                        by_index[rid] = (rep, dst)
                    seq += 1
                    push(heap, event_of(LinkDone, (links.next_done(), seq, links.gen)))
            elif type(event) is LinkDone:  # bytes through: the KV lands after the link latency
                if event.gen != links.gen:
                    continue  # rates changed since it was pushed
                for rid, _, _, blocks, started, lat in links.finish(t):
                    src, dst = by_index.pop(rid)
                    transfers.append(t + lat - started)
                    seq += 1
                    push(heap, event_of(KVArrival, (t + lat, seq, src, rid, blocks, dst)))
                if links.active:
                    seq += 1
                    push(heap, event_of(LinkDone, (links.next_done(), seq, links.gen)))
                continue
            else:  # KVArrival: free the prefill copy, queue on the decode replica it was given to
                _, _, rep, rid, blocks, dst = event
                rep.pool.release(blocks)
                dst.waiting.append(rid)
                touched.append(dst)
            touched.append(rep)
        while next_arrival <= t:
            dst = least_loaded(front)
            dst.arrive(source.pop())
            dst.outstanding += 1
            touched.append(dst)
            in_sys += 1
            next_arrival = source.next_time()
        runners = []  # replicas that may advance a run of decode-only steps (decode_run.py), planned last
        for rep in touched:
            if not rep.busy:
                if rep.decode_runs and may_run(rep):
                    if rep not in runners:
                        runners.append(rep)
                else:
                    plan(rep, t, horizon(False, False))
        for i, rep in enumerate(runners):
            plan(rep, t, horizon(True, i == len(runners) - 1))
        touched.clear()
    if progress:
        progress(done, n_requests)
    lost = n_requests - done
    if lost or in_sys:
        raise RuntimeError(f"simulator lost {lost} of {n_requests} requests (in system: {in_sys})")
    return Run(ledger, replicas, cfg, dep.par.replica_gpus, start, t_last, area, link, transfers)
