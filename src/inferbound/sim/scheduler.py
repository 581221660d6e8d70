"""One replica's continuous-batching scheduler, after vLLM V1 (``vllm/v1/core/sched/scheduler.py``).

Every sequence knows K = prompt + generated tokens and has C of them in its KV cache; a step computes
n <= K − C of them, and when C reaches K the step samples one new token (K grows by one). A prompt
is a chunk (0, n); a decode is the chunk (K − 1, 1); a recomputed sequence prefills prompt and output
so far, and the step that finishes it samples its next token. Each step, under a token budget B
(``max_num_batched_tokens``) and at most ``max_num_seqs`` running sequences:

1. every decoding sequence gets one token, oldest first; one whose next token starts a new block
   (C mod block_size = 0) takes a free block, and while too few are free the most recently admitted
   running sequence is preempted (it may be the one asking);
2. partially prefilled sequences continue with min(K − C, budget left) tokens each, oldest first,
   preempting the newest not-yet-scheduled sequence (or themselves) when blocks run out;
3. if nothing was preempted in this step, waiting requests are admitted first-come first-served while
   budget, ``max_num_seqs`` and free blocks allow; a prompt longer than the budget left is split
   (chunked prefill) and continues in (2) next step.

Engine behaviour (sim/config.py, from the engine profile): with ``reserve_full`` (TensorRT-LLM's
GUARANTEED_NO_EVICT) a request is admitted only when blocks for its prompt and every output token
are free, takes them all at once and is never preempted; without ``chunked_prefill`` a prompt is
admitted only when it fits the budget left whole; without ``mixed_batches`` (SGLang's prefill-first
scheduler, vLLM V0) a step that can admit or continue a prefill runs prefills only, and decodes wait
for the next step without one.

Preemption (vLLM docs, "Preemption"): ``recompute`` frees the blocks and puts the request at the front
of the queue with C = 0 (its generated tokens are kept and recomputed as prompt); ``swap`` copies its
blocks to host memory (unbounded here) and back when it is readmitted, each way costing
blocks · block bytes per GPU / PCIe bandwidth (every GPU moves its own shard over its own link),
added to the step that performs the copy (vLLM V0 runs swaps before the forward pass).

Engine features (docs/features/): with speculative decoding (sim/stepcost.py) every decoding sequence
takes k + 1 tokens of the budget and blocks for C + k + 1 tokens (the verify pass writes the KV of all
drafted positions), and gains 1 + j tokens per step (j accepted drafts, drawn); its blocks are rounded
back to what its cached tokens need only as it grows. With prefix caching (sim/prefix.py) an admitted
request with no KV of its own starts at the cached blocks of its prefix (a hit needs them resident),
its blocks past the cache's become the cache's once prefilled, and freed cache blocks are evicted (LRU)
before any preemption when blocks run out. With a host KV tier the pool holds the device's blocks and
the host's; the blocks in use beyond the device's are read over the host link each step.

Step time and power come from ``StepModel.step(decode contexts, chunks, mode)`` (through
sim/stepcost.StepPricer, which prices verify passes and drafts with the same step model): a step that
starts when the previous one ends runs in the pipeline's stream, one after idle is isolated
(step.py). Every block taken or returned goes through the replica's :class:`BlockManager`. State is
applied when a step is planned, with token timestamps at its end: nothing else touches a busy replica
except new arrivals, which only join the queue. Decoding sequences live in :class:`DecodeBatch`
(named numpy columns), so a step costs a few numpy operations, not a Python loop over the batch.

Parts: this module plans a step (its three phases) and prices it; sim/blockrules.py holds the block,
admission and preemption rules, sim/apply.py applies a step's tokens at its end, and sim/decode_run.py
advances runs of decode-only steps at once (``SimConfig.decode_runs``): while nothing waits or
prefills, up to the next event that may give the replica work (the event loop's ``horizon``), the
first finish or the first block the pool cannot give, with the numbers of the step-by-step path.
With multi-step scheduling (vLLM V0 ``--num-scheduler-steps N``, ``SimConfig.scheduler_steps``;
deploy/engine_modes.py) a decode-only call is one burst of N steps through the same path
(decode_run ``burst``): nothing admitted during it, one streamed chunk per sequence at its end.
"""
from __future__ import annotations

from collections import deque

from ..step.table import StepModel
from .apply import StepApply
from .batch import DecodeBatch, Prefilling
from .blockrules import BlockRules
from .blocks import BlockManager, blocks_for
from .decode_run import decode_run, may_run
from .ledger import Ledger
from .prefix import PrefixCache
from .stepcost import StepPricer


RECV_EXTEND = 1000  # SGLang scheduler_recv_skipper.py _DEFAULT_WEIGHT: any pass but decode counts 1000 (receive next)


