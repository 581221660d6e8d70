"""Search deployments: GPU types x GPU counts x layouts x dtypes x concurrency, ranked and explained.

:func:`search` enumerates the space (``space.py``), evaluates every layout at every concurrency as
numpy arrays (``evaluate.py``, through the step model that ``estimate`` and ``max_throughput`` use)
on a backend (``backends.py``: local or Ray), applies the SLOs and budgets (``metrics.py``), picks
each layout's best concurrency and ranks the layouts (``rank.py``), and explains the top rows
(``explain.py``). Frontiers: ``pareto.py``; plots: ``plot.py``; launch commands: ``emit.py``.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

import numpy as np

from ..hardware.prices import price_note
from ..model import ModelSpec, load_model
from ..workloads.steady_state import prompts_per_decode
from .backends import BACKENDS, evaluate_all, local_workers
from .emit import ENGINES, emit_command
from .evaluate import Workload, concurrency_caps, evaluate_layout, pool_pairs, step_model
from .explain import explain_row
from .metrics import OBJECTIVES, SENSE, Constraint, Points, constraints_from, violation
from .pareto import pareto_mask
from .rank import best_per_layout, closest_miss, limit_at
from .result import Row, SearchResult, make_row, pool_fields, unit_label, winner_reason
from .space import SearchSize, build_space, estimate_size, resolve_gpus, search_defaults

__all__ = ["search", "SearchResult", "SearchSize", "Row", "pareto_mask", "emit_command", "OBJECTIVES", "ENGINES",
           "BACKENDS", "SENSE"]


def _check(name: str, v, low, integer: bool = True):
    if v is None:
        return None
    if (integer and int(v) != v) or v < low:
        raise ValueError(f"{name}={v} must be {'an integer ' if integer else ''}>= {low}")
    return v


def search(model: str | dict | ModelSpec, gpus: list[str] | None = None, max_gpus: int | None = None,
           objective: str = "tok_s_per_gpu", slo_ttft_ms: float | None = None, slo_tpot_ms: float | None = None,
           slo_e2e_ms: float | None = None, max_dollars_per_hour: float | None = None,
           max_watts: float | None = None, max_total_gpus: int | None = None, target_rate: float | None = None,
           input_len: int = 1024, output_len: int = 256, disaggregated: bool | str = False, backend: str = "local",
           ray_address: str | None = None, progress=None, calibration=None, dtypes: list[str] | None = None,
           all_layouts: bool = False, top: int | None = None, token_budget: int | None = None,
           engine: str | None = None, engine_options: dict | None = None, gpu_overrides: dict | None = None,
           gpu_files: list | None = None, lengths=None, gpu_scale: dict | str | None = None,
           prices: dict[str, float] | None = None, workers: int | None = None,
           on_size: Callable[[SearchSize], None] | None = None) -> SearchResult:
    """Best deployments of ``model`` for ``objective`` under the SLOs and budgets (see module docstring).

    ``gpus``: catalog ids (None: the whole catalog). ``max_gpus``: largest layout (default
    data/search.yaml). SLOs in ms; budgets bound the fleet (one unit, or the units ``target_rate``
    requests/s need). ``objective``: tok_s_per_gpu, tok_s_per_user, tokens_per_joule, usd_per_mtok or
    gpus_for_rate (needs ``target_rate``). ``disaggregated``: False (aggregated serving), True (separate
    prefill and decode pools) or "both" (every layout in both modes, ranked together).
    ``engine`` / ``engine_options``: the serving engine every layout runs (runtime.py; None: the default)
    and its overrides; ``token_budget`` is shorthand for engine_options token_budget.
    ``gpu_overrides`` / ``gpu_files``: field overrides applied to every searched GPU and extra hardware
    files (as ``--gpu-set`` / ``--gpu-file`` of estimate). ``lengths``: a workloads.lengths.Mix (a
    distribution, trace or dataset profile) in place of the fixed ``input_len``/``output_len``.
    ``gpu_scale``: what-if copies of the searched GPUs (hardware/whatif.py) ranked beside them.
    ``prices``: the user's USD per GPU-hour by catalog GPU id (--price GPU=USD; hardware/prices.py) in place
    of the catalog's cited figure, noted in the result.
    ``workers``: processes of the local backend (None: data/search.yaml, by default this machine's CPUs;
    search/backends.py). ``progress(done, total)`` is called while layouts evaluate. ``engine_options`` may carry the engine features
