"""Step-time model: the price of a prefill, a decode step, or a mixed chunked step.

This is the one function family the estimate, the simulator and the search call; it composes the
operators (``operators.py``), the collectives on the topology (``collectives.py``), pipeline stages
(``pipeline.py``) and the pricing engine (``roofline.py``).
"""
from __future__ import annotations

import numpy as np

from .pipeline import step_cost
from .roofline import StepCost


def prefill_cost(m, gpu, dt, par, compute_dtype, batch, input_len) -> StepCost:
    """One prefill step of ``batch`` prompts of ``input_len`` tokens."""
    return step_cost(m, gpu, dt, par, compute_dtype, batch, input_len, 0, "prefill")


def decode_cost(m, gpu, dt, par, compute_dtype, batch, context) -> StepCost:
    """One decode step of ``batch`` sequences after ``context`` cached tokens."""
    return step_cost(m, gpu, dt, par, compute_dtype, batch, 1, context, "decode")


def chunk_cost(m, gpu, dt, par, compute_dtype, batch, new, past) -> StepCost:
    """A step in which ``batch`` sequences each add ``new`` tokens after ``past`` cached ones."""
    return step_cost(m, gpu, dt, par, compute_dtype, batch, new, past, "prefill")


def no_kv_cache_decode_time(m, gpu, dt, par, compute_dtype, batch, input_len, output_len) -> float:
    """Decode time without a KV cache: step j recomputes the whole prefix of S + j tokens.

    Σ_{j=1}^{N-1} t_prefill(B, S + j): quadratic in N (the seed's O(N²)), against the linear sum with
    a cache. Evaluated at up to 64 evenly spaced steps and scaled.
    """
    n = output_len - 1
    if n <= 0:
        return 0.0
    j = np.unique(np.linspace(1, n, min(n, 64)).round())
    t = np.asarray(prefill_cost(m, gpu, dt, par, compute_dtype, batch, input_len + j).time)
    return float(np.mean(t) * n)
