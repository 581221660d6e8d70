"""Printed output of the kernel fit: error tables, transfer, priors, leave-one-GPU-out, findings."""
from __future__ import annotations

import numpy as np

from .common import CurveFit
from .tables import read, tables


def _pct(s: dict, key: str) -> str:
    return f"{100 * s[key]:6.1f}" if s.get("n") else "     -"


def error_tables(fits: dict[str, list[CurveFit]]) -> None:
    print("\n== Fit error per kernel class, GPU, engine and dtype (APE = |pred/meas - 1|, %) ==")
    print("in-sample: final fit on every row; held-out: fit without 25 % of the shapes (GEMM: (N,K) pairs; "
          "MoE: (hidden, inter); attention: head configs; MLA: head counts; collectives: the 3 largest sizes)")
    hdr = (f"{'class':11s} {'gpu':13s} {'engine':7s} {'dtype':24s} {'rows':>6s} {'MAPE':>6s} {'med':>6s} "
           f"{'p90':>6s} | {'held':>5s} {'MAPE':>6s} {'med':>6s} {'p90':>6s}")
    for cls in ("gemm", "moe", "prefill", "decode", "mla_prefill", "mla_decode", "collective"):
        rows = [cf for fl in fits.values() for cf in fl if cf.cls == cls]
        if not rows:
            continue
        print(f"\n-- {cls} --\n{hdr}")
        for cf in rows:
            s, h = cf.stats, cf.held
            print(f"{cls:11s} {cf.gpu:13s} {cf.engine:7s} {cf.dtype:24s} {s['n']:6d} {_pct(s, 'mape')} "
                  f"{_pct(s, 'median')} {_pct(s, 'p90')} | {h.get('n', 0):5d} {_pct(h, 'mape')} "
                  f"{_pct(h, 'median')} {_pct(h, 'p90')}")
        allr = [cf.stats for cf in rows]
        n = sum(s["n"] for s in allr)
        print(f"{'':11s} {'all (row-weighted)':46s} {n:6d} {100 * sum(s['mape'] * s['n'] for s in allr) / n:6.1f}")
    print("\n== Transfer: a curve scored on other tables of the same GPU (other engine / version / variant) ==")
    for fl in fits.values():
        for cf in fl:
            for label, st in cf.transfer:
                extra = (f"  measured/balanced median {st['measured_over_balanced']:.3f}"
                         if "measured_over_balanced" in st else "")
                print(f"{cf.cls:11s} {cf.gpu:13s} {cf.engine:7s} {cf.dtype:24s} on {label:24s} n {st['n']:6d} "
                      f"MAPE {_pct(st, 'mape')} med {_pct(st, 'median')} bias {100 * st['bias']:+6.1f}{extra}")


def priors_table(priors: dict, gen: dict) -> None:
    print("\n== Memory-generation streaming fractions (bf16 GEMM curve, M=1, N=K=8192, trtllm) ==")
    for g, v in sorted(gen.items()):
        print(f"  {g:8s} {v:.3f}")
    print("\n== Priors (extrapolated curves) for catalog GPUs without measurements ==")
    for gid, r in priors.items():
        cr = ", ".join(f"{k} {v:.3f}" for k, v in r["compute_ratio"].items())
        print(f"  {gid:15s} from {r['derived_from']:13s} SMs {r['sm_count']:4d}  e_c x [{cr}]  e_m x {r['memory_ratio']:.3f}"
              f"  link x {r['link_ratio']:.3f}  nvls {r['nvls']}  tiles {r['tiles']}")


def loo_table(rows) -> None:
    print("\n== Priors scored leave-one-GPU-out: the prior rules applied to another measured GPU's curves, "
          "scored on this GPU's tables ==")
    agg: dict = {}
    for target, tpl, cls, eng, dt, st in rows:
        agg.setdefault((target, tpl, cls), []).append(st)
    for (target, tpl, cls), sts in agg.items():
        n = sum(s["n"] for s in sts)
        mape = sum(s["mape"] * s["n"] for s in sts) / n
        med = float(np.median([s["median"] for s in sts]))
        print(f"  {target:13s} from {tpl:13s} {cls:11s} curves {len(sts):3d} rows {n:7d} MAPE {100 * mape:6.1f} "
              f"median-of-medians {100 * med:6.1f}")


