"""Steady state of continuous batching with chunked prefill: the one place its arithmetic lives.

D sequences decode. A workload is a mix of length classes c (request share w_c, prompt I_c, output
O_c; lengths.py); fixed lengths are one class. A request of class c needs I_c prompt tokens and
O_c − 1 decode steps after the prefill that yields its first token; decode step j sees I_c + j − 1
cached tokens, so over its life it decodes at the mean context

    c̄_c = I_c + (O_c − 2)/2.

Decode steps are taken in proportion to O − 1, so a decoding sequence belongs to class c with share
s_c = w_c (O_c − 1) / Σ w (O − 1). Requests complete at D·p per step, p = 1 / Σ w (O − 1) (fixed lengths:
1/(O − 1)), and to keep D constant the engine prefills as many new prompts: D·p·w_c prompts of I_c
tokens per step, mixed into the decode step (chunked prefill, SARATHI-style; Agrawal et al., OSDI
2024). A step therefore runs T = D + D·p·Σ w I tokens for S = D(1 + p) sequences, and the requests in
flight (decoding + prefilling) are

    C = D·(1 + p).

Engines that do not mix prefills into decode steps (``mixed_batches: false``: SGLang's prefill-first
scheduler, vLLM V0) run prefill steps of k prompts (k = B/Ī with chunked prefill, else ⌊B/Ī⌋) between
decode-only steps; per decode step they need D·p/k of them, so (``step_cost``)

    t(D) = t_decode(D) + D·p/k · t_prefill(k prompts),

FLOPs and bytes adding alike; users see one token per t(D) either way.

Caps on D (``caps``), per replica, from the engine's runtime (runtime.py; with attention data
parallelism a replica is ``groups`` attention groups, each with its own KV cache, token budget and
running-sequence cap):
- KV cache: a sequence of class c in flight holds H_c tokens of KV, H = I + O (reservation ``max``:
  TensorRT-LLM's guaranteed-no-evict scheduler reserves prompt + max new tokens) or I + O/2
  (``current``: engines that allocate as sequences grow hold half the output on average), rounded up
  to whole blocks; the D·s_c decoding and D·p·w_c prefilling sequences of every class must fit
  groups·K (K: KV bytes per GPU by the engine's rule; k(H) bytes per sequence on its GPU):
  D ≤ groups·K / Σ_c (s_c + p·w_c)·k(H_c);
- token budget B per step and attention group: D·(1 + p·Ī) ≤ B·groups;
- running sequences S per attention group: D·(1 + p) ≤ S·groups;
- decode-only steps (a disaggregated decode pool): C = D, T = D: D ≤ groups·K / Σ s_c k(H_c),
  D ≤ B·groups, D ≤ S·groups.

A new request's prompt (``prompt_steps``) runs in chunks of min(B − D/groups, rest) tokens beside the D
decodes, chunk k after k·chunk cached tokens; its first token comes at the end of the last chunk's
step, so its prefill takes Σ_k t(D decodes + chunk k) (TTFT without the wait for a step in flight).

Engine features (features.py; docs/features/), where the runtime has them: with speculative decoding a
step yields τ tokens per decoding sequence (p becomes τ·p per step, C = D·(1 + τ·p)), each decode takes
k + 1 tokens of the budget (D·(k + 1 + τ·p·Ñ) ≤ B·groups) and k more KV slots, and the draft adds its
passes and its KV; with prefix hits a prompt prefills N = I − P new tokens (Ñ = Σ w N) and a shared
prefix is held once per attention group (K less its copy, H_c less its tokens); a host KV tier adds its
pool to K in the KV cap and its reads to the steps.

Images (a multimodal checkpoint, ``Mix.images`` = N per request; images.py): the mix's prompts already
hold their image tokens; the step kind that carries prompt chunks adds the towers' pass for the
λ_s·N/f (prefill-first: λ_s·N/n_pre) images it encodes, and a prompt's own steps add t_tower(N).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..pricing.energy import power_w
from ..step.contract import StepLoad, uniform
from . import multistep
from .features import Features
from .images import prompt_tower_seconds, with_towers
from .lengths import Mix
from .occupancy import (as_mix, concurrency, decode_shares, held_tokens, kv_per_decoder, kv_sequences,  # noqa: F401
                        mean_context, prompts_per_decode)


def load(m, decode, mix: Mix, decode_only: bool = False, fx: Features | None = None) -> StepLoad:
    """The steady-state step at D = ``decode`` (arrays allowed): each class's decodes at its mean context
    plus its new prompts (none in a decode-only pool), summed into one load. ``fx``: the runtime's
    features (verify passes, τ·p prompts per step of N_c new tokens after P_c cached)."""
    decode = np.asarray(decode, dtype=float)
    p = prompts_per_decode(mix) * (fx.tau if fx is not None else 1.0)
    new = fx.new if fx is not None else mix.inputs
    past = fx.cached if fx is not None else [0.0] * len(mix.inputs)
    total = None
    for s, w, o, n, c, i in zip(decode_shares(mix), mix.weights, mix.outputs, new, past, mix.inputs):
        part = uniform(m, decode=decode * s, context=mean_context(i, o)) if fx is None else \
            fx.decode_load(m, decode * s, mean_context(i, o))
        if not decode_only:
            part = part + uniform(m, prompts=decode * p * w, new=n, past=c)
        total = part if total is None else total + part
    return total


def caps(dep, input_len, output_len, rt, decode_only: bool = False, whole: bool = True) -> tuple[dict, float, float]:
    """({cap: largest decode batch D}, KV capacity bytes per GPU, KV bytes per sequence) (module docstring).
    ``input_len`` may be a Mix (then ``output_len`` is unused). ``whole``: D in whole sequences (a batch
    sweep); False keeps the caps fractional (a steady state's mean D: max_num_seqs=1 holds D = 1/(1 + p))."""
    mix = as_mix(input_len, output_len)
    groups = dep.par.attention_groups
    fx = Features(dep, rt, mix, decode_only)
    per_decoder, capacity = kv_per_decoder(dep, mix, rt, decode_only)
    room = capacity  # a host tier holds evicted prefixes, not running KV (offload.py)
    d_kv = min(groups * room / per_decoder if per_decoder > 0 else np.inf, 1e9)
    p = 0.0 if decode_only else prompts_per_decode(mix) * fx.tau
    kv_seq = per_decoder / (1 + p)
    per_step = fx.tokens_per_decode() + p * fx.mean_new
    out = {"kv-cache": d_kv, "token budget": rt.token_budget * groups / per_step,
           "max_num_seqs": rt.max_num_seqs * groups / (1 + p)}
    return ({k: int(v) for k, v in out.items()} if whole else out), capacity, kv_seq


def decode_context(mix: Mix) -> float:
    """Mean cached tokens of the decoding sequences, Σ s_c c̄_c (decode attention is linear in it)."""
    return float(sum(s * mean_context(i, o) for s, i, o in zip(decode_shares(mix), mix.inputs, mix.outputs)))


#: cells (rows of D × chunk columns) ``prompt_steps`` prices in one call: its arrays' size, not a number of
#: the model. Pricing costs about 1 µs of CPU a cell from 2^12 to 2^18 cells per call (Llama-3.1-8B on
#: h100_sxm, a 2-core machine: benchmarks/bench_prompt_steps.py), so the block is kept small: that benchmark's
#: whole process peaks at 0.09 GB resident pricing 6.3 million chunks
PROMPT_CELLS = 1 << 16


def prompt_steps(sm, decode, context, chunk, prompt: float, cached: float = 0.0, fx: Features | None = None):
    """(seconds, joules per GPU) of the steps that carry one prompt of ``prompt`` new tokens after ``cached``
    ones in chunks of ``chunk`` beside ``decode`` decodes at ``context`` (arrays over D; module
    docstring); ``fx``: the runtime's features (verify passes, drafts, host reads).

    Chunk j of a row is the same step load at past P + j·chunk (P = ``cached``), so its full chunks
    (rest ≥ chunk) are priced as one array over (D, chunk index), at most PROMPT_CELLS cells per call,
    and the last partial chunk (0 < rest < chunk) once after them. past and rest advance by sequential
    sums (``np.cumsum``) and the times are summed in chunk order, so each row gets the floats of the
    chunk-by-chunk loop (tests/test_prompt_steps.py)."""
    dec = np.asarray(decode, dtype=float)
    shape = np.broadcast(dec, chunk).shape
    d = np.broadcast_to(dec, shape).reshape(-1)
    ch = np.broadcast_to(np.asarray(chunk, dtype=float), shape).reshape(-1)
    if np.any(~(ch > 0)):
        raise ValueError(f"chunk={float(np.min(ch)):g}: allowed: chunk > 0 tokens")
    ctx = np.asarray(context, dtype=float)
    ctx = np.broadcast_to(ctx, shape).reshape(-1) if ctx.ndim else ctx
    rows = d.size
    past, rest = np.full(rows, float(cached)), np.full(rows, float(prompt))
    secs, joules = np.zeros(rows), np.zeros(rows)
    cap = max(1, PROMPT_CELLS // max(rows, 1))  # chunk columns per call

    def price(dec2, ctx2, on, new, at):
        """(seconds, joules) of the steps ``on`` (elsewhere 0) carrying ``new`` tokens after ``at``."""
        dep, prompts = sm.dep, on.astype(float)
        if fx is None or not fx.active:
            cost = sm.price(uniform(dep.model, decode=dec2, context=ctx2, prompts=prompts, new=new, past=at))
        else:
            cost = sm.price(fx.decode_load(dep.model, dec2, ctx2)
                            + uniform(dep.model, prompts=prompts, new=new, past=at))
            dm = fx.drafter.model if fx.drafter is not None else None
            cost = fx.finish(sm, cost, dec2, None if dm is None else uniform(dm, decode=dec2, context=ctx2),
                             None if dm is None else uniform(dm, prompts=prompts, new=new, past=at))
        watts = power_w(dep.gpu, dep.compute_dtype, cost.flops, cost.bytes, cost.time)
        return np.where(on, cost.time, 0.0), np.where(on, cost.time * watts, 0.0)

    def chained(start, step, width):
        """start, start + step, (start + step) + step, ... over width + 1 columns (the loop's own sums)."""
        cols = np.concatenate([start[:, None], np.broadcast_to(step[:, None], (rows, width))], axis=1)
        return np.cumsum(cols, axis=1)

    while np.any(rest >= ch):  # full chunks left: one call for up to ``cap`` of them per row
        width = min(cap, int(np.max(np.floor(rest / ch))) + 1)  # ⌊rest/chunk⌋ full chunks, one more for rounding
        at, left = chained(past, ch, width), chained(rest, -ch, width)
        full = left[:, :width] >= ch[:, None]
        t, j = price(d[:, None], ctx if ctx.ndim == 0 else ctx[:, None], full,
                     np.where(full, ch[:, None], 0.0), at[:, :width])
        secs = np.cumsum(np.concatenate([secs[:, None], t], axis=1), axis=1)[:, -1]
        joules = np.cumsum(np.concatenate([joules[:, None], j], axis=1), axis=1)[:, -1]
        done = full.sum(axis=1)
        past, rest = at[np.arange(rows), done], left[np.arange(rows), done]
    last = rest > 0  # the partial chunk: rest < chunk tokens
    if np.any(last):
        t, j = price(d, ctx, last, np.where(last, rest, 0.0), past)
        secs, joules = secs + t, joules + j
    return secs.reshape(shape), joules.reshape(shape)


def prefill_seconds(sm, rt, decode, mix: Mix):
    """Per class: the seconds of its prompt's steps at D = ``decode`` (``prompt_steps``, chunks of
    B − D/groups), as a list over the mix's classes; with images, + the towers' pass of its N images
    (images.py)."""
    groups = sm.dep.par.attention_groups
    dec = np.asarray(decode, dtype=float)
    fx = Features(sm.dep, rt, mix)
    chunk = np.maximum(rt.token_budget - dec * fx.tokens_per_decode() / groups, 1.0)
    ctx = decode_context(mix)
    out = [prompt_steps(sm, dec, ctx, chunk, n, c, fx)[0] for n, c in zip(fx.new, fx.cached)]
    tower = prompt_tower_seconds(sm.dep, mix)
    return [s + fx.reload_wait(j, s) + tower for j, s in enumerate(out)]  # a host hit's own load (offload.py)


@dataclass
class Steps:
    """The steady state's step kinds: ``freq[j]`` steps of kind j per decode step (arrays over D), each
    priced (``costs[j]``: StepCost). ``decode`` is the decode-side kind (for its bound)."""

    freq: list
    costs: list
    decode: object
    tau: float = 1.0  # tokens per decoding sequence per decode step (speculative decoding; 1 without)

    def per_token(self, attr: str):
        """Σ_j freq_j·x_j / τ: seconds (``time``), FLOPs or bytes per output token of each decoding
        sequence (per decode step without speculative decoding)."""
        return sum(f * getattr(c, attr) for f, c in zip(self.freq, self.costs)) / self.tau

    def residual(self):
        """Mean rest of the step in flight seen by a random arrival: Σ ν t² / (2 Σ ν t) (length-biased)."""
        num = sum(f * c.time ** 2 for f, c in zip(self.freq, self.costs))
        return num / (2 * self.per_token("time") * self.tau)


def _chunks(mix: Mix, chunk, new=None) -> list:
    """Per class: the chunks its prompt is prefilled in, n_c = ⌈N_c / chunk⌉ (arrays over chunk; N_c the
    prompt's new tokens, I_c without prefix hits)."""
    return [np.maximum(np.ceil(i / np.maximum(chunk, 1.0)), 1.0) for i in (new or mix.inputs)]


def _prefill_load(m, mix: Mix, chunks: list, per_class_rate, scale, fx: Features | None = None):
    """The prefill load of one prefill-carrying step: class c's chunks arrive ``per_class_rate`` · w_c · n_c
    per decode step and ``scale`` decode steps' worth ride one prefill step; a chunk adds N_c/n_c tokens
    after P_c + (n_c − 1)/2 chunks on average (N_c = I_c, P_c = 0 without prefix hits)."""
    new = fx.new if fx is not None else mix.inputs
    cached = fx.cached if fx is not None else [0.0] * len(mix.inputs)
    total = None
    for w, i, c, n in zip(mix.weights, new, cached, chunks):
        size = i / n
        part = uniform(m, prompts=per_class_rate * w * n * scale, new=size, past=c + (n - 1) / 2 * size)
        total = part if total is None else total + part
    return total


def steps(sm, rt, decode, mix: Mix, decode_only: bool = False) -> Steps:
    """The step kinds of the steady state at D = ``decode`` (``_steps``) with the host work of the new
    prompts' prefix hits (block lookups, host-tier loads: Features.with_loads)."""
    st = _steps(sm, rt, decode, mix, decode_only)
    if decode_only:
        return st
    fx = Features(sm.dep, rt, mix, decode_only)
    return fx.with_loads(st, np.asarray(decode, dtype=float) * prompts_per_decode(mix) * st.tau)


def _steps(sm, rt, decode, mix: Mix, decode_only: bool = False) -> Steps:
    """The step kinds of the steady state at D = ``decode`` (arrays allowed).

    λ_s = D·p new prompts per decode step arrive in lumps, not as fractions of a prompt per step: a step
    that carries a prompt chunk is far longer than a decode step (compute-bound against HBM-bound), so
    the mean of the two is not the price of their average.

    - Mixed batches (vLLM, TensorRT-LLM): a share f of the steps carry prefill, the rest only decode.
      Class c's prompt is n_c = ⌈I_c/(B − D/groups)⌉ chunks; f = min(1, max(λ_s·Σ w n, λ_s·Ī/(groups·B −
      D))) (one chunk per prefill step when fewer than one arrives per step, else as many as the budget
      takes), and a prefill step carries the D decodes plus 1/f of the per-step chunk load.
    - Prefill-first engines (``mixed_batches: false``: SGLang, vLLM V0): every decode step is decode-only,
      and n_pre = max(λ_s·Ī/(groups·B), min(λ_s, 1)·Σ w n) prefill steps per decode step carry the
      prompts (one at a time when fewer than one arrives per step, batched up to the budget when more).
    - Decode-only pools: one kind.
    - Images (``mix.images`` = N): the prefill-carrying kind adds the towers' pass for its λ_s·N/f
      (prefill-first: λ_s·N/n_pre) images (images.py).
    """
    m = sm.dep.model
    dec = np.asarray(decode, dtype=float)
    fx = Features(sm.dep, rt, mix, decode_only)
    if not fx.active:
        fx = None
    dm = fx.drafter.model if fx is not None and fx.drafter is not None else None
    draft_dec = None if dm is None else load(dm, dec, mix, decode_only=True)

    def finish(cost, decodes, draft_decodes, draft_prompts=None):
        return cost if fx is None else fx.finish(sm, cost, decodes, draft_decodes, draft_prompts)
    dec_load = load(m, dec, mix, decode_only=True, fx=fx)
    dec_cost = finish(sm.price(dec_load), dec, draft_dec)
    tau = fx.tau if fx is not None else 1.0
    if decode_only:
        return Steps([np.ones_like(dec)], [dec_cost], dec_cost, tau)
    groups = sm.dep.par.attention_groups
    budget = rt.token_budget
    lam = dec * prompts_per_decode(mix) * tau  # new prompts per decode step
    new = list(fx.new) if fx is not None else list(mix.inputs)
    i_bar = float(np.dot(mix.weights, new))
    per_dec = fx.tokens_per_decode() if fx is not None else 1
    if not rt.chunked_prefill and max(new) > budget:
        raise ValueError(f"input_len={max(new):g} exceeds the token budget {budget} of {rt.label} "
                         f"without chunked prefill; allowed: input_len <= token_budget, or enable chunked prefill")
    if rt.mixed_batches:
        room = np.maximum(budget - dec * per_dec / groups, 1.0)
        chunks = _chunks(mix, room if rt.chunked_prefill else float(budget), new)
        per_step_chunks = lam * sum(w * n for w, n in zip(mix.weights, chunks))
        f = np.minimum(1.0, np.maximum(per_step_chunks,
                                       lam * i_bar / np.maximum(groups * budget - dec * per_dec, 1.0)))
        pre_load = dec_load + _prefill_load(m, mix, chunks, dec * 0 + 1.0, lam / f, fx)
        draft_pre = None if dm is None else _prefill_load(dm, mix, chunks, dec * 0 + 1.0, lam / f, fx)
        pre = with_towers(sm.dep, finish(sm.price(pre_load), dec, draft_dec, draft_pre), mix, lam * mix.images / f)
        return Steps([1.0 - f, f], [dec_cost, pre], dec_cost, tau)
    chunks = _chunks(mix, float(budget) if rt.chunked_prefill else np.inf, new)
    n_pre = np.maximum(lam * i_bar / (groups * budget),
                       np.minimum(lam, 1.0) * sum(w * n for w, n in zip(mix.weights, chunks)))
    pre = sm.price(_prefill_load(m, mix, chunks, 1.0, lam / n_pre, fx))
    if dm is not None:
        pre = finish(pre, dec * 0, None, _prefill_load(dm, mix, chunks, 1.0, lam / n_pre, fx))
    pre = with_towers(sm.dep, pre, mix, lam * mix.images / n_pre)
    return Steps([np.ones_like(dec), n_pre], [dec_cost, pre], dec_cost, tau)


#: the prefill queue's utilization is held below this (printed where it binds: workloads/serving.py)
MAX_PREFILL_UTILIZATION = 0.95


def ttft(sm, rt, decode, mix: Mix, st: Steps, rate, seen=1.0, beside=None):
    """(per class TTFT_c arrays, the wait W, the prefill queue's utilization u) at D = ``decode`` with
    requests arriving at ``rate`` per second per replica, seen busy with probability ``seen``:

        TTFT_c = W + S_c      S_c = prefill_seconds (the steps carrying the prompt's chunks)
        W = seen·(1 − u)·N·t_0/2 + R_p/(1 − u)      (N: decode steps per scheduler call, multistep.py; 1 mostly)

    a prompt that arrives while no prefill runs waits out the decode step in flight (t_0, mean rest
    t_0/2); one that meets prefill work waits as in an M/G/1 queue (Pollaczek–Khinchine), the prefill
    "server" taking k = max(1, ⌊(groups·B − D)/Ī⌋) prompts per step: u = rate·E[S]/k,
    R_p = rate·E[S²]/(2k). u is held at MAX_PREFILL_UTILIZATION (the caller says so). ``beside``: the
    decodes that share the prompt's steps (default D: a steady state where every arrival meets D)."""
    prefill = prefill_seconds(sm, rt, decode if beside is None else beside, mix)
    w = mix.weights
    s1 = sum(wc * sc for wc, sc in zip(w, prefill))
    s2 = sum(wc * sc ** 2 for wc, sc in zip(w, prefill))
    groups = sm.dep.par.attention_groups
    dec = np.asarray(decode, dtype=float)
    fx = Features(sm.dep, rt, mix)
    k = np.maximum(1.0, np.floor(np.maximum(groups * rt.token_budget - dec * fx.tokens_per_decode(), 1.0)
                                 / max(fx.mean_new, 1.0)))
    u = np.minimum(rate * s1 / k, MAX_PREFILL_UTILIZATION)
    # the decode step in flight; with multi-step scheduling the whole call of N steps (multistep.py)
    wait = seen * (1 - u) * multistep.call_rest(st.decode.time, rt) + rate * s2 / (2 * k) / (1 - u)
    return [wait + sc for sc in prefill], wait, rate * s1 / k


def step_cost(sm, rt, decode, input_len, output_len=None, decode_only: bool = False):
    """(seconds, FLOPs per GPU, bytes per GPU per decode step, the priced decode-side step) of the steady
    state at D = ``decode`` (arrays allowed) through the tabulated step contract ``sm`` (``steps``)."""
    st = steps(sm, rt, decode, as_mix(input_len, output_len), decode_only)
    return st.per_token("time"), st.per_token("flops"), st.per_token("bytes"), st.decode
