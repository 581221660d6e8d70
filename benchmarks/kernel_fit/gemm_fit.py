"""Dense GEMM curves (inferbound.pricing.kernels.gemm) fitted to gemm_perf tables, per GPU and kernel dtype.

Structure (tm_min, k_min) is chosen by grid search on the training rows; the continuous parameters
by least squares. Held-out: 25 % of the distinct (N, K) weight shapes are left out of the fit and
scored; then the shipped curve is refitted on every row. Transfer: the TensorRT-LLM curve scored on
the vLLM and SGLang tables of the same GPU and dtype (other kernels, same hardware), and each engine's
curve on that engine's older tables (version drift).
"""
from __future__ import annotations

from inferbound.pricing.kernels.gemm import gemm_time

from .common import AIC_DTYPE, DTYPES, CurveFit, GpuCtx
from .fitting import Param, ape_stats, fit, holdout_mask
from .tables import framework_version, read, rel, subset, tables

CONT = [Param("e_c", 0.75, 0.05, 1.0), Param("e_m", 0.8, 0.05, 1.0),
        Param("overhead_s", 2.0, 0.0, 1000.0, 1e-6), Param("mem_latency_s", 2.0, 0.0, 40.0, 1e-6),
        Param("tile_r", 48.0, 4.0, 256.0), Param("q", 3.0, 1.0, 20.0), Param("k_fill", 64.0, 0.0, 4096.0)]
QUANT = Param("quant_bytes", 3.0, 0.0, 400.0)   # b_q, bytes-equivalent per activation element
GRID = [(tm, km) for tm in (32.0, 64.0, 128.0) for km in (256.0, 2048.0, None)]


def model_for(ctx: GpuCtx, kd: str):
    peak, bw = ctx.peak(kd), ctx.gpu.hbm_bw

    def model(p, x):
        return gemm_time(p, ctx.sms, peak, bw, x["m"], x["n"], x["k"], x.get("g", 1.0))[0]
    return model


def load_rows(path, aic_dtype):
    t = read(path, gemm_dtype=aic_dtype)
    x = {"m": t["m"].astype(float), "n": t["n"].astype(float), "k": t["k"].astype(float)}
    return x, t["latency"].astype(float) * 1e-3


def fit_structure(model, fixed, x, y, train, grid=GRID, cont=CONT, max_rows=3000):
    """Best (tm_min, k_min) by training-set median APE, then the continuous fit on the training rows."""
    best = None
    for tm, km in grid:
        f = {**fixed, "tm_min": tm, "k_min": km}
        p = fit(model, cont, f, x, y, train, max_rows=max_rows)
        med = ape_stats(model(p, subset(x, train)), y[train])["mape"]
        if best is None or med < best[0]:
            best = (med, tm, km)
    return {**fixed, "tm_min": best[1], "k_min": best[2]}


def per_backend(paths, column, all_tables=False):
    """[(backend, path, dtype label)]: for each backend, each dtype from its newest table that has it
    (``all_tables``: every table that has it, newest first, for callers that filter further)."""
    out, seen = [], set()
    for path in paths:
        fw, _ = framework_version(path)
        for label in sorted(set(read(path)[column])):
            if all_tables or (fw, label) not in seen:
                seen.add((fw, label))
                out.append((fw, path, label))
    return out


def fit_gemm(ctx: GpuCtx, quick: bool = False) -> list[CurveFit]:
    paths = tables(ctx.root, ctx.system, "gemm", "gemm_perf.parquet")
    out = []
    for fw, path, aic in per_backend(paths, "gemm_dtype"):
        kd = AIC_DTYPE.get(aic)
        if kd is None:
            continue
        try:
            model = model_for(ctx, kd)
        except KeyError:
            continue
        x, y = load_rows(path, aic)
        fixed = {k: v for k, v in DTYPES[kd].items() if k != "peak"}
        cont = CONT + ([QUANT] if fixed["quant_act"] else [])
        held = holdout_mask(zip(x["n"], x["k"]))
        struct = fit_structure(model, fixed, x, y, ~held, grid=GRID[1::3] if quick else GRID, cont=cont)
        p_train = fit(model, cont, struct, x, y, ~held)
        held_stats = ape_stats(model(p_train, subset(x, held)), y[held])
        p = fit(model, cont, struct, x, y)
        cf = CurveFit("gemm", ctx.gid, kd, p, ape_stats(model(p, x), y), held_stats, [rel(ctx.root, path)])
        cf.engine = fw
        cf.model, cf.data = model, (x, y)
        for other in paths:
            ofw, over = framework_version(other)
            if other == path or (ofw != fw and fw != "trtllm"):
                continue
            ox, oy = load_rows(other, aic)
            if len(oy):
                cf.transfer.append((f"{ofw} {over}", ape_stats(model(p, ox), oy)))
        out.append(cf)
    return out
