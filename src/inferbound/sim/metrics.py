"""Summary of a simulated run: latency percentiles, throughput, goodput, Little's law, KV use, energy, cost.

Per request i (arrival a, first token f, finish e, output N):
    TTFT = f − a;   E2E = e − a;   TPOT = (e − f)/(N − 1) for N > 1 (the mean gap after the first token)
ITL: every gap between consecutive tokens of a request, pooled over all requests (each token weighs
once). Percentiles are numpy's linear interpolation (``np.percentile``), reported in ms as
``<metric>_ms_{mean,p50,p90,p99}``.

Run window: first arrival to last finish (D). Throughput = tokens / D. Goodput = requests meeting every
SLO given (TTFT, TPOT, E2E; a request with one output token has no TPOT and passes that one) / D.

Little's law (L = λ·W): L = the event loop's time integral of requests in the system / D, λ = N / D,
W = mean E2E; ``little_ratio`` = L/(λ·W) is 1 when the bookkeeping is consistent.
Mean queue length = Σ (first admission − arrival) / D (the prompt queue; requeues after preemption and
the decode-side queue of disaggregated mode are not in it; ``max_waiting`` is from the step samples).

Energy: each step draws the step model's watts per GPU over its duration on the replica's GPUs; a
replica idle between steps draws the GPU's idle power. joules per output token = total J / output
tokens; output tokens per joule is its inverse; average power = total J / D (energy.py's model).
Cost (energy.py convention): $/M output tokens = fleet $/s / (output tok/s); $/M input tokens = each
replica's $/s times its prefill time / input tokens, a step's time split between prefill and decode in
proportion to their tokens.
"""
from __future__ import annotations

import numpy as np

from ..pricing.energy import dollars_per_second, per_million
from .event_loop import Run

PCTS = (50, 90, 99)


def _stats(prefix: str, seconds: np.ndarray) -> dict:
    x = np.asarray(seconds, dtype=float) * 1e3
    if x.size == 0:
        return {f"{prefix}_ms_mean": None, **{f"{prefix}_ms_p{p}": None for p in PCTS}}
    return {f"{prefix}_ms_mean": float(x.mean()), **{f"{prefix}_ms_p{p}": float(np.percentile(x, p)) for p in PCTS}}


def _gap_stats(ledger) -> dict:
    mean, pct = ledger.gap_stats(PCTS)
    scale = (lambda v: None if v is None else v * 1e3)
    return {"itl_ms_mean": scale(mean), **{f"itl_ms_p{p}": scale(v) for p, v in zip(PCTS, pct)}}


def request_table(run: Run) -> dict[str, np.ndarray]:
    """Per-request arrays in arrival order: id, arrival, input/output lengths, admit, first, finish, ..."""
    ledger = run.ledger
    arr = np.asarray(ledger.arrival, dtype=float)
    first, finish = np.asarray(ledger.first_s, dtype=float), np.asarray(ledger.finish_s, dtype=float)
    out = np.asarray(ledger.output, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (finish - first) / np.maximum(out - 1, 1), np.nan)
    return {"id": np.asarray(ledger.ids), "arrival_s": arr, "input_len": np.asarray(ledger.prompt),
            "output_len": out.astype(int), "admit_s": np.asarray(ledger.admit_s, dtype=float),
            "first_token_s": first, "finish_s": finish, "ttft_s": first - arr, "tpot_s": tpot, "e2e_s": finish - arr,
            "preemptions": np.asarray(ledger.preempts)}


