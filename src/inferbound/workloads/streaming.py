"""What a streaming client sees under a stream interval k (SGLang ``--stream-interval k``; deploy/engine_modes.py,
data/engines.yaml ``stream_interval``). The engine's steps are unchanged; only when tokens leave changes.

A request of O output tokens, one token per decode step of t seconds:

    first == "at_once" (SGLang >= 0.4.10: ``len(output_ids) % k == 1``): chunks at tokens 1, k + 1, 2k + 1, ...
    and at the finish. The client's first token is the engine's (no delay); the gaps after it:
        G = ceil((O − 1)/k),  their sum (O − 1)·t
    first == "at_multiple" (SGLang 0.4.2-0.4.7: ``len(output_ids) % k == 0``): chunks at tokens k, 2k, ... and at
    the finish: the first chunk waits D = min(k, O) − 1 decode steps,
        TTFT + D·t,  G = ceil(O/k) − 1,  their sum (O − 1 − D)·t
    first == "at_once_then_multiple" (TensorRT-LLM PyTorch backend, ``py_decoding_iter == 1 or is_finished or
    py_decoding_iter % k == 0``): chunks at token 1, then at tokens k, 2k, ... and at the finish: no delay,
        G = ceil(O/k) (O >= 2),  their sum (O − 1)·t

Benchmarks pool one gap per chunk received (sglang.bench_serving, vLLM benchmark_serving.py
``itl.append(timestamp - most_recent_timestamp)``), so the mean ITL over a length mix (weights w_i) is

    ITL = Σ w_i·(O_i − 1 − D_i)·t / Σ w_i·G_i

and TPOT = (E2E − TTFT)/(O − 1) = t·(O − 1 − D)/(O − 1) per request (E2E is unchanged: the last chunk leaves
at the finish). Example: O = 1024, k = 10, at_once: G = 103 gaps over 1023 steps, ITL = 9.93·t, TPOT = t;
at_multiple: D = 9, TTFT + 9·t, G = 102 over 1014 steps, ITL = 9.94·t, TPOT = 1014·t/1023;
at_once_then_multiple: G = 103 over 1023 steps (chunks at 1, 10, 20, ..., 1020, 1024), ITL = 9.93·t, TPOT = t.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np


def delay_steps(o: float, k: int, first: str) -> float:
    """D: decode steps the first chunk waits after the engine's first token (0 unless ``at_multiple``)."""
    if k <= 1 or first != "at_multiple":
        return 0.0
    return float(min(k, int(o)) - 1)


def gaps(o: float, k: int, first: str) -> int:
    """G: inter-chunk gaps a client records for a request of ``o`` output tokens."""
    o = int(o)
    if o <= 1:
        return 0
    if k <= 1:
        return o - 1
    if first == "at_once":
        return math.ceil((o - 1) / k)
    if first == "at_once_then_multiple":
        return math.ceil(o / k)
    return max(math.ceil(o / k) - 1, 0)


def pooled_itl(t: float, k: int, first: str, outputs, weights) -> float:
    """Mean gap between chunks over a mix (module docstring); t when k = 1 or no request has a gap."""
    num = sum(w * (o - 1 - delay_steps(o, k, first)) for o, w in zip(outputs, weights))
    den = sum(w * gaps(o, k, first) for o, w in zip(outputs, weights))
    return t * num / den if den > 0 else t


def apply(est, rt, outputs, weights):
    """``est`` (a workloads/serving.ServingEstimate) as the client sees it under ``rt``'s stream interval:
    ITL per chunk, TTFT + D·t, TPOT = t·(O − 1 − D)/(O − 1) (weighted over the mix); unchanged when k = 1."""
    k, first = int(getattr(rt, "stream_interval", 1) or 1), getattr(rt, "stream_first", "at_once")
    if k <= 1:
        return est
    t = est.tpot_s
    delays = [delay_steps(o, k, first) for o in outputs]
    shift = float(np.dot(weights, delays)) * t
    tpot = float(sum(w * t * (o - 1 - d) / max(o - 1, 1) for o, w, d in zip(outputs, weights, delays)))
    ttft = {key: v + shift for key, v in est.ttft_s.items()}
    notes = list(est.notes)
    if shift:
        notes.append(f"stream interval {k}: the first chunk leaves at token {int(min(k, max(outputs)))}, "
                     f"{shift * 1e3:,.1f} ms after the first token (TTFT includes it; workloads/streaming.py)")
    return replace(est, itl_s=pooled_itl(t, k, first, outputs, weights), tpot_s=tpot, ttft_s=ttft, notes=notes)


def chunk_view(first_s, finish_s, outputs, k: int, first: str):
    """(client first-token times, chunk gaps) of simulated requests under stream interval k: the first chunk at
    first + D·g, g = (finish − first)/(O − 1) the request's mean token gap, and G copies of its mean chunk gap
    (finish − first − D·g)/G per request (the simulator keeps token gaps pooled, not per request)."""
    f, e, o = (np.asarray(x, dtype=float) for x in (first_s, finish_s, outputs))
    g = np.where(o > 1, (e - f) / np.maximum(o - 1, 1), 0.0)
    d = np.array([delay_steps(x, k, first) if x > 1 else 0.0 for x in o])
    n = np.array([gaps(x, k, first) for x in o], dtype=int)
    span = e - f - d * g
    ok = (n > 0) & np.isfinite(span)
    return f + d * g, np.repeat(span[ok] / n[ok], n[ok])


def sim_summary(summary: dict, table: dict, rt) -> tuple[dict, list]:
    """A simulator summary (sim/metrics.summarize) as a streaming client under ``rt``'s stream interval sees it,
    from the per-request table (:func:`chunk_view`): the mean chunk gap Σ(e − f − D·g)/ΣG (exact), its
    percentiles over each request's mean chunk gap (a note says so), TTFT + D·g and TPOT recomputed when the
    first chunk waits. Unchanged when k = 1."""
    k, first = int(getattr(rt, "stream_interval", 1) or 1), getattr(rt, "stream_first", "at_once")
    if k <= 1:
        return summary, []
    done = np.isfinite(np.asarray(table["finish_s"], dtype=float))
    cols = {c: np.asarray(table[c], dtype=float)[done] for c in ("arrival_s", "first_token_s", "finish_s", "output_len")}
    client_first, chunk = chunk_view(cols["first_token_s"], cols["finish_s"], cols["output_len"], k, first)
    out = dict(summary)
    if chunk.size:
        out["itl_ms_mean"] = float(chunk.mean() * 1e3)
        for p in (50, 90, 99):
            out[f"itl_ms_p{p}"] = float(np.percentile(chunk, p) * 1e3)
    notes = [f"stream interval {k}: ITL is the gap between streamed chunks (mean exact from each request's first "
             f"and last token; percentiles over each request's mean chunk gap, workloads/streaming.py)"]
    if first == "at_multiple":
        o = cols["output_len"]
        ttft = (client_first - cols["arrival_s"]) * 1e3
        many = o > 1
        tpot = (cols["finish_s"] - client_first)[many] / (o[many] - 1) * 1e3
        for name, x in (("ttft", ttft), ("tpot", tpot)):
            if x.size:
                out[f"{name}_ms_mean"] = float(x.mean())
                for p in (50, 90, 99):
                    out[f"{name}_ms_p{p}"] = float(np.percentile(x, p))
        notes.append(f"stream interval {k}: the first chunk waits {k - 1} decode steps (at the request's mean "
                     f"token gap) and TTFT includes them")
    return out, notes
