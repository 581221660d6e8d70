"""Where the energy rows' J/token miss comes from: the priced step time, not the power (diagnostic, offline).

Rows and row model: benchmarks/fit_power.py (ML.ENERGY Leaderboard v3.0, vLLM 0.11.1). J/token is
GPUs·P·t/B, so its error splits into the power's and the step's. This script prints, for the held-out rows:

1. the share within ±25 % as fitted (P and t both priced), and with the priced P but t := the row's
   measured median ITL (itl_ms): what is left if the step time were right;
2. the measured GPU-seconds per step s = J·B/(GPUs·P_measured) over the median ITL (prefill-carrying steps
   and mean > median ITL);
3. per (model, GPU, TP) at batch >= 60, a least-squares line ITL − t_priced = a + b·B (b: the missing time
   per running sequence);
4. a what-if, NOT shipped: the packaged vLLM host term seq_s (data/calibration.yaml engines.vllm) raised by
   10 and 20 µs, the power refitted, the held-out shares and the signed median t/ITL − 1 at batch >= 128
   split into one-GPU and TP > 1 rows;
5. that median per (model, GPU, TP) at d = 0 and d = 20 µs: which deployments want the per-sequence term.
   Qwen3-32B at TP2 wants it like the one-GPU rows; only the Llama-70B rows (TP2 B200, TP4 H100) are
   pushed slow, so "one GPU against several" is not what separates the rows;
6. per (model, GPU, TP), the measured and priced ITL slope per running sequence between the row nearest
   batch 255 and the largest batch (µs/seq): where the slope is right and only the level is off.

    .venv/bin/python benchmarks/power_step_gap.py
"""
from __future__ import annotations

import copy
import dataclasses
import sys
from collections import defaultdict

import numpy as np

import fit_power as fp
from inferbound.deploy.calibration import packaged
from inferbound.deploy.deployment import make_deployment
from inferbound.step import contract


def util(row: dict, cal, input_len: float = fp.INPUT_LEN) -> dict:
    """fit_power.utilization with a given calibration (the same steady-step load)."""
    dep = make_deployment(model=row["model"], gpu=row["gpu"], tp=int(row["tp"]), engine=row["engine"],
                          calibration=cal, engine_options=fp.sampling_options(row))  # the requests' sampling
    b, o = float(row["batch"]), float(row["output_len"])
    load = contract.uniform(dep.model, decode=b, context=input_len + float(row["output_len_m2_m1"]) / 2,
                            prompts=b / o, new=input_len)
    c = contract.price(dep, load, "stream")
    t, g = float(c.time), dep.gpu
    return {"t": t, "u_c": float(c.flops) / (t * g.peak_flops[dep.compute_dtype]),
            "u_m": float(c.bytes) / (t * g.hbm_bw), "tdp": g.power.tdp_w, "idle": g.power.idle_w,
            "gpus": dep.num_gpus, "batch": b}


def scored(rows: list[dict], cal) -> tuple[dict, dict]:
    by_gpu = defaultdict(list)
    for r in rows:
        by_gpu[r["gpu"]].append((r, util(r, cal)))
    return by_gpu, {g: fp.fit([p for p in v if p[0]["split"] == "fit"]) for g, v in by_gpu.items()}


def share(e: list[float]) -> str:
    a = np.abs(e)
    return f"{int(np.sum(a <= 0.25))}/{len(a)} ({np.mean(a <= 0.25):.0%}) within ±25 %, median {np.median(a):.1%}"


