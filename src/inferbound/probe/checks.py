"""Score the probe's measurements against the predictor, using the measured ``local`` hardware entry.

- Rows: ``validation.predict_rows`` on the measured CSV rows; error e = (predicted − measured)/measured,
  summarized by ``validation.group_summary`` (MAPE, median APE, share within ±25 %, bias).
- No KV cache: predicted step time = ``estimate.no_kv_cache_decode_time(B, S, N)`` / (N − 1) (the mean of
  prefills of S+1 .. S+N−1 tokens) against the measured median step; the measured and predicted
  cache-on/cache-off speed-ups are reported side by side.
- Memory-bound: ``estimate(...).decode.bound`` for every measured decode setup, and the share of the
  measured step that streaming its bytes at the measured bandwidth explains:
  achieved = (bytes of the step: weights + KV + activations, ``operators.decode_ops``) / measured step.
- Slope: per batch B, the least-squares slope of measured step time over context (s per cached token)
  against the KV-read slope  B · kv_bytes_per_token / bandwidth  (each extra cached token adds its
  K and V of every layer to each step's reads; efficiency.kv_memory is 1.0 in the local entry), and
  against the predictor's own slope (t_decode(B, L_max) − t_decode(B, L_min)) / (L_max − L_min).
All predictions use ``calibration='none'``: the local entry's figures are measured, and a packaged
calibration fitted on serving-engine data would overwrite its efficiency fractions.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..step import contract as step
from ..deploy.deployment import make_deployment
from ..workloads.static import decode_contexts, estimate, no_kv_cache_decode_time
from ..model import kv_bytes_per_token
from ..operators import decode_ops
from ..validation import group_summary, predict_rows, read_csv, summarize
from .rows import Measurement

CALIBRATION = "none"


def score_rows(csv_path: Path, gpu_file: Path) -> tuple[list[dict], list[dict], dict, list[str]]:
    """(per-row results, group summary, overall summary, unreadable-row reasons) of the measured CSV."""
    rows, bad = read_csv(csv_path)
    preds = predict_rows(rows, calibration=CALIBRATION, gpu_files=[gpu_file])
    out = [{"case": p.row.case, "batch": p.row.batch_size, "input_len": p.row.input_len,
            "output_len": p.row.output_len, "metric": p.row.metric, "measured": p.row.value,
            "predicted": p.predicted, "error": p.error, "covered": p.covered, "reason": p.reason} for p in preds]
    overall = summarize([p.error for p in preds if p.covered])
    overall["not_covered"] = sum(not p.covered for p in preds)
    return out, group_summary(preds), overall, [b.reason for b in bad]


def _deployment(model: str, dtype: str, gpu_file: Path):
    return make_deployment(model=model, gpu="local", weight_dtype=dtype, act_dtype=dtype, kv_dtype=dtype,
                           gpu_files=[gpu_file], calibration=CALIBRATION)


def no_cache(ms: list[Measurement], cached: list[Measurement], model: str, dtype: str, gpu_file: Path) -> list[dict]:
    """KV-cache-off steps, measured vs predicted, with the cache-on step at the same (batch, context)."""
    dep = _deployment(model, dtype, gpu_file)
    on = {(c.batch, c.input_len): c for c in cached}
    out = []
    for meas in ms:
        total = no_kv_cache_decode_time(dep,
                                              meas.batch, meas.input_len, meas.steps + 1)
        pred_step = total / meas.steps
        with_cache = on.get((meas.batch, meas.input_len))
        pred_on = None
        if with_cache is not None:
            pred_on = estimate(dep, batch=meas.batch, input_len=meas.input_len,
                               output_len=with_cache.steps + 1).tpot_s
        out.append({"batch": meas.batch, "context": meas.input_len, "steps": meas.steps,
                    "measured_step_s": meas.decode_step_s, "predicted_step_s": pred_step,
                    "error": (1 / pred_step - 1 / meas.decode_step_s) * meas.decode_step_s,
                    "cached_measured_step_s": with_cache.decode_step_s if with_cache else None,
                    "cached_predicted_step_s": pred_on,
                    "measured_speedup": meas.decode_step_s / with_cache.decode_step_s if with_cache else None,
                    "predicted_speedup": pred_step / pred_on if pred_on else None})
    return out


def memory_bound(ms: list[Measurement], model: str, dtype: str, gpu_file: Path) -> dict:
    """Predicted decode bound per measured setup, and the bytes/bandwidth share of the measured step."""
    dep = _deployment(model, dtype, gpu_file)
    setups = []
    for meas in ms:
        e = estimate(dep, batch=meas.batch, input_len=meas.input_len, output_len=meas.steps + 1)
        ctx = float(np.mean(decode_contexts(meas.input_len, meas.steps + 1)))
        nbytes = sum(float(np.mean(op.bytes)) * op.count
                     for op in decode_ops(dep.model, dep.dtypes, dep.par, meas.batch, ctx) if op.kind != "collective")
        achieved = nbytes / meas.decode_step_s
        setups.append({"batch": meas.batch, "context": meas.input_len, "bound": e.decode.bound,
                       "predicted_step_s": e.tpot_s, "measured_step_s": meas.decode_step_s, "bytes_per_step": nbytes,
                       "achieved_bytes_per_s": achieved, "achieved_fraction_of_bandwidth": achieved / dep.gpu.hbm_bw})
    return {"all_memory_bound": all(s["bound"] == "memory" for s in setups), "setups": setups}


def slopes(ms: list[Measurement], model: str, dtype: str, gpu_file: Path) -> list[dict]:
    """Measured vs predicted growth of the decode step with context, per batch with >= 2 contexts."""
    dep = _deployment(model, dtype, gpu_file)
    m, g = dep.model, dep.gpu
    per_token = kv_bytes_per_token(m, dep.dtypes.kv_dtype)
    by_batch: dict[int, list[Measurement]] = {}
    for meas in ms:
        by_batch.setdefault(meas.batch, []).append(meas)
    out = []
    for b, group in sorted(by_batch.items()):
        group = sorted(group, key=lambda x: x.input_len)
        if len({x.input_len for x in group}) < 2:
            continue
        ctx = np.array([float(np.mean(decode_contexts(x.input_len, x.steps + 1))) for x in group])
        t = np.array([x.decode_step_s for x in group])
        slope = float(np.polyfit(ctx, t, 1)[0])
        formula = b * per_token / (g.hbm_bw * g.efficiency.kv_memory_fraction)
        t_model = np.asarray(step.decode(dep, b, np.array([ctx[0], ctx[-1]])).time)
        model_slope = float((t_model[1] - t_model[0]) / (ctx[-1] - ctx[0]))
        out.append({"batch": b, "contexts": ctx.tolist(), "measured_step_s": t.tolist(),
                    "measured_slope_s_per_token": slope, "kv_read_slope_s_per_token": formula,
                    "predictor_slope_s_per_token": model_slope, "ratio_measured_to_kv_read": slope / formula,
                    "kv_bytes_per_token": per_token, "grows": bool(slope > 0 and t[-1] > t[0])})
    return out
