"""The fleet's figures (``--json``), from the per-replica results of run.py.

Per request (arrival a, first token f, finish e, N output tokens), as sim/metrics.py:
    TTFT = f − a,   TPOT = (e − f)/(N − 1) for N > 1,   E2E = e − a
A request attains the SLO when it meets every threshold given (TTFT <= slo.ttft_p99_ms, TPOT <=
slo.tpot_p99_ms, E2E <= slo.e2e_p99_ms; a request of one output token has no TPOT and passes that one);
``slo_attainment`` = attaining requests / requests. ``prefix_hit_rate`` = prompt tokens found in the prefix
cache / (found + computed), as simulate reports it (None without prefix caching). Percentiles: numpy's linear
interpolation, in ms.
ITL (``itl_ms_*``): every gap between consecutive tokens, pooled over the requests (fleet/itl.py).

Time: the fleet runs from 0 to ``end_s`` = max(traffic duration, last finish). A replica is billed from its
provisioning (0, or the autoscaler's scale-up decision: its startup is paid) to ``end_s``, or, draining, to
max(drain start, its last finish). GPU-hours = Σ replicas (billed s · GPUs per replica) / 3600;
cost = Σ billed s · $/s of its GPUs (pricing/energy.dollars_per_second: the catalog's cited price per GPU-hour,
or --price); energy = Σ (busy J + idle W · (billed s − busy s)) · GPUs, busy J from the step model's power
per step (sim/), idle W the GPU's idle power (a starting replica draws idle power), in kWh (3.6e6 J).

Per-minute series (minute m covers [60m, 60m + 60) s): arrivals in it; queue = requests arrived but not yet
admitted at its end; replicas = routable replicas per pool at its end; attainment = the share of the requests
finishing in it that attain the SLO (None where none finished).
"""
from __future__ import annotations

import math

import numpy as np

from ..pricing.energy import dollars_per_second
from .itl import itl_stats
from .run import FleetRun

PCTS = (50, 90, 99)


def _stats(prefix: str, seconds: np.ndarray) -> dict:
    x = np.asarray(seconds, dtype=float)
    x = x[np.isfinite(x)] * 1e3
    if x.size == 0:
        return {f"{prefix}_ms_mean": None, **{f"{prefix}_ms_p{p}": None for p in PCTS}}
    return {f"{prefix}_ms_mean": float(x.mean()), **{f"{prefix}_ms_p{p}": float(np.percentile(x, p)) for p in PCTS}}


def attained(ttft: np.ndarray, tpot: np.ndarray, e2e: np.ndarray, slo) -> np.ndarray:
    """Per request, whether it meets every SLO given (module docstring)."""
    ok = np.ones(ttft.size, dtype=bool)
    if slo.ttft_p99_ms is not None:
        ok &= ttft * 1e3 <= slo.ttft_p99_ms
    if slo.tpot_p99_ms is not None:
        ok &= ~(tpot * 1e3 > slo.tpot_p99_ms)
    if slo.e2e_p99_ms is not None:
        ok &= e2e * 1e3 <= slo.e2e_p99_ms
    return ok


def request_arrays(fr: FleetRun) -> dict[str, np.ndarray]:
    """Every request's figures by id, gathered from the replicas' tables."""
    n = len(fr.arrivals)
    cols = {k: np.full(n, np.nan) for k in ("arrival_s", "admit_s", "first_s", "finish_s", "hit_tokens",
                                             "computed_tokens")}
    cols["output_len"] = np.zeros(n, dtype=np.int64)
    seen = np.zeros(n, dtype=np.int64)
    for slot, (table, *_rest) in fr.results.items():
        ids = table["id"]
        seen[ids] += 1
        for k in cols:
            cols[k][ids] = table[k]
    if (seen != 1).any() or (fr.slot_of < 0).any():
        raise RuntimeError(f"fleet: {int((seen != 1).sum())} of {n} requests not accounted for exactly once")
    if not np.isfinite(cols["finish_s"]).all():
        raise RuntimeError(f"fleet: {int((~np.isfinite(cols['finish_s'])).sum())} requests never finished")
    out = cols["output_len"].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        cols["tpot_s"] = np.where(out > 1, (cols["finish_s"] - cols["first_s"]) / np.maximum(out - 1, 1), np.nan)
    cols["ttft_s"] = cols["first_s"] - cols["arrival_s"]
    cols["e2e_s"] = cols["finish_s"] - cols["arrival_s"]
    cols["slot"] = fr.slot_of
    return cols


def _billing(fr: FleetRun, req: dict, end_s: float) -> list[dict]:
    """Per slot: billed seconds, GPU-hours, cost, energy (module docstring)."""
    last = np.full(len(fr.slots), -math.inf)
    np.maximum.at(last, req["slot"], req["finish_s"])
    out = []
    for k, s in enumerate(fr.slots):
        dep = fr.pools[s.pool][0]
        busy_s, j_per_gpu, gpus = fr.results[k][2:5]
        stop = end_s if s.drain_s is None else max(s.drain_s, last[k])
        billed = stop - s.provisioned_s
        dps = dollars_per_second(dep.gpu, gpus)
        joules = (j_per_gpu + dep.gpu.power.idle_w * max(billed - busy_s, 0.0)) * gpus
        out.append({"billed_s": billed, "gpu_hours": billed * gpus / 3600.0,
                    "cost_usd": None if dps is None else dps * billed, "energy_kwh": joules / 3.6e6})
    return out


