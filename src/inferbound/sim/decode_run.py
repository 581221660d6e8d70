"""Runs of decode-only steps of one replica, advanced in one call (the scheduler's fast path).

While a replica's batch holds only decoding sequences (nothing waiting, nothing prefilling, no
speculative decoding, no host KV tier), its steps are the same step of scheduler.py over and over: each
of the n sequences adds one token, so step s of a run that starts with contexts c_j has contexts
c_j + s, and nothing else changes until one of

- a sequence finishes: after min_j (target − generated) steps; that step is the run's last, and its
  finishes are applied as the step-by-step path applies them (Replica._finish_decodes);
- a sequence needs a block the pool cannot give: sequence j holding H_j blocks (prefix depth included)
  takes its next block in step r_j = H_j·bs − c_j and then every bs steps (its blocks hold its cached
  tokens: H_j·bs >= c_j), so step s takes a_s = #{j : r_j <= s, (s − r_j) mod bs = 0} blocks; the run
  stops before the first step whose cumulative Σ a exceeds the free blocks (preemption and prefix-cache
  eviction are the step-by-step path's);
- an event that may give the replica work: an arrival, a KV transfer, any other step end (the event
  loop's ``horizon``); a step of the run starts only before it (an event at a step's start is applied
  before that step is planned, so the step-by-step path would see it).

Step s's time and power are StepModel prices at contexts c_j + s. On the step model's scalar path a run
expected to be long (the horizon at least SHORT_RUN of the replica's last steps away, more than SHORT_RUN steps
to go) is priced in one numpy evaluation per chunk by ``StepModel.decode_run_array``, the vectorized twin of
``StepModel.decode_run``'s scalar closure: the same per-run constants and float operations, the same floats
(tests/test_decode_run_vector_parity.py), read for a small batch from ``StepModel.decode_run_table`` (those
floats kept by content, per n sequences and decode pairs D: a fleet replica meets the same (n, D) run after
run); a short one step by step by that closure (the tables read once for
the run's n, the decode sums D_0 + n·s), the floats of ``StepModel.step`` itself
(tests/test_sim_scalar_parity.py). Its step ends are one np.add.accumulate from the run's start (left to right,
e_s = e_{s−1} + t_s, as the event loop meets them), its blocks per step a cumulative sum where the ledger keeps
samples or the blocks may run out, else only their total (``taken_by``); the r_j are read once per run
(:class:`_Phases`: where every r_j < bs, as a histogram, from which a_s and their sums are Python integers; with
derived blocks, sim/batch.py, that histogram is the batch's own, read without a pass over the batch). On
the general path (pipeline stages,
state-space layers, grid tables) the first SCALAR_STEPS are priced by ``StepModel.step``, as the step-by-step
path, and the rest in one vectorized ``StepModel.price`` over the run's steps (of_sequences' decode-only load
with the steps on an axis: per attention kind the pairs and the cached tokens read are both Σ_j kind_reads(c_j
+ s + 1)), equal to the scalar path to 1e-12 (tests/test_sim_fast_paths.py). After k steps sequence j holds max(H_j, ⌈(c_j +
k)/bs⌉) blocks (one more where r_j < k when k <= bs and every r_j < bs). Step ends are summed in order
(e_s = e_{s−1} + t_s, as the event loop meets them), so every timestamp, gap and sample equals the
step-by-step path's within float rounding (tests/test_sim_fastpath.py, with ``SimConfig.decode_runs`` off
as the reference; on the scalar path the same floats). The run's samples go to the ledger in one call, its gaps as one duration per step for
all n sequences, and its blocks through one ``BlockManager.allocate``; a long run costs some 60 numpy
operations on arrays of its steps (~100 µs on a shared 2-core machine, plus ~0.1 µs a step), not one price per
step nor the three phases of a planned step.
"""
from __future__ import annotations

import numpy as np

