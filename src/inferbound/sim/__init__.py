"""Serving simulator: requests arrive, a vLLM-style scheduler batches them, the step-time model prices steps.

Modules: ``blocks`` (paged KV pool), ``scheduler`` (one replica's continuous batching, chunked prefill,
preemption; its rules in ``blockrules``, ``apply`` and ``decode_run``), ``event_loop`` (arrivals, replicas, disaggregated prefill/decode and KV transfer), ``ledger``
(what is recorded), ``metrics`` (summary), ``plot`` (PNG), ``config`` (the engine runtime of the
deployment: runtime.py, data/engines.yaml), ``sources`` (open- and closed-loop arrivals); requests and
traces come from workloads/requests.py. The simulator only calls ``StepModel.step``.

    >>> from inferbound.sim import simulate
    >>> r = simulate(model="llama-3.1-8b", gpu="h100_sxm", rate=2, requests=50, input_len=256, output_len=64)
    >>> r.to_dict()["completed"]
    50
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from ..base.datafiles import data_yaml
from ..deploy.bands import band, error_bands as figure_bands
from ..deploy.deployment import Deployment, make_deployment
from ..deploy.prefix import active as prefix_active, request_prefix
from ..workloads.lengths import dataset_profile, from_dataset
from ..workloads.requests import Request, poisson, poisson_noted, read_trace
from ..workloads import streaming
from .config import pool_configs, runtime_with, sim_config
from .event_loop import Run, simulate_run
from .ledger import SAMPLE_FIELDS
from .metrics import request_table, summarize
from .sources import ClosedLoop

__all__ = ["simulate", "SimResult", "Request", "poisson", "poisson_noted", "read_trace"]


@dataclass
class SimResult:
    """A finished run: ``summary`` (flat dict, see metrics.py), per-request table, per-step timeline."""

    summary: dict
    run: Run
    deployment: Deployment

    def __getitem__(self, key: str):
        return self.summary[key]

    def error_bands(self) -> dict:
        """Expected relative error of latency and throughput figures (the calibration's serving bands): by
        figure as the analytic serving estimate reports them (deploy/bands.py), and by kind."""
        out = {k: band(self.deployment, "serving", k) for k in ("latency", "throughput")}
        return {**figure_bands(self.deployment, "serving"), **{k: v for k, v in out.items() if v is not None}}

    def requests(self) -> dict[str, np.ndarray]:
        return request_table(self.run)

    def timeline(self) -> dict[str, np.ndarray]:
        """Per-step samples, columns as in ledger.SAMPLE_FIELDS, ordered by start time."""
        s = self.run.ledger.sample_array()
        s = s[np.argsort(s[:, 0], kind="stable")]
        return {k: s[:, i] for i, k in enumerate(SAMPLE_FIELDS)}

    def to_dict(self, timeline: bool = False, max_points: int = 2000) -> dict:
        """JSON-able summary; with ``timeline``, the step samples thinned to at most ``max_points``."""
        d = {"model": self.deployment.model.name, "gpu": self.deployment.gpu.id,
             "deployment": self.deployment.label(), **self.summary, "error_bands": self.error_bands()}
        if timeline:
            tl = self.timeline()
            idx = np.unique(np.linspace(0, len(tl["t_s"]) - 1, min(max_points, len(tl["t_s"]))).astype(int))
            d["timeline"] = {k: v[idx].tolist() for k, v in tl.items()}
        return {k: (float(v) if isinstance(v, (np.floating,)) else v) for k, v in d.items()}


def simulate(deployment: Deployment | None = None, rate: float = 1.0, requests: int = 100,
             input_len: int = 1024, output_len: int = 256, trace: str | Path | list[Request] | None = None,
             seed: int = 0, replicas: int | None = None, prefill_replicas: int = 0, decode_replicas: int = 0,
             preemption: str | None = None, block_size: int | None = None,
             max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None,
             num_blocks: int | None = None, memory_fraction: float | None = None,
             input_dist: str | None = None, output_dist: str | None = None,
             concurrency: int | None = None, think_time: float = 0.0, dataset: str | None = None,
             slo_ttft_ms: float | None = None, slo_tpot_ms: float | None = None, slo_e2e_ms: float | None = None,
             progress: bool | Callable[[int, int], None] = False, prefill_layout=None, decode_layout=None,
             **deployment_kwargs) -> SimResult:
    """Simulate serving ``requests`` Poisson arrivals at ``rate`` req/s (``inf``: all at once), a trace,
    or ``concurrency`` closed-loop clients (each sends its next request when the previous completes,
    after a think time drawn per client, exponential of mean ``think_time`` seconds from ``seed``
    (sources.ClosedLoop); ``rate`` is then unused).

    ``trace``: a CSV/JSONL path or a list of :class:`Request` (then rate, requests and lengths are
    unused). The engine (block size, token budget, running-sequence cap, KV allocation, reservation,
    preemption, chunked prefill, mixed steps) is the deployment's (``Deployment.runtime``); the
    keyword overrides here (``block_size``, ``max_num_batched_tokens``, ``max_num_seqs``,
    ``memory_fraction``, ``preemption``) replace its figures; ``num_blocks`` fixes the pool size per
    replica. Pass a :class:`Deployment` or the keyword arguments of :func:`make_deployment`.
    ``dataset``: a bundled length profile (data/datasets.yaml): its published means (and spread, drawn as
    normal, where published) replace the lengths.
    ``progress``: True for a rich progress bar, or a callback(done, total).
    ``prefill_layout`` / ``decode_layout``: disaggregated pools with their own layouts (deploy/pools.py,
    ``"tp=1,dp=8,ep=8,attention_dp=1"``; needs ``prefill_replicas`` and ``decode_replicas``): each pool a
    replica of that layout with its own step model, block pool and caps; KV transfers share the lanes
    fairly (sim/transfers.py).
    """
    dep = deployment or make_deployment(**deployment_kwargs)
    notes = []
    if dataset is not None:
        if trace is not None or input_dist or output_dist:
            raise ValueError("dataset and trace/input_dist/output_dist given together; allowed: one of them")
        input_len, output_len, input_dist, output_dist, notes = _dataset_lengths(dataset)
    over = dict(block_size=block_size, token_budget=max_num_batched_tokens, max_num_seqs=max_num_seqs,
                memory_fraction=memory_fraction, preemption=preemption)
    rt = runtime_with(dep, **over)
    decode = None
    if prefill_layout or decode_layout:  # disaggregated pools with their own layouts (deploy/pools.py)
        dep, cfg, decode = pool_configs(dep, over, prefill_layout, decode_layout, prefill_replicas,
                                        decode_replicas, num_blocks, seed)
        rt = runtime_with(dep, **over)
    else:
        cfg = sim_config(dep, rt, replicas, prefill_replicas, decode_replicas, num_blocks, seed)
    for name, v in (("slo_ttft_ms", slo_ttft_ms), ("slo_tpot_ms", slo_tpot_ms), ("slo_e2e_ms", slo_e2e_ms)):
        if v is not None and not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
            raise ValueError(f"{name}={v!r} must be a number of milliseconds > 0")
    source = None if concurrency is None else ClosedLoop(concurrency, think_time, seed)
    if trace is None:
        reqs, raised = poisson_noted(math.inf if source is not None else rate, requests, input_len, output_len,
                                     seed, input_dist, output_dist)  # draws below 1 set to 1: said in the notes
        notes = notes + raised
    else:
        reqs = list(trace) if isinstance(trace, (list, tuple)) else read_trace(trace)
    reqs, prefix_notes = _with_prefixes(reqs, rt)
    notes = notes + prefix_notes
    if progress is True:
        run = _with_progress_bar(dep, reqs, cfg, source, decode)
    else:
        run = simulate_run(dep, reqs, cfg, progress or None, source, decode)
    slo = {"ttft_ms": slo_ttft_ms, "tpot_ms": slo_tpot_ms, "e2e_ms": slo_e2e_ms}
    summary, stream_notes = streaming.sim_summary(summarize(run, slo), request_table(run), rt)  # chunks of k
    summary.update(engine=cfg.engine, concurrency=concurrency, think_time_s=think_time if concurrency else None,
                   think_time_s_mean=source.mean_think() if source is not None else None,
                   notes=notes + stream_notes, **_feature_summary(run, cfg))
    if decode is not None:  # the pools' own layouts (deploy/pools.py)
        summary.update(prefill_layout=dep.label(), decode_layout=decode[0].label(),
                       decode_kv_blocks_per_replica=decode[1].num_blocks)
    return SimResult(summary, run, dep)


def _with_prefixes(reqs: list[Request], rt) -> tuple[list[Request], list[str]]:
    """Requests with the shared prefix the runtime states (prefix.request_prefix: --prefix-hit-rate,
    --shared-prefix-len), where they name none of their own (a trace's prefix ids win)."""
    named = any(r.prefix_id >= 0 for r in reqs)
    if named and not rt.prefix_caching:
        return reqs, [f"the trace names shared prefixes but {rt.label} runs without prefix caching: no hits"]
    if named or not prefix_active(rt):
        return reqs, []
    out = []
    for i, r in enumerate(reqs):
        pid, plen = request_prefix(rt, r.input_len, i)
        out.append(replace(r, prefix_id=pid, prefix_len=plen) if plen > 0 else r)
    return out, []


def _feature_summary(run: Run, cfg) -> dict:
    """The features' own figures: prompt tokens found in the prefix cache, tokens per verify pass."""
    ledger = run.ledger
    hit, computed = float(sum(ledger.hit_tokens)), float(sum(ledger.computed_tokens))
    out = {"prefix_caching": cfg.prefix_caching,
           "prefix_hit_rate": hit / (hit + computed) if cfg.prefix_caching and hit + computed > 0 else None}
    if cfg.spec is not None:
        out.update(speculative=cfg.spec.describe(), spec_tokens=cfg.spec.k, acceptance=cfg.spec.acceptance,
                   tokens_per_step=ledger.verify_tokens / ledger.verify_passes if ledger.verify_passes else None)
    if cfg.device_blocks is not None:
        out.update(kv_device_blocks=cfg.device_blocks, kv_host_blocks=cfg.num_blocks - cfg.device_blocks)
    return out


def _dataset_lengths(name: str):
    """(input_len, output_len, input_dist, output_dist, notes) of a dataset profile (workloads/lengths.py)."""
    mix = from_dataset(name)  # its errors name the field
    name, p = dataset_profile(name)  # the name matched case-insensitively
    i, o = int(round(mix.mean_input)), int(round(mix.mean_output))
    if p.get("input_std") is None or p.get("output_std") is None:
        classes = [f"dataset {name}: simulated at its mean lengths {i} in / {o} out (its "
                   f"{'output' if p.get('output_std') is None else 'input'} spread is not published); "
                   f"estimate's steady states use its {len(p['classes'])} measured length classes"] \
            if p.get("classes") else []
        return i, o, None, None, list(mix.notes) or classes
    note = [f"dataset {name}: simulated with normal(mean, std) lengths from its moments ({p['input_mean']:g}"
            f"±{p['input_std']:g} in, {p['output_mean']:g}±{p['output_std']:g} out); estimate's steady states use "
            f"its {len(p['classes'])} measured length classes"] if p.get("classes") else []
    return i, o, f"normal:{p['input_mean']}:{p['input_std']}", f"normal:{p['output_mean']}:{p['output_std']}", note


def _with_progress_bar(dep, reqs, cfg, source=None, decode=None) -> Run:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task("requests", total=len(reqs))
        return simulate_run(dep, reqs, cfg, lambda done, total: bar.update(task, completed=done), source, decode)