def goodput(req: dict, duration: float, ttft_ms=None, tpot_ms=None, e2e_ms=None) -> dict:
    ok = np.ones(req["arrival_s"].size, dtype=bool)
    if ttft_ms is not None:
        ok &= req["ttft_s"] * 1e3 <= ttft_ms
    if tpot_ms is not None:
        ok &= ~(req["tpot_s"] * 1e3 > tpot_ms)  # NaN (one output token) passes
    if e2e_ms is not None:
        ok &= req["e2e_s"] * 1e3 <= e2e_ms
    n_ok = int(ok.sum())
    return {"slo": {"ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "e2e_ms": e2e_ms}, "slo_met": n_ok,
            "slo_met_fraction": n_ok / ok.size, "goodput_rps": n_ok / duration if duration > 0 else None}


def summarize(run: Run, slo: dict | None = None) -> dict:
    """The flat summary dict (see module docstring)."""
    ledger, cfg = run.ledger, run.config
    req = request_table(run)
    n = len(ledger)
    completed = int(np.isfinite(req["finish_s"]).sum())
    D = run.end_s - run.start_s
    out_tok, in_tok = float(req["output_len"].sum()), float(req["input_len"].sum())
    reps = run.replicas
    per = [r.sm.dep.par.replica_gpus for r in reps]  # GPUs of each replica (disaggregated pools may differ)
    gpus = sum(per)
    samples = ledger.sample_array()
    dur, dec_tok, pre_tok = samples[:, 1], samples[:, 2], samples[:, 3]
    blocks_total = cfg.num_blocks
    busy_j = sum(r.energy_j_per_gpu * g for r, g in zip(reps, per))
    gpu = reps[0].sm.dep.gpu
    idle_j = sum(max(D - r.busy_s, 0.0) * g for r, g in zip(reps, per)) * gpu.power.idle_w
    total_j = busy_j + idle_j
    with np.errstate(invalid="ignore", divide="ignore"):
        prefill_share = np.where(dec_tok + pre_tok > 0, pre_tok / (dec_tok + pre_tok), 0.0)
    prefill_s = float((dur * prefill_share).sum())
    dps_all = dollars_per_second(gpu, gpus)
    dps_rep = dollars_per_second(gpu, run.gpus_per_replica)
    W = float(req["e2e_s"].mean())
    lam = n / D if D > 0 else None
    L_avg = run.in_system_area / D if D > 0 else None
    busy_total = float(dur.sum())
    out = {
        "mode": "disaggregated" if cfg.disaggregated else "aggregated",
        "submitted": n, "completed": completed, "in_flight": n - completed,
        "replicas": len(reps), "prefill_replicas": cfg.prefill_replicas, "decode_replicas": cfg.decode_replicas,
        "num_gpus": gpus, "preemption": cfg.preemption, "preemptions": int(req["preemptions"].sum()),
        "block_size": cfg.block_size, "kv_blocks_per_replica": blocks_total,
        "max_num_batched_tokens": cfg.max_num_batched_tokens, "max_num_seqs": cfg.max_num_seqs,
        "steps": int(samples.shape[0]), "duration_s": D, "input_tokens": in_tok, "output_tokens": out_tok,
        "requests_per_s": n / D if D > 0 else None,
        "output_tok_s": out_tok / D if D > 0 else None,
        "total_tok_s": (out_tok + in_tok) / D if D > 0 else None,
        "output_tok_s_per_gpu": out_tok / D / gpus if D > 0 else None,
        **_stats("ttft", req["ttft_s"]), **_gap_stats(ledger),
        **_stats("tpot", req["tpot_s"][np.isfinite(req["tpot_s"])]), **_stats("e2e", req["e2e_s"]),
        **_stats("queue", req["admit_s"] - req["arrival_s"]),
        **goodput(req, D, **(slo or {})),
        "little_L": L_avg, "little_lambda": lam, "little_W_s": W,
        "little_ratio": L_avg / (lam * W) if L_avg and lam and W else None,
        "mean_queue_length": float(np.sum(req["admit_s"] - req["arrival_s"])) / D if D > 0 else None,
        "max_waiting": int(samples[:, 4].max()) if samples.size else 0,
        "mean_running": float((samples[:, 5] * dur).sum() / busy_total) if busy_total else 0.0,
        "max_kv_blocks_used": int(samples[:, 6].max()) if samples.size else 0,
        "max_kv_use": float(samples[:, 6].max() / blocks_total) if samples.size else 0.0,
        "mean_kv_use": float((samples[:, 6] * dur).sum() / busy_total / blocks_total) if busy_total else 0.0,
        "energy_j": total_j, "busy_energy_j": busy_j, "idle_energy_j": idle_j,
        "joules_per_output_token": total_j / out_tok if out_tok else None,
        "output_tokens_per_joule": out_tok / total_j if total_j else None,
        "average_power_w": total_j / D if D > 0 else None,
        "average_power_per_gpu_w": total_j / D / gpus if D > 0 else None,
        "usd_per_hour": None if dps_all is None else dps_all * 3600,
        "usd_per_million_output_tokens": per_million(dps_all, out_tok / D if D > 0 else 0),
        "usd_per_million_input_tokens": per_million(dps_rep, in_tok / prefill_s if prefill_s else 0),
    }
    if cfg.disaggregated:
        t = np.asarray(run.transfer_s, dtype=float)
        out.update(kv_link=run.link.name, kv_link_bw=run.link.effective_bw,
                   kv_transfers=int(t.size), kv_transfer_ms_mean=float(t.mean() * 1e3) if t.size else None)
    return out
