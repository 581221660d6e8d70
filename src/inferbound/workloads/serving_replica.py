"""One serving replica's figures at C requests in service, and the C its load asks for (serving.py's module
docstring states the model; this module holds its two numerical parts).

- ``Replica.at(c)``: the decode share s = (O − 1)·t/E2E is a fixed point in D = (C/b)·s; ``_REFINE`` plain passes,
  and where they do not settle (s moves by more than ``_SETTLED``) bisection on s over [0, 1] (``_BISECT`` halvings),
  taking the upper end so requests/s never exceed what the priced D serves.
- ``Replica.solve(target)``: the C in [0, C_max] where ``target(figures) == C`` (C = λ_r·E2E open loop, the closed
  loop's N_r·E2E/(E2E + Z)), by ``_ROUNDS`` grids of ``_GRID`` points refining the bracket of the first crossing;
  C_max from the caps (steady_state.caps) and where the decodes asked for reach D_max.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ..deploy.deployment import Deployment
from ..step.table import StepModel
from . import multistep, steady_state
from .lengths import Mix
from .max_throughput import MAX_THROUGHPUT_GRID

_REFINE = 4  # fixed-point passes for the decode share and the arrival rate at a given C
_SETTLED = 1e-3  # the passes have settled where the share moves by less than this (relative); else bisection
_BISECT = 30  # bisection halvings of the share on [0, 1] (width 2^-30)
_GRID, _ROUNDS = 48, 4  # the root of C: 4 grids of 48 points, bracket width C_max / 48^4


class Replica:
    """E2E and the rest at C requests in service on one replica (module docstring)."""

    def __init__(self, dep: Deployment, mix: Mix, closed: bool, clients: float, think: float):
        self.dep, self.mix, self.rt = dep, mix, dep.runtime
        self.closed, self.clients, self.think = closed, clients, think
        g = dep.par.attention_groups
        self.sm = StepModel(dep, self.rt.token_budget * g + g, grid_points=MAX_THROUGHPUT_GRID)
        caps, self.capacity, _ = steady_state.caps(dep, mix, None, self.rt, whole=False)
        self.caps = caps
        self.d_max = min(caps.values())
        self.c_caps = float(steady_state.concurrency(self.d_max, mix, self.rt))
        # refused only when the KV cache holds less than one request in flight (the caps are fractional: a mean
        # D); a token budget below one request's tokens per decode step (long prompts, short outputs) still runs
        # a request, its prompt chunked over several steps: it lowers the rate served, not what fits
        if float(steady_state.concurrency(caps["kv-cache"], mix, self.rt)) < 1 - 1e-9:
            shown = {k: round(float(v), 2) for k, v in caps.items()}
            raise ValueError(f"no request fits the KV cache of {dep.label()} ({self.rt.label}): caps {shown}; "
                             f"allowed: more GPUs (--num-gpus, --tp), a smaller --weight-dtype or --kv-dtype, a "
                             f"larger --memory-fraction, or shorter requests")

    def busy(self, c):
        """(b, the share of arrivals that find the engine busy), arrays over C."""
        c = np.asarray(c, dtype=float)
        if not self.closed:
            b = 1.0 - np.exp(-c)
            return b, b
        n = self.clients
        share = np.minimum(c / n, 1.0)
        return 1.0 - (1.0 - share) ** n, 1.0 - (1.0 - share) ** max(n - 1, 0)

    def _pass(self, c, b, seen, share, rate=None):
        """One evaluation at C = ``c`` with the decode share ``share``: (the share it implies, (O − 1)·t/E2E,
        and its figures). ``rate``: arrivals/s; default c·share/((O − 1)·t), the rate at which ``share`` holds."""
        mix, o = self.mix, self.mix.mean_output
        # the decodes at C, never past the caps' D_max (token budget, KV, max_num_seqs): the refined share can
        # exceed the first guess (o − 1)/o when TTFT < one decode step, and a step past the budget is not run
        free = c / b * share
        d = np.clip(free, 1e-9, self.d_max)
        st = steady_state.steps(self.sm, self.rt, d, mix)
        t = st.per_token("time")
        if rate is None:
            rate = c * share / np.maximum((o - 1) * t, 1e-12) if o > 1 else c / np.maximum(o * t, 1e-12)
        # the decodes beside a new prompt: the others in service it meets (open loop: C, PASTA;
        # closed: C·(N_r − 1)/N_r), at the decode share
        others = c if not self.closed else c * max(self.clients - 1, 0) / self.clients
        ttft, _, u = steady_state.ttft(self.sm, self.rt, d, mix, st, rate, seen, beside=others * share)
        e2e = [a + (oc - 1) * t + multistep.tail(t, self.rt) for a, oc in zip(ttft, mix.outputs)]
        mean_e2e = sum(w * e for w, e in zip(mix.weights, e2e))
        fig = dict(c=c, b=b, d=d, t=t, flops=st.per_token("flops"), bytes=st.per_token("bytes"), cost=st.decode,
                   ttft=ttft, e2e=e2e, mean_e2e=mean_e2e, u=u, free=free)
        return np.minimum((o - 1) * t / mean_e2e, 1.0), fig

    def at(self, c) -> dict:
        """Every figure at C = ``c`` requests in service (arrays allowed): the decode share s = (O − 1)·t/E2E
        is a fixed point (E2E and t depend on the D = C·s/b it implies). _REFINE plain passes find it where
        they settle; where they do not (s moves by more than _SETTLED: a prefill queue near saturation
        makes TTFT swing with D, so the passes oscillate between a small and a large D), bisection on
        h(s) = s(s) − s over [0, 1] (h > 0 at s → 0, h ≤ 0 at s = 1) finds it, the arrival rate c·s/((O − 1)·t)
        held to it. Without that, a point priced at one D would report the requests/s of another (Little's
        law at the unsettled share: speculative decoding on a prefill-first engine gave 1.78x its capacity)."""
        c = np.asarray(c, dtype=float)
        b, seen = self.busy(c)
        b = np.maximum(b, 1e-12)
        o = self.mix.mean_output
        share, rate = np.full_like(c, (o - 1) / o), None  # decode share of a request's life and arrivals/s
        for _ in range(_REFINE):
            used = share
            share, fig = self._pass(c, b, seen, used, rate)
            rate = c / fig["mean_e2e"]  # Little's law in service
        off = np.abs(share - used) > _SETTLED * np.maximum(used, 1e-12)
        if not np.any(off):
            return fig
        lo, hi = np.zeros_like(c), np.ones_like(c)
        for _ in range(_BISECT):
            mid = (lo + hi) / 2
            implied, _ = self._pass(c, b, seen, mid)
            up = implied > mid
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        # hi: the share at which the implied one is not above it (h may jump, e.g. where the prefill queue's
        # utilization is held at its cap): requests/s = C/E2E there never exceed what its D's steps serve
        return self._pass(c, b, seen, hi)[1]  # on a grid, every C (settled ones move < _SETTLED)

    @cached_property
    def c_max(self) -> float:
        """The most requests in service the caps carry: C_caps = D_max·(1 + p), or less where the decodes the
        requests in service ask for, C/b·share, reach D_max first (short outputs: share = (O − 1)·t/E2E is
        small, so D = D_max is reached below C_caps). Past that C the clipped D = D_max serves no more tokens,
        and λ = C/E2E would count requests the steps do not run; found on the grids of ``solve``."""
        def over(c):
            return np.asarray(self.at(c)["free"], dtype=float) > self.d_max * (1 + 1e-9)
        lo, hi = 0.0, self.c_caps
        if not over(hi):
            return hi
        for _ in range(_ROUNDS):
            c = np.linspace(lo, hi, _GRID + 1)[1:]
            j = int(np.argmax(over(c)))  # the first C past D_max (hi is one)
            lo, hi = (lo if j == 0 else float(c[j - 1])), float(c[j])
        return lo

    def point(self, c: float) -> dict:
        """``at`` for one C, as floats."""
        p = self.at(float(c))
        return {k: (v if k == "cost" else [float(x) for x in v] if isinstance(v, list) else float(v))
                for k, v in p.items()}

    def solve(self, target) -> tuple[dict, bool]:
        """The C in [0, C_max] where ``target(figures) == C``; (point at C_max, True) when even C_max is
        below the target (the caps bind). Grids of _GRID points, each refining the bracket of the first
        crossing."""
        if float(target(self.point(self.c_max))) >= self.c_max:
            return self.point(self.c_max), True
        lo, hi = 0.0, self.c_max
        for _ in range(_ROUNDS):
            c = np.linspace(lo, hi, _GRID + 1)[1:]
            above = np.asarray(target(self.at(c))) > c
            j = int(np.argmin(above)) if not above.all() else _GRID - 1
            lo, hi = (lo if j == 0 else float(c[j - 1])), float(c[j])
        return self.point((lo + hi) / 2), False
