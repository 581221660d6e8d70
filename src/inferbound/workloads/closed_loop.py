"""Closed-loop clients back to back with fixed lengths: the benchmark's protocol, in waves.

``vllm bench serve --max-concurrency N --request-rate inf --ignore-eos`` (vllm/benchmarks/serve.py, commit
009e6d4a: every request's task is created at once, an ``asyncio.Semaphore(N)`` lets N run; a client's next
request goes out when its previous one returns, no think time) sends N prompts at t = 0 and every later
prompt at the end of the step that gave some request its last token. With fixed lengths I and O
(ignore-eos) every step boundary is an arrival instant, so which prompt lands in which step follows from
the scheduler's rules alone and each step is priced by the step contract (``StepModel.price``; nothing
else is priced here). One replica, budget B tokens per step (decodes first, one token each; then prompt
chunks, oldest first: vLLM V1 ``Scheduler.schedule``, the order sim/scheduler.py follows), m clients in
service (below).

First wave. Step s carries the d_s prompts finished before it as decodes and R_s = B − d_s prompt tokens
of the queue, prompts laid end to end (chunked prefill: the i-th prompt (0-based) waits for the budget of
the i ahead of it); without chunked prefill a step takes only whole prompts, ⌊R_s / I⌋. Prompt i gets its
first token at the end of step k_i = min{k : Σ_{s≤k} R_s ≥ (i + 1)·I} and

    TTFT_i = Σ_{s ≤ k_i} t_s        t_s = t(d_s decodes at their cached tokens, the chunks of step s)

Later waves. A prompt sent when its predecessor finishes finds the other m − 1 clients decoding, so a
group of g prompts sent together fits one step only while g·I + (m − g) ≤ B; a prompt that spills into
the next step finishes a step late, is re-sent a step late and leaves its group. Groups thus shrink to

    g* = min(m, ⌊(B − m)/(I − 1)⌋)       (with or without chunked prefill: the group's prompts are whole)

and the steady cycle is O steps (each client: its prefill step and O − 1 decode steps): G = ⌈m/g*⌉ of
them carry a group's prompts beside the m − g other clients' decodes (G − 1 groups of g*, one of
r = m − (G − 1)·g*), the O − G others decode m. With t_g = t(m − g decodes, g prompts of I) and t_d = t(m
decodes), decodes at the mean cached tokens c̄ = I + (O − 2)/2:

    P      = (G − 1)·t_g* + t_r + (O − G)·t_d          the cycle, every client's E2E
    TTFT_∞ = ((G − 1)·g*·t_g* + r·t_r) / m            a prompt's own step
    TPOT   = (P − TTFT_∞) / (O − 1)                    the cycle's other steps, per output token

From the first wave to the cycle. The first wave leaves G_1 groups of g_0 = min(m, ⌊B/I⌋) (its prefill
steps). When g_0 > g*, a group sent again finds the others decoding, fills its step to the budget and
spills one prompt into the next group's step, and so on down the wave; the spill front turns one group
per wave into groups of g* (the simulator's steps show it: at 2048/128 and 16 clients on one H100 the
four groups of 4 become groups of 3 and a 1, one group per wave, over seven waves). A prompt
not yet in a g*-group waits for a full step, t_B = t(m − g_0 decodes, B − m + g_0 prompt tokens). So
wave w ≥ 2 has the share s_w = min(1, (w − 1)/G_1) of its prompts in the cycle (s_w = 1 when g_0 <= g*):

    TTFT_w = s_w·TTFT_∞ + (1 − s_w)·t_B

A run of R prompts is W = R/m waves (the last one partial); its mean TTFT = Σ_w ω_w TTFT_w / W (ω = 1,
the last wave its fraction), TPOT as above, E2E = TTFT + (O − 1)·TPOT and X = m/E2E requests/s (Little).

When the groups do not fit a cycle (g* < 1, or G > O), a prompt takes n_c = 1 step, or n_c =
⌈I/(B − m + 1)⌉ chunk steps beside the m − 1 other clients' decodes when g* < 1, and, in this order:
- one prompt at a time (g* < 1 and (m − 1)·n_c <= O − 1): TTFT_∞ = S = Σ_k t(m − 1 decodes, chunk k
  after k chunks), P = m·S + (O − 1 − (m − 1)·n_c)·t_d, TPOT = (P − S)/(O − 1);
- every step carries prompts (m·(I + O − 1) <= B·(O − 1 + n_c)): x = m/(O − 1 + n_c) prompts finish per
  step, D = x·(O − 1) decode, t_u = t(D decodes, x·n_c chunks of I/n_c after (n_c − 1)/2 of them),
  TTFT_∞ = n_c·t_u, TPOT = t_u;
- budget-bound (else): every step is full, D = B·(O − 1)/(I + O − 1) decodes beside B − D prompt tokens,
  x = (B − D)/I prompts finish per step, t_f = t(D decodes, x prompts of I after I/2 on average);
  X = x/t_f, TPOT = t_f and TTFT = m/X − (O − 1)·t_f (Little: the queue already holds the first wave).
The first two weigh the first wave in as TTFT = (TTFT_1 + (W − 1)·TTFT_∞)/W.

Prefill-first engines (``mixed_batches: false``: SGLang, vLLM V0): a step that can take prompts takes
only prompts, B tokens of them, and decodes wait for a step without any. The first wave's prompts then
run in G_1 consecutive prompt-only steps (d_s = 0), all m clients decode together after the last one and
finish in the same step, so every wave is the first one again (one group of m per cycle):

    P = Σ_{s ≤ G_1} t_s + (O − 1)·t_d       TTFT = mean_i TTFT_i       TPOT = (P − TTFT)/(O − 1)

Caps. At most m = min(N, S, K_kv) run (S = max_num_seqs; K_kv = the sequences whose KV blocks at full
length, ⌈(I + O − 1)/block⌉, fit the cache: the clients of a wave grow together, so the cache must hold
them all at full length). The other N − m wait in the engine's queue a full request time: with m
running in waves as above (X = m/E2E), each TTFT grows by (N − m)/X (Little's law on the queue).
Engines that allocate KV as sequences grow (reservation ``current``: vLLM, SGLang) admit past K_kv and
preempt at the wave's end, which moves time from TTFT into TPOT; that is said in the notes, not priced.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..deploy.memory import sequence_kv_bytes
from ..deploy.runtime import kv_capacity_bytes
from ..pricing.energy import power_w
from ..step.contract import uniform


@dataclass
class Waves:
    """The closed loop's figures per replica (module docstring); times in seconds."""

    regime: str  # "waves", "waves (prefill-first)", "one prompt at a time", "every step carries prompts", "budget-bound"
    running: int  # m
    queued: int  # N − m
    limited_by: str  # "none", "max_num_seqs" or "kv-cache"
    ttft_first: float  # mean over the first wave
    ttft_steady: float  # mean over a later wave
    ttft_mean: float  # over the run's W waves, plus the queue wait
    queue_wait: float
    tpot: float
    e2e: float
    requests_per_s: float  # per replica
    waves: float  # W
    groups: tuple  # (g*, G, r) of the steady cycle ((0, 0, 0) when budget-bound)
    first_steps: int  # steps of the first wave's prefill
    decode_step_s: float  # t_d (budget-bound: t_f)
    watts: float  # per GPU, over the cycle
    decode_cost: object  # the decode step's StepCost (its bound)
    ttft_values: list = field(default_factory=list)  # per position: (TTFT s, weight)
    notes: list = field(default_factory=list)
    split_s: dict = field(default_factory=dict)  # TPOT's time split by resource (sums to tpot)
    comm_s: dict = field(default_factory=dict)  # ... and its communication by kind
    prefill_step_share: float = 0.0  # the share of the cycle's steps that carry prompts (G/O; 1 budget-bound)


