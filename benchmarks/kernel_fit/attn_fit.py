"""Attention curves (inferbound.pricing.kernels.attention) fitted to the attention and MLA tables.

- prefill: context_attention_perf (full-attention rows), per backend and attention (compute) dtype;
  held-out: 25 % of the (heads, kv_heads, head_dim) configurations; transfer: sliding-window rows.
- decode: generation_attention_perf (full-attention rows), per backend and KV-cache dtype; same hold-out.
- mla_prefill / mla_decode: context_mla_perf / generation_mla_perf (DeepSeek geometry: kv_lora_rank
  512, qk_rope 64, qk_nope 128, v 128; ``num_heads`` is the per-GPU head count), per KV-cache dtype;
  held-out: 25 % of the head counts. Prefill MLA is modelled as MHA with d_qk = 192, d_v = 128; absorbed
  decode reads the 576-wide latent once per token for all heads (d_qk = 576, d_v = 512).
When a table has several kernel sources for one dtype, the most measured one is fitted (named in notes).
"""
from __future__ import annotations

import numpy as np

from inferbound.pricing.kernels.attention import decode_time, prefill_time

from .common import CurveFit, GpuCtx
from .fitting import Param, ape_stats, fit, holdout_mask
from .tables import framework_version, read, rel, subset, tables

KVB = {"bfloat16": 2.0, "fp8": 1.0}
DT = {"bfloat16": "bf16", "fp8": "fp8"}
PREFILL = [Param("e_c", 0.5, 0.02, 1.0), Param("s0", 64.0, 0.0, 4096.0), Param("e_m", 0.7, 0.05, 1.0),
           Param("overhead_s", 10.0, 0.0, 2000.0, 1e-6), Param("q", 3.0, 1.0, 20.0)]
DECODE = [Param("e_m", 0.8, 0.05, 1.0), Param("e_c", 0.3, 0.01, 1.0), Param("overhead_s", 8.0, 0.0, 2000.0, 1e-6),
          Param("mem_latency_s", 2.0, 0.0, 100.0, 1e-6), Param("c_seq", 0.1, 0.0, 20.0, 1e-6),
          Param("c_head", 1.0, 0.0, 200.0, 1e-9), Param("n_sat", 132.0, 1.0, 1e5), Param("q", 3.0, 1.0, 20.0)]
MLA = {"d_qk_prefill": 192.0, "d_v_prefill": 128.0, "d_latent": 576.0, "d_v_latent": 512.0}


def _dominant(t, keep):
    src = t["kernel_source"]
    if not keep.any():
        return keep, None
    names, counts = np.unique(src[keep], return_counts=True)
    best = str(names[np.argmax(counts)])
    return keep & (src == best), best


def attn_rows(path, phase, dtype_col, label, window=0):
    t = read(path)
    keep = (t[dtype_col] == label) & (t.get("window_size", np.zeros(len(t["latency"]))) == window)
    keep, src = _dominant(t, keep)
    t = {k: v[keep] for k, v in t.items()}
    x = {"source": src, "batch": t["batch_size"].astype(float), "heads": t["num_heads"].astype(float),
         "kv_heads": t["num_key_value_heads"].astype(float), "d": t["head_dim"].astype(float),
         "kvb": np.array([KVB[k] for k in t["kv_cache_dtype"]]), "window": float(window)}
    x["seq" if phase == "prefill" else "ctx"] = (t["isl"] if phase == "prefill" else t["step"]).astype(float)
    return x, t["latency"].astype(float) * 1e-3


def mla_rows(path, label):
    t = read(path, kv_cache_dtype=label)
    keep, src = _dominant(t, np.ones(len(t["latency"]), bool))
    t = {k: v[keep] for k, v in t.items()}
    h = t["num_heads"].astype(float)
    x = {"source": src, "batch": t["batch_size"].astype(float), "heads": h, "kv_heads": h,
         "seq": t["isl"].astype(float), "ctx": t["step"].astype(float), "kvb": np.full(len(h), KVB[label]),
         "window": 0.0}
    return x, t["latency"].astype(float) * 1e-3


