"""The simulator's scalar path of :class:`~inferbound.step.table.StepModel`: a step priced on Python floats.

:meth:`ScalarSteps.step` prices one step from the same tables as ``StepModel.price`` and the same attention
operator (its FLOPs and bytes are linear in the load, so they are read off it once) priced by its kernel
curves (``kernel_pricing.attention_of`` on floats, constants bound once: pricing/attention_scalar.py) or the operator's own
:class:`~inferbound.pricing.roofline.Roof`, the load's sums from ``step.sequence_sums`` (what of_sequences
sums); its parity with :func:`step.price` and with ``StepModel.price`` (tests/test_sim_fast_paths.py) is
tested. :meth:`ScalarSteps.decode_run` is :meth:`ScalarSteps.step` for a run of decode-only steps at
contexts c_j + s: the tables read once for the run's n sequences, the decode sums D_0 + n·s, each step
priced by the same code (:meth:`_base`, :meth:`_attended`), so the same floats
(tests/test_sim_scalar_parity.py); :meth:`ScalarSteps.decode_run_array` is that closure over an array of
steps, one numpy evaluation (:meth:`_attended_array`, attention_scalar.decode_only_array, energy.array_power:
the same constants and float operations elementwise, so the same floats: tests/test_decode_run_vector_parity.py).
The path holds for one pipeline stage, no SSM scans, no DSA indexer and
an exact (every-T) table; elsewhere :meth:`step` falls back to ``StepModel.price``.

A mixin: :class:`ScalarSteps` reads the attributes ``StepModel.__init__`` sets (dep, body, head, stages,
_kernels, _plan, pp, exact, max_tokens) and its ``price``; it imports nothing of table.py.
"""
from __future__ import annotations

import numpy as np

from ..operators import attention_kinds, attention_ops, kind_of, kind_reads
from ..pricing import graphs as G
from ..pricing.energy import array_power, power_w, scalar_power
from ..pricing.attention_scalar import decode_only, decode_only_array, mixed
from ..pricing.kernel_pricing import attention_consts
from ..pricing.roofline import WORK_KEYS, attention_dtype, roof
from .contract import graph_delta, of_sequences, sequence_sums

TABLE_SEQS = 32  # decode_run_table: runs of at most this many sequences read their step prices from a table
TABLE_BLOCK = 256  # entries of one table block (consecutive steps of one n and one residue of D mod n)
TABLE_BLOCKS = 4096  # blocks kept per step model, the oldest dropped first (each 2 × 256 floats: 16 MB at most)


