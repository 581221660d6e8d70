"""Fast step-time model for schedulers: the engine's prices, tabulated once per deployment.

A serving step runs D decoding sequences (contexts c_i) and prefill chunks (sequence j adds n_j
tokens after p_j cached ones): T = D + Σ n_j tokens. Its time splits into

- everything but attention (GEMMs, experts, norms, collectives, pipeline, overheads), which depends
  only on T: tabulated as G(T) = step_cost(batch=T, new=1, past=0, no logits, no attention operators)
  for T = 0..max_tokens
  (one vectorized call through the same operators and pricing engine as ``estimate``), plus the LM
  head for the S = D + chunks sequences sampled, G_logits(S) − G(S);
- attention, per layer group g: F_g = f_g·(pairs) FLOPs and B_g = b_g·(cached tokens) + a_g·T bytes,
  where decode adds pairs = cached = min(c_i + 1, W_g) per sequence and a chunk adds
  pairs = attended_pairs(p_j, n_j, W_g), cached = min(p_j + n_j, W_g). The coefficients are read off
  the attention operator itself; the group's time is count·(max(F/(P·e_c), B/(W·e_kv)) + kernel overhead).

With pp stages the tables hold one micro-batch passing every stage (G summed over stages, sends
included). A step of S sequences runs as m = min(S, pp) micro-batches of T/m tokens; with f the time
of one micro-batch through all stages, f = G(T/m) + G_logits(S/m) + A/m, and balanced stages, the
step takes max(m·f/pp, f) (pipeline.py's decode formula with t_i = f/pp).
Power per step follows energy.py from the step's FLOPs and bytes.
"""
from __future__ import annotations

import numpy as np

from . import steps
from .deployment import Deployment
from .energy import power_w, step_flops_bytes
from .operators import _merged_groups, attended_pairs, attention_reads, layer_ops
from .roofline import attention_dtype, compute_eff


