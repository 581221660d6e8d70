"""Power, energy and cost.

Power of one GPU during a step of length t that performs F FLOPs and moves B bytes of HBM traffic
(u_c = F/(t·P_peak), u_m = B/(t·W_peak), both clipped to [0, 1]; coefficients in data/efficiency.yaml):

    x = (P_compute·u_c + P_memory·u_m) / (TDP − P_idle)
    P = P_idle + (TDP − P_idle)·(1 − e^(−x))

P_compute and P_memory are the watts per unit utilization at low load (dP/du at u = 0); the draw
saturates towards TDP, where the board's power limiter lowers clocks, instead of being cut off there.
The phase enters through the two utilizations: a prefill step is compute-heavy (u_c high), a decode step
memory-heavy (u_m high, u_c growing with batch). The coefficients are fitted on published per-GPU power
of vLLM serving (data/power_measured.csv, ML.ENERGY Leaderboard v3.0) by benchmarks/fit_power.py
(docs/features/energy.md); GPUs without rows use H100's fitted fractions of their own TDP.

Energy = P·t per GPU; joules per output token = GPUs·Σ P·t / output tokens; tokens per joule is its
inverse (= tokens/s per watt). Cost from the rental price: $/s = GPUs·price_per_hour/3600, so
$ per million output tokens = 1e6·($/s)/(output tok/s); input tokens are charged their prefill time.
``price_per_hour`` is the catalog's cited on-demand figure or the user's (--price); ``GPU.price`` says which
(hardware/prices.py), and :func:`energy_summary` reports it beside the cost.
"""
from __future__ import annotations

import math

import numpy as np

from ..hardware import GPU
from ..hardware.prices import price_tag
from .roofline import StepCost


def power_w(gpu: GPU, compute_dtype: str, flops, moved, seconds):
    """Average power of one GPU (W) over ``seconds`` doing ``flops`` and moving ``moved`` bytes. Three floats
    (Python or numpy scalars): the same formula on floats, no arrays (tests/test_pricing_scalar_parity.py)."""
    if isinstance(flops, float) and isinstance(moved, float) and isinstance(seconds, float):
        return np.float64(_power_float(gpu, compute_dtype, flops, moved, seconds))
    t = np.maximum(np.asarray(seconds, dtype=float), 1e-30)
    u_c = np.clip(np.asarray(flops, dtype=float) / (t * gpu.peak_flops[compute_dtype]), 0, 1)
    u_m = np.clip(np.asarray(moved, dtype=float) / (t * gpu.hbm_bw), 0, 1)
    p = gpu.power
    span = max(p.tdp_w - p.idle_w, 1e-9)
    return p.idle_w + span * -np.expm1(-(p.compute_w * u_c + p.memory_w * u_m) / span)


def _power_float(gpu: GPU, compute_dtype: str, flops: float, moved: float, seconds: float) -> float:
    """:func:`power_w` on floats, each operation in power_w's order (np.clip as comparisons, NaN kept)."""
    t = 1e-30 if seconds < 1e-30 else seconds
    u_c = flops / (t * gpu.peak_flops[compute_dtype])
    u_c = 0.0 if u_c < 0.0 else (1.0 if u_c > 1.0 else u_c)
    u_m = moved / (t * gpu.hbm_bw)
    u_m = 0.0 if u_m < 0.0 else (1.0 if u_m > 1.0 else u_m)
    p = gpu.power
    span = p.tdp_w - p.idle_w
    span = 1e-9 if span < 1e-9 else span
    return p.idle_w + span * -math.expm1(-(p.compute_w * u_c + p.memory_w * u_m) / span)


def _bound(gpu: GPU, compute_dtype: str) -> tuple:
    """(peak FLOP/s, HBM B/s, P_idle, TDP − P_idle, P_compute/span, P_memory/span): power_w's coefficients."""
    peak, bw, p = gpu.peak_flops[compute_dtype], gpu.hbm_bw, gpu.power
    idle, span = p.idle_w, max(p.tdp_w - p.idle_w, 1e-9)
    return peak, bw, idle, span, p.compute_w / span, p.memory_w / span