from ..operators import attention_kinds, kind_reads
from ..pricing.energy import power_w
from ..step.contract import StepLoad, of_sequences
from .block_phases import _Phases, _blocks, blocks_per_step, taken_by  # noqa: F401  (re-exported)

SCALAR_STEPS = 24  # general path: steps priced one by one before the rest go in one vectorized call
SHORT_RUN = 8  # scalar path: a run expected to end within this many steps after its first is priced step by step
# (StepModel.decode_run, ~3-7 µs a step); a longer one by StepModel.decode_run_array (~30 µs + ~0.1 µs a step)
MAX_RUN = 1024  # steps planned at most in one run (bounds the arrays: MAX_RUN × max_num_seqs floats)


def may_run(rep) -> bool:
    """Whether the replica's state is one a run of decode-only steps covers (module docstring)."""
    return (rep.dec.n > 0 and not rep.waiting and not rep.prefilling and not rep.spec_k
            and rep.device_blocks is None)


def run_load(model, ctx0: np.ndarray, offsets: np.ndarray) -> StepLoad:
    """The decode-only loads of steps at contexts ctx0 + s for each s of ``offsets``, as one StepLoad with
    the steps on an axis (of_sequences' load of each step: module docstring)."""
    kinds = attention_kinds(model)
    base = of_sequences(model, ctx0, kinds=kinds)
    after = ctx0[None, :] + (offsets[:, None] + 1.0)  # each decode's length once it adds its token
    att = {}
    for kind in kinds:
        d = np.add.reduce(kind_reads(kind, after), axis=1)  # whole numbers: exact in any order
        att[kind] = (d, np.zeros_like(d), d)
    return StepLoad(base.tokens, base.sampled, base.sequences, att, base.seqgroups)


class _Run:
    """A run being priced: its next step s, the end e of its last step, blocks taken, samples and gaps."""

    __slots__ = ("s", "e", "taken", "samples", "gaps", "busy", "energy")

    def __init__(self, t: float, busy: float, energy: float):
        self.s, self.e, self.taken, self.samples, self.gaps = 0, t, 0, [], []
        self.busy, self.energy = busy, energy

    def add(self, d: float, w: float, used: float, n: float, index: float) -> None:
        """Step s took d seconds at w watts per GPU, ``used`` blocks in use."""
        start = self.e
        self.e = start + d  # as the event loop meets the step ends
        self.samples += (start, d, n, 0.0, 0.0, n, used, index, w)  # ledger.SAMPLE_FIELDS
        self.gaps.append(self.e - start)
        self.busy += d
        self.energy += w * d
        self.s += 1


def _vector_steps(rep, run: _Run, ctx: np.ndarray, horizon: float, steps: int, per, free: int) -> None:
    """Steps run.s.. of the run priced in vectorized StepModel.price calls, each starting before ``horizon``
    and their blocks within ``free``."""
    sm, dep = rep.sm, rep.sm.dep
    n, index, used0 = float(ctx.size), float(rep.index), float(rep.pool.used())
    while run.s < steps and run.e < horizon:
        s = run.s
        m = steps - s
        if horizon != np.inf:  # steps grow with context: (horizon − e)/last step is enough to pass it
            m = min(m, int((horizon - run.e) / run.samples[-8]) + 1)
        cum = None
        if per is not None:
            cum = run.taken + np.cumsum(per[s:s + m])
            m = int(np.searchsorted(cum, free, side="right"))  # Σ a nondecreasing: the steps it fits
            if m == 0:
                return
        cost = sm.price(run_load(dep.model, ctx, np.arange(s, s + m, dtype=float)), "stream")
        d = np.broadcast_to(np.asarray(cost.time, dtype=float), (m,)).tolist()
        w = np.broadcast_to(np.asarray(power_w(dep.gpu, dep.compute_dtype, cost.flops, cost.bytes, cost.time),
                                       dtype=float), (m,)).tolist()
        for i in range(m):
            if i and not run.e < horizon:
                return
            if cum is not None:
                run.taken = int(cum[i])
            run.add(d[i], w[i], used0 + run.taken, n, index)


