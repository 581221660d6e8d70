"""What a configuration's step time is spent on, and which part binds it.

A steady-state step at decode batch D carries T = D + P tokens (P prompt tokens: D·I/(O − 1)
aggregated, 0 in a disaggregated decode pool) for S = D + P/I sequences. The step model prices it as
m = min(S, pp) micro-batches (m = 1 without pipeline parallelism), each passing every stage:

    t = f = G(T/m) + L(S/m) + A/m      (stepmodel.py; with m <= pp the pipeline time max(m·f/pp, f) is f)

    G   everything but attention (GEMMs, experts, norms, collectives, sends, overheads) of one
        micro-batch: priced once more with ``steps.step_cost(..., attention=False)`` at T/m tokens to
        get its split per stage (compute, weights, KV, activations, communication, overhead), scaled
        to the tabulated G(T/m)
    L   LM head and sampling: the step model's logit table
    A/m attention: t − G(T/m) − L(S/m)

Per GPU over the step (balanced stages, m micro-batches through each): m × the stage split, m·L/pp of
LM head, A/pp of attention, and the rest of t idle in the pipeline bubble (0 when m = pp; all of it
is busy time when pp = 1). The bound is the largest of compute, HBM (weights + KV + activations),
communication, attention, LM head, overhead and bubble; the explanation lists every share >= 1%.
"""
from __future__ import annotations

import numpy as np

from .. import steps
from ..deployment import Deployment
from ..stepmodel import StepModel

WORDS = {"compute": "compute-bound", "memory": "HBM-bound", "communication": "communication-bound",
         "attention": "attention-bound", "lm_head": "LM-head-bound", "overhead": "overhead-bound",
         "bubble": "pipeline-bubble-bound"}
SHARE_WORDS = {"compute": "GEMM compute", "weights": "weight reads", "kv": "KV reads", "activations": "activations",
               "communication": "communication", "overhead": "launch/step overhead", "bubble": "pipeline bubble",
               "attention": "attention", "lm_head": "LM head"}


def step_split(dep: Deployment, sm: StepModel, decode: float, prompt_tokens: float, prompts: float,
               step_s: float) -> dict[str, float]:
    """Seconds of the step by kind (module docstring)."""
    par = dep.par
    seqs = decode + prompts
    mb = max(1.0, min(seqs, float(par.pp)))
    tokens = (decode + prompt_tokens) / mb
    g_t = float(np.interp(tokens, sm.grid, sm.base_time))
    l_s = float(np.interp(seqs / mb, sm.grid, sm.logit_time))
    if par.pp > 1:  # the tables hold one micro-batch through every stage
        par = par.model_copy(update={"microbatches": 1})
    cost = steps.step_cost(dep.model, dep.gpu, dep.dtypes, par, dep.compute_dtype, max(tokens, 1.0), 1, 0,
                           "decode", logits_per_seq=0, attention=False)
    scale = g_t / max(float(np.asarray(cost.time)), 1e-30)
    pp = dep.par.pp
    out = {k: float(np.asarray(v)) * scale * mb for k, v in cost.split.items() if k != "bubble"}
    out["lm_head"] = l_s * mb / pp
    out["attention"] = max(step_s - g_t - l_s, 0.0) * mb / pp
    out["bubble"] = max(step_s - sum(out.values()), 0.0)
    return out


def bound_of(split: dict[str, float]) -> str:
    classes = {"compute": split.get("compute", 0.0),
               "memory": split.get("weights", 0.0) + split.get("kv", 0.0) + split.get("activations", 0.0),
               "communication": split.get("communication", 0.0), "attention": split.get("attention", 0.0),
               "lm_head": split.get("lm_head", 0.0), "overhead": split.get("overhead", 0.0),
               "bubble": split.get("bubble", 0.0)}
    return max(classes, key=classes.get)


def explain_step(split: dict[str, float], label: str) -> tuple[str, str]:
    """(bound, '<label>: HBM-bound; weight reads 52%, attention 30%, communication 9%')."""
    total = sum(split.values()) or 1e-30
    bound = bound_of(split)
    shares = sorted(((v / total, k) for k, v in split.items() if v / total >= 0.01), reverse=True)
    return bound, f"{label}: {WORDS[bound]}; " + ", ".join(f"{SHARE_WORDS.get(k, k)} {f:.0%}" for f, k in shares)
