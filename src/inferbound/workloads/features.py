"""The engine features of a runtime inside the steady state (steady_state.py; docs/features/).

At D decoding sequences (class c at its mean context c̄_c, steady_state.py) one step of the engine is:

- speculative decoding (speculative.py): each decode is a verify pass of k + 1 tokens after c̄_c cached
  (``decode_load``), and the draft runs k passes over the D sequences, the first with the step's prompt
  tokens beside them (``finish``). A step yields τ tokens per decoding sequence, so requests complete
  (and new prompts arrive) τ·D·p per step and the time per output token is t_step/τ (Steps.per_token);
- prefix caching (prefix.py): a prompt of class c prefills N_c = I_c − P_c new tokens after its P_c
  cached ones (``new_tokens``, ``cached``), so the token budget and the chunks count N_c and the
  attention of each chunk reads P_c + the chunks before it;
- a host KV tier (offload.py): the decoding and prefilling sequences hold H(D) = D·κ/groups bytes of KV
  per GPU (κ: steady_state.kv_per_decoder, reservations included); what exceeds the device pool K is in
  host memory and is read every step: t_step += max(0, max(H(D) − K, 0)/β_host − ω·t_step).

Without features every function here returns the plain steady state (τ = 1, N_c = I_c, no host reads).
"""
from __future__ import annotations

import numpy as np

from ..deploy import offload, prefix, speculative
from ..step.contract import add_work, uniform
from ..step.offload import with_host_reads
from ..step.speculative import draft_cost, draft_prefill_cost, draft_step_model, verify_load, with_verify_host
from .occupancy import kv_per_decoder


class Features:
    """The runtime's features for one deployment and length mix (module docstring)."""

    def __init__(self, dep, rt, mix, decode_only: bool = False):
        self.dep, self.rt, self.mix = dep, rt, mix
        self.spec = speculative.spec_of(rt)
        self.drafter = speculative.drafter_of(dep, rt)
        self.tau = 1.0 if self.spec is None else self.spec.tau
        self.k = 0 if self.spec is None else self.spec.k
        self.cached = [float(prefix.cached_tokens(rt, i)) for i in mix.inputs]
        self.new = [i - c for i, c in zip(mix.inputs, self.cached)]
        self.tier = offload.tier_of(dep, rt)
        self._kv = None
        self.decode_only = decode_only
        self._draft_sm = None

    @property
    def active(self) -> bool:
        return self.spec is not None or any(self.cached) or self.tier is not None

    @property
    def mean_new(self) -> float:
        """Ñ = Σ w N: new (not cached) prompt tokens per request."""
        return float(np.dot(self.mix.weights, self.new))

    def tokens_per_decode(self) -> int:
        """Tokens of the step budget a decoding sequence takes: k + 1 (1 without speculation)."""
        return self.k + 1

    # -- loads -------------------------------------------------------------------------------------
    def decode_load(self, m, decode, context):
        """``decode`` sequences at ``context``: one token each, or the verify pass of k + 1."""
        if self.spec is None:
            return uniform(m, decode=decode, context=context)
        return verify_load(m, decode, context, self.k)

    # -- the step ----------------------------------------------------------------------------------
    def draft_sm(self, max_tokens: int):
        if self._draft_sm is None:
            self._draft_sm = draft_step_model(self.drafter, max_tokens)
        return self._draft_sm

    def finish(self, sm, cost, decode, draft_decodes=None, draft_prompts=None):
        """The priced target step ``cost`` of ``decode`` sequences with the draft's passes (``draft_decodes``:
        the draft-model load of the decodes, ``draft_prompts`` of the step's prompt tokens) and the
        host-tier reads added."""
        dec = np.asarray(decode, dtype=float)
        if self.spec is not None:
            cost = with_verify_host(self.dep, cost, dec, self.k)
            dr = self.drafter
            if dr.model is not None:
                dsm = self.draft_sm(sm.max_tokens)
                if draft_decodes is not None and np.any(dec > 0):
                    cost = add_work(cost, draft_cost(dr, dsm.price, draft_decodes, dec, draft_prompts))
                elif draft_prompts is not None:
                    cost = add_work(cost, draft_prefill_cost(dr, dsm.price, draft_prompts))
        if self.tier is not None and np.any(dec > 0):
            cost = with_host_reads(cost, self.tier, self.host_bytes(dec))
        return cost

    def host_bytes(self, decode):
        """max(H(D) − K, 0): KV bytes per GPU in the host tier at D = ``decode``."""
        if self._kv is None:
            self._kv = kv_per_decoder(self.dep, self.mix, self.rt, self.decode_only)
        per, capacity = self._kv
        held = np.asarray(decode, dtype=float) * per / self.dep.par.attention_groups
        return np.maximum(held - capacity, 0.0)
