"""MoE at small per-GPU expert width: the fused-MoE curves of data/kernels.yaml against the measured tables.

Question (task N): ``inferbound roofline Qwen/Qwen3-Next-80B-A3B-Instruct --gpu h200_sxm --num-gpus 8 --tp 8
--weight-dtype fp8 --act-dtype fp8`` prices the decode ``experts`` op at ~0.6 ms per layer, many times the
HBM time of its expert weights, because the fitted vLLM fp8 curve pads each expert to 128-row tiles and
charges k_fill = 654 K-elements per tile (h200; 411 on h100) where the down projection has K = I/tp = 64.
Is that what the measured kernels do at such small K, or is the fit extrapolating past its table?

For each curve (GPU x engine x dtype) this reads the very table and kernel source the curve was fitted to
(its ``fit.table`` and ``fit.kernel_source`` in kernels.yaml, rows selected as benchmarks/kernel_fit/moe_fit.py
does: gated, balanced routing) and prints, with r = predicted / measured (pricing/kernels/moe.py ``moe_time``
under the curve):

1. coverage: the measured per-GPU expert widths I_l = inter_size / moe_tp_size and token counts;
2. error by I_l band at tokens 1-256 (the decode range): rows, MAPE, median r, min r, max r, rows beyond 2x;
3. the smallest-I_l shapes, per token count;
4. the measured shapes nearest Qwen3-Next-80B-A3B TP8 (E 512, top-10, H 2048, I_l 64: not measured; nearest
   are the same H and I_l, or the same E, k and I_l) and Qwen3-235B-A22B TP8 (E 128, top-8, H 4096,
   I_l 192: measured exactly), with "x HBM" = measured time / (expert weight bytes of the active experts at
   the catalog HBM rate), and the model on the unmeasured target shape itself (balanced routing, as the
   tables route).

Needs the ``fit`` extra (pyarrow + aiconfigurator-core, in a separate venv; docs/kernels.md); without it the
script says so and exits 0 having read nothing. Run::

    python3 -m venv /tmp/fitvenv && /tmp/fitvenv/bin/pip install aiconfigurator-core pyarrow
    /tmp/fitvenv/bin/pip install pydantic typer rich scipy matplotlib plotly fastapi uvicorn httpx  # inferbound's deps
    PYTHONPATH=src /tmp/fitvenv/bin/python benchmarks/moe_small_k_check.py [--gpus h200_sxm,h100_sxm] [--systems DIR]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inferbound.hardware import get_gpu  # noqa: E402
from inferbound.pricing import kernels as K  # noqa: E402

#: (engine, kernel dtype) of the curves checked: the task's vLLM fp8 and TensorRT-LLM fp8 / bf16, and for
#: contrast vLLM's bf16 (Triton) and fp8_block (FlashInfer CUTLASS) fused MoE at the same shapes
CURVES = (("vllm", "fp8"), ("trtllm", "fp8"), ("trtllm", "bf16"), ("vllm", "bf16"), ("vllm", "fp8_block"))
#: (name, experts, top-k, hidden, inter, tp): the two deployments of the question (config.json of each
#: checkpoint: Qwen/Qwen3-Next-80B-A3B-Instruct num_experts 512, num_experts_per_tok 10, hidden_size 2048,
#: moe_intermediate_size 512; Qwen/Qwen3-235B-A22B 128, 8, 4096, 1536)
TARGETS = (("Qwen3-Next-80B-A3B TP8", 512, 10, 2048, 512, 8), ("Qwen3-235B-A22B TP8", 128, 8, 4096, 1536, 8))
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
BANDS = ((0, 32), (33, 64), (65, 128), (129, 256), (257, 1e9))
BYTES_W = {"fp8": 1.0, "fp8_block": 1.0, "bf16": 2.0}


def band_stats(il, tokens, r, bands=BANDS, t_max=256.0) -> list[tuple]:
    """[(lo, hi, rows, MAPE, median r, min r, max r, rows with r > 2 or r < 1/2)] at tokens <= t_max."""
    out = []
    for lo, hi in bands:
        s = (il >= lo) & (il <= hi) & (tokens <= t_max)
        if s.any():
            rs = r[s]
            out.append((lo, hi, int(s.sum()), float(np.mean(np.abs(rs - 1.0))), float(np.median(rs)),
                        float(rs.min()), float(rs.max()), int(np.sum((rs > 2.0) | (rs < 0.5)))))
    return out


def near_shapes(shapes, target) -> list[tuple]:
    """Measured (E, k, H, I, tp) shapes near a target (E, k, H, I, tp) at ep = 1: the same shape, else the same
    H and I/tp, or the same E, k and I/tp; exact matches first."""
    e, k, h, i, tp = target
    il = i / tp
    exact = [s for s in shapes if s == target]
    same_w = [s for s in shapes if s not in exact and s[2] == h and s[3] / s[4] == il]
    same_r = [s for s in shapes if s not in exact and s not in same_w and (s[0], s[1]) == (e, k) and s[3] / s[4] == il]
    return exact + sorted(same_w) + sorted(same_r)


def weight_time(active, hidden, inter_l, w_bytes, hbm_bw, gated=True) -> float:
    """Seconds to read the active experts' weights once at the datasheet HBM rate: a·(g+1)·H·I_l·w / W."""
    return active * (3.0 if gated else 2.0) * hidden * inter_l * w_bytes / hbm_bw


