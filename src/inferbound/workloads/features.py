"""The engine features of a runtime inside the steady state (steady_state.py; docs/features/).

At D decoding sequences (class c at its mean context c̄_c, steady_state.py) one step of the engine is:

- speculative decoding (speculative.py): each decode is a verify pass of k + 1 tokens after c̄_c cached
  (``decode_load``), and the draft runs k passes over the D sequences, the first with the step's prompt
  tokens beside them (``finish``). A step yields τ tokens per decoding sequence, so requests complete
  (and new prompts arrive) τ·D·p per step and the time per output token is t_step/τ (Steps.per_token);
- prefix caching (prefix.py): a prompt of class c prefills N_c = I_c − P_c new tokens after its P_c
  cached ones (``new_tokens``, ``cached``), so the token budget and the chunks count N_c and the
  attention of each chunk reads P_c + the chunks before it (P_c whole blocks, at most I_c − 1:
  prefix.hit_tokens). With G > 1 prefix groups the share that hits follows from LRU
  residency at the operating point (``shares``: s_dev = 1 − (1 − 1/G)^(C − 1) with C the requests in
  flight per attention group at the KV and max_num_seqs caps, prefix.device_share), P_c = s·hit tokens;
- a host KV tier (offload.py) holds evicted prefixes: with G > 1 a further s_host = min(G − R, H)/G of
  prompts (prefix.host_share) load their hit tokens over the host link instead of recomputing them. The
  steady state's loads are L = λ·Σ w_c·κ(P_c^host)/groups bytes per GPU per decode step (λ prompts per
  decode step); they run on the copy engine beside the steps, so ``with_loads`` adds max(0, L/β − ω·t̄)
  per decode step (t̄ the mean step, ω offload.overlap), and each request's TTFT its own load not hidden
  behind its prefill (``reload_wait``, offload.request_wait). The running sequences' KV stays on the GPU;
- the host work of a prefix hit: every full block of a prompt hashed and looked up (prefix.lookup_seconds),
  λ·Σ w_c ⌊I_c/b⌋·t_block per decode step as step overhead, counted where hits are stated (without them
  the engine's fitted step overhead already holds its hashing: prefix caching is on by default).

Without features every function here returns the plain steady state (τ = 1, N_c = I_c, no host loads).
"""
from __future__ import annotations

import numpy as np

from ..deploy import offload, prefix, speculative
from ..deploy.memory import kv_bytes_per_gpu
from ..step.contract import add_work, scale_cost, uniform, with_time
from ..step.speculative import (draft_cost, draft_prefill_cost, draft_step_model, spec_verify_load, widened,
                                with_verify_host)
from .occupancy import kv_per_decoder, prompts_per_decode


