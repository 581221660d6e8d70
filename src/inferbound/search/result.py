"""Search results: the ranked table, why the winner wins, frontiers, JSON and CSV.

A row is one layout at its best concurrency. ``metrics`` holds every figure of metrics.py at that
point; the memory fractions are what an engine must be given for the KV capacity the search assumed:
vLLM's share of HBM (runtime.yaml memory_utilization), SGLang's static share (weights + KV pool)/HBM,
TensorRT-LLM's share of free memory for KV (runtime.yaml kv_free_fraction).
"""
from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, field

import numpy as np

from ..deploy.deployment import Deployment
from ..deploy.memory import weight_bytes_per_gpu
from ..deploy.offload import tier_of
from .evaluate import Workload
from .metrics import SENSE, UNITS, Constraint, Points, check_metric
from .pareto import pareto_mask
from ..workloads.lengths import describe

ROW_METRICS = ("ttft_ms", "tpot_ms", "e2e_ms", "tok_s", "tok_s_per_gpu", "tok_s_per_user", "requests_per_s",
               "tokens_per_joule", "watts", "usd_per_hour", "usd_per_mtok", "gpus")


def row_metrics(points: Points) -> tuple[str, ...]:
    """Figures reported per configuration (gpus_for_rate only with a target rate)."""
    return ROW_METRICS + (("gpus_for_rate",) if points.target_rate is not None else ())


def _num(v: float) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


@dataclass
class Row:
    rank: int
    gpu: str
    mode: str  # aggregated | disaggregated
    layout: str  # '8x h100_sxm TP8 fp8' (one replica)
    replica_gpus: int
    unit_gpus: int  # replica, or prefill+decode group
    tp: int
    pp: int
    ep: int
    dp: int  # attention data-parallel ranks inside the replica (MoE), else 1
    attention_dp: bool
    nodes: int
    dtype: str
    weight_dtype: str
    act_dtype: str
    kv_dtype: str
    concurrency: int  # decode batch per replica
    max_num_seqs: int  # sequences in flight per replica (engine cap)
    token_budget: int
    prefill_replicas: int
    decode_replicas: int
    replicas: int  # units in the fleet (target rate), else 1
    objective: str
    objective_value: float | None
    limit: str
    bound: str = ""
    explanation: str = ""
    metrics: dict = field(default_factory=dict)
    kv_capacity_gb: float = 0.0
    engine: str = ""  # engine profile the row was evaluated under (name@version)
    memory_fraction: float | None = None  # the engine's KV memory fraction (None: its automatic value)
    mem_fraction_static: float = 0.0  # (weights + KV pool) / HBM: SGLang's share for the KV assumed
    prefill_batch: int = 0  # disaggregated: prompts per prefill step (0 aggregated)
    features: dict = field(default_factory=dict)  # engine features modelled (speculative, prefix cache, offload)
    context_len: int = 0  # longest prompt + output the workload priced (launch commands' --max-model-len)
    redundant_experts: int = 0  # EPLB expert copies per MoE layer (deploy/eplb.py)
    ep_a2a: str = "pairwise"  # MoE all-to-all priced: pairwise or deepep (pricing/comm.py)
    pools: dict = field(default_factory=dict)  # disaggregated: {"prefill"|"decode": the Row fields of that pool's layout}

    def to_dict(self) -> dict:
        return asdict(self)

    def flat(self) -> dict:
        d = self.to_dict()
        d.update({k: v for k, v in d.pop("metrics").items()})
        return d


def make_row(rank: int, dep: Deployment, combo: str, points: Points, i: int, w: Workload, objective: str,
             limit: str, kv_capacity: float) -> Row:
    par, rt = dep.par, dep.runtime
    metrics = {k: _num(float(points.metric(k, slice(i, i + 1))[0])) for k in row_metrics(points)}
    mode = "disaggregated" if w.disaggregated else "aggregated"
    x, y = int(points.prefill_replicas[i]), int(points.decode_replicas[i])
    layout = f"{dep.label()} {combo}"
    return Row(rank=rank, gpu=dep.gpu.id, mode=mode, layout=layout, replica_gpus=par.replica_gpus,
               unit_gpus=int(points.unit_gpus[i]), tp=par.tp, pp=par.pp, ep=par.ep, dp=par.dp,
               attention_dp=par.attention_dp, nodes=par.nodes, dtype=combo, weight_dtype=dep.dtypes.weight,
               act_dtype=dep.dtypes.act, kv_dtype=dep.dtypes.kv_dtype, concurrency=int(points.concurrency[i]),
               max_num_seqs=int(points.concurrent_seqs[i]), token_budget=rt.token_budget, prefill_replicas=x,
               decode_replicas=y, prefill_batch=int(points.prefill_batch[i]), replicas=int(points.replicas[i]),
               objective=objective,
               objective_value=_num(float(points.metric(objective, slice(i, i + 1))[0])), limit=limit,
               metrics=metrics, kv_capacity_gb=kv_capacity / 1e9,
               engine=rt.engine, memory_fraction=rt.memory_fraction,
               mem_fraction_static=static_fraction(dep, kv_capacity), features=_features(rt, dep),
               context_len=context_len(w), redundant_experts=par.redundant_experts, ep_a2a=par.ep_a2a)


