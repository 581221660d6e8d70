"""What the faces show, as plain data: one function per report, shared by the CLI (tables) and the
JSON API (bodies), so both print the same figures from the same calls.

- ``roofline``: every operator and collective of the prefill step and a mid-generation decode step
  (FLOPs, bytes by kind, intensity against the ridge point, time, bound, algorithm and link);
- ``memory``: bytes per GPU (weights, KV cache, activations, runtime reserve, the engine's KV
  allocation and what it leaves unused), fit, the largest batch at the context and the longest
  context at the batch;
- ``engine``: the serving engine a result assumes (every output names it);
- ``model_rows``: the model catalog.
"""
from __future__ import annotations

import numpy as np

from ..step import contract as step
from ..workloads.static import decode_contexts
from ..deploy.memory import max_batch, max_context, memory_report
from ..model import alias_of, catalog_files, count_params, kv_bytes_per_token, load_model
from ..model.variants import aliases
from ..pricing.roofline import roof, ridge_point
from ..pricing.collectives import comm_pricer_of


def with_short_aliases(rows: list[dict], by_alias: dict[str, str]) -> list[dict]:
    """Each catalog row with ``short_aliases``: the names of ``by_alias`` (model/variants.aliases: alias ->
    HF id, what model/loader.resolve accepts) that point to its id, other than its own ``alias``, sorted."""
    short: dict[str, list[str]] = {}
    for name, hf_id in by_alias.items():
        short.setdefault(hf_id, []).append(name)
    return [{**r, "short_aliases": sorted(a for a in short.get(r["id"], []) if a != r["alias"])} for r in rows]


def model_rows() -> list[dict]:
    """One row per catalog model: parameters (total, active), layers, attention type (GQA-n: n KV
    heads), KV bytes per token at bf16 (attention layers only), experts, and the short aliases that
    also resolve to it (``with_short_aliases``), for ``inferbound models`` and ``/api/models`` alike."""
    rows = []
    for hf_id in catalog_files():
        m = load_model(hf_id)
        p = count_params(m)
        rows.append({"alias": alias_of(hf_id), "id": hf_id, "family": m.family,
                     "total_params": p.total, "active_params": p.active, "layers": m.num_layers,
                     "attention": m.attention_type, "kv_bytes_per_token_bf16": kv_bytes_per_token(m, "bf16"),
                     "experts": f"{m.moe.top_k}/{m.moe.num_experts}" if m.moe else ""})
    return with_short_aliases(rows, aliases(sorted(catalog_files())))


def engine(dep) -> dict:
    """The engine and its settings behind a deployment's figures."""
    rt = dep.runtime
    return {"engine": rt.engine, "label": rt.label, "settings": rt.describe(), "block_size": rt.block_size,
            "token_budget": rt.token_budget, "max_num_seqs": rt.max_num_seqs, "kv_rule": rt.kv_rule,
            "memory_fraction": rt.memory_fraction, "kv_reservation": rt.reservation,
            "chunked_prefill": rt.chunked_prefill, "mixed_batches": rt.mixed_batches,
            "sliding_window": rt.sliding_window,
            "overridden": list(rt.overridden)}


def operator_rows(cost) -> list[dict]:
    """Per-operator totals (all instances) of a priced step."""
    rows = []
    for p in cost.ops:
        o = p.op
        rows.append({"name": o.name, "kind": o.kind, "group": o.group, "count": o.count,
                     "flops": float(np.sum(o.flops)) * o.count, "weight_bytes": float(np.sum(o.weight_bytes)) * o.count,
                     "kv_bytes": float(np.sum(o.kv_bytes)) * o.count, "act_bytes": float(np.sum(o.act_bytes)) * o.count,
                     "intensity": float(np.sum(o.flops) / max(float(np.sum(o.bytes)), 1e-30)) if o.kind != "collective" else 0.0,
                     "time_s": float(np.sum(p.total)),
                     "bound": "communication" if o.kind == "collective" else
                     ("compute" if bool(np.all(p.compute_bound)) else "memory"),
                     **({"comm": {**o.comm, "bytes": float(np.sum(o.comm["bytes"]))}, "algorithm": p.detail}
                        if o.comm else {})})
    return rows


def roofline(dep, batch: int, input_len: int, output_len: int) -> dict:
    """The roofline of a static batch's prefill and of its mid-generation decode step."""
    ctxs = decode_contexts(input_len, output_len)
    ctx = float(ctxs[len(ctxs) // 2])
    phases = {"prefill": step.prefill(dep, batch, max(input_len, 1)), "decode": step.decode(dep, batch, ctx)}
    r = roof(dep.gpu, dep.compute_dtype, "gemm")
    curves = comm_pricer_of(dep).kernels.curves is not None
    # ops priced by measured kernel curves reach their own fraction of the datasheet peak (up to ~0.9 on
    # large GEMMs), above the scalar model's effective roof: their chart's roof is the datasheet's
    peak, bw = (dep.gpu.peak_flops[dep.compute_dtype], dep.gpu.hbm_bw) if curves else (r.peak, r.bandwidth)
    out = {"deployment": dep.label(), "compute_dtype": dep.compute_dtype, "decode_context": ctx,
           "ridge_flop_per_byte": peak / bw, "peak_flop_s": peak, "hbm_bytes_s": bw,
           "roof": "datasheet peak and HBM bandwidth (operators priced by measured kernel curves)" if curves
           else "effective peak and HBM bandwidth (efficiency.yaml fractions of the datasheet)",
           "datasheet": {"peak_flop_s": dep.gpu.peak_flops[dep.compute_dtype], "hbm_bytes_s": dep.gpu.hbm_bw},
           "phases": {k: operator_rows(c) for k, c in phases.items()}, "engine": engine(dep)}
    for rows in out["phases"].values():
        for row in rows:
            row["achieved_flop_s"] = row["flops"] / row["time_s"] if row["time_s"] > 0 else 0.0
    return out


def memory(dep, batch: int, input_len: int, output_len: int) -> dict:
    """Memory per GPU of ``batch`` sequences of input + output tokens, fit, max batch, max context."""
    ctx = input_len + output_len
    rep = memory_report(dep, batch, ctx, step_tokens=batch * input_len)
    return {**rep.to_dict(), "deployment": dep.label(), "batch": batch, "context": ctx, "warnings": dep.warnings,
            "max_batch_at_context": int(max_batch(dep, ctx)), "max_context_at_batch": int(max_context(dep, batch)),
            "engine": engine(dep)}