def _fast_steps(run: _Run, price, stop: int, horizon: float, per, free: int, n: float, index: float,
                used0: float) -> None:
    """Steps run.s..stop−1 of the run priced by ``price(s)`` (StepModel.decode_run), each starting before
    ``horizon`` (the first always) and its blocks within ``free`` (``per``: blocks_per_step's list, None: none
    taken). What _Run.add records, on local variables."""
    s, e, taken, samples, gaps, busy, energy = run.s, run.e, run.taken, run.samples, run.gaps, run.busy, run.energy
    while s < stop and (not s or e < horizon):
        if per is not None:
            a = per[s]
            if taken + a > free:
                break
            taken += a
        d, w = price(s)
        start = e
        e = start + d  # as the event loop meets the step ends
        samples += (start, d, n, 0.0, 0.0, n, used0 + taken, index, w)  # ledger.SAMPLE_FIELDS
        gaps.append(e - start)
        busy += d
        energy += w * d
        s += 1
    run.s, run.e, run.taken, run.busy, run.energy = s, e, taken, busy, energy


def _array_steps(run: _Run, prices, stop: int, horizon: float, cum, n: float, index: float, used0: float,
                 last: float, chunks: list, ledger_keeps_samples: bool = True) -> float:
    """Steps run.s..stop−1 priced by ``prices(s, m)`` (steps s..s+m−1: :func:`_run_prices`) in one evaluation per chunk, each
    starting before ``horizon`` (the first always); ``last``: a recent step's duration (the chunk's length is
    (horizon − e)/last + 1, another chunk follows where that falls short); returns the last step's. The step ends are
    one np.add.accumulate from run.e (e_s = e_{s−1} + t_s left to right, as _fast_steps adds them), busy time
    and energy likewise; each chunk's samples ((steps, 9) array) and gaps go to ``chunks``."""
    keep = ledger_keeps_samples
    while run.s < stop and (not run.s or run.e < horizon):
        s = run.s
        m = stop - s
        if horizon != np.inf:  # steps grow with context: (horizon − e)/last step is enough to pass it
            m = min(m, max(int((horizon - run.e) / last), 0) + 1)
        d, w = prices(s, m)
        acc = np.empty((3, m + 1))  # rows: step ends, busy time, energy, each summed left to right
        acc[:, 0] = run.e, run.busy, run.energy
        acc[0, 1:] = acc[1, 1:] = d
        np.multiply(w, d, out=acc[2, 1:])
        np.add.accumulate(acc, axis=1, out=acc)
        ends = acc[0]
        k = m if horizon == np.inf else 1 + int(ends[1:m].searchsorted(horizon, side="left"))
        rows = None
        if keep:
            rows = np.empty((k, 9))  # ledger.SAMPLE_FIELDS
            rows[:, 0], rows[:, 1], rows[:, 2:6], rows[:, 7], rows[:, 8] = ends[:k], d[:k], (n, 0.0, 0.0, n), index, w[:k]
            rows[:, 6] = used0 if cum is None else used0 + cum[s:s + k]
        chunks.append((rows, ends[1:k + 1] - ends[:k], float(d[0])))
        run.e, run.busy, run.energy = acc[:, k].tolist()
        run.s, last = s + k, float(d[k - 1])
        if cum is not None:
            run.taken = int(cum[s + k - 1])
    return last


def _run_prices(sm, ctx: np.ndarray, total: float | None = None):
    """``prices(s, m)``: (seconds, watts per GPU) arrays of steps s..s+m−1 of the run at contexts ``ctx``, from
    StepModel.decode_run_table where it applies (small batches: their (n, D) prices kept by content), else
    StepModel.decode_run_array (the same floats); None on the general path."""
    at = sm.decode_run_table(ctx, total)
    if at is not None:
        return at
    arr = sm.decode_run_array(ctx, total)
    if arr is None:
        return None
    return lambda s, m: arr(np.arange(s, s + m, dtype=float))