def scalar_power(gpu: GPU, compute_dtype: str):
    """:func:`power_w` for Python floats (the simulator prices one step at a time): the same formula
    with the GPU's coefficients bound once."""
    peak, bw, idle, span, compute, memory = _bound(gpu, compute_dtype)

    expm1 = math.expm1

    def watts(flops: float, moved: float, seconds: float) -> float:
        # max(seconds, 1e-30) and the clips to [0, 1] as comparisons (no builtin calls; NaN kept as np.clip keeps it)
        t = 1e-30 if seconds < 1e-30 else seconds
        u_c = flops / (t * peak)
        u_c = 0.0 if u_c < 0.0 else (1.0 if u_c > 1.0 else u_c)
        u_m = moved / (t * bw)
        u_m = 0.0 if u_m < 0.0 else (1.0 if u_m > 1.0 else u_m)
        return idle - span * expm1(-(compute * u_c + memory * u_m))
    return watts


def array_power(gpu: GPU, compute_dtype: str):
    """:func:`scalar_power` over arrays of steps (a run of decode-only steps, sim/decode_run.py): the same
    bound coefficients and float operations in the same order, the comparisons as masks; np.expm1 is the C
    library's expm1 that math.expm1 calls (bit-equal where numpy has no SIMD expm1 for the CPU:
    tests/test_decode_run_vector_parity.py checks it)."""
    peak, bw, idle, span, compute, memory = _bound(gpu, compute_dtype)

    def watts(flops: np.ndarray, moved: np.ndarray, seconds: np.ndarray) -> np.ndarray:
        t = np.maximum(seconds, 1e-30)  # the comparisons as np.maximum/np.minimum: equal for non-NaN
        u_c = np.minimum(np.maximum(flops / (t * peak), 0.0), 1.0)
        u_m = np.minimum(np.maximum(moved / (t * bw), 0.0), 1.0)
        return idle - span * np.expm1(-(compute * u_c + memory * u_m))
    return watts


def step_power_w(gpu: GPU, compute_dtype: str, cost: StepCost):
    """Average power of one GPU over a priced step (its per-GPU FLOPs and bytes)."""
    return power_w(gpu, compute_dtype, cost.flops, cost.bytes, cost.time)


def dollars_per_second(gpu: GPU, num_gpus: int) -> float | None:
    return None if gpu.price_per_hour is None else gpu.price_per_hour * num_gpus / 3600.0


def per_million(dollars_per_s: float | None, tokens_per_s: float) -> float | None:
    """Dollars per million tokens at ``tokens_per_s`` (None without a price)."""
    if dollars_per_s is None or tokens_per_s <= 0:
        return None
    return dollars_per_s / tokens_per_s * 1e6


def energy_summary(gpu: GPU, num_gpus: int, prefill_j: float, decode_j: float, seconds: float,
                   prefill_s: float, input_tokens: float, output_tokens: float) -> dict:
    """Joules, tokens per joule, average power and $/M tokens of a run (all GPUs of the deployment)."""
    total_j = prefill_j + decode_j
    dps = dollars_per_second(gpu, num_gpus)
    return {
        "energy_j": total_j, "prefill_energy_j": prefill_j, "decode_energy_j": decode_j,
        "joules_per_output_token": total_j / output_tokens if output_tokens else None,
        "decode_joules_per_output_token": decode_j / output_tokens if output_tokens else None,
        "prefill_joules_per_input_token": prefill_j / input_tokens if input_tokens else None,
        "output_tokens_per_joule": output_tokens / total_j if total_j else None,
        "average_power_w": total_j / seconds if seconds else None,
        "average_power_per_gpu_w": total_j / seconds / num_gpus if seconds else None,
        "usd_per_hour": None if dps is None else dps * 3600,
        "usd_per_gpu_hour": gpu.price_per_hour,
        "price_by": None if gpu.price is None else gpu.price.by,  # catalog | --price | --gpu-set | hardware file
        "price_from": price_tag(gpu).strip(" ()") or None,       # 'Crusoe on-demand, 2026-09-20' / '--price'
        "usd_per_million_output_tokens": per_million(dps, output_tokens / seconds if seconds else 0),
        "usd_per_million_input_tokens": per_million(dps, input_tokens / prefill_s if prefill_s else 0),
    }