def _blend(parts) -> tuple[dict, dict]:
    """Σ coef·cost.split and Σ coef·cost.comm_kinds over [(coef, StepCost)]."""
    split, comm = {}, {}
    for coef, c in parts:
        for out, d in ((split, c.split), (comm, c.comm_kinds)):
            for k, v in d.items():
                out[k] = out.get(k, 0.0) + coef * float(v)
    return split, comm


def kv_running_cap(dep, rt, input_len: int, output_len: int) -> int:
    """K_kv: sequences whose KV at full length (I + O − 1 tokens, whole blocks) fit the replica's cache."""
    bs = rt.block_size
    held = math.ceil((input_len + output_len - 1) / bs) * bs
    per = float(sequence_kv_bytes(dep, 1, held, rt))
    return int(dep.par.attention_groups * kv_capacity_bytes(dep, rt) // per) if per > 0 else 1 << 30


def group_size(budget: int, clients: int, input_len: int) -> int:
    """g*: the prompts sent together that fit one step beside the other clients' decodes, whole (docstring)."""
    room = budget - clients  # the budget when all m clients but the g new ones decode: B − m + g ≥ g·I
    if input_len <= 1:
        return min(clients, budget)
    g = (room // (input_len - 1)) if room >= 0 else 0
    return int(max(min(g, clients), 0))


def first_wave(budget: int, m: int, input_len: int, chunked: bool, mixed: bool = True):
    """The first wave's steps: [(decodes d_s, [(new, past) chunks], prompts finished in s)] and k_i per
    prompt (1-based step index), by the rule of the module docstring; ``mixed`` False (prefill-first
    steps): a step with prompts carries no decodes (d_s = 0) and all B tokens go to the queue."""
    steps, done, filled = [], 0, 0  # prompts finished; prompt tokens scheduled so far (stream position)
    k = np.zeros(m, dtype=np.int64)
    total = m * input_len
    while filled < total:
        left = budget - (done if mixed else 0)
        if left <= 0:
            raise ValueError(f"{done} decodes fill the token budget {budget}: no prompt can be scheduled")
        if chunked:
            take = min(left, total - filled)
        else:
            take = min(left // input_len, m - filled // input_len) * input_len
            if take <= 0:
                raise ValueError(f"input_len={input_len} exceeds the token budget left ({left} of {budget}) "
                                 f"without chunked prefill")
        chunks, pos, end = [], filled, filled + take
        while pos < end:
            i, past = divmod(pos, input_len)
            new = min(input_len - past, end - pos)
            chunks.append((new, past))
            pos += new
        fin = end // input_len - done
        k[done:done + fin] = len(steps) + 1
        steps.append((done if mixed else 0, chunks, fin))
        done += fin
        filled = end
    return steps, k


class ClosedLoop:
    """Prices the steps of the waves through the step model ``sm`` (StepModel) of deployment ``dep``."""

    def __init__(self, sm, rt, input_len: int, output_len: int):
        self.sm, self.dep, self.rt = sm, sm.dep, rt
        self.i, self.o = int(input_len), int(output_len)
        self.budget = int(rt.token_budget * self.dep.par.attention_groups)
        self.ctx = self.i + (self.o - 2) / 2  # c̄, occupancy.mean_context

    def _cost(self, load):
        c = self.sm.price(load)
        return c, float(c.time), float(power_w(self.dep.gpu, self.dep.compute_dtype, c.flops, c.bytes, c.time))

    def step(self, decodes: float, ctx: float, chunks=(), prompts: float = 0.0, past: float = 0.0):
        """(StepCost, seconds, watts) of ``decodes`` at ``ctx`` cached tokens beside ``chunks`` [(new, past)]
        and ``prompts`` whole prompts of I after ``past``."""
        m = self.dep.model
        load = uniform(m, decode=float(decodes), context=ctx)
        if prompts:
            load = load + uniform(m, prompts=float(prompts), new=float(self.i), past=float(past))
        for new, p in chunks:
            load = load + uniform(m, prompts=1.0, new=float(new), past=float(p))
        return self._cost(load)

    def first(self, m: int) -> tuple[np.ndarray, int]:
        """(TTFT_i of each prompt of the first wave, its prefill steps)."""
        steps, k = first_wave(self.budget, m, self.i, self.rt.chunked_prefill, self.rt.mixed_batches)
        ends, t = [], 0.0
        for s, (d, chunks, fin) in enumerate(steps, start=1):
            # the d decoders' cached tokens: prompt i decodes its (s − k_i)-th token after I cached
            ctx = self.i + float(np.mean(s - k[:d] - 1)) if d else 0.0
            whole = [c for c in chunks if c == (self.i, 0)]
            part = [c for c in chunks if c != (self.i, 0)]
            t += self.step(d, ctx, part, prompts=len(whole))[1]
            ends.append(t)
        return np.asarray(ends)[k - 1], len(steps)

    def _prefill_first(self, clients, m, limited, w, cost_d, t_d, w_d, notes) -> Waves:
        """Prefill-first steps (docstring, "Prefill-first engines"): every wave is the first one again."""
        o = self.o
        steps, k = first_wave(self.budget, m, self.i, self.rt.chunked_prefill, False)
        priced = [self.step(0, 0.0, [c for c in chunks if c != (self.i, 0)],
                            prompts=sum(c == (self.i, 0) for c in chunks)) for _, chunks, _ in steps]
        ends = np.cumsum([t for _, t, _ in priced])
        ttft1 = ends[k - 1]
        pre = float(ends[-1])
        cycle = pre + (o - 1) * t_d
        tpot = (cycle - float(ttft1.mean())) / (o - 1) if o > 1 else 0.0
        watts = (sum(t * x for _, t, x in priced) + (o - 1) * t_d * w_d) / cycle
        # TPOT's split: the wave's prompt steps after a client's own first token, and its O − 1 decode steps
        after = [float(np.mean(k < s)) for s in range(1, len(steps) + 1)]  # share of clients decoding-to-be
        split, comm = _blend([(a / (o - 1), c) for a, (c, _, _) in zip(after, priced)] + [(1.0, cost_d)]
                             if o > 1 else [])
        values = [(float(v), 1.0 / m) for v in ttft1]
        mean = float(ttft1.mean())
        return self._finish(clients, m, limited, w, "waves (prefill-first)", (m, 1, m), ttft1, len(steps), mean, mean,
                            tpot, t_d, watts, cost_d, values, notes, split, comm, len(steps) / (len(steps) + o - 1))

    def _finish(self, clients, m, limited, w, regime, groups, ttft1, first_steps, steady, ttft_run, tpot, step_s,
                watts, cost_d, values, notes, split, comm, share_pre) -> Waves:
        """The run's figures from the wave's (docstring: E2E, X = m/E2E, the queue past the caps)."""
        rt, o = self.rt, self.o
        e2e = ttft_run + (o - 1) * tpot
        rate = m / e2e
        wait = (clients - m) / rate if limited != "none" else 0.0
        if limited != "none":
            notes.append(f"{limited} holds {m} of {clients} clients' requests per replica: the other {clients - m} "
                         f"wait {wait * 1e3:,.0f} ms in the engine's queue (Little's law)")
            if limited == "kv-cache" and rt.reservation == "current":
                notes.append(f"{rt.label} allocates KV as sequences grow: it admits more than the {m} whose KV fits "
                             f"at full length and preempts them at the wave's end ({rt.preemption}), which moves time "
                             f"from TTFT into TPOT; not priced here (inferbound simulate replays it)")
        return Waves(regime=regime, running=m, queued=clients - m if limited != "none" else 0, limited_by=limited,
                     ttft_first=float(ttft1.mean()), ttft_steady=float(steady), ttft_mean=ttft_run + wait,
                     queue_wait=wait, tpot=float(tpot), e2e=e2e + wait, requests_per_s=rate, waves=w, groups=groups,
                     first_steps=first_steps, decode_step_s=step_s, watts=float(watts), decode_cost=cost_d,
                     ttft_values=[(v + wait, p) for v, p in values], notes=notes, split_s=split, comm_s=comm,
                     prefill_step_share=share_pre)

    @staticmethod
    def shares(waves: float, first_groups: int) -> list[tuple[float, float]]:
        """[(ω_w, s_w)] of the waves after the first of a run of ``waves`` waves (docstring): ω_w = 1, the last
        one its fraction; s_w = min(1, (w − 1)/G_1), 1 when ``first_groups`` is 0 (no transition)."""
        out, w = [], 2
        while w - 1 < waves - 1e-12:
            om = min(1.0, waves - (w - 1))
            out.append((om, 1.0 if first_groups <= 0 else min(1.0, (w - 1) / first_groups)))
            w += 1
        return out

    def waves(self, clients: int, requests: float) -> Waves:
        """The closed loop of ``clients`` back-to-back clients over a run of ``requests`` prompts (docstring)."""
        rt, i, o, budget = self.rt, self.i, self.o, self.budget
        notes = []
        caps = {"max_num_seqs": int(rt.max_num_seqs * self.dep.par.attention_groups),
                "kv-cache": kv_running_cap(self.dep, rt, i, o)}
        m = min([clients] + list(caps.values()))
        if m < 1:
            raise ValueError(f"no request of input_len+output_len={i}+{o} fits the KV cache of {self.dep.label()}")
        limited = "none" if m == clients else min(caps, key=caps.get)
        m = min(m, max(int(requests), 1))  # a run of fewer prompts than clients sends them all at once
        w = max(requests / m, 1.0)
        cost_d, t_d, w_d = self.step(m, self.ctx)
        if not rt.mixed_batches:
            return self._prefill_first(clients, m, limited, w, cost_d, t_d, w_d, notes)
        g = group_size(budget, m, i)
        n_groups = -(-m // g) if g >= 1 else 0
        ttft1, first_steps = self.first(m)
        if g >= 1 and n_groups <= o:
            r = m - (n_groups - 1) * g
            c_g, t_g, w_g = self.step(m - g, self.ctx, prompts=g)
            c_r, t_r, w_r = self.step(m - r, self.ctx, prompts=r)
            # TPOT's split: the cycle's steps less a client's own prefill step, per decode step
            own_g, own_r = (n_groups - 1) * g / m, r / m
            split, comm = _blend([((n_groups - 1 - own_g) / (o - 1), c_g), ((1 - own_r) / (o - 1), c_r),
                                  ((o - n_groups) / (o - 1), cost_d)] if o > 1 else [])
            share_pre = n_groups / o
            cycle = (n_groups - 1) * t_g + t_r + (o - n_groups) * t_d
            steady = ((n_groups - 1) * g * t_g + r * t_r) / m
            tpot = (cycle - steady) / (o - 1) if o > 1 else 0.0
            watts = ((n_groups - 1) * t_g * w_g + t_r * w_r + (o - n_groups) * t_d * w_d) / cycle
            regime, groups = "waves", (g, n_groups, r)
            g0 = min(m, budget // i)
            t_b = self.step(m - g0, self.ctx, prompts=(budget - m + g0) / i)[1] if g0 > g else steady
            share = self.shares(w, first_steps if g0 > g else 0)  # [(ω_w, s_w)] of waves 2..
            later = sum(om for om, _ in share)
            conv = sum(om * sh for om, sh in share)
            values = [(float(v), 1.0 / (w * m)) for v in ttft1] + \
                [(t_g, conv / w * (m - r) / m), (t_r, conv / w * r / m), (t_b, (later - conv) / w)]
            ttft_run = (float(ttft1.sum()) / m + conv * steady + (later - conv) * t_b) / w
            step_s = t_d
        else:
            n_c = 1 if g >= 1 else -(-i // max(budget - m + 1, 1))  # steps of one prompt beside m − 1 decodes
            if g < 1 and (m - 1) * n_c <= o - 1:  # one prompt at a time, over n_c steps (docstring)
                chunk, parts = budget - m + 1, []
                for k in range(n_c):
                    parts.append(self.step(m - 1, self.ctx, [(min(chunk, i - k * chunk), k * chunk)]))
                own = sum(t for _, t, _ in parts)
                cycle = m * own + (o - 1 - (m - 1) * n_c) * t_d
                steady, tpot = own, (cycle - own) / (o - 1)
                watts = (m * sum(t * x for _, t, x in parts) + (o - 1 - (m - 1) * n_c) * t_d * w_d) / cycle
                split, comm = _blend([((m - 1) / (o - 1), c) for c, _, _ in parts]
                                     + [((o - 1 - (m - 1) * n_c) / (o - 1), cost_d)])
                regime, groups, step_s, share_pre = "one prompt at a time", (1, m, 1), t_d, m * n_c / (o - 1 + n_c)
            elif m * (i + o - 1) <= budget * (o - 1 + n_c):  # every step carries prompts, the budget holds
                x = m / (o - 1 + n_c)  # prompts finishing per step = prompts arriving
                dec = m * (o - 1) / (o - 1 + n_c)
                md = self.dep.model  # x·n_c prompts in flight, each adding I/n_c after (n_c − 1)/2 chunks
                cost_d, t_u, watts = self._cost(uniform(md, decode=dec, context=self.ctx)
                                                + uniform(md, prompts=x * n_c, new=i / n_c,
                                                          past=i * (n_c - 1) / (2 * n_c)))
                steady, tpot = n_c * t_u, t_u
                split, comm = _blend([(1.0, cost_d)])
                regime, groups, step_s, share_pre = "every step carries prompts", (0, 0, 0), t_u, 1.0
            else:  # budget-bound: every step full (docstring)
                dec = budget * (o - 1) / (i + o - 1)
                x = (budget - dec) / i
                cost_d, t_f, watts = self.step(dec, self.ctx, prompts=x, past=i / 2)
                split, comm = _blend([(1.0, cost_d)])
                share_pre = 1.0
                tpot = t_f
                steady = m / (x / t_f) - (o - 1) * t_f
                regime, groups, step_s = "budget-bound", (0, 0, 0), t_f
                notes.append(f"the token budget {budget} binds: every step carries {dec:.0f} decodes and "
                             f"{budget - dec:.0f} prompt tokens, the other prompts queue")
            values = [(steady, 1.0)] if regime == "budget-bound" else \
                [(float(v), 1.0 / (w * m)) for v in ttft1] + [(steady, (w - 1) / w)]
            ttft_run = steady if regime == "budget-bound" else (float(ttft1.mean()) + (w - 1) * steady) / w
        return self._finish(clients, m, limited, w, regime, groups, ttft1, first_steps, steady, ttft_run, tpot,
                            step_s, watts, cost_d, values, notes, split, comm, share_pre)