class Features:
    """The runtime's features for one deployment and length mix (module docstring)."""

    def __init__(self, dep, rt, mix, decode_only: bool = False):
        self.dep, self.rt, self.mix = dep, rt, mix
        self.spec = speculative.spec_of(rt)
        self.drafter = speculative.drafter_of(dep, rt)
        self.tau = 1.0 if self.spec is None else self.spec.tau
        self.k = 0 if self.spec is None else self.spec.k
        self.decode_only = decode_only
        self.tier = offload.tier_of(dep, rt)
        self.hit = [float(prefix.cached_tokens(rt, i)) for i in mix.inputs]
        self.s_dev, self.s_host = self.shares()
        self.cached = [h * (self.s_dev + self.s_host) for h in self.hit]
        self.host_tokens = [h * self.s_host for h in self.hit]
        self.new = [i - c for i, c in zip(mix.inputs, self.cached)]
        self._draft_sm = None

    @property
    def active(self) -> bool:
        return self.spec is not None or any(self.cached) or self.tier is not None

    # -- prefix hits: which tier serves them ---------------------------------------------------------
    def in_flight_at_cap(self) -> float:
        """C: requests in flight per attention group at the KV and max_num_seqs caps, every sequence holding
        its whole prompt (with G > 1 prefixes are counted per sequence: occupancy.kv_per_decoder)."""
        per, capacity = kv_per_decoder(self.dep, self.mix, self.rt, self.decode_only)
        p = 0.0 if self.decode_only else prompts_per_decode(self.mix) * self.tau
        c = capacity * (1 + p) / per if per > 0 else np.inf
        return float(min(c, self.rt.max_num_seqs)) if self.rt.max_num_seqs else float(c)

    def shares(self) -> tuple[float, float]:
        """(s_dev, s_host): shares of prompts whose prefix hits on the GPU and in the host tier (module
        docstring); (1, 0) with one prefix group or a bare hit rate."""
        n = prefix.groups(self.rt)
        if n <= 1 or not any(self.hit):
            return 1.0, 0.0
        s_dev = float(prefix.device_share(n, max(self.in_flight_at_cap() - 1.0, 0.0)))
        if self.tier is None:
            return s_dev, 0.0
        g = self.dep.par.attention_groups
        kv_p = float(kv_bytes_per_gpu(self.dep.model, self.dep.dtypes, self.dep.par, g, max(self.hit)))
        return s_dev, float(prefix.host_share(n, s_dev, offload.host_prefixes(self.tier, kv_p)))

    def load_bytes_per_prompt(self) -> float:
        """Σ w_c κ(P_c^host): KV bytes per GPU a prompt loads from the host tier on average."""
        g = self.dep.par.attention_groups
        m, dt, par = self.dep.model, self.dep.dtypes, self.dep.par
        return float(sum(w * float(kv_bytes_per_gpu(m, dt, par, g, h))
                         for w, h in zip(self.mix.weights, self.host_tokens) if h > 0))

    def reload_wait(self, c: int, prefill_s):
        """What class ``c``'s own host-tier load adds to its TTFT after ``prefill_s`` seconds of its prefill
        (offload.request_wait; 0 without host hits)."""
        h = self.host_tokens[c]
        if self.tier is None or h <= 0:
            return 0.0 * np.asarray(prefill_s, dtype=float)
        g = self.dep.par.attention_groups
        load = float(kv_bytes_per_gpu(self.dep.model, self.dep.dtypes, self.dep.par, g, h))
        return offload.request_wait(self.tier, load, prefill_s)

    def with_loads(self, st, lam):
        """The steady state's step kinds ``st`` (steady_state.Steps) with the host work of ``lam`` new prompts
        per decode step (arrays over D): their block lookups as overhead, their host-tier loads as far as
        they outlast the mean step (one more step kind, once per decode step; module docstring)."""
        lam = np.asarray(lam, dtype=float)
        extra = []
        if prefix.active(self.rt):
            look = float(np.dot(self.mix.weights, prefix.lookup_seconds(self.rt, np.asarray(self.mix.inputs))))
            if look > 0:
                extra.append(with_time(scale_cost(st.decode, 0.0), lam * look, "overhead"))
        load = self.load_bytes_per_prompt() if self.tier is not None else 0.0
        if load > 0:
            mean = sum(f * c.time for f, c in zip(st.freq, st.costs)) + sum(e.time for e in extra)
            wait = offload.added_seconds(self.tier, lam * load / self.dep.par.attention_groups, mean)
            extra.append(with_time(scale_cost(st.decode, 0.0), wait, "communication", "host_kv"))
        if not extra:
            return st
        ones = np.ones_like(lam)
        return type(st)(list(st.freq) + [ones] * len(extra), list(st.costs) + extra, st.decode, st.tau)

    @property
    def mean_new(self) -> float:
        """Ñ = Σ w N: new (not cached) prompt tokens per request."""
        return float(np.dot(self.mix.weights, self.new))

    def tokens_per_decode(self) -> float:
        """Tokens of the step budget a decoding sequence takes: 1 + m·(q − 1), q = k + 1 (a tree: N), m the
        n-gram match rate (1 otherwise); 1 without speculation."""
        return 1.0 if self.spec is None else 1.0 + self.spec.match * (self.spec.verify_tokens - 1)

    # -- loads -------------------------------------------------------------------------------------
    def decode_load(self, m, decode, context):
        """``decode`` sequences at ``context``: one token each, or the verify pass of k + 1."""
        if self.spec is None:
            return uniform(m, decode=decode, context=context)
        return spec_verify_load(m, self.spec, decode, context)  # a decode read of k + 1 (or N) queries

    # -- the step ----------------------------------------------------------------------------------
    def draft_sm(self, max_tokens: int):
        if self._draft_sm is None:
            self._draft_sm = draft_step_model(self.drafter, max_tokens)
        return self._draft_sm

    def finish(self, sm, cost, decode, draft_decodes=None, draft_prompts=None):
        """The priced target step ``cost`` of ``decode`` sequences with the draft's passes (``draft_decodes``:
        the draft-model load of the decodes, ``draft_prompts`` of the step's prompt tokens) added (the
        host-tier loads are the steady state's, ``with_loads``)."""
        dec = np.asarray(decode, dtype=float)
        if self.spec is not None:
            cost = with_verify_host(self.dep, cost, dec * self.spec.match, self.spec.verify_tokens - 1)
            dr = self.drafter
            if dr.model is not None:
                dsm = self.draft_sm(sm.max_tokens)
                if draft_decodes is not None and np.any(dec > 0):
                    rest = widened(draft_decodes, dr.spec.topk) if dr.spec.topk > 1 else None  # a tree
                    cost = add_work(cost, draft_cost(dr, dsm.price, draft_decodes, dec, draft_prompts, rest))
                elif draft_prompts is not None:
                    cost = add_work(cost, draft_prefill_cost(dr, dsm.price, draft_prompts))
        return cost