def models(ctx: GpuCtx, dt: str):
    peak, bw = ctx.peak(dt), ctx.gpu.hbm_bw
    return {
        "prefill": lambda p, x: prefill_time(p, ctx.sms, peak, bw, x["seq"], x["batch"], x["heads"], x["kv_heads"],
                                             x["d"], None, x["kvb"], x["window"]),
        "decode": lambda p, x: decode_time(p, ctx.sms, peak, bw, x["ctx"], x["batch"], x["heads"], x["kv_heads"],
                                           x["d"], None, x["kvb"], x["window"]),
        "mla_prefill": lambda p, x: prefill_time(p, ctx.sms, peak, bw, x["seq"], x["batch"], x["heads"], x["heads"],
                                                 MLA["d_qk_prefill"], MLA["d_v_prefill"], x["kvb"]),
        "mla_decode": lambda p, x: decode_time(p, ctx.sms, peak, bw, x["ctx"], x["batch"], x["heads"], 1.0,
                                               MLA["d_latent"], MLA["d_v_latent"], x["kvb"], 0.0, latent=True),
    }


def _fit_one(cls, ctx, fw, path, model, cont, fixed, x, y, held, dtype):
    p_train = fit(model, cont, fixed, x, y, ~held, max_rows=6000)
    held_stats = ape_stats(model(p_train, subset(x, held)), y[held]) if held.any() else {"n": 0}
    p = fit(model, cont, fixed, x, y, max_rows=8000)
    cf = CurveFit(cls, ctx.gid, dtype, p, ape_stats(model(p, x), y), held_stats, [rel(ctx.root, path)])
    cf.engine = fw
    cf.model, cf.data = model, (x, y)
    cf.notes.append(f"kernel_source {x['source']}")
    return cf


def fit_attention(ctx: GpuCtx, quick: bool = False) -> list[CurveFit]:
    out = []
    for phase, fname, col in (("prefill", "context_attention_perf.parquet", "attn_dtype"),
                              ("decode", "generation_attention_perf.parquet", "kv_cache_dtype")):
        done = set()
        for path in tables(ctx.root, ctx.system, "attention", fname):
            fw, _ = framework_version(path)
            for label in sorted(set(read(path)[col])):
                if (fw, label) in done or label not in DT:
                    continue
                x, y = attn_rows(path, phase, col, label)
                if len(y) < 50:
                    continue
                done.add((fw, label))
                dt = DT[label] if phase == "prefill" else "bf16"
                model = models(ctx, dt)[phase]
                held = holdout_mask(zip(x["heads"], x["kv_heads"], x["d"]))
                cont, fixed = (PREFILL, {"bq": 128.0}) if phase == "prefill" else (DECODE, {})
                cf = _fit_one(phase, ctx, fw, path, model, cont, fixed, x, y, held, DT[label])
                for w in sorted(set(read(path).get("window_size", [0])) - {0}):
                    wx, wy = attn_rows(path, phase, col, label, window=int(w))
                    if len(wy):
                        cf.transfer.append((f"window {int(w)} rows", ape_stats(model(cf.params, wx), wy)))
                out.append(cf)
    for phase, fname in (("mla_prefill", "context_mla_perf.parquet"), ("mla_decode", "generation_mla_perf.parquet")):
        done = set()
        for path in tables(ctx.root, ctx.system, "mla", fname):
            fw, _ = framework_version(path)
            for label in sorted(set(read(path)["kv_cache_dtype"])):
                if (fw, label) in done or label not in DT:
                    continue
                x, y = mla_rows(path, label)
                if len(y) < 50:
                    continue
                done.add((fw, label))
                model = models(ctx, "bf16")[phase]
                held = holdout_mask(zip(x["heads"]))
                cont, fixed = (PREFILL, {"bq": 128.0}) if phase == "mla_prefill" else (DECODE, {})
                out.append(_fit_one(phase, ctx, fw, path, model, cont, fixed, x, y, held, DT[label]))
    return out