def _have_fit_extra(systems: str | None) -> str | None:
    """None when the tables can be read, else the reason they cannot."""
    if importlib.util.find_spec("pyarrow") is None:
        return "pyarrow is not installed"
    if systems is None and importlib.util.find_spec("aiconfigurator_core") is None:
        return "aiconfigurator-core is not installed"
    if systems is not None and not (Path(systems) / "data").is_dir():
        return f"--systems {systems} has no data/ directory"
    return None


def _rows(root: Path, table: str, kd: str, source: str):
    from kernel_fit.common import AIC_DTYPE
    from kernel_fit.moe_fit import load_rows
    aic = {v: k for k, v in AIC_DTYPE.items()}[kd]
    return load_rows(root / "data" / table, aic, source=source)


def _other_sources(root: Path, table: str, kd: str, fitted: str) -> list[tuple]:
    """[(kernel source, smallest I_l, rows)] of the table's other gated balanced kernels of this dtype."""
    from kernel_fit.common import AIC_DTYPE
    from kernel_fit.tables import read
    aic = {v: k for k, v in AIC_DTYPE.items()}[kd]
    t = read(root / "data" / table, moe_dtype=aic, distribution="balanced")
    out = []
    for src in sorted(set(t["kernel_source"]) - {fitted}):
        if "nongated" in src or "min_latency" in src:
            continue
        s = t["kernel_source"] == src
        out.append((str(src), float(np.min(t["inter_size"][s] / t["moe_tp_size"][s])), int(s.sum())))
    return out


