"""The latency band of an open-loop (rate-driven) serving prediction, carried through the operating point.

A latency predicted at an offered rate λ depends on how close λ is to the deployment's capacity X, and the
capacity is itself predicted with the throughput band b (deploy/bands.py: ``band_for(cal, dep, "serving",
"throughput")``): the true capacity may lie anywhere in X·(1 ± b). At a fixed step model a capacity error
by a factor k is the same queue as the rate offered at λ/k (utilisation ρ = λ/X becomes ρ/k), so the
latency under the band's two ends is the same predictor re-priced at

    λ_fast = λ / (1 + b)      (capacity X·(1 + b): utilisation ρ/(1 + b))
    λ_slow = λ / (1 − b)      (capacity X·(1 − b): utilisation ρ/(1 − b))

and no second latency formula is needed. With v the latency predicted at λ and v_fast, v_slow the
re-priced ones, the row's band is

    band = max(own band, |v_fast / v − 1|, |v_slow / v − 1|)

(the relative spread of the prediction across the capacity band). When X·(1 − b) <= λ, i.e. λ_slow
reaches the capacity the predictor states (the analytic steady state's overload, workloads/serving.py),
a figure that holds the queue wait (TTFT, E2E: ``QUEUEING``) has no finite value on the slow side: the
band is ``inf`` and faces say "unbounded within the capacity band" (``describe``). Per-token gaps (TPOT,
ITL) stay finite past capacity (the batch saturates at the engine's caps): theirs is the predictor's
value at λ_slow (the simulator runs a finite overloaded run); where the predictor gives none there (the
analytic steady state refuses an overload) their band is the own band and the fast side's spread.
b >= 1 leaves no capacity above zero: unbounded.

Closed-loop rows (a concurrency, no offered rate) have no operating point on a rate axis: they keep
their own band (the callers do not ask). Throughput figures keep their own band.
"""
from __future__ import annotations

import math
from typing import Callable

UNBOUNDED = "unbounded within the capacity band"


class Overload(ValueError):
    """An offered rate at or past the capacity a predictor states (workloads/serving.py's steady state: 'rate=…
    overloads …: it serves at most …'); a ValueError, so every face still answers it as bad input."""


def scaled_rates(rate: float, capacity_band: float) -> tuple[float, float | None]:
    """(λ/(1 + b), λ/(1 − b)) of offered rate λ under capacity band b; the second is None for b >= 1
    (no capacity X·(1 − b) above zero)."""
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate={rate!r} must be a positive, finite number of requests/s")
    if not (isinstance(capacity_band, (int, float)) and math.isfinite(capacity_band) and capacity_band >= 0):
        raise ValueError(f"capacity_band={capacity_band!r} must be a finite relative error >= 0")
    return rate / (1 + capacity_band), (rate / (1 - capacity_band) if capacity_band < 1 else None)


def spread_band(own: float | None, value: float, fast: float | None, slow: float | None,
                overloaded: bool = False) -> float | None:
    """max(own, |fast/value − 1|, |slow/value − 1|) (a side given as None is left out); ``inf`` when
    ``overloaded`` (the slow side reaches capacity). ``own`` None: None (no band from here either)."""
    if own is None:
        return None
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"value={value!r} must be a positive, finite latency to spread a band around")
    if overloaded:
        return math.inf
    out = own
    for v in (fast, slow):
        if v is not None:
            out = max(out, abs(v / value - 1.0))
    return round(out, 4)


#: figures whose value holds the queue wait (metric names start with these): past capacity the queue grows
#: without end, so their slow side is unbounded; per-token gaps (TPOT, ITL) stay set by the saturated
#: batch (the engine's caps), so theirs is the predictor's value at λ/(1 − b) when it gives one
QUEUEING = ("ttft", "e2e")


def queueing(figure: str) -> bool:
    """True for a figure that holds the queue wait (TTFT, E2E and their percentiles)."""
    return figure.startswith(QUEUEING)


def operating_bands(own: dict, values: dict, capacity_band: float | None, rate: float,
                    price: Callable[[float], tuple[bool, dict]]) -> dict:
    """{figure: band} for the latency figures of one open-loop prediction: ``own`` their own bands,
    ``values`` their predicted values at ``rate``, ``price(r)`` = (whether offered rate r reaches the
    capacity, the same predictor's figures at r by figure, {} where it gives none). Figures missing from
    ``values`` keep their own band; no capacity band: the own bands unchanged. Past capacity a queueing
    figure is unbounded; a per-token one takes the priced value (none: the own band and the fast side)."""
    if capacity_band is None:
        return dict(own)
    r_fast, r_slow = scaled_rates(rate, capacity_band)
    fast_over, fast = price(r_fast)
    slow_over, slow = price(r_slow) if r_slow is not None else (True, {})
    out = {}
    for fig, b in own.items():
        v = values.get(fig)
        if v is None or b is None:
            out[fig] = b
            continue
        over = slow_over and queueing(fig)
        f_v = None if (fast_over and queueing(fig)) else fast.get(fig)
        out[fig] = spread_band(b, v, f_v, slow.get(fig), overloaded=over)
    return out


def describe(band: float | None) -> str:
    """' (±24%)', ' (unbounded within the capacity band)' for ``inf``, '' without a band."""
    if band is None:
        return ""
    return f" ({UNBOUNDED})" if math.isinf(band) else f" (±{band:.0%})"


def is_overload(e: ValueError) -> bool:
    """Whether a predictor's error is an ``Overload``: the offered rate reaches the capacity it states."""
    return isinstance(e, Overload)


# --- the analytic serving estimate (the faces: estimate --scenario serving, the API, compare) ------------
LATENCY_FIGURES = ("ttft", "e2e", "tpot", "itl")


def estimate_figures(est) -> dict:
    """The latency figures of a ServingEstimate by band figure (deploy/bands.FIGURES["serving"]): means."""
    return {"ttft": est.ttft_s["mean"], "e2e": est.e2e_s["mean"], "tpot": est.tpot_s, "itl": est.itl_s}


def estimate_bands(est, run: Callable[[float], object]) -> dict:
    """``est.error_bands`` with its latency figures carried through the operating point when ``est`` is
    open loop (``mode`` "rate"): ``run(r)`` re-prices the same estimate at offered rate r (the overload
    error where r reaches capacity), the capacity band is its own ``throughput`` band. Closed loop:
    unchanged."""
    bands = dict(est.error_bands or {})
    if est.mode != "rate" or est.request_rate is None:
        return bands

    def price(rate):
        try:
            return False, estimate_figures(run(rate))
        except ValueError as e:
            if not is_overload(e):
                raise
            return True, {}
    own = {k: v for k, v in bands.items() if k in LATENCY_FIGURES}
    return {**bands, **operating_bands(own, estimate_figures(est), bands.get("throughput"), est.request_rate, price)}
