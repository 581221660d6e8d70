"""Collective curves (inferbound.pricing.kernels.comm): two alpha-beta lines per (GPU, collective, algorithm, n).

Sources: nccl_perf (nccl-tests binaries; all_reduce, all_gather, reduce_scatter, alltoall; fp16 rows,
bytes = message_size·2 since the collector logs elements), custom_allreduce_perf of TensorRT-LLM
(strategy AUTO: its one-shot / two-shot / NCCL choice by size), vLLM and SGLang (custom all-reduce,
CUDA-graph rows). Newest version of each. Held-out: the three largest message sizes of each curve are
left out of a first fit and predicted (the extrapolation that decides whether β is physical).
"""
from __future__ import annotations

import numpy as np

from inferbound.pricing.kernels.comm import line_time, traffic_factor

from .common import CurveFit, GpuCtx
from .fitting import Param, ape_stats, fit
from .tables import framework_version, read, rel, tables


def _sources(ctx: GpuCtx):
    """[(algorithm, kind, path, rows filter, bytes per element)], newest table of each algorithm."""
    out = []
    nccl = tables(ctx.root, ctx.system, "comm", "nccl_perf.parquet")
    nccl = [p for p in nccl if framework_version(p)[0] == "nccl"]
    if nccl:
        for kind in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"):
            for p in nccl:   # newest table that measured this collective
                if (read(p, op_name=kind, nccl_dtype="half")["latency"]).size:
                    out.append(("nccl", kind, p, {"op_name": kind, "nccl_dtype": "half"}, 2.0))
                    break
    custom = tables(ctx.root, ctx.system, "comm", "custom_allreduce_perf.parquet")
    for fw, filt in (("trtllm", {}), ("vllm", {"backend": "vllm_graph"}), ("sglang", {"backend": "sglang_graph"})):
        for p in custom:   # newest table of that engine with CUDA-graph rows (read() is empty without the column)
            if framework_version(p)[0] == fw and read(p, **filt)["latency"].size:
                out.append((fw, "all_reduce", p, filt, 2.0))
                break
    return out


def _params(s, t, f):
    bw_max = float(np.max(s * f / t))
    return [Param("alpha_s", float(np.min(t)) * 1e6, 0.1, 5000.0, 1e-6), Param("busbw", bw_max / 1e9, 0.1, 5000.0, 1e9),
            Param("alpha_b_s", float(np.min(t)) * 0.5e6, 0.05, 5000.0, 1e-6),
            Param("busbw_b", bw_max / 4e9, 0.01, 5000.0, 1e9)]


def fit_collectives(ctx: GpuCtx, quick: bool = False) -> list[CurveFit]:
    out = []
    for algo, kind, path, filt, bpe in _sources(ctx):
        t = read(path, **filt)
        for n in sorted(set(t["num_gpus"].tolist())):
            sel = t["num_gpus"] == n
            s = t["message_size"][sel].astype(float) * bpe
            y = t["latency"][sel].astype(float) * 1e-3
            if s.size < 6:
                continue
            f = traffic_factor(kind, n)
            x = {"bytes": s}

            def model(p, x, n=n):
                return line_time(p, kind, x["bytes"], n)
            order = np.argsort(s)
            held = np.zeros(s.size, bool)
            held[order[-3:]] = True
            cont = _params(s, y, f)
            p_train = fit(model, cont, {}, x, y, ~held)
            held_stats = ape_stats(model(p_train, {"bytes": s[held]}), y[held])
            p = fit(model, cont, {}, x, y)
            cf = CurveFit("collective", ctx.gid, f"{kind}/{algo}/{n}", p, ape_stats(model(p, x), y), held_stats,
                          [rel(ctx.root, path)])
            cf.engine = algo
            cf.model, cf.data = model, (x, y)
            link = ctx.gpu.scaleup_bw or ctx.gpu.pcie_bw
            cf.notes.append(f"busbw/link {p['busbw'] / link:.2f} (link {link / 1e9:.0f} GB/s per direction)")
            cf.extra = {"kind": kind, "algorithm": algo, "n": int(n), "busbw_over_link": p["busbw"] / link,
                        "max_bytes": float(s.max())}
            out.append(cf)
    return out