def check_curve(root: Path, gid: str, eng: str, kd: str) -> None:
    c = K.curves_for(gid)
    p = c.curve("moe", kd, eng)
    fit = p.get("fit") or {}
    if p.get("engine") != eng or not fit.get("table"):
        print(f"\n{gid} {eng} {kd}: no measured curve of its own (falls back to {p.get('engine')}); skipped")
        return
    x, y = _rows(root, fit["table"], kd, fit.get("kernel_source"))
    pred = K.moe_time(c, kd, x["tokens"], x["hidden"], x["inter"], x["topk"], x["experts"], x["tp"], x["ep"],
                      x["gated"], engine=eng)
    r = pred / y
    il, t = x["inter"] / x["tp"], x["tokens"]
    print(f"\n== {gid} {eng} {kd}: {fit['table']} ({x['source']}), {len(y)} gated balanced rows; "
          f"curve tm_min {p['tm_min']:g}, k_fill {p['k_fill']:.0f}, e_c {p['e_c']:.3f}")
    print(f"   all rows: MAPE {np.mean(np.abs(r - 1)):.3f} (kernels.yaml fit.mape {fit.get('mape', float('nan')):.3f})")
    print(f"   measured I_l: {', '.join(f'{v:g}' for v in np.unique(il))}; tokens {t.min():g}-{t.max():g}")
    for src, il_min, n in _other_sources(root, fit["table"], kd, x["source"]):
        print(f"   other kernel source of this dtype in the table (not fitted): {src}, {n} rows, I_l from {il_min:g}")
    print("   tokens 1-256   I_l band   rows   MAPE  median r   min r   max r   beyond 2x")
    for lo, hi, n, mape, med, mn, mx, far in band_stats(il, t, r):
        print(f"                 {lo:>4g}-{hi if hi < 1e8 else 'up':<5} {n:>6} {mape:>6.2f} {med:>9.2f} {mn:>7.2f} "
              f"{mx:>7.2f} {far:>9}")
    shapes = sorted({(int(a), int(b), int(h), int(i), int(tp)) for a, b, h, i, tp, e in
                     zip(x["experts"], x["topk"], x["hidden"], x["inter"], x["tp"], x["ep"]) if e == 1})
    if not shapes:
        print("   no ep = 1 shapes measured: no per-shape rows")
        return
    smallest = min(i / tp for *_, i, tp in shapes)
    picks = [("smallest I_l", s) for s in shapes if s[3] / s[4] == smallest]
    for name, e, k, h, i, tp in TARGETS:
        near = near_shapes(shapes, (e, k, h, i, tp))
        picks += [(("= " if s == (e, k, h, i, tp) else "~ ") + name, s) for s in near]
    bw, w = float(get_gpu(gid).hbm_bw), BYTES_W[kd]
    print("   shape (E, k, H, I, tp; ep 1)        I_l  tokens: measured ms / predicted ms / r / measured x HBM")
    for why, s in picks:
        e, k, h, i, tp = s
        sel = (x["experts"] == e) & (x["topk"] == k) & (x["hidden"] == h) & (x["inter"] == i) & (x["tp"] == tp) \
            & (x["ep"] == 1)
        cells = []
        for tok in TOKENS:
            j = np.flatnonzero(sel & (t == tok))
            if j.size:
                a = min(e, tok * k)                      # balanced routing: the table's active experts
                hbm = weight_time(a, h, i / tp, w, bw)
                cells.append(f"T{tok}: {y[j[0]] * 1e3:.3f}/{pred[j[0]] * 1e3:.3f}/{r[j[0]]:.2f}/{y[j[0]] / hbm:.0f}x")
        print(f"   {why:<26} {str(s):<26} {i / tp:>4g}  " + "  ".join(cells))
    for name, e, k, h, i, tp in TARGETS:
        if (e, k, h, i, tp) in shapes:
            continue
        tk = np.array(TOKENS, dtype=float)
        mt = K.moe_time(c, kd, tk, h, i, k, e, tp, 1, True, engine=eng)
        hbm = weight_time(np.minimum(e, tk * k), h, i / tp, w, bw)
        print(f"   model on {name} (not measured) {(e, k, h, i, tp)}: " + "  ".join(
            f"T{int(a)}: {b * 1e3:.3f} ms ({b / d:.0f}x HBM)" for a, b, d in zip(tk, mt, hbm)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="h200_sxm,h100_sxm", help="comma-separated inferbound GPU ids")
    ap.add_argument("--systems", default=None, help="aiconfigurator systems directory (default: the installed wheel)")
    a = ap.parse_args(argv)
    why = _have_fit_extra(a.systems)
    if why:
        print(f"moe_small_k_check: {why}: no measured tables read (needs the fit extra: pip install "
              "aiconfigurator-core pyarrow, in a separate venv; see docs/kernels.md)")
        return 0
    from kernel_fit.tables import aic_version, systems_root
    root = systems_root(a.systems)
    print(f"measured tables: aiconfigurator-core {aic_version()} at {root}")
    for gid in [g for g in a.gpus.split(",") if g]:
        for eng, kd in CURVES:
            check_curve(root, gid, eng, kd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