class StepPlan:
    """A step while :meth:`Replica.start_step` plans it: the tokens of the budget still free, the seconds
    of copies it carries (swaps), whether it preempted a sequence, and the prefill chunks scheduled so far:
    ``chunks`` (cached tokens, new tokens) for the step model, ``sched`` (Prefilling, new tokens) to apply
    at its end. A replica keeps one and resets it for each step (cheaper than a new object per step)."""

    __slots__ = ("left", "extra_s", "preempted", "chunks", "sched")

    def reset(self, budget: int) -> StepPlan:
        """The plan of a new step with ``budget`` tokens: nothing scheduled yet."""
        self.left = budget
        self.extra_s = 0.0
        self.preempted = False
        self.chunks: list[tuple[int, int]] = []
        self.sched: list[tuple[Prefilling, int]] = []
        return self


class Replica(BlockRules, StepApply):
    """One replica's scheduler (module docstring): its waiting queue, decoding batch, prefilling prompts
    and block pool; the event loop calls :meth:`start_step` whenever the replica is idle and may have work."""

    def __init__(self, index: int, sm: StepModel, pool: BlockManager, ledger: Ledger, cfg,
                 swap_s_per_block: float, role: str = "both", extras: dict | None = None):
        self.index, self.sm, self.pool, self.ledger = index, sm, pool, ledger
        self.budget, self.max_seqs, self.preemption, self.role = (cfg.max_num_batched_tokens, cfg.max_num_seqs,
                                                                  cfg.preemption, role)
        self.reserve_full, self.chunked, self.mixed = cfg.reserve_full, cfg.chunked_prefill, cfg.mixed_batches
        self.swap_s_per_block = swap_s_per_block
        self.idle_w = sm.dep.gpu.power.idle_w
        self.waiting: deque[int] = deque()
        # blocks read off the cached tokens where each sequence holds just theirs (no drafts, no full reservation)
        self.dec = DecodeBatch(self.max_seqs, pool.block_size, derive=not cfg.spec_k and not cfg.reserve_full)
        self.prefilling: list[Prefilling] = []  # in admission order
        self.admissions = 0
        self.busy = False
        self.last_end = -1.0  # end of the last step (a step starting then continues the stream)
        self.last_d = 0.0  # duration of the last step of a run of decode-only steps (decode_run.py: 0 none yet)
        self.outstanding = 0
        self.preemptions = 0
        self.busy_s = 0.0
        self.energy_j_per_gpu = 0.0
        self.pricer = StepPricer(sm, cfg, extras)
        self.spec_k = cfg.spec_k  # drafted tokens per decode (0: no speculative decoding)
        self.spec_q = cfg.spec_q  # budget tokens of one verifying sequence: k + 1, a tree's N
        self.cache = PrefixCache(pool, pool.block_size) if cfg.prefix_caching and role != "decode" else None
        self.device_blocks = cfg.device_blocks  # None: every block is on the GPU
        self.plan = StepPlan()  # the step being planned (start_step)
        self.decode_runs = cfg.decode_runs  # runs of decode-only steps at once (decode_run.py)
        self.steps_per_call = cfg.scheduler_steps  # multi-step scheduling: decode steps per call (N)
        # SGLang --scheduler-recv-interval k (SchedulerRecvSkipper): arrivals wait in the inbox until a counter of
        # the passes since the last receive (decode 1, a step with prefill chunks RECV_EXTEND) reaches k
        self.recv_k = int(cfg.recv_interval)
        self.recv_counter = self.recv_k  # the first pass receives (maybe_create's counter starts at the threshold)
        self.inbox: deque[int] = deque()

    # -- arrivals ----------------------------------------------------------------------------------
    def arrive(self, rid: int) -> None:
        """A new request: queued now, or, under a receive interval k > 1 while the replica has work (a step
        running or sequences in service: a closed loop's next request lands at a step's end), held in the inbox
        until the scheduler's next receive (an idle scheduler polls at once: its empty passes take no time)."""
        if self.recv_k > 1 and (self.busy or self._holds_work()):
            self.inbox.append(rid)
        else:
            self.waiting.append(rid)

    def _receive(self) -> None:
        """SchedulerRecvSkipper.handle at the start of a pass: when the counter has reached k, every request in
        the inbox joins the queue and the counter restarts. A replica left with nothing to run receives at once:
        its idle passes (weight 1 each) take no time, so the counter reaches k immediately."""
        if self.recv_counter >= self.recv_k or (self.inbox and not self._holds_work()):
            self.recv_counter = 0
            if self.inbox:
                self.waiting.extend(self.inbox)
                self.inbox.clear()

    def _holds_work(self) -> bool:
        """Sequences decoding, prefilling or queued: the scheduler's next pass has something to run."""
        return bool(self.dec.n or self.prefilling or self.waiting)

    def recv_cap(self) -> int | None:
        """Decode steps a run may take before the scheduler must receive its inbox (None: no cap)."""
        return max(self.recv_k - self.recv_counter, 0) if self.inbox else None

    # -- one step ----------------------------------------------------------------------------------
    def start_step(self, t: float, horizon: float | None = None):
        """Plan and apply a step starting at ``t``; returns (end, finished rids, handoffs) or None if idle.

        The three phases of the module docstring, in order: decodes, continued prefills, admissions (only
        if nothing was preempted). ``handoffs``: (rid, blocks) of prefill-role requests whose first token
        is out and whose KV (still in ``blocks`` blocks here) must move to a decode replica. ``horizon``:
        the time of the next event that may give this replica work (the event loop's); with
        ``SimConfig.decode_runs`` a decode-only batch then advances in one run of steps up to it
        (sim/decode_run.py: the same steps, applied at once), also right after a planned step that
        finished nothing and ends before it. None: one step.
        """
        if self.recv_k > 1:
            self._receive()
        if self.steps_per_call > 1 and self._burst_ready():  # multi-step: N decode steps, nothing admitted
            run = decode_run(self, t, horizon or 0.0, burst=self.steps_per_call)
            if run is not None:
                return run
        elif horizon is not None and self.decode_runs and may_run(self):
            run = decode_run(self, t, horizon)
            if run is not None:
                return run
        prefill_only = not self.mixed and bool(self.prefilling or self._admissible())  # no decodes this step
        plan = self.plan.reset(self.budget)
        if not prefill_only:
            self._schedule_decodes(plan)
        if self.prefilling:
            self._continue_prefills(plan)
        if self.waiting and not plan.preempted:
            self._admit_waiting(plan, t)
        n_dec = 0 if prefill_only else self.dec.n
        if n_dec == 0 and not plan.chunks:
            return self._decode_instead(t) if prefill_only and self.dec.n else None
        out = self._run(plan, t, n_dec)
        if horizon is not None and self.decode_runs and out[0] < horizon and not out[1] and not out[2] \
                and may_run(self) and self.steps_per_call == 1:  # nothing can come before the next step starts: a run follows on
            return decode_run(self, out[0], horizon) or out
        return out

    def _burst_ready(self) -> bool:
        """Multi-step scheduling (vLLM V0 ``--num-scheduler-steps``): the next call is a burst of N decode steps
        (decode_run ``burst``) when the batch decodes only: no prompt prefilling and none admissible now (a
        call with prefills runs a single step, vLLM's "Force Single Step", issue #7528); decoding only
        without drafts or a host tier (the burst runs the decode-run path)."""
        return (self.dec.n > 0 and not self.prefilling and not self.spec_k and self.device_blocks is None
                and not (self.waiting and self._admissible()))

    def _schedule_decodes(self, plan: StepPlan) -> None:
        """(1) Every decoding sequence takes k + 1 tokens of the budget (one without speculative decoding)
        and the blocks they need, oldest first; while too few blocks are free, the most recently admitted
        running sequence is preempted (it may be one asking). Under ``reserve_full`` the blocks were taken
        at admission. (A prefill-only step skips this phase.)"""
        dec, pool = self.dec, self.pool
        if dec.n and dec.derived:  # the blocks of the sequences at a block's start, from the phases (batch.py)
            n_blocks = dec.needy()
            while n_blocks > pool.free and not self._room(n_blocks):
                kind, j = self._newest()
                plan.extra_s += self._evict_prefilling(j) if kind == "pre" else self._evict_decoder(j)
                plan.preempted = True
                n_blocks = dec.needy()
            if n_blocks:
                pool.allocate(n_blocks)  # the room just checked
            dec.pending = 1  # each column now holds the blocks of C + 1 tokens
        elif dec.n and not self.reserve_full:
            need, n_blocks = self._decode_need()
            while n_blocks > pool.free and not self._room(n_blocks):
                kind, j = self._newest()
                plan.extra_s += self._evict_prefilling(j) if kind == "pre" else self._evict_decoder(j)
                plan.preempted = True
                need, n_blocks = self._decode_need()
            if n_blocks:
                pool.allocate(n_blocks)  # the room just checked
                dec.blocks[:dec.n] += need
        plan.left -= dec.n * self.spec_q

    def _continue_prefills(self, plan: StepPlan) -> None:
        """(2) Partially prefilled sequences continue, oldest first, with min(K − C, budget left) tokens
        each; when blocks run out the newest of those not yet scheduled is preempted, and the sequence
        itself when that is not enough (those after it then wait for the next step)."""
        prefilling, bs = self.prefilling, self.pool.block_size
        left, chunks, sched = plan.left, plan.chunks, plan.sched
        i = 0
        while prefilling and i < len(prefilling) and left > 0:
            entry = prefilling[i]
            chunk = min(entry.total - entry.cached, left)
            extra = max(blocks_for(entry.cached + chunk, bs) - entry.blocks - entry.depth, 0)
            while not self._room(extra) and len(prefilling) - 1 > i:
                plan.extra_s += self._evict_prefilling(len(prefilling) - 1)
                plan.preempted = True
            if not self._room(extra):
                plan.extra_s += self._evict_prefilling(i)
                plan.preempted = True
                break
            self.pool.allocate(extra)
            entry.blocks += extra
            chunks.append((entry.cached, chunk))
            sched.append((entry, chunk))
            left -= chunk
            i += 1
        plan.left = left

    def _admit_waiting(self, plan: StepPlan, t: float) -> None:
        """(3) Waiting requests are admitted first come, first served while the budget left,
        ``max_num_seqs`` and free blocks allow; a prompt longer than the budget left is split (chunked
        prefill, continued in (2) next step), or, without chunked prefill, waits. A request resumed with
        only its next token to compute (swapped in, or its KV transferred here) joins the decodes."""
        dec, ledger, pool = self.dec, self.ledger, self.pool
        left, chunks, sched = plan.left, plan.chunks, plan.sched
        while self.waiting and left > 0 and dec.n + len(self.prefilling) < self.max_seqs:
            rid = self.waiting[0]
            total = ledger.prompt[rid] + ledger.generated[rid]
            # blocks for min(C + left, K) = C + chunk tokens: the first chunk's own (or, reserve_full, all)
            cached, pid, depth, need_b = self._admission(rid, ledger.cached[rid], total, left)
            chunk = min(total - cached, left)
            if not self.chunked and chunk < total - cached:
                break
            if self.cache is not None:
                self.cache.acquire(pid, depth, t)  # the hit's blocks are not evictable for our own room
            if not self._room(need_b):
                self._release_prefix(pid, depth, t)
                break
            self.waiting.popleft()
            pool.allocate(need_b)
            ledger.hit_tokens[rid] += cached - ledger.cached[rid]
            ledger.computed_tokens[rid] += total - cached
            if ledger.admit_s[rid] != ledger.admit_s[rid]:  # NaN: first admission
                ledger.admit_s[rid] = t
            plan.extra_s += ledger.host_blocks[rid] * self.swap_s_per_block
            ledger.host_blocks[rid] = 0
            self.admissions += 1
            if cached > 0 and total - cached == 1 and not depth and ledger.generated[rid] > 0:  # resumed
                # decode (swapped in, or KV transferred here); a prefill evicted one token short of its
                # prompt is not one
                dec.add(cached, ledger.generated[rid], ledger.output[rid], need_b, rid, self.admissions,
                        ledger.last_s[rid])
            else:
                entry = Prefilling(rid, cached, total, need_b, self.admissions, pid, depth)
                self.prefilling.append(entry)
                chunks.append((cached, chunk))
                sched.append((entry, chunk))
            left -= chunk
        plan.left = left

    def _decode_instead(self, t: float):
        """A prefill-only step that found nothing to prefill after all: plan the step again with decodes
        (on a fresh plan: copy seconds of sequences the first attempt preempted are not carried over)."""
        self.mixed = True
        out = self.start_step(t)
        self.mixed = False
        return out

    def _run(self, plan: StepPlan, t: float, n_dec: int):
        """Price the planned step (``n_dec`` decodes and the plan's chunks), record it and apply its tokens;
        returns (end, finished rids, handoffs)."""
        dec, pool, ledger = self.dec, self.pool, self.ledger
        mode = "stream" if t == self.last_end else "isolated"
        run_s, watts = self.pricer.price(dec.cached[:n_dec], plan.chunks, mode)
        used = pool.used()
        extra_s = plan.extra_s
        if self.device_blocks is not None:  # the host tier's blocks in use are read back (offload.py)
            in_use = used - (self.cache.evictable() if self.cache is not None else 0)
            extra_s += self.pricer.host_seconds(in_use - self.device_blocks, run_s)
        dur = run_s + extra_s
        end = t + dur
        dec_tokens = n_dec * self.spec_q if self.spec_k else n_dec
        ledger.record_step(t, dur, dec_tokens, self.budget - plan.left - dec_tokens, len(self.waiting),
                           n_dec + len(self.prefilling), used, self.index, watts)
        self.busy_s += dur
        self.energy_j_per_gpu += watts * run_s + self.idle_w * extra_s  # copies: GPU near idle
        self.last_end = end
        self.recv_counter += RECV_EXTEND if plan.chunks else 1  # SchedulerRecvSkipper's weights
        finished, handoffs = self._apply_decodes(t, end, n_dec), []
        if plan.sched:
            self._apply_chunks(end, plan.sched, finished, handoffs)
        return end, finished, handoffs