def main() -> int:
    rows, base = fp.read_rows(), packaged()
    by_gpu, k = scored(rows, base)
    held = [(r, u, g) for g, v in by_gpu.items() for r, u in v if r["split"] == "holdout"]
    e_priced = [fp.err(fp.j_per_token(u, fp.power_new(u, *k[g])), float(r["j_per_token"])) for r, u, g in held]
    e_itl = [fp.err(u["gpus"] * fp.power_new(u, *k[g]) * float(r["itl_ms"]) / 1e3 / u["batch"],
                    float(r["j_per_token"])) for r, u, g in held]
    print(f"held-out J/token, priced P and t:          {share(e_priced)}")
    print(f"held-out J/token, priced P, t := median ITL: {share(e_itl)}")
    ratio = [(float(r["batch"]), float(r["j_per_token"]) * float(r["batch"])
              / (int(r["num_gpus"]) * float(r["measured_w_per_gpu"])) / (float(r["itl_ms"]) / 1e3)) for r in rows]
    for lo, hi in ((0, 17), (17, 128), (128, 1e9)):
        s = [x for b, x in ratio if lo <= b < hi]
        print(f"measured s/ITL at batch [{lo}, {hi:.0f}): {min(s):.2f}-{max(s):.2f}, median {np.median(s):.2f}")
    print("\nITL − t_priced = a + b·B over batch >= 60 (ms, µs per running sequence):")
    grp = defaultdict(list)
    for v in by_gpu.values():
        for r, u in v:
            if float(r["batch"]) >= 60:
                grp[(r["model"], r["gpu"], r["tp"])].append((u["batch"], float(r["itl_ms"]) - u["t"] * 1e3))
    for key, pts in grp.items():
        slope, icpt = np.polyfit([p[0] for p in pts], [p[1] for p in pts], 1)
        print(f"  {key[0]:14s} {key[1]:8s} TP{key[2]}: a = {icpt:+6.2f} ms, b = {slope * 1e3:+5.1f} µs")
    print("\nwhat-if (not shipped): vLLM seq_s + d, power refitted")
    per: dict = {}
    for d in (0.0, 10e-6, 20e-6):
        eng = copy.deepcopy(base.engines)
        eng["vllm"]["seq_s"] += d
        bg, kk = scored(rows, dataclasses.replace(base, engines=eng))
        e = [fp.err(fp.j_per_token(u, fp.power_new(u, *kk[g])), float(r["j_per_token"]))
             for g, v in bg.items() for r, u in v if r["split"] == "holdout"]
        side = defaultdict(list)
        for g, v in bg.items():
            for r, u in v:
                if float(r["batch"]) >= 128:
                    side[(g, "TP1" if r["tp"] == "1" else "TP>1")].append(u["t"] * 1e3 / float(r["itl_ms"]) - 1)
        sides = ", ".join(f"{g} {tp} {np.median(x):+.0%}" for (g, tp), x in sorted(side.items()))
        print(f"  d = {d * 1e6:2.0f} µs: held-out {share(e)}; t/ITL − 1 at batch >= 128: {sides}")
        if d in (0.0, 20e-6):
            per[d] = {key: np.median(x) for key, v in _by_deployment(bg).items()
                      if (x := [u["t"] * 1e3 / float(r["itl_ms"]) - 1 for r, u in v if float(r["batch"]) >= 128])}
    print("\nmedian t/ITL − 1 at batch >= 128 per deployment, d = 0 -> d = 20 µs:")
    for key in per[0.0]:
        print(f"  {key[0]:14s} {key[1]:8s} TP{key[2]}: {per[0.0][key]:+5.0%} -> {per[20e-6][key]:+5.0%}")
    print("\nITL slope per running sequence, row nearest batch 255 -> largest batch (µs/seq), d = 0:")
    for key, v in _by_deployment(by_gpu).items():
        lo = min(v, key=lambda p: abs(float(p[0]["batch"]) - 255.0))
        hi = max(v, key=lambda p: float(p[0]["batch"]))
        db = float(hi[0]["batch"]) - float(lo[0]["batch"])
        if db <= 0:
            continue
        m = (float(hi[0]["itl_ms"]) - float(lo[0]["itl_ms"])) / db * 1e3
        t = (hi[1]["t"] - lo[1]["t"]) * 1e6 / db
        print(f"  {key[0]:14s} {key[1]:8s} TP{key[2]}: batch {float(lo[0]['batch']):.0f} -> {float(hi[0]['batch']):.0f}: "
              f"measured {m:6.1f}, priced {t:6.1f} µs/seq")
    return 0


def _by_deployment(by_gpu: dict) -> dict:
    """{(model, GPU, TP): [(row, utilization), ...]} in the CSV's order."""
    out = defaultdict(list)
    for v in by_gpu.values():
        for r, u in v:
            out[(r["model"], r["gpu"], r["tp"])].append((r, u))
    return out


if __name__ == "__main__":
    sys.exit(main())