def _figures(req: dict, mask: np.ndarray, ok: np.ndarray, bills: list[dict], slots: list[int], results,
             caching: bool) -> dict:
    n = int(mask.sum())
    costs = [bills[k]["cost_usd"] for k in slots]
    hit, computed = float(req["hit_tokens"][mask].sum()), float(req["computed_tokens"][mask].sum())
    return {"requests": n, "slo_attainment": float(ok[mask].mean()) if n else None,
            "prefix_hit_rate": hit / (hit + computed) if caching and hit + computed > 0 else None,
            **_stats("ttft", req["ttft_s"][mask]), **_stats("tpot", req["tpot_s"][mask]),
            **itl_stats([results[k][5] for k in slots], PCTS), **_stats("e2e", req["e2e_s"][mask]),
            "gpu_hours": float(sum(bills[k]["gpu_hours"] for k in slots)),
            "cost_usd": None if any(c is None for c in costs) else float(sum(costs)),
            "energy_kwh": float(sum(bills[k]["energy_kwh"] for k in slots))}


def _routable(slots, ks: list[int], t: float) -> int:
    return sum(1 for k in ks if slots[k].ready_s <= t and (slots[k].drain_s is None or slots[k].drain_s > t))


def _over_time(slots, ks: list[int]) -> list[list[float]]:
    """[[t_s, routable replicas], ...] at every change."""
    times = sorted({0.0, *(slots[k].ready_s for k in ks), *(slots[k].drain_s for k in ks if slots[k].drain_s)})
    out = []
    for t in times:
        n = _routable(slots, ks, t)
        if not out or out[-1][1] != n:
            out.append([float(t), n])
    return out


def build(fr: FleetRun) -> dict:
    """The --json dict (module docstring)."""
    spec = fr.spec
    req = request_arrays(fr)
    end_s = float(max(fr.arrivals.duration_s, float(req["finish_s"].max()) if req["finish_s"].size else 0.0))
    ok = attained(req["ttft_s"], req["tpot_s"], req["e2e_s"], spec.slo)
    bills = _billing(fr, req, end_s)
    pool_of_slot = np.array([s.pool for s in fr.slots], dtype=np.int64)
    pool_of_req = pool_of_slot[req["slot"]]
    pools = []
    for p, pool in enumerate(spec.pools):
        ks = [k for k, s in enumerate(fr.slots) if s.pool == p]
        dep = fr.pools[p][0]
        pools.append({"name": pool.name, "model": dep.model.name, "gpu": dep.gpu.id, "deployment": dep.label(),
                      "engine": fr.pools[p][1].engine, "gpus_per_replica": dep.par.replica_gpus,
                      "replicas": pool.replicas, "replicas_provisioned": len(ks),
                      **_figures(req, pool_of_req == p, ok, bills, ks, fr.results, fr.pools[p][1].prefix_caching),
                      "replicas_over_time": _over_time(fr.slots, ks)})
    total = sum(p["requests"] for p in pools)
    if total != len(fr.arrivals):
        raise RuntimeError(f"fleet: the pools' requests sum to {total}, the traffic has {len(fr.arrivals)}")
    minutes = max(1, math.ceil(end_s / 60.0))
    edges = np.arange(minutes + 1) * 60.0
    arrivals = np.histogram(req["arrival_s"], edges)[0]
    ends = edges[1:]
    arrived = np.searchsorted(np.sort(req["arrival_s"]), ends, "left")
    queue = arrived - np.searchsorted(np.sort(req["admit_s"]), ends, "left")
    fin = np.clip(np.floor(req["finish_s"] / 60.0).astype(np.int64), 0, minutes - 1)
    done = np.bincount(fin, minlength=minutes)
    good = np.bincount(fin, weights=ok.astype(float), minlength=minutes)
    series = {"t_min": list(range(minutes)), "arrivals": arrivals.tolist(), "queue": queue.tolist(),
              "replicas": {pool.name: [_routable(fr.slots, [k for k, s in enumerate(fr.slots) if s.pool == p], t)
                                       for t in ends] for p, pool in enumerate(spec.pools)},
              "attainment": [float(g / d) if d else None for g, d in zip(good, done)]}
    everything = list(range(len(fr.slots)))
    return {"requests": len(fr.arrivals), **_figures(req, np.ones(len(fr.arrivals), dtype=bool), ok, bills, everything,
                                                  fr.results, any(cfg.prefix_caching for _, cfg in fr.pools)),
            "slo": spec.slo.model_dump(), "router": spec.router, "router_refresh_s": fr.refresh_s,
            "windows": fr.windows, "traffic": fr.arrivals.source, "duration_s": float(fr.arrivals.duration_s),
            "end_s": end_s, "replicas_provisioned": len(fr.slots), "pools": pools, "series": series,
            "notes": list(dict.fromkeys(fr.notes))}
