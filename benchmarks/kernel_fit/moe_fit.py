"""Fused-MoE curves (inferbound.pricing.kernels.moe) fitted to moe_perf tables, per GPU, backend and MoE dtype.

Fitted on the gated (SwiGLU) rows with balanced routing; the default fused kernel of each backend
(TensorRT-LLM: its CUTLASS / DeepGEMM path, not the min-latency or non-gated variants). Held-out: 25 %
of the distinct (hidden, inter) expert shapes. Transfer: non-gated (Relu2) rows of the same table,
and the power-law routings, whose median measured/predicted ratio is the cost of expert imbalance
at that skew (the balanced curve does not model it; the engine's moe_imbalance factor does).
"""
from __future__ import annotations

import numpy as np

from inferbound.pricing.kernels.moe import moe_time

from .common import AIC_DTYPE, DTYPES, CurveFit, GpuCtx
from .fitting import Param, ape_stats, fit, holdout_mask
from .gemm_fit import per_backend
from .tables import read, rel, subset, tables

CONT = [Param("e_c", 0.6, 0.02, 1.0), Param("e_m", 0.7, 0.05, 1.0),
        Param("overhead_s", 3.0, 0.0, 1000.0, 1e-6), Param("mem_latency_s", 2.0, 0.0, 60.0, 1e-6),
        Param("tile_r", 48.0, 4.0, 256.0), Param("q", 3.0, 1.0, 20.0), Param("k_fill", 64.0, 0.0, 4096.0),
        Param("o_moe", 10.0, 0.0, 2000.0, 1e-6), Param("c_slot", 1.0, 0.0, 100.0, 1e-9)]
QUANT = Param("quant_bytes", 3.0, 0.0, 400.0)   # b_q, bytes-equivalent per activation element
GRID = [(tm, km) for tm in (32.0, 64.0, 128.0) for km in (None, 512.0)]


def _excluded(src: str) -> bool:
    """Kernel variants that are not the backend's default gated fused-MoE path."""
    return "nongated" in src or "min_latency" in src


def load_rows(path, aic_dtype, distribution="balanced", gated=True, source=None):
    """Rows of one dtype and routing; gated or not; one kernel source (default: the most measured one)."""
    t = read(path, moe_dtype=aic_dtype, distribution=distribution)
    src = t["kernel_source"]
    keep = np.array([("nongated" in s) != gated and "min_latency" not in s for s in src], dtype=bool)
    if keep.any():
        names, counts = np.unique(src[keep], return_counts=True)
        source = source or str(names[np.argmax(counts)])
        keep &= src == source
    t = {k: v[keep] for k, v in t.items()}
    x = {"source": source, "tokens": t["num_tokens"].astype(float), "hidden": t["hidden_size"].astype(float),
         "inter": t["inter_size"].astype(float), "topk": t["topk"].astype(float),
         "experts": t["num_experts"].astype(float), "tp": t["moe_tp_size"].astype(float),
         "ep": t["moe_ep_size"].astype(float), "gated": np.full(keep.sum(), gated)}
    return x, t["latency"].astype(float) * 1e-3


def model_for(ctx: GpuCtx, kd: str):
    peak, bw = ctx.peak(kd), ctx.gpu.hbm_bw

    def model(p, x):
        return moe_time(p, ctx.sms, peak, bw, x["tokens"], x["hidden"], x["inter"], x["topk"], x["experts"],
                        x["tp"], x["ep"], x["gated"])
    return model


def candidates(paths):
    """[(backend, path, dtype label, rows)]: per backend and dtype, the newest table with >= 50 gated balanced rows."""
    out, seen = [], set()
    for fw, path, aic in per_backend(paths, "moe_dtype", all_tables=True):
        if (fw, aic) in seen:
            continue
        x, y = load_rows(path, aic)
        if len(y) >= 50:
            seen.add((fw, aic))
            out.append((fw, path, aic, (x, y)))
    return out


def fit_moe(ctx: GpuCtx, quick: bool = False) -> list[CurveFit]:
    paths = tables(ctx.root, ctx.system, "moe", "moe_perf.parquet")
    out = []
    for fw, path, aic, (x, y) in candidates(paths):
        kd = AIC_DTYPE.get(aic)
        if kd is None:
            continue
        try:
            model = model_for(ctx, kd)
        except KeyError:
            continue
        fixed = {k: v for k, v in DTYPES[kd].items() if k != "peak"}
        cont = CONT + ([QUANT] if fixed["quant_act"] else [])
        held = holdout_mask(zip(x["hidden"], x["inter"]))
        best = None
        for tm, km in (GRID[2:4] if quick else GRID):
            f = {**fixed, "tm_min": tm, "k_min": km}
            p = fit(model, cont, f, x, y, ~held, max_rows=2500)
            err = ape_stats(model(p, subset(x, ~held)), y[~held])["mape"]
            if best is None or err < best[0]:
                best = (err, f)
        struct = best[1]
        p_train = fit(model, cont, struct, x, y, ~held, max_rows=6000)
        held_stats = ape_stats(model(p_train, subset(x, held)), y[held]) if held.any() else {"n": 0}
        p = fit(model, cont, struct, x, y, max_rows=6000)
        cf = CurveFit("moe", ctx.gid, kd, p, ape_stats(model(p, x), y), held_stats, [rel(ctx.root, path)])
        cf.engine = fw
        cf.model, cf.data = model, (x, y)
        cf.notes.append(f"kernel_source {x['source']}")
        gx, gy = load_rows(path, aic, gated=False)
        if len(gy):
            cf.transfer.append(("non-gated rows", ape_stats(model(p, gx), gy)))
        for dist in sorted(set(read(path, moe_dtype=aic)["distribution"]) - {"balanced"}):
            dx, dy = load_rows(path, aic, distribution=dist, source=x["source"])
            if len(dy):
                st = ape_stats(model(p, dx), dy)
                st["measured_over_balanced"] = float(np.median(dy / model(p, dx)))
                cf.transfer.append((f"{dist} routing", st))
        out.append(cf)
    return out