def _model_at(cf: CurveFit, **x):
    return float(np.asarray(cf.model(cf.params, {k: np.asarray([v], dtype=float) for k, v in x.items()}))[0])


def findings(fits: dict, ctxs: dict, root) -> None:
    print("\n== Findings for the pricing engine ==")
    print("GEMM per-kernel floor (model time at M=1, N=K=128) and weight-streaming fraction of peak HBM "
          "(M=1, N=K=8192), per engine and dtype:")
    for gid, fl in fits.items():
        parts = []
        for cf in fl:
            if cf.cls != "gemm":
                continue
            floor = _model_at(cf, m=1, n=128, k=128)
            t = _model_at(cf, m=1, n=8192, k=8192)
            frac = 8192 * 8192 * cf.params["w_bytes"] / (ctxs[gid].gpu.hbm_bw * t)
            parts.append(f"{cf.engine}/{cf.dtype} {floor * 1e6:.1f}us {frac:.2f}")
        print(f"  {gid:13s} " + "; ".join(parts))
    print("Dynamic fp8 activation quantization (TRT-LLM fp8 table) minus vLLM fp8, measured at M=1, N,K <= 1024:")
    for gid, ctx in ctxs.items():
        paths = {p.parent.parent.name: p for p in reversed(tables(root, ctx.system, "gemm", "gemm_perf.parquet"))}
        if "trtllm" not in paths or "vllm" not in paths:
            continue
        a, b = read(paths["trtllm"], gemm_dtype="fp8", m=1), read(paths["vllm"], gemm_dtype="fp8", m=1)
        if not a["latency"].size or not b["latency"].size:
            continue
        ka = {(n, k): t for n, k, t in zip(a["n"], a["k"], a["latency"]) if n <= 1024 and k <= 1024}
        d = [ka[(n, k)] - t for n, k, t in zip(b["n"], b["k"], b["latency"]) if (n, k) in ka]
        if d:
            print(f"  {gid:13s} median extra {np.median(d) * 1e3:.1f} us over {len(d)} shapes")
    print("MoE expert imbalance: measured power-law routing / balanced-curve prediction (median):")
    for gid, fl in fits.items():
        parts = [f"{cf.engine}/{cf.dtype} {lab.split()[0]} {st['measured_over_balanced']:.2f}"
                 for cf in fl if cf.cls == "moe" for lab, st in cf.transfer if "measured_over_balanced" in st]
        if parts:
            print(f"  {gid:13s} " + "; ".join(parts))
    print("Decode attention achieved HBM fraction (batch 64, context 8192, 32 q / 8 kv heads, d 128):")
    for gid, fl in fits.items():
        parts = []
        for cf in fl:
            if cf.cls == "decode":
                t = _model_at(cf, ctx=8192, batch=64, heads=32, kv_heads=8, d=128, kvb=2 if cf.dtype == "bf16" else 1,
                              window=0)
                b = 64 * 8193 * 8 * 256 * (2 if cf.dtype == "bf16" else 1)
                parts.append(f"{cf.engine}/{cf.dtype} {b / (ctxs[gid].gpu.hbm_bw * t):.2f}")
        print(f"  {gid:13s} " + "; ".join(parts))
    print("Collectives: large-message bus bandwidth / catalog link bandwidth (NCCL all-reduce; >1 = NVLS):")
    for gid, fl in fits.items():
        parts = [f"n={cf.extra['n']} {cf.extra['busbw_over_link']:.2f}" for cf in fl
                 if cf.cls == "collective" and cf.extra.get("kind") == "all_reduce" and cf.engine == "nccl"]
        print(f"  {gid:13s} " + "; ".join(parts))