class ScalarSteps:
    """The scalar path of a StepModel (module docstring)."""

    def _scalar_tables(self) -> None:
        """The tables as Python floats, one tuple (busy, communication, overhead, FLOPs, bytes) per token
        count, and, per stage and layer group, the attention operator's coefficients: (kind, count, FLOPs
        per decode pair, per prefill pair, bytes per cached token, per new token) read off
        operators.attention_op, and its pricing: the kernel curves' constants
        (kernel_pricing.attention_consts) bound into attention_of's float forms (attention_scalar.mixed) and
        the decode kernel alone (attention_scalar.decode_only, for steps without prefill pairs), or None (the
        operator's Roof)."""
        dep = self.dep
        m, dt, par = dep.model, dep.dtypes, dep.par

        def lists(w):  # a table.py _Table
            busy = sum(w.field(k) for k in WORK_KEYS)
            return [np.asarray(a, dtype=float).tolist() for a in
                    (busy, w.field("communication"), w.field("overhead"), w.field("flops"), w.field("bytes"))]
        # (busy, communication, overhead, FLOPs, bytes) at each T of the first stage's body (the scalar path
        # has one stage) and at each S of the head
        self._body_t, self._head_t = list(zip(*lists(self.body[0]))), list(zip(*lists(self.head)))
        att_dt = attention_dtype(dep.gpu, dep.compute_dtype, dt.kv_dtype)
        self._roof = roof(dep.gpu, att_dt, "attention")
        self._att_dt = att_dt
        self._att = []
        kp = self._kernels
        for layers, _, _ in self.stages:
            groups = layers if layers is not None else self._all_layers
            coef = []
            for grp in (g for g in groups if g.has_attention and m.indexer is None):  # DSA: general path
                def op(dec=0.0, pre=0.0, cached=0.0, tokens=0.0, grp=grp):
                    (o,) = attention_ops(m, dt, par, [grp], {kind_of(grp): (dec, pre, cached)}, tokens)
                    return o
                o1 = op(dec=1.0)
                curve = kp.attention_curves(o1.shape, att_dt) if kp is not None else None
                consts = None if curve is None else attention_consts(kp, *curve, o1.shape["attention"], att_dt)
                coef.append((kind_of(grp), grp.count, float(np.asarray(o1.flops)), float(np.asarray(op(pre=1.0).flops)),
                             float(np.asarray(op(cached=1.0).bytes)), float(np.asarray(op(tokens=1.0).bytes)),
                             None if consts is None else mixed(consts), consts,
                             None if consts is None else decode_only(consts)))
            self._att.append(coef)
        self._power = scalar_power(dep.gpu, dep.compute_dtype)
        # decode_run_array's twins of the first stage's decode kernels and of the power, same constants
        self._dec_arrays = [None if c[7] is None else decode_only_array(c[7]) for c in self._att[0]] \
            if self._att else []
        self._power_array = array_power(dep.gpu, dep.compute_dtype)
        self._kinds = attention_kinds(m)
        self._o_step = dep.gpu.efficiency.step_overhead_s
        self._overlap = par.comm_overlap
        self._groups = float(par.attention_groups)
        plan = self._plan
        self._graphs = None if plan.decode == G.EAGER and plan.mixed == G.EAGER else \
            (plan, {G.EAGER: 0.0, G.FULL: graph_delta(dep, 0, G.FULL), G.PIECEWISE: graph_delta(dep, 0, G.PIECEWISE)})
        # the general path: scans need the sequences; grid tables price their curve ops at T
        self._scalar = self.pp == 1 and m.ssm is None and m.indexer is None and self.exact
        self._runs: dict[int, tuple] = {}  # _base of decode-only steps of n sequences (decode_run), by n
        self._table: dict[tuple, tuple] = {}  # decode_run_table's blocks, by (n, D mod n, block)

    def step(self, dec_ctx, chunks=(), mode: str = "stream") -> tuple[float, float]:
        """(seconds, watts per GPU) of a step with decode contexts ``dec_ctx`` and prefill ``chunks``
        ((past, new) pairs); ``mode`` as step.combine (the simulator passes ``isolated`` after idle)."""
        dec = np.asarray(dec_ctx, dtype=float)
        n_dec = dec.size
        tokens = n_dec
        for _, n in chunks:
            tokens += n
        if tokens > self.max_tokens:
            raise ValueError(f"step of {tokens} tokens exceeds the tabulated max_tokens={self.max_tokens}")
        if self._scalar is None:
            self._scalar_tables()
        past, new = ([p for p, _ in chunks], [n for _, n in chunks]) if chunks else ((), ())
        if not self._scalar:
            cost = self.price(of_sequences(self.dep.model, dec, past, new, kinds=self._kinds), mode)
            t = float(cost.time)
            return t, float(power_w(self.dep.gpu, self.dep.compute_dtype, cost.flops, cost.bytes, t))
        att, _ = sequence_sums(dec, past, new, self._kinds)
        seqs = n_dec + len(chunks)
        return self._attended(self._base(tokens, seqs), att, seqs)

    def _base(self, tokens: int, seqs: int) -> tuple:
        """(busy, communication, overhead, FLOPs, bytes, T) of the tables for a step of ``tokens`` new tokens
        and ``seqs`` sequences: the body at T (after contract.graph_step's padding, on plain numbers: a
        captured step's body at its padded T, graph_delta added to its overhead) plus the head at S."""
        graph = 0.0
        if self._graphs is not None:  # contract.graph_step on plain numbers
            plan, deltas = self._graphs
            g = self._groups
            pad, captured = G.padded_scalar(plan, tokens / g)
            if captured:
                kind = plan.decode if tokens == seqs else plan.mixed  # decode-only: T = its sequences
                if kind != G.EAGER:
                    tokens, graph = int(round(float(pad) * g)), deltas[kind]
        busy, comm, over, flops, moved = self._body_t[tokens]
        h_busy, h_comm, h_over, h_flops, h_moved = self._head_t[seqs]
        return busy + h_busy, comm + h_comm, over + graph + h_over, flops + h_flops, moved + h_moved, tokens

    def _attended(self, base: tuple, att: dict, seqs: int) -> tuple[float, float]:
        """(seconds, watts per GPU): the ``base`` of :meth:`_base` plus each attention operator priced at the
        load's sums ``att`` ({kind: (decode pairs, prefill pairs, cached tokens read)}, sequence_sums), the
        overlap of communication, the engine's per-step overhead, and the power of the step's FLOPs and bytes."""
        busy, comm, over, flops, moved, tokens = base
        g = self._groups
        for kind, count, f_dec, f_pre, b_cached, b_tok, priced, consts, dec_only in self._att[0]:
            dp, pp_, cached = att[kind]
            f, by = f_dec * dp + f_pre * pp_, b_cached * cached + b_tok * tokens
            if consts is None:
                r = self._roof
                t_op = r.time(f, by)
                busy += (t_op - r.overhead) * count
                over += r.overhead * count
            elif pp_ <= 0:  # decodes only: the bound decode kernel (attention_scalar.decode_only)
                c_s, m_s, o_s = dec_only(dp / g, tokens / g, seqs / g)
                busy += (c_s + m_s) * count
                over += o_s * count
            else:  # attention_of on floats (attention_scalar.mixed)
                c_s, m_s, o_s = priced(dp / g, pp_ / g, cached / g, tokens / g, seqs / g)
                busy += (c_s + m_s) * count
                over += o_s * count
            flops += f * count
            moved += by * count
        if self._overlap:
            comm -= min(comm * self._overlap, busy)
        t = busy + comm + over + self._o_step
        return t, self._power(flops, moved, t)

    def _run_base(self, dec_ctx):
        """(dec, n, base) of a decode-only run of ``dec_ctx`` (the n sequences' cached lengths as a float
        array, base = :meth:`_base` at T = S = n, cached per n); None on the general path or for n = 0.
        Shared by :meth:`decode_run` and :meth:`decode_run_array`."""
        dec = np.asarray(dec_ctx, dtype=float)
        n = dec.size
        if n > self.max_tokens:
            raise ValueError(f"step of {n} tokens exceeds the tabulated max_tokens={self.max_tokens}")
        if self._scalar is None:
            self._scalar_tables()
        if not self._scalar or n == 0:
            return None
        base = self._runs.get(n)
        if base is None:
            base = self._runs[n] = self._base(n, n)
        return dec, n, base

    def decode_run(self, dec_ctx, total: float | None = None):
        """``price(s)`` = :meth:`step` (``dec_ctx`` + s) for s = 0, 1, ...: the decode-only steps of a run
        (sim/decode_run.py) with the tables read once, for the run's n sequences (:meth:`_base` at T = S = n);
        None on the general path (:meth:`step` prices each). Per attention kind a step's decode pairs and
        cached tokens read are Σ_j kind_reads(c_j + s + 1) (sequence_sums): for full attention
        D_0 + n·s with D_0 = Σ_j (c_j + 1) (whole numbers: exact), summed per step for a window. Each step
        is then :meth:`_attended` on those sums, so the numbers are step's own (tests/test_sim_fast_paths.py).
        ``total``: Σ_j c_j when the caller keeps it (sim/batch.py ``csum``; whole numbers: the same float)."""
        run = self._run_base(dec_ctx)
        if run is None:
            return None
        dec, n, base = run
        nf, attended, kinds = float(n), self._attended, self._kinds
        # full attention: Σ_j kind_reads(c_j + 1) = Σ_j c_j + n (whole numbers: exact)
        if total is None:
            total = float(np.add.reduce(dec))
        if len(kinds) == 1 and kinds[0][0] == "full":  # one full-attention kind (dense models)
            kind, d0 = kinds[0], total + nf

            def price(s: int) -> tuple[float, float]:
                d = d0 + nf * s
                return attended(base, {kind: (d, 0.0, d)}, n)
            return price

        total += nf
        kinds = [(k, total if k[0] == "full" else None) for k in kinds]
        after = dec + 1.0

        def price(s: int) -> tuple[float, float]:
            att = {}
            for k, d0 in kinds:
                d = d0 + nf * s if d0 is not None else float(np.add.reduce(kind_reads(k, after + s)))
                att[k] = (d, 0.0, d)
            return attended(base, att, n)
        return price

    def _attended_array(self, base: tuple, att: dict, seqs: int):
        """:meth:`_attended` of decode-only steps, ``att`` {kind: decode pairs = cached tokens read} an array
        over the steps: the same float operations in the same order, elementwise (the Roof's max as
        np.maximum, min as np.minimum; decode kernels by attention_scalar.decode_only_array)."""
        busy, comm, over, flops, moved, tokens = base
        g = self._groups
        for (kind, count, f_dec, f_pre, b_cached, b_tok, _, consts, _), arr in zip(self._att[0], self._dec_arrays):
            dp = att[kind]  # > 0: f_pre·0.0 (no prefill pairs) adds 0.0, x + 0.0 == x
            f, by = f_dec * dp, b_cached * dp + b_tok * tokens
            if consts is None:
                r = self._roof
                t_op = np.maximum(f / r.peak, by / r.bandwidth) + r.overhead
                busy = busy + (t_op - r.overhead) * count
                over = over + r.overhead * count
            else:
                k_s, o_s = arr(dp / g, tokens / g, seqs / g)
                busy = busy + k_s * count
                over = over + o_s * count
            flops = flops + f * count
            moved = moved + by * count
        if self._overlap:
            comm = comm - np.minimum(comm * self._overlap, busy)
        t = busy + comm + over + self._o_step
        return t, self._power_array(flops, moved, t)

    def decode_run_array(self, dec_ctx, total: float | None = None):
        """``prices(s)`` = (seconds, watts per GPU) arrays of :meth:`decode_run`'s ``price`` at each whole s
        of the float array ``s``: the run's steps priced in one numpy evaluation from the same per-run
        constants (:meth:`_base` at T = S = n, D_0) and the same float operations (:meth:`_attended_array`);
        None on the general path. Equal to ``price(s)`` bit for bit where numpy's pow/expm1 are the C
        library's (tests/test_decode_run_vector_parity.py). ``total``: Σ_j c_j, as :meth:`decode_run`."""
        run = self._run_base(dec_ctx)
        if run is None:
            return None
        dec, n, base = run
        nf, after = float(n), dec + 1.0
        total = (float(np.add.reduce(dec)) if total is None else total) + nf
        kinds = self._kinds

        def prices(s: np.ndarray):
            att = {}
            for k in kinds:  # full attention D_0 + n·s; a window's Σ_j kind_reads(c_j + s + 1), whole numbers
                att[k] = total + nf * s if k[0] == "full" else \
                    np.add.reduce(kind_reads(k, after[None, :] + s[:, None]), axis=1)
            return self._attended_array(base, att, n)
        return prices

    def decode_run_table(self, dec_ctx, total: float | None = None):
        """``prices_at(s0, m)`` = :meth:`decode_run_array`'s ``prices(np.arange(s0, s0 + m))``, read from a table
        kept by content. With one full-attention kind a decode-only step of n sequences is priced from n and its
        decode pairs D = D_0 + n·s alone (:meth:`_base` at T = S = n; D = Σ_j (c_j + 1) + n·s), so the price of
        (n, D) is one value whatever run it comes from: D = ρ + n·q with ρ = D_0 mod n and q = ⌊D_0/n⌋ + s, and
        the table holds, per (n, ρ, ⌊q/TABLE_BLOCK⌋), :meth:`_attended_array` over that block's TABLE_BLOCK
        values of q, computed the first time a run reaches it (elementwise float operations: each entry is the
        float ``prices`` gives at that D, tests/test_decode_run_vector_parity.py). A fleet replica's small
        batches meet the same (n, D) run after run; None for more than TABLE_SEQS sequences (a large batch's
        D rarely repeats), another attention kind, or the general path. Arrays returned are read-only views.
        ``total``: Σ_j c_j, as :meth:`decode_run`."""
        run = self._run_base(dec_ctx)
        if run is None:
            return None
        dec, n, base = run
        kinds = self._kinds
        if n > TABLE_SEQS or len(kinds) != 1 or kinds[0][0] != "full":
            return None
        kind, nf, table, size = kinds[0], float(n), self._table, TABLE_BLOCK
        d0 = int(np.add.reduce(dec) if total is None else total) + n  # whole numbers: exact
        rho, q0 = d0 % n, d0 // n
        attended = self._attended_array

        def block(b: int):
            key = (n, rho, b)
            hit = table.get(key)
            if hit is None:
                d = rho + nf * np.arange(b * size, (b + 1) * size, dtype=float)  # whole numbers: D exactly
                t, w = attended(base, {kind: d}, n)
                t, w = np.broadcast_to(t, d.shape).copy(), np.broadcast_to(w, d.shape).copy()
                t.flags.writeable = w.flags.writeable = False
                if len(table) >= TABLE_BLOCKS:
                    del table[next(iter(table))]
                hit = table[key] = (t, w)
            return hit

        def prices_at(s0: int, m: int):
            lo = q0 + s0
            b0, b1 = lo // size, (lo + m - 1) // size
            a = lo - b0 * size
            if b0 == b1:
                t, w = block(b0)
                return t[a:a + m], w[a:a + m]
            parts = [block(b) for b in range(b0, b1 + 1)]
            return (np.concatenate([p[0] for p in parts])[a:a + m], np.concatenate([p[1] for p in parts])[a:a + m])
        return prices_at