def decode_run(rep, t: float, horizon: float, burst: int = 0):
    """Plan and apply a run of decode-only steps of ``rep`` from ``t`` (module docstring); returns
    (end of its last step, finished rids, []) as Replica.start_step, or None when no run applies (the
    first step needs blocks the pool lacks: the step-by-step path plans it, preempting).

    ``burst`` N >= 2: one multi-step scheduler call (vLLM V0 ``--num-scheduler-steps N``,
    deploy/engine_modes.py): N steps of the whole batch whatever ``horizon`` (nothing is admitted between
    them) and whichever sequence reaches its target first (vLLM runs the N steps and drops the tokens past a
    sequence's end; such a sequence leaves at the burst's end), fewer only where the pool runs out of blocks.
    Every sequence's tokens reach the client together at the end: one inter-token gap per sequence and burst,
    end − its previous token's time, as a streaming benchmark records one gap per chunk received
    (sglang.bench_serving / vLLM benchmark_serving.py: ``itl.append(timestamp - most_recent_timestamp)`` per
    chunk). The first token of a burst thus waits N steps, the others 0: the gap is recorded once per chunk."""
    dec, pool, ledger = rep.dec, rep.pool, rep.ledger
    n = dec.n
    to_go = int(dec.due if dec.exact else dec.to_go())  # min(target − generated)
    steps = min(to_go, MAX_RUN) if not burst else min(int(burst), MAX_RUN)  # a finish ends a plain run
    cap = rep.recv_cap()  # a receive interval with arrivals held: the run ends where the scheduler receives
    if cap is not None:
        if cap < 1:
            return None
        steps = min(steps, cap)
    if burst:
        horizon = float("inf")
    ctx = dec.cached[:n]
    first = None  # the sequences' r_j as _Phases
    bs = pool.block_size
    if dec.derived:  # blocks read off the cached tokens: the phases from the batch's histogram (batch.py)
        first = _Phases.of_hist(dec.phases(), n, bs)
    elif not rep.reserve_full:  # (reserve_full: every block was taken at admission)
        first = _Phases.of((dec.blocks[:n] + dec.depth[:n]) * bs - ctx if dec.deep else dec.blocks[:n] * bs - ctx,
                           bs)
        if first is None:  # blocks short of the cached tokens: not a run's state
            return None
    free = pool.free
    run = _Run(t, rep.busy_s, rep.energy_j_per_gpu)
    n_f, index, used0 = float(n), float(rep.index), float(pool.used())
    chunks: list = []
    fast = prices = cum = None
    if rep.pricer.spec is None and rep.sm._scalar is not False:  # StepModel's scalar path (None: not built yet)
        last = rep.last_d  # the replica's last step: how many of this run's steps its horizon leaves, roughly
        if last > 0.0 and steps > SHORT_RUN and (horizon == np.inf or (horizon - t) / last >= SHORT_RUN):
            prices = _run_prices(rep.sm, ctx, dec.csum)  # a long run: every step in one array evaluation
        if prices is None:
            fast = rep.sm.decode_run(ctx, dec.csum)
    if prices is not None or fast is not None:
        if first is not None and prices is not None:  # Σ a nondecreasing: the steps whose blocks fit
            cum, steps = first.fitting(steps, free, ledger.keeps_samples)
            if steps == 0:
                return None
        if prices is not None:
            last = _array_steps(run, prices, steps, horizon, cum, n_f, index, used0, last, chunks,
                                ledger.keeps_samples)
        else:  # the first step by the run's scalar closure (step's own numbers), ...
            per = None if first is None else first.per_step(steps)
            _fast_steps(run, fast, 1, horizon, per, free, n_f, index, used0)
            if run.s == 0:
                return None
            last = run.samples[1]
            if run.s < steps and run.e < horizon:  # ... the rest one by one if few, else in one array evaluation
                if horizon == np.inf or (horizon - run.e) / last >= SHORT_RUN and steps - run.s > SHORT_RUN:
                    prices = _run_prices(rep.sm, ctx, dec.csum)
                    if first is not None:
                        cum, steps = first.fitting(steps, free, ledger.keeps_samples)
                    last = _array_steps(run, prices, steps, horizon, cum, n_f, index, used0, last, chunks,
                                        ledger.keeps_samples)
                else:
                    _fast_steps(run, fast, steps, horizon, per, free, n_f, index, used0)
                    last = run.samples[-8]
    if prices is not None or fast is not None:
        rep.last_d = last
        if prices is not None and cum is None and first is not None:  # every step's blocks fit: Σ of them
            run.taken = first.taken(run.s)
    else:
        per = None if first is None else first.per_step(steps)
        price, mode = rep.pricer.price, "stream" if t == rep.last_end else "isolated"
        limit = min(steps, SCALAR_STEPS)
        while run.s < limit and (not run.s or run.e < horizon):
            if per is not None:
                a = per[run.s]
                if run.taken + a > free:
                    break
                run.taken += a
            d, w = price(ctx + run.s, (), mode)
            mode = "stream"
            run.add(d, w, used0 + run.taken, n_f, index)
        if run.s == 0:
            return None
        if run.s == limit < steps and run.e < horizon:
            _vector_steps(rep, run, ctx, horizon, steps, per, free)
    k = run.s
    if run.taken:  # each sequence then holds max(H_j, ⌈(c_j + k)/bs⌉) blocks, prefix depth included
        pool.allocate(run.taken)
        if dec.derived:  # each holds ⌈(c_j + k)/bs⌉ by its cached tokens (batch.py): no row to write
            pass
        elif k <= bs and first.hist is not None:  # one block at most: the one of step r_j < k (every r_j < bs)
            dec.blocks[:n] += first.r < k
        else:
            want = np.ceil((ctx + k) / bs)
            if dec.deep:
                want -= dec.depth[:n]
            np.maximum(dec.blocks[:n], want, out=dec.blocks[:n])
    ledger.record_step_values(run.samples)
    for rows, _, _ in chunks:
        if rows is not None:
            ledger.record_step_values(rows.ravel())
    if burst:  # one chunk of k tokens per sequence: one gap each, from its previous token to the burst's end
        ledger.record_gaps(run.e, dec.lasts(), t)
    elif dec.last_all == t:  # the first step's gaps, as Replica._apply_decodes records them
        ledger.record_equal_gaps(run.gaps[0] if run.gaps else float(chunks[0][1][0]), n)
    else:
        ledger.record_gaps(t + (run.samples[1] if run.samples else chunks[0][2]), dec.lasts(), t)
    if k > 1 and not burst:  # every later step: all n waited exactly the step before
        if not chunks:
            ledger.record_equal_gap_run(run.gaps[1:], n)
        elif run.gaps or len(chunks) > 1:
            ledger.record_equal_gap_run(np.concatenate([run.gaps] + [g for _, g, _ in chunks])[1:], n)
        else:
            ledger.record_equal_gap_run(chunks[0][1][1:], n)
    dec.advance(k)
    if rep.recv_k > 1:  # k decode passes (weight 1 each); with nothing held the receives kept firing every k passes
        c = rep.recv_counter + k
        rep.recv_counter = c if rep.inbox or c <= rep.recv_k else (c - 1) % rep.recv_k + 1
    end = run.e
    dec.set_last(end)
    rep.busy_s, rep.energy_j_per_gpu = run.busy, run.energy
    rep.last_end = end
    if k < to_go:  # no sequence finished: at least to_go − k tokens to go for each
        dec.due, dec.exact = float(to_go - k), True
        return end, [], []
    return end, rep._finish_decodes(end, n), []