(speculative, spec_tokens, acceptance, prefix_hit_rate, shared_prefix_len, kv_offload, kv_offload_gb):
with speculative decoding every layout is evaluated at k = 1..spec_tokens (``spec_sweep``).
    ``on_size(size)``: called once the space is built, before any layout is evaluated, with its estimated
    size (space.SearchSize: layouts, configurations, peak memory); it may raise to refuse the search (the
    CLI and the JSON API refuse one over data/search.yaml ``limits.memory_budget_gb``).
    Raises ValueError naming the closest miss when no configuration meets the constraints.
    """
    t0 = time.perf_counter()
    d = search_defaults()
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r} unknown; allowed: {', '.join(OBJECTIVES)}")
    if objective == "gpus_for_rate" and target_rate is None:
        raise ValueError("objective='gpus_for_rate' needs target_rate (requests/s); e.g. --target-rate 10")
    modes = {False: (False,), True: (True,), "both": (False, True)}.get(disaggregated)
    if modes is None:
        raise ValueError(f"disaggregated={disaggregated!r} unknown; allowed: False, True, 'both'")
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} unknown; allowed: {', '.join(BACKENDS)}")
    _check("input_len", input_len, 1)
    _check("output_len", output_len, 2)
    _check("top", top, 1)
    _check("max_total_gpus", max_total_gpus, 1)
    _check("workers", workers, 1)
    if target_rate is not None and not (np.isfinite(target_rate) and target_rate > 0):
        raise ValueError(f"target_rate={target_rate} must be a positive number of requests/s")
    max_gpus = int(_check("max_gpus", max_gpus if max_gpus is not None else d["space"]["max_gpus"], 1))
    constraints = constraints_from(slo_ttft_ms, slo_tpot_ms, slo_e2e_ms, max_dollars_per_hour, max_watts,
                                   max_total_gpus)
    options = dict(engine_options or {})
    if token_budget is not None:
        options["token_budget"] = int(_check("token_budget", token_budget, 1))
    if lengths is not None:
        input_len, output_len = lengths.mean_input, lengths.mean_output
    w = Workload(input_len=input_len, output_len=output_len, disaggregated=modes[-1],
                 max_decode_replicas=int(d["evaluation"]["max_decode_replicas"]), mix=lengths)
    m = model if isinstance(model, ModelSpec) else load_model(model)
    searched = resolve_gpus(gpus, calibration, gpu_overrides, gpu_files, gpu_scale, prices)
    space = build_space(m, searched, max_gpus, dtypes,
                        all_layouts,
                        engine, options)
    if not space.deployments:
        raise ValueError(f"no layout of {m.name} fits within max_gpus={max_gpus}: {space.skipped_summary()}")
    spec_sweep(space, options)
    if on_size is not None:
        procs = local_workers(len(space.deployments), workers) if backend == "local" else 1
        on_size(estimate_size(space.deployments, [replace(w, disaggregated=mode) for mode in modes], procs))
    deps, combos, works, per_layout, prefills = [], [], [], [], []
    for mode in modes:  # each layout once per serving mode; the modes are ranked together
        w_mode = replace(w, disaggregated=mode)
        per_layout += evaluate_all(space.deployments, w_mode, backend, ray_address, progress, workers)
        deps += space.deployments
        combos += space.combos
        works += [w_mode] * len(space.deployments)
        prefills += [None] * len(space.deployments)
        if mode:  # prefill pools of their own layout (evaluate.pool_pairs), evaluated here
            for j, pre in pool_pairs(space.deployments, w_mode):
                per_layout.append(evaluate_layout(space.deployments[j], w_mode, pre))
                deps.append(space.deployments[j])
                combos.append(f"{space.combos[j]} prefill pool {pre.label()}")
                works.append(w_mode)
                prefills.append(pre)
    labels = [f"{dep.label()} {c}" + (" disaggregated" if wk.disaggregated and len(modes) > 1 else "")
              for dep, c, wk in zip(deps, combos, works)]
    for dep, lab, p in zip(deps, labels, per_layout):
        if p is None:
            space.skip("KV cache holds no request", lab)
    price = np.array([np.nan if dep.gpu.price_per_hour is None else dep.gpu.price_per_hour for dep in deps])
    points = Points.concat(per_layout, price, w.output_len, target_rate)
    notes = list(dict.fromkeys(n for n in map(price_note, searched) if n))  # the user's prices, named
    feasible = _feasible(points, constraints, objective, notes)
    if not np.any(feasible):
        raise ValueError(_no_fit_message(points, constraints, labels, m.name, space))
    order = best_per_layout(points, feasible, objective)[: int(top or d["output"]["top"])]
    rows = []
    for rank, i in enumerate(order, start=1):
        k = int(points.layout[i])
        rows.append(_row(rank, deps[k], combos[k], per_layout[k], points, int(i), works[k], objective, feasible,
                         constraints, prefills[k]))
    return SearchResult(model=m.name, workload=w, objective=objective, constraints=constraints, table=rows,
                        winner_reason=winner_reason(rows, objective), points=points, feasible=feasible,
                        labels=labels, skipped=dict(space.skipped), skipped_examples=dict(space.examples),
                        elapsed_s=time.perf_counter() - t0, backend=backend, notes=notes,
                        modes=tuple("disaggregated" if x else "aggregated" for x in modes),
                        engine=space.deployments[0].runtime.describe(),
                        default_frontier=tuple(d["output"]["frontier"]))


#: the engine options of speculative decoding, left out of the k = 0 row (runtime.FEATURES)
_SPEC_NAMES = ("speculative", "spec_tokens", "acceptance", "acceptance_positions", "acceptance_rate", "accept_length",
               "spec_topk", "spec_draft_tokens", "spec_match_rate")


def spec_sweep(space, options: dict) -> None:
    """With speculative decoding, every layout once per k = k_max..1 drafted tokens (k_max: the options'
    spec_tokens; a per-position acceptance list cut to its first k, a tree's verified tokens to at most
    1 + topk·k) and once without it, k = 0, so the ranking shows whether speculation pays; each labelled
    ``spec k=K`` (docs/features/speculative.md)."""
    if not options.get("speculative"):
        return
    k_max = int(space.deployments[0].runtime.spec_tokens)
    deps, combos = [], []
    for dep, combo in zip(space.deployments, space.combos):
        for k in range(k_max, -1, -1):  # the stated k first: the engine line describes it
            opts = {**dict(dep.engine_options), "spec_tokens": k}
            if k == 0:
                opts = {n: v for n, v in opts.items() if n not in _SPEC_NAMES}
            elif k < k_max:
                if opts.get("accept_length") is not None or opts.get("acceptance_rate") is not None:
                    # a measured τ is of k_max drafts: the i.i.d. a it implies (runtime.acceptance) at k
                    opts = {n: v for n, v in opts.items() if n not in ("accept_length", "acceptance_rate")}
                    opts["acceptance"] = float(dep.runtime.acceptance)
                if opts.get("acceptance_positions") is not None:
                    pos = opts["acceptance_positions"]
                    pos = pos.split(",") if isinstance(pos, str) else list(pos)
                    opts["acceptance_positions"] = ",".join(str(x).strip() for x in pos[:k])
                if opts.get("spec_draft_tokens"):
                    opts["spec_draft_tokens"] = min(int(opts["spec_draft_tokens"]),
                                                    1 + int(opts.get("spec_topk") or 1) * k)
            deps.append(dep if k == k_max else replace(dep, engine_options=tuple(sorted(opts.items()))))
            combos.append(f"{combo} spec k={k}")
    space.deployments, space.combos = deps, combos


def _feasible(points: Points, constraints: list[Constraint], objective: str, notes: list[str]) -> np.ndarray:
    ok = violation(points, constraints) <= 1.0
    if objective == "usd_per_mtok":
        priced = np.isfinite(points.price[points.layout])
        if not np.any(priced):
            raise ValueError("objective='usd_per_mtok' needs GPU prices, and none of the searched GPUs has one; "
                             "allowed: GPUs with a price (`inferbound gpus`), or your own: --price GPU=USD")
        if not np.all(priced):
            notes.append(f"{np.count_nonzero(~priced):,} configurations on GPUs without a price are left out "
                         f"of the $/M-token ranking")
        ok &= priced
    return ok


def _no_fit_message(points: Points, constraints: list[Constraint], labels: list[str], model: str, space) -> str:
    if len(points) == 0:
        return f"no configuration of {model} holds one request: {space.skipped_summary()}"
    wanted = " and ".join(c.label for c in constraints) or "the objective"
    i = closest_miss(points, constraints)
    if i is None:
        return f"no configuration meets {wanted}: no searched GPU has the figures they need (e.g. a price)"
    vals = ", ".join(f"{c.metric} {_short(points.metric(c.metric, slice(i, i + 1))[0])}" for c in constraints)
    p = points
    unit = labels[int(p.layout[i])]
    if p.prefill_replicas[i]:
        unit = f"{p.prefill_replicas[i]}P+{p.decode_replicas[i]}D x ({unit})"
    return f"no configuration meets {wanted}: closest is {unit} at concurrency {p.concurrency[i]} with {vals}"


def _short(v: float) -> str:
    if not np.isfinite(v):
        return "n/a"
    return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"


def _pools(dep, prefill, w: Workload, row: Row, decode_capacity: float) -> dict:
    """Row.pools of a disaggregated row: each pool's fields from its own priced deployment (result.pool_fields);
    the prefill pool (``prefill``, or ``dep`` when both pools share the layout) runs row.prefill_batch prompts
    per step on its own KV capacity (evaluate.concurrency_caps, decode_only as evaluate.prefill_k_max)."""
    pre = prefill or dep
    pre_capacity = concurrency_caps(pre, w, decode_only=True)[1]
    return {"prefill": pool_fields(pre, row.prefill_batch, pre_capacity),
            "decode": pool_fields(dep, row.max_num_seqs, decode_capacity)}


def _row(rank, dep, combo, lp, points: Points, i: int, w: Workload, objective, feasible, constraints,
         prefill=None) -> Row:
    limit = limit_at(points, i, feasible, constraints, lp.cap)
    row = make_row(rank, dep, combo, points, i, w, objective, limit, lp.kv_capacity_bytes)
    if w.disaggregated:  # each pool with its own layout, limits and memory share
        row.pools = _pools(dep, prefill, w, row, lp.kv_capacity_bytes)
    groups = dep.par.attention_groups
    sm = step_model(dep, dep.runtime.token_budget * groups + groups)
    dec = float(points.concurrency[i])
    mix = w.lengths
    prompts = 0.0 if w.disaggregated else dec * mix.mean_input * prompts_per_decode(mix)
    what = f"{dec:.0f} decodes" + (f" + {prompts:,.0f} prompt tokens" if prompts else "")
    row.bound, row.explanation = explain_row(dep, sm, dec, mix, w.disaggregated,
                                             f"its step ({what} on {unit_label(row)})")
    return row