def static_fraction(dep: Deployment, kv_capacity: float) -> float:
    """SGLang's --mem-fraction-static for the KV assumed: (weight bytes per GPU + KV capacity bytes) / HBM
    bytes, rounded down to 0.01 (rounding up would claim more memory than was priced), at most 1."""
    static = (weight_bytes_per_gpu(dep.model, dep.dtypes, dep.par) + kv_capacity) / dep.gpu.hbm_bytes
    return float(np.floor(min(static, 1.0) * 100) / 100)


def pool_fields(dep: Deployment, max_num_seqs: int, kv_capacity: float) -> dict:
    """The Row fields of one disaggregated pool as priced on its own deployment ``dep`` (Row.pools): its
    layout, its engine limits (``max_num_seqs``: the decode pool's concurrent sequences, the prefill pool's
    prompts per prefill step; its own token budget) and its memory share (:func:`static_fraction` of its
    own KV capacity)."""
    p, rt = dep.par, dep.runtime
    return dict(tp=p.tp, pp=p.pp, ep=p.ep, dp=p.dp, attention_dp=p.attention_dp, nodes=p.nodes,
                replica_gpus=p.replica_gpus, redundant_experts=p.redundant_experts, ep_a2a=p.ep_a2a,
                max_num_seqs=int(max_num_seqs), token_budget=rt.token_budget, memory_fraction=rt.memory_fraction,
                mem_fraction_static=static_fraction(dep, kv_capacity))


def context_len(w: Workload) -> int:
    """The longest request of the workload's length classes: prompt + output tokens."""
    m = w.lengths
    return int(np.ceil(max(i + o for i, o in zip(m.inputs, m.outputs))))


def _features(rt, dep=None) -> dict:
    """The engine features the row was evaluated with (runtime.py; docs/features/); with a host KV tier its
    pool per GPU (GB) as priced (offload.tier_of)."""
    out = {}
    if rt.speculative is not None:
        out.update(speculative=rt.speculative, spec_tokens=rt.spec_tokens, acceptance=rt.acceptance)
    if rt.prefix_hit_rate:
        out["prefix_hit_rate"] = rt.prefix_hit_rate
    if rt.shared_prefix_len:
        out["shared_prefix_len"] = rt.shared_prefix_len
    if rt.kv_offload != "none":
        out["kv_offload"] = rt.kv_offload
        tier = tier_of(dep, rt) if dep is not None else None
        if tier is not None:
            out["kv_offload_gb"] = tier.pool_bytes / 1e9
    for key in ("spec_topk", "spec_draft_tokens"):
        v = getattr(rt, key, None)
        if rt.speculative is not None and v and (key != "spec_topk" or v > 1):   # topk 1, 0 tokens: chain
            out[key] = v
    return out


def unit_label(row: Row) -> str:
    if row.mode == "disaggregated":
        return f"{row.prefill_replicas}P+{row.decode_replicas}D x ({row.layout})"
    return row.layout


def fmt(metric: str, v: float | None) -> str:
    if v is None:
        return "n/a"
    if metric in ("gpus", "gpus_for_rate", "concurrency"):
        return f"{v:,.0f} {UNITS[metric]}"
    digits = 0 if abs(v) >= 100 else (1 if abs(v) >= 10 else 2)
    return f"{v:,.{digits}f} {UNITS.get(metric, '')}".strip()


