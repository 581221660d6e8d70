"""Speculative decoding's acceptance: tokens per target step τ from the acceptance as engines and papers
report it, tree drafting and the n-gram match rate (the settings and the draft: deploy/speculative.py).

Acceptance as engines and papers report it (``acceptance_settings``; docs/features/speculative.md):
- per-position (``acceptance_positions`` a_1, …, a_k: the probability position i is accepted once every
  earlier one was): P(at least i accepted) = Π_{j≤i} a_j, so τ = 1 + Σ_{i=1}^{k} Π_{j≤i} a_j (the i.i.d.
  a_j = a gives τ(a, k) again). vLLM's per-position "acceptance rate" counts position i over every draft,
  p_i = Π_{j≤i} a_j (a_i = p_i / p_{i−1});
- vLLM's "acceptance rate" r = accepted / drafted tokens over a run (vllm/v1/spec_decode/metrics.py): a
  step drafts k and accepts τ − 1 on average, so r = (τ − 1)/k and τ = 1 + k·r;
- vLLM's "mean acceptance length" (1 + accepted per draft step) and SGLang's "accept length" (accepted
  tokens per verify step, the target's own token included) are τ itself.
Each is held as τ and as the i.i.d. a with τ(a, k) = τ (``iid_acceptance``, bisection: what the
simulator draws per token); a is never a guess: it is printed as a note.

Tree drafting (SGLang's EAGLE with --speculative-eagle-topk t > 1 and --speculative-num-draft-tokens N,
python/sglang/srt/server_args.py; EAGLE-2, Li et al., EMNLP 2024): the draft runs k steps (k =
--speculative-num-steps), keeping t candidates per depth, and the target verifies N tokens per sequence
(the root and N − 1 tree nodes) in one pass. Depth i holds b_i = min(t, max(0, N − 1 − t·(i − 1)))
nodes (filled depth by depth). Siblings are distinct tokens: the best is the target's token with
probability a_i, and each further sibling takes a share a_i of the mass the earlier ones left, so some
node of depth i is accepted with 1 − (1 − a_i)^{b_i}:

    τ_tree = 1 + Σ_{i=1}^{k} Π_{j≤i} (1 − (1 − a_j)^{b_j})           (t = 1, N = k + 1: the chain τ)

n-gram proposing only on a match (vLLM's ngram proposer, vllm/v1/spec_decode/ngram_proposer.py: no
draft for a request whose last n tokens do not occur earlier): a share m (``spec_match_rate``) of the
sequences verify k + 1 tokens, the rest decode one, so a step of D sequences is m·D verify passes beside
(1 − m)·D plain decodes and τ_m = 1 + m·(τ − 1) (at batch 1: m·t_verify + (1 − m)·t_decode per step).
"""
from __future__ import annotations

import numpy as np

from ..base.datafiles import data_yaml


def tokens_per_step(a, k):
    """τ = (1 − a^(k+1)) / (1 − a): expected tokens a sequence gains per target step under i.i.d.
    acceptance a (Leviathan, Kalman, Matias, ICML 2023, eq. 1; deploy/speculative.py docstring)."""
    a = np.asarray(a, dtype=float)
    return (1.0 - a ** (np.asarray(k, dtype=float) + 1.0)) / (1.0 - a)


def tau_positions(positions) -> float:
    """τ = 1 + Σ_i Π_{j≤i} a_j of per-position acceptances a_1..a_k (module docstring)."""
    tau, run = 1.0, 1.0
    for a in positions:
        run *= float(a)
        tau += run
    return tau


def tree_widths(k: int, topk: int, draft_tokens: int) -> tuple[int, ...]:
    """b_i, the tree nodes verified at depth i = 1..k: min(t, max(0, N − 1 − t·(i − 1))) (module docstring)."""
    return tuple(min(topk, max(0, draft_tokens - 1 - topk * (i - 1))) for i in range(1, k + 1))


def tau_tree(positions, widths) -> float:
    """τ_tree = 1 + Σ_i Π_{j≤i} (1 − (1 − a_j)^{b_j}) (module docstring); b = 1 everywhere is tau_positions."""
    return tau_positions([1.0 - (1.0 - float(a)) ** b for a, b in zip(positions, widths)])


def iid_acceptance(tau: float, k: int, widths=None) -> float:
    """The a in [0, 1) with τ(a, k) = ``tau`` (1 ≤ tau < k + 1), by bisection on the increasing τ(a, k)
    (``widths``: of a tree, τ_tree((a,)·k, widths))."""
    def f(a):
        return tau_tree((a,) * k, widths) if widths else float(tokens_per_step(a, k))
    lo, hi = 0.0, 1.0 - 1e-12
    for _ in range(100):
        mid = (lo + hi) / 2
        if f(mid) < tau:
            lo = mid
        else:
            hi = mid
    return lo


#: runtime options that state the acceptance (one of them) or shape the drafting (acceptance_settings)
ACCEPTANCE_FORMS = ("acceptance", "acceptance_positions", "acceptance_rate", "accept_length")
DRAFT_SHAPE = ("spec_topk", "spec_draft_tokens", "spec_match_rate")


