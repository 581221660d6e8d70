"""Fit the power model (pricing/energy.py) on published per-GPU power measurements, offline.

Rows: src/inferbound/data/power_measured.csv (ML.ENERGY Leaderboard v3.0, vLLM 0.11.1, each row with its
source file). Each row is a steady state of continuous batching with ``batch`` running sequences of mean
output length O and an assumed mean prompt of I tokens (INPUT_LEN below: the leaderboard does not publish
the prompt lengths of lm-arena-chat; the energy is decode-dominated, so the script also prints I = 100 and
400). A request of O_i output tokens holds a slot for O_i steps, so the running set is length-biased: its
mean context is I + E[O²]/(2·E[O]) (E[O²]/E[O] from the row's published output-length histogram, column
output_len_m2_m1), not I + O/2. One average step of that steady state is priced by the step contract:

    load = uniform(decode=B, context=I + E[O²]/(2E[O]), prompts=B/O, new=I)   (B/O prompts join per step)
    t, F, M = price(dep, load, "stream")                               (per GPU: seconds, FLOPs, bytes)
    u_c = F/(t·peak[compute dtype]),  u_m = M/(t·HBM bw)
    P = P_idle + (TDP − P_idle)·(1 − exp(−(k_c·u_c + k_m·u_m)))         (energy.power_w)
    J/token = GPUs·P·t/B

k_c and k_m (compute_w = k_c·(TDP − P_idle), memory_w = k_m·(TDP − P_idle)) are fitted per GPU by least
squares on log(P_pred/P_measured) over the ``fit`` rows (scipy.optimize.least_squares); P_idle stays
data/efficiency.yaml's. Cross-validation leaves one model out (each model's rows are one group; the
leaderboard is the one source, so leaving a source out is not possible yet) and reports the median
|J/token error| of the left-out rows. The printed "before" is the linear capped model this fit replaced
(P = min(TDP, idle + 0.70·TDP·u_c + 0.35·TDP·u_m)).

    .venv/bin/python benchmarks/fit_power.py            # fit, CV, the table of docs/features/energy.md
"""
from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from importlib import resources

import numpy as np
from scipy.optimize import least_squares

from inferbound.deploy.calibration import packaged
from inferbound.deploy.deployment import make_deployment
from inferbound.step import contract

INPUT_LEN = 200        # [assumption] mean lm-arena-chat prompt (not published); sensitivity printed


def read_rows() -> list[dict]:
    text = (resources.files("inferbound") / "data" / "power_measured.csv").read_text("utf-8")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def sampling_options(row: dict) -> dict:
    """The row's requests' sampling (its top_p and repetition_penalty columns: ML.ENERGY's benchmark sends
    top_p 0.95 and repetition_penalty 1.1), priced by the engine's sampler (deploy/sampling.py)."""
    return {"top_p": float(row["top_p"]), "repetition_penalty": float(row["repetition_penalty"])}


def utilization(row: dict, input_len: float = INPUT_LEN) -> dict:
    """Per-GPU step time and utilizations of the row's steady state (module docstring)."""
    dep = make_deployment(model=row["model"], gpu=row["gpu"], tp=int(row["tp"]), engine=row["engine"],
                          calibration=packaged(), engine_options=sampling_options(row))  # the packaged fit
    b, o = float(row["batch"]), float(row["output_len"])
    ctx = input_len + float(row["output_len_m2_m1"]) / 2            # length-biased running context
    load = contract.uniform(dep.model, decode=b, context=ctx, prompts=b / o, new=input_len)
    c = contract.price(dep, load, "stream")
    t = float(c.time)
    g = dep.gpu
    return {"t": t, "u_c": float(c.flops) / (t * g.peak_flops[dep.compute_dtype]),
            "u_m": float(c.bytes) / (t * g.hbm_bw), "tdp": g.power.tdp_w, "idle": g.power.idle_w,
            "gpus": dep.num_gpus, "batch": b}


def power_new(u: dict, kc: float, km: float) -> float:
    x = kc * min(max(u["u_c"], 0.0), 1.0) + km * min(max(u["u_m"], 0.0), 1.0)
    return u["idle"] + (u["tdp"] - u["idle"]) * (1.0 - math.exp(-x))


def power_old(u: dict) -> float:
    tdp = u["tdp"]
    return min(tdp, 0.15 * tdp + 0.70 * tdp * min(u["u_c"], 1.0) + 0.35 * tdp * min(u["u_m"], 1.0))


def j_per_token(u: dict, watts: float) -> float:
    return u["gpus"] * watts * u["t"] / u["batch"]


