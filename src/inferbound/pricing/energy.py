"""Power, energy and cost.

Power of one GPU during a step of length t that performs F FLOPs and moves B bytes of HBM traffic
(u_c = F/(t·P_peak), u_m = B/(t·W_peak), both clipped to [0, 1]; coefficients in data/efficiency.yaml):

    P = min(TDP, P_idle + P_compute·u_c + P_memory·u_m)

Energy = P·t per GPU; joules per output token = GPUs·Σ P·t / output tokens; tokens per joule is its
inverse (= tokens/s per watt). Cost from the rental price: $/s = GPUs·price_per_hour/3600, so
$ per million output tokens = 1e6·($/s)/(output tok/s); input tokens are charged their prefill time.
``price_per_hour`` is the catalog's cited on-demand figure or the user's (--price); ``GPU.price`` says which
(hardware/prices.py), and :func:`energy_summary` reports it beside the cost.
"""
from __future__ import annotations

import numpy as np

from ..hardware import GPU
from ..hardware.prices import price_tag
from .roofline import StepCost


def power_w(gpu: GPU, compute_dtype: str, flops, moved, seconds):
    """Average power of one GPU (W) over ``seconds`` doing ``flops`` and moving ``moved`` bytes."""
    t = np.maximum(np.asarray(seconds, dtype=float), 1e-30)
    u_c = np.clip(np.asarray(flops, dtype=float) / (t * gpu.peak_flops[compute_dtype]), 0, 1)
    u_m = np.clip(np.asarray(moved, dtype=float) / (t * gpu.hbm_bw), 0, 1)
    p = gpu.power
    return np.minimum(p.tdp_w, p.idle_w + p.compute_w * u_c + p.memory_w * u_m)


def scalar_power(gpu: GPU, compute_dtype: str):
    """:func:`power_w` for Python floats (the simulator prices one step at a time): the same formula
    with the GPU's coefficients bound once."""
    peak, bw, p = gpu.peak_flops[compute_dtype], gpu.hbm_bw, gpu.power
    tdp, idle, compute, memory = p.tdp_w, p.idle_w, p.compute_w, p.memory_w

    def watts(flops: float, moved: float, seconds: float) -> float:
        t = max(seconds, 1e-30)
        u_c = min(max(flops / (t * peak), 0.0), 1.0)
        u_m = min(max(moved / (t * bw), 0.0), 1.0)
        return min(tdp, idle + compute * u_c + memory * u_m)
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
