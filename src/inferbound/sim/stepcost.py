"""Price one simulated step under the engine's features: speculative decoding and the host KV tier.

Without them a step is ``StepModel.step(decode contexts, chunks, mode)``. With speculative decoding
(speculative.py) each of the n decoding sequences is verified as a decode read of k + 1 query tokens
after its C cached ones, n·(k + 1) logits rows beside the prefill chunks' (step/speculative.py
verify_sequences_load priced by ``StepModel.price``); the draft then runs k passes over the n sequences, the first with the step's
prefill chunks beside them (the draft's own ``StepModel.step``), each less the engine's per-step fixed
cost (step/speculative.draft_fixed_s). A verified sequence gains 1 + j tokens, j accepted drafts drawn
i.i.d. per step: P(j ≥ i) = a^i for i ≤ k, so j = min(k, ⌊ln u / ln a⌋) for u uniform on (0, 1]
(E[1 + j] = τ, speculative.tokens_per_step).

Kept prices: a speculative step's price is a function of its inputs alone (the acceptance draws are
:meth:`StepPricer.produced`'s), so it is kept by them. Where every attention kind of the target and the
draft is full attention and neither has state-space layers, a step's loads depend on the contexts c_j only
through n and Σ c_j (verify: per sequence q·c_j + q(q + 1)/2 pairs and c_j + q reads; the draft: c_j + 1;
whole numbers, so Σ c_j is exact in any order), so the key is (n, Σ c_j, chunks, mode), as
StepModel.decode_run_table keeps a plain decode step by (n, D); otherwise the contexts themselves are the
key. The same floats as pricing every step (tests/test_sim_spec_parity.py).

Host tier (offload.py): blocks in use beyond the device's are read over the host link every step,
t_host = blocks·block bytes/β_host, and the step lasts max(0, t_host − ω·t) longer.
"""
from __future__ import annotations

import numpy as np

from ..operators import attention_kinds
from ..pricing.energy import power_w
from ..step.contract import of_sequences
from ..step.speculative import draft_fixed_s, verify_sequences_load, widened, with_verify_host


KEPT_STEPS = 1 << 16  # speculative step prices kept per replica (StepPricer.price), the oldest dropped first


class StepPricer:
    """The step price of one replica under the features of its SimConfig (module docstring)."""

    def __init__(self, sm, cfg, extras: dict | None = None):
        extras = extras or {}
        self.sm, self.dep = sm, sm.dep
        self.spec = cfg.spec
        self.k = cfg.spec_k
        self.drafter, self.dsm = extras.get("drafter"), extras.get("draft_sm")
        self.host_s_per_block = float(extras.get("host_s_per_block", 0.0))
        self.overlap = float(cfg.host_overlap)
        self.rng = np.random.default_rng(cfg.seed)
        self.a = 0.0 if self.spec is None else float(self.spec.acceptance)
        self.surv = np.zeros(1) if self.spec is None else self.spec.survival()
        if self.spec is None:  # nothing to add: the step model's own price (one call less per step)
            self.price = sm.step
            return
        # the steps' prices kept by what determines them (module docstring: kept prices)
        self._kept: dict = {}
        models = [self.dep.model] + ([] if self.drafter is None or self.drafter.model is None else
                                     [self.drafter.model])
        self._by_sum = all(m.ssm is None and all(k[0] == "full" for k in attention_kinds(m)) for m in models)

    def price(self, dec_ctx, chunks, mode: str) -> tuple[float, float]:
        """(seconds, watts per GPU) of a step of decodes at ``dec_ctx`` and prefill ``chunks``: the
        priced step of :meth:`_priced`, kept by (n, Σ c_j or the contexts themselves, chunks, mode)."""
        if self.spec is None:
            return self.sm.step(dec_ctx, chunks, mode)
        dec = np.asarray(dec_ctx, dtype=float)
        key = (dec.size, float(np.add.reduce(dec)) if self._by_sum else tuple(dec.tolist()),
               tuple(chunks), mode)
        hit = self._kept.get(key)
        if hit is None:
            hit = self._priced(dec_ctx, chunks, mode)
            if len(self._kept) >= KEPT_STEPS:
                del self._kept[next(iter(self._kept))]
            self._kept[key] = hit
        return hit

    def _priced(self, dec_ctx, chunks, mode: str) -> tuple[float, float]:
        """:meth:`price` itself: the verify pass, the draft's passes (module docstring)."""
        n = len(dec_ctx)
        if self.spec is None or (n == 0 and self.dsm is None):
            return self.sm.step(dec_ctx, chunks, mode)
        if n:  # the verify pass read as a decode of q = k + 1 (a tree: N) tokens (step/speculative.py)
            q, m = self.spec.verify_tokens, self.spec.match
            load = verify_sequences_load(self.dep.model, dec_ctx, q, [float(p) for p, _ in chunks],
                                         [float(c) for _, c in chunks], m)
            cost = with_verify_host(self.dep, self.sm.price(load, mode), n * m, q - 1)
            t = float(cost.time)
            w = float(power_w(self.dep.gpu, self.dep.compute_dtype, cost.flops, cost.bytes, t))
        else:
            t, w = self.sm.step(dec_ctx, chunks, mode)
        if self.dsm is None:
            return t, w
        dr = self.drafter
        t1, w1 = self.dsm.step(dec_ctx, chunks, "stream")
        parts = [(t, w), (max(t1 - float(draft_fixed_s(dr, n + len(chunks))), 0.0), w1)]
        if n and self.k > 1:
            if self.spec.topk > 1:  # a tree: its t candidates per sequence (step/speculative.widened)
                c = self.dsm.price(widened(of_sequences(dr.model, dec_ctx), self.spec.topk), "stream")
                tr = float(c.time)
                wr = float(power_w(dr.deployment.gpu, dr.deployment.compute_dtype, c.flops, c.bytes, tr))
            else:
                tr, wr = self.dsm.step(dec_ctx, (), "stream")
            parts.append(((self.k - 1) * max(tr - float(draft_fixed_s(dr, n)), 0.0), wr))
        total = sum(s for s, _ in parts)
        return total, sum(s * x for s, x in parts) / total if total > 0 else w

    def produced(self, n: int) -> np.ndarray:
        """Tokens each of ``n`` verified sequences gains this step: 1 + j (module docstring); 1 without
        speculative decoding."""
        if self.spec is None or n == 0:
            return np.ones(n)
        if self.surv[0] <= 0:
            return np.ones(n)
        u = 1.0 - self.rng.random(n)  # (0, 1]
        # j = #{i: u <= P(j >= i)} (speculative.Spec.survival; the i.i.d. chain's P_i = a^i gives the same
        # draw as min(k, floor(ln u / ln a)))
        return 1.0 + np.count_nonzero(u[:, None] <= self.surv[None, :], axis=1)

    def host_seconds(self, blocks_in_host: int, run_s: float) -> float:
        """max(0, t_host − ω·t) for ``blocks_in_host`` blocks read over the host link in a step of run_s."""
        if not self.host_s_per_block or blocks_in_host <= 0:
            return 0.0
        return max(blocks_in_host * self.host_s_per_block - self.overlap * run_s, 0.0)
