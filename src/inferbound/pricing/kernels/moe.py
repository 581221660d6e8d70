"""Fused MoE layer time: two grouped GEMMs over the active experts plus routing and permutation.

One GPU holds E_l = E/ep experts, each with I_l = I/tp columns of the expert MLP (hidden size H). A
step of T tokens, each routed to k experts, sends slots = T·k/ep token-slots to this GPU (balanced
routing). With balanced routing (the fitting tables') min(E, T·k) distinct experts are active, spread
evenly over the EP ranks; a served batch routes each token independently, E·(1 − (1 − k/E)^T) distinct
(``expert_load(routing="uniform")``, what pricing uses). This GPU runs a = clip(distinct/ep, 1, E_l)
experts with m = max(1, slots/a) tokens each (tokens per expert: a few dozen of them run far below peak). Then::

    t = o_moe + c_slot·T·k + t_gemm(G=a, M=m, N=g·I_l, K=H) + t_gemm(G=a, M=m, N=H, K=I_l)
        + perm_bytes/(W·e_m)
    perm_bytes = T·H·2 + slots·H·2·2          (read the input, gather and scatter the bf16 hidden rows)

with g = 2 for gated (SwiGLU: gate and up projections fused) and 1 for non-gated experts, t_gemm the
grouped form of ``gemm.gemm_time`` (wave quantization over G·⌈M/tm⌉·⌈N/tn⌉ tiles), o_moe the fixed
cost of the routing, top-k and permutation kernels and c_slot their cost per routed token-slot of the
whole step (every GPU scans all T·k slots to find its own, so this term does not shrink with ep). Parameters are fitted per GPU and MoE dtype
to measured fused-MoE latencies (benchmarks/fit_kernels.py). Broadcasts over numpy arrays.
"""
from __future__ import annotations

import numpy as np

from .gemm import gemm_time


def expert_load(tokens, topk, experts, ep, routing: str = "balanced"):
    """(active experts on this GPU, tokens per active expert, token-slots on this GPU).

    ``routing="balanced"``: the fitting tables' routing (aiconfigurator ``distribution: balanced``, slots
    spread over distinct experts): min(E, T·k)/ep active. ``routing="uniform"``: each token draws its k
    of E experts independently, as a served batch routes; this GPU's E/ep experts are each hit with
    probability 1 − (1 − k/E)^T, so (E/ep)·(1 − (1 − k/E)^T) are active (operators/layers.experts_touched,
    the operator's weight bytes). Equal at T = 1; at T = 16, k = 8, E = 256: 102.0 against 128.
    """
    tokens, topk, experts, ep = (np.asarray(x, dtype=float) for x in (tokens, topk, experts, ep))
    slots = tokens * topk / ep
    if routing == "balanced":
        distinct = np.minimum(experts, tokens * topk)
    elif routing == "uniform":
        distinct = experts * -np.expm1(tokens * np.log1p(-np.minimum(topk / experts, 1.0 - 1e-12)))
    else:
        raise ValueError(f"routing={routing!r}; allowed: balanced, uniform")
    active = np.clip(distinct / ep, 1.0, experts / ep)
    return active, np.maximum(1.0, slots / active), slots


def moe_time(p: dict, sms: int, peak: float, hbm_bw: float, tokens, hidden, inter, topk, experts,
             tp=1, ep=1, gated=True):
    """Seconds for one fused MoE layer on one GPU under parameters ``p`` (module docstring)."""
    active, m, slots = expert_load(tokens, topk, experts, ep)
    inter_l = np.asarray(inter, dtype=float) / np.asarray(tp, dtype=float)
    hidden = np.asarray(hidden, dtype=float)
    g = np.where(np.asarray(gated), 2.0, 1.0)
    t1, _, _ = gemm_time(p, sms, peak, hbm_bw, m, g * inter_l, hidden, active)
    t2, _, _ = gemm_time(p, sms, peak, hbm_bw, m, hidden, inter_l, active)
    perm = np.asarray(tokens, dtype=float) * hidden * 2.0 + slots * hidden * 4.0
    slots_all = np.asarray(tokens, dtype=float) * np.asarray(topk, dtype=float)
    return p["o_moe"] + p.get("c_slot", 0.0) * slots_all + t1 + t2 + perm / (hbm_bw * p["e_m"])