def winner_reason(rows: list[Row], objective: str) -> str:
    """Why rows[0] wins: its objective against the runner-up's, what stops it, what binds its step."""
    if not rows:
        return ""
    w = rows[0]
    head = f"{unit_label(w)} at concurrency {w.concurrency} wins on {objective}: {fmt(objective, w.objective_value)}"
    if len(rows) > 1:
        r = rows[1]
        a, b = w.objective_value, r.objective_value
        if a is not None and b not in (None, 0):
            rel = (a - b) / abs(b) * SENSE[objective]
            cmp = (f"{rel:+.1%} better than" if rel > 0 else "ties (wins on tok/s per GPU, then fewer GPUs) with")
        else:
            cmp = "against"
        head += f", {cmp} the runner-up {unit_label(r)} ({fmt(objective, b)})"
    else:
        head += ", the only configuration that qualifies"
    stop = {"objective peak": "a higher concurrency would not improve the objective",
            "kv-cache": "the KV cache holds no more sequences", "token budget": "the step token budget is full"}
    why = stop.get(w.limit, f"a higher concurrency breaks {w.limit}")
    step = w.explanation[:1].upper() + w.explanation[1:]
    return f"{head}. It stops at concurrency {w.concurrency} because {why}. {step}".strip()


@dataclass
class SearchResult:
    model: str
    workload: Workload
    objective: str
    constraints: list[Constraint]
    table: list[Row]
    winner_reason: str
    points: Points
    feasible: np.ndarray
    labels: list[str]  # per layout: '8x h100_sxm TP8 fp8'
    skipped: dict[str, int]
    skipped_examples: dict[str, str]
    elapsed_s: float
    backend: str
    notes: list[str] = field(default_factory=list)
    default_frontier: tuple[str, str] = ("tok_s_per_gpu", "tok_s_per_user")
    modes: tuple[str, ...] = ("aggregated",)  # serving modes swept (aggregated, disaggregated or both)
    engine: str = ""  # the serving engine every configuration was evaluated under
    warnings: list[str] = field(default_factory=list)  # what the faces print as warnings (faces/api.py: a long context)

    @property
    def evaluated(self) -> int:
        """Configurations evaluated: (layout, concurrency) pairs, each with every figure."""
        return len(self.points)

    @property
    def layouts(self) -> int:
        return len(self.labels)

    def frontier_indices(self, x: str | None = None, y: str | None = None) -> np.ndarray:
        """Point indices of the non-dominated feasible points of (x, y), sorted by x."""
        x, y = check_metric(x or self.default_frontier[0], "x"), check_metric(y or self.default_frontier[1], "y")
        idx = np.flatnonzero(self.feasible)
        xv, yv = self.points.metric(x, idx), self.points.metric(y, idx)
        on = idx[pareto_mask(xv, yv, SENSE[x] > 0, SENSE[y] > 0)]
        return on[np.argsort(self.points.metric(x, on), kind="stable")]

    def point(self, i: int) -> dict:
        p = self.points
        d = {"layout": self.labels[int(p.layout[i])], "concurrency": int(p.concurrency[i]),
             "prefill_replicas": int(p.prefill_replicas[i]), "decode_replicas": int(p.decode_replicas[i]),
             "prefill_batch": int(p.prefill_batch[i]), "replicas": int(p.replicas[i])}
        d.update({k: _num(float(p.metric(k, slice(i, i + 1))[0])) for k in row_metrics(p)})
        return d

    def frontier(self, x: str | None = None, y: str | None = None) -> list[dict]:
        """Non-dominated configurations of (x, y) (each maximized or minimized by its SENSE), by x."""
        return [self.point(int(i)) for i in self.frontier_indices(x, y)]

    def to_dict(self, frontiers: list[tuple[str, str]] | None = None) -> dict:
        pairs = frontiers or [self.default_frontier]
        w = self.workload
        return {
            "model": self.model, "objective": self.objective, "backend": self.backend, "engine": self.engine,
            "workload": {"input_len": w.input_len, "output_len": w.output_len, "lengths": describe(w.lengths),
                         "disaggregated": w.disaggregated,
                         "modes": list(self.modes),
                         "target_rate": self.points.target_rate},
            "constraints": [c.label for c in self.constraints],
            "winner_reason": self.winner_reason, "table": [r.to_dict() for r in self.table],
            "frontiers": [{"x": x, "y": y, "points": self.frontier(x, y)} for x, y in pairs],
            "evaluated": self.evaluated, "layouts": self.layouts, "feasible": int(np.count_nonzero(self.feasible)),
            "skipped": dict(self.skipped), "skipped_examples": dict(self.skipped_examples),
            "elapsed_s": self.elapsed_s, "notes": list(self.notes),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }

    def to_csv(self) -> str:
        """The ranked table, one row per line, metrics as columns."""
        buf = io.StringIO()
        rows = [r.flat() for r in self.table]
        if rows:
            writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        return buf.getvalue()