class StepModel:
    """``grid_points=None`` tabulates every T exactly (simulator); a number tabulates that many points
    (dense at small T, geometric above) and interpolates linearly (max-throughput sweeps)."""

    def __init__(self, dep: Deployment, max_tokens: int, grid_points: int | None = None):
        self.dep = dep
        m, g, dt, par, cdt = dep.model, dep.gpu, dep.dtypes, dep.par, dep.compute_dtype
        self.max_tokens = int(max_tokens)
        if grid_points is None or grid_points >= self.max_tokens + 1:
            t = np.arange(self.max_tokens + 1, dtype=float)
        else:
            t = np.unique(np.concatenate([np.arange(0, min(64, self.max_tokens) + 1),
                                          np.round(np.geomspace(64, max(self.max_tokens, 64), grid_points)),
                                          [self.max_tokens]])).astype(float)
        self.grid = t
        self.exact = t.size == self.max_tokens + 1
        if par.pp > 1:  # tables of one micro-batch through all stages
            par = par.model_copy(update={"microbatches": 1})
        tables = []
        for logits in (0, 1):  # without and with one row of logits per token
            cost = steps.step_cost(m, g, dt, par, cdt, np.maximum(t, 1), 1, 0, "decode", logits_per_seq=logits,
                                   attention=False)
            flops, moved = step_flops_bytes(cost)
            tables.append([np.broadcast_to(np.asarray(x, dtype=float), t.shape).copy()
                           for x in (cost.time, flops, moved)])
        (self.base_time, self.base_flops, self.base_bytes), with_logits = tables
        # logits (LM head + gather) cost as a function of sequences sampled: G1(S) − G0(S)
        self.logit_time, self.logit_flops, self.logit_bytes = (w - b for w, b in zip(
            with_logits, (self.base_time, self.base_flops, self.base_bytes)))
        att = attention_dtype(g, cdt, dt.kv_dtype)
        self._peak = g.peak_flops[att] * compute_eff(g, att)
        self._bw = g.hbm_bw * g.efficiency.kv_memory_fraction
        self._launch = g.efficiency.kernel_overhead_s
        self.groups = []  # (count, window, f_decode, f_prefill, b_cached, a_token)
        for grp in _merged_groups(m):
            def att_op(batch, new, past):
                return next(o for o in layer_ops(m, grp, dt, par, batch / par.attention_groups, new, past)
                            if o.name == "attention")
            d0, d1 = att_op(1.0, 1, 0), att_op(1.0, 1, 1)
            f_dec = float(d1.flops - d0.flops)  # per extra pair (decode), = per cached token
            b_cached = float(d1.kv_bytes - d0.kv_bytes)
            a_tok = float(d0.act_bytes)
            p2 = att_op(1.0, 2, 0)
            f_pre = float(p2.flops) / float(attended_pairs(0, 2, grp.window if grp.attention != "full" else None))
            self.groups.append((grp, f_dec, f_pre, b_cached, a_tok))
        self.pp = par.pp

    def _attention(self, dec_ctx: np.ndarray, chunks):
        """(seconds, FLOPs, bytes) of attention for decode contexts and (past, new) chunks."""
        total_t = total_f = total_b = 0.0
        n_tok = float(dec_ctx.size) + sum(n for _, n in chunks)
        for grp, f_dec, f_pre, b_cached, a_tok in self.groups:
            window = grp.window if grp.attention != "full" else None
            cached_dec = float(attention_reads(grp, dec_ctx + 1).sum())  # decode: pairs == cached tokens
            flops = f_dec * cached_dec
            cached = cached_dec
            for past, new in chunks:
                flops += f_pre * float(attended_pairs(past, new, window, grp.attention == "chunked"))
                cached += float(attention_reads(grp, past + new))
            moved = b_cached * cached + a_tok * n_tok
            total_t += grp.count * (max(flops / self._peak, moved / self._bw) + self._launch)
            total_f += grp.count * flops
            total_b += grp.count * moved
        return total_t, total_f, total_b

    def uniform(self, dec_seqs, dec_ctx, pre_seqs, pre_new, pre_past=0):
        """Vectorized (seconds, watts) of steps with ``dec_seqs`` sequences decoding at ``dec_ctx`` and
        ``pre_seqs`` prompts adding ``pre_new`` tokens after ``pre_past`` (counts may be fractional:
        steady-state averages). Same formulas as :meth:`step`, tables interpolated in T and S."""
        dec_seqs, dec_ctx = np.asarray(dec_seqs, dtype=float), np.asarray(dec_ctx, dtype=float)
        pre_seqs, pre_new = np.asarray(pre_seqs, dtype=float), np.asarray(pre_new, dtype=float)
        tokens = dec_seqs + pre_seqs * pre_new
        seqs = dec_seqs + pre_seqs
        if np.any(tokens > self.max_tokens):
            raise ValueError(f"steps of up to {float(np.max(tokens)):.0f} tokens exceed max_tokens={self.max_tokens}")
        def table(x, at):
            return np.interp(at, self.grid, x)
        a_t = a_f = a_b = 0.0
        for grp, f_dec, f_pre, b_cached, a_tok in self.groups:
            window = grp.window if grp.attention != "full" else None
            cached = dec_seqs * attention_reads(grp, dec_ctx + 1)
            flops = f_dec * cached + f_pre * pre_seqs * attended_pairs(pre_past, pre_new, window,
                                                                         grp.attention == "chunked")
            cached = cached + pre_seqs * attention_reads(grp, np.asarray(pre_past) + pre_new)
            moved = b_cached * cached + a_tok * tokens
            a_t = a_t + grp.count * (np.maximum(flops / self._peak, moved / self._bw) + self._launch)
            a_f, a_b = a_f + grp.count * flops, a_b + grp.count * moved
        mb = np.maximum(1.0, np.minimum(seqs, self.pp))
        f = table(self.base_time, tokens / mb) + table(self.logit_time, seqs / mb) + a_t / mb
        t = np.maximum(mb * f / self.pp, f)
        flops = mb * (table(self.base_flops, tokens / mb) + table(self.logit_flops, seqs / mb)) + a_f
        moved = mb * (table(self.base_bytes, tokens / mb) + table(self.logit_bytes, seqs / mb)) + a_b
        return t, power_w(self.dep.gpu, self.dep.compute_dtype, flops, moved, t)

    def step(self, dec_ctx, chunks=()) -> tuple[float, float]:
        """(seconds, watts per GPU) of a step with decode contexts ``dec_ctx`` and prefill ``chunks``."""
        dec_ctx = np.asarray(dec_ctx, dtype=float)
        tokens = int(dec_ctx.size + sum(n for _, n in chunks))
        if tokens > self.max_tokens:
            raise ValueError(f"step of {tokens} tokens exceeds the tabulated max_tokens={self.max_tokens}")
        seqs = dec_ctx.size + len(chunks)
        mb = max(1, min(seqs, self.pp))
        a_t, a_f, a_b = self._attention(dec_ctx, chunks)
        if self.exact and mb == 1:
            def at(x, i):
                return x[i]
        else:
            def at(x, i):
                return float(np.interp(i, self.grid, x))
        f = at(self.base_time, tokens / mb if mb > 1 else tokens) + at(self.logit_time, seqs / mb if mb > 1 else seqs) \
            + a_t / mb
        t = max(mb * f / self.pp, f)
        flops = mb * (at(self.base_flops, tokens / mb if mb > 1 else tokens)
                      + at(self.logit_flops, seqs / mb if mb > 1 else seqs)) + a_f
        moved = mb * (at(self.base_bytes, tokens / mb if mb > 1 else tokens)
                      + at(self.logit_bytes, seqs / mb if mb > 1 else seqs)) + a_b
        return float(t), float(power_w(self.dep.gpu, self.dep.compute_dtype, flops, moved, t))