def fit(pairs: list[tuple[dict, dict]]) -> tuple[float, float]:
    """(k_c, k_m) minimizing Σ log(P_pred/P_measured)² over (row, utilization) pairs."""
    def resid(k):
        return [math.log(power_new(u, k[0], k[1]) / float(r["measured_w_per_gpu"])) for r, u in pairs]
    sol = least_squares(resid, x0=[1.0, 1.0], bounds=([0.0, 0.0], [20.0, 20.0]))
    return float(sol.x[0]), float(sol.x[1])


def err(pred: float, measured: float) -> float:
    return pred / measured - 1.0


def main() -> int:
    rows = read_rows()
    util = [utilization(r) for r in rows]
    by_gpu = defaultdict(list)
    for r, u in zip(rows, util):
        by_gpu[r["gpu"]].append((r, u))
    print(f"{len(rows)} rows, input length assumed {INPUT_LEN} tokens\n")
    print("step time against the measured median ITL (time error feeds J/token; not fitted here):")
    for gpu, pairs in by_gpu.items():
        e = [err(u["t"] * 1e3, float(r["itl_ms"])) for r, u in pairs]
        print(f"  {gpu}: median {np.median(e):+.1%}, median |e| {np.median(np.abs(e)):.1%}")
    coeffs = {}
    for gpu, pairs in by_gpu.items():
        train = [p for p in pairs if p[0]["split"] == "fit"]
        coeffs[gpu] = fit(train)
        idle_frac = pairs[0][1]["idle"] / pairs[0][1]["tdp"]
        kc, km = coeffs[gpu]
        print(f"\n{gpu}: fitted on {len(train)} fit rows: k_c = {kc:.3f}, k_m = {km:.3f} "
              f"(compute_fraction = k_c·(1 − idle) = {kc * (1 - idle_frac):.3f}, "
              f"memory_fraction = {km * (1 - idle_frac):.3f} of TDP, idle {idle_frac:.2f})")
        models = sorted({r["model"] for r, _ in pairs})
        cv_j, cv_w = [], []
        for m in models:
            tr = [p for p in pairs if p[0]["model"] != m]
            k = fit(tr)
            for r, u in pairs:
                if r["model"] == m:
                    p = power_new(u, *k)
                    cv_w.append(err(p, float(r["measured_w_per_gpu"])))
                    cv_j.append(err(j_per_token(u, p), float(r["j_per_token"])))
        before_j = [err(j_per_token(u, power_old(u)), float(r["j_per_token"])) for r, u in pairs]
        before_w = [err(power_old(u), float(r["measured_w_per_gpu"])) for r, u in pairs]
        held = [(r, u) for r, u in pairs if r["split"] == "holdout"]
        hold_j = [err(j_per_token(u, power_new(u, kc, km)), float(r["j_per_token"])) for r, u in held]
        hold_w = [err(power_new(u, kc, km), float(r["measured_w_per_gpu"])) for r, u in held]
        print(f"  before (linear capped): median |W err| {np.median(np.abs(before_w)):.1%}, "
              f"median |J/token err| {np.median(np.abs(before_j)):.1%} (all {len(pairs)} rows)")
        print(f"  leave-one-model-out:    median |W err| {np.median(np.abs(cv_w)):.1%}, "
              f"median |J/token err| {np.median(np.abs(cv_j)):.1%}")
        if held:
            print(f"  holdout rows ({len(held)}):     median |W err| {np.median(np.abs(hold_w)):.1%}, "
                  f"median |J/token err| {np.median(np.abs(hold_j)):.1%}")
    print("\nJ/token against batch (measured vs predicted with the fitted coefficients):")
    print("| model | GPU | GPUs | batch | measured W/GPU | predicted W/GPU | measured J/token | predicted J/token | error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r, u in zip(rows, util):
        p = power_new(u, *coeffs[r["gpu"]])
        j = j_per_token(u, p)
        print(f"| {r['model']} | {r['gpu']} | {u['gpus']} | {float(r['batch']):.0f} | {float(r['measured_w_per_gpu']):.0f} "
              f"| {p:.0f} | {float(r['j_per_token']):.4f} | {j:.4f} | {err(j, float(r['j_per_token'])):+.0%} |")
    for alt in (100, 400):
        e = []
        for r in rows:
            if r["split"] != "holdout":
                continue
            u = utilization(r, alt)
            e.append(err(j_per_token(u, power_new(u, *coeffs[r["gpu"]])), float(r["j_per_token"])))
        print(f"\ninput length {alt}: holdout median |J/token err| {np.median(np.abs(e)):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
