"""What a searched configuration's step is spent on, and which part binds it.

The configuration's steady-state step (workloads/steady_state.py: D decodes at the mean context plus
D/(O − 1) prompts aggregated, D decodes alone in a disaggregated decode pool) priced by the same
tabulated step contract the evaluation used (stepmodel.py), explained as every step is
(``inferbound.step.explain.phase``): its bound (compute, memory or communication) and the shares >= 1 %.
"""
from __future__ import annotations

from ..deploy.deployment import Deployment
from ..step.explain import phase
from ..step.table import StepModel
from ..workloads import steady_state
from ..workloads.features import Features
from ..workloads.lengths import Mix


def explain_row(dep: Deployment, sm: StepModel, decode: float, lengths: Mix, decode_only: bool,
                label: str) -> tuple[str, str]:
    """(bound, '<label>: HBM-bound, weights 52%, KV 30%, all-reduce 9%') of the step at decode batch D
    of the workload's length mix (workloads/lengths.py)."""
    fx = Features(dep, dep.runtime, lengths, decode_only)  # prefix hits: only the uncached prompt tokens count
    cost = sm.price(steady_state.load(dep.model, decode, lengths, decode_only, fx if fx.active else None))
    p = phase(cost, label)
    return p.bound, p.explanation