def _positions(text) -> tuple[float, ...]:
    items = text if isinstance(text, (list, tuple)) else str(text).split(",")
    try:
        vals = tuple(float(x) for x in items)
    except ValueError:
        raise ValueError(f"acceptance_positions={text!r} must be numbers in [0, 1] separated by commas, "
                         f"e.g. 0.8,0.6,0.4") from None
    if not vals or any(not 0.0 <= v <= 1.0 for v in vals):
        raise ValueError(f"acceptance_positions={text!r} must be numbers in [0, 1] separated by commas, "
                         f"e.g. 0.8,0.6,0.4")
    return vals


def _in(name: str, v, low: float, high: float, integer: bool = False):
    bad = isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or (integer and int(v) != v)
    if bad or not low <= v <= high:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{name}={v!r} must be {kind} in [{low:g}, {high:g}]")
    return int(v) if integer else float(v)


def acceptance_settings(method: str, k: int | None, given: dict) -> tuple[int | None, float | None, dict, list]:
    """(k, the i.i.d. acceptance a, Runtime fields, notes) of the acceptance forms and draft shape in
    ``given`` (runtime option names; module docstring); a None when no form is given, k from a per-position
    list's length when not given. One-line ValueError naming the field otherwise."""
    forms = [f for f in ACCEPTANCE_FORMS if given.get(f) is not None]
    if len(forms) > 1:
        raise ValueError(f"{forms[0]}={given[forms[0]]!r} and {forms[1]}={given[forms[1]]!r} given together; "
                         f"allowed: one of {', '.join(ACCEPTANCE_FORMS)}")
    fields, notes = {}, []
    form = forms[0] if forms else None
    if form == "acceptance_positions":
        pos = _positions(given[form])
        if k is None:
            k = len(pos)
        elif len(pos) != k:
            raise ValueError(f"acceptance_positions={given[form]!r} has {len(pos)} positions for spec_tokens={k}; "
                             f"allowed: {k} numbers, one per drafted position")
        fields["acceptance_positions"] = pos
    topk = given.get("spec_topk")
    n = given.get("spec_draft_tokens")
    m = given.get("spec_match_rate")
    if k is None:
        return k, None, fields, notes
    if topk is not None:
        topk = _in("spec_topk", topk, 1, 16, integer=True)
    topk = topk or 1
    if n is not None:
        n = _in("spec_draft_tokens", n, 2, 1 + topk * k, integer=True)
        if topk == 1 and n != k + 1:
            raise ValueError(f"spec_draft_tokens={n!r} needs spec_topk > 1 (a chain verifies k + 1 = {k + 1}); "
                             f"allowed: {k + 1}, or a tree with spec_topk >= 2")
    elif topk > 1:
        raise ValueError(f"spec_topk={topk!r} needs spec_draft_tokens (tokens verified per sequence, SGLang "
                         f"--speculative-num-draft-tokens, an integer in [2, {1 + topk * k}])")
    if topk > 1 or n:
        if method not in ("eagle", "mtp"):
            raise ValueError(f"spec_topk={topk!r} (tree drafting) needs an EAGLE head or MTP; "
                             f"speculative={method!r}; allowed: eagle, mtp")
        fields.update(spec_topk=topk, spec_draft_tokens=int(n))
    if m is not None:
        if method != "ngram":
            raise ValueError(f"spec_match_rate={m!r} applies to speculative='ngram' only; allowed: ngram")
        fields["spec_match_rate"] = _in("spec_match_rate", m, 0.0, 1.0)
    elif method == "ngram":
        d = data_yaml("features.yaml")["speculative"]["ngram_match_rate"]
        fields["spec_match_rate"] = float(d["value"])
        notes.append(f"spec_match_rate defaults to {float(d['value']):g} for ngram ({d['source']})")
    a = None
    if form == "acceptance":
        a = float(given[form])
    elif form == "acceptance_positions":
        tau = tau_positions(fields["acceptance_positions"])
        a = iid_acceptance(tau, k)
        notes.append(f"acceptance by position {given[form]}: tau = 1 + sum of products = {tau:.4g} tokens per verify "
                     f"(i.i.d. equivalent a = {a:.4f}, what the simulator draws)")
    elif form == "acceptance_rate":
        r = _in("acceptance_rate", given[form], 0.0, 1.0)
        tau = 1.0 + k * r
        if tau >= k + 1:
            raise ValueError(f"acceptance_rate={r!r} must be < 1 (every draft accepted); allowed: [0, 1)")
        a = iid_acceptance(tau, k)
        notes.append(f"acceptance_rate {r:g} (vLLM: accepted/drafted) -> tau = 1 + k*r = 1 + {k}*{r:g} = {tau:.4g}, "
                     f"per-token acceptance a = {a:.4f}")
    elif form == "accept_length":
        widths = tree_widths(k, topk, n) if topk > 1 else None
        top = tau_tree((1.0,) * k, widths) if widths else float(k + 1)
        tau = _in("accept_length", given[form], 1.0, top)
        if tau >= top:
            raise ValueError(f"accept_length={tau!r} must be < {top:g} (every draft accepted); allowed: [1, {top:g})")
        a = iid_acceptance(tau, k, widths)
        notes.append(f"accept_length {tau:g} (SGLang accept length, vLLM mean acceptance length) = tau at k={k}"
                     f"{' (tree: tau_tree)' if widths else ''}: per-token acceptance a = {a:.4f}")
    if form == "acceptance_rate" and topk > 1:
        raise ValueError(f"acceptance_rate={given[form]!r} with spec_topk={topk}: vLLM's rate is of a chain; "
                         f"allowed: accept_length, acceptance or acceptance_positions with a tree")
    return k, a, fields, notes
