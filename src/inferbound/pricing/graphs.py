"""Fixed costs of a step the engine replays from a CUDA graph (data/cuda_graphs.yaml).

Priced eagerly (kernel_pricing.py, roofline.py), every operator pays its fixed cost o_i: a curve's
``overhead_s`` (and MoE's ``o_moe``) per kernel term, the roof's ``kernel_overhead_s``. Those were measured
one operator per launch or per graph replay, so they carry a launch each. Inside one captured graph a
kernel node costs c = ``kernel_in_graph_s`` of GPU time and the step pays ``graph_launch_s`` (L) once per
graph. For a step the engine runs as a graph (engines.yaml ``cuda_graphs.mode`` through ``mode_rules``;
its batch per attention-DP rank within the capture sizes up to Runtime.cuda_graph_max_batch; a GPU of a
vendor whose c is measured: NVIDIA) the fixed
cost of one pipeline stage is

    full graph:      Σ_i n_i · min(o_i, k_i·c) + h·L
    piecewise graph: Σ_{i not attention} n_i · min(o_i, k_i·c) + Σ_{i attention} n_i·o_i + (A + 1)·h·L

with n_i the operator's instances, k_i its kernels (the fixed-cost terms its price sums: one per GEMM of a
GEMM op, three for a fused MoE layer — routing and its two grouped GEMMs —, one per attention kernel, one
per roofline op), A the attention (and scan) instances of the stage: piecewise graphs are split at every
attention op, which runs eagerly between them (vLLM ``splitting_ops``: N attention ops, N + 1 pieces). The
launch is host time, scaled by the machine's host_factor h (efficiency.yaml) like the engine's host work. The
min keeps a kernel never dearer in a graph than measured alone. Host work (the engine's scheduler and
sampling: kernel_pricing.host_cost) and collectives are left as priced. Every o_i here is constant in the
step's load (curve fixed terms are; an attention op's decode term is paid whenever it has decodes), so the
change :func:`fixed_delta` returns is one number per stage and kind of graph, read off the stage priced at
one decoding sequence. A graph step is priced at its padded batch (:func:`padded`): the engine runs the
graph captured for the next size up (``padding``), or no graph when the batch is not a captured size.
A run launched without graphs (``cuda_graphs=off``: SGLang ``--disable-cuda-graph``, vLLM ``--enforce-eager``;
deploy/engine_modes.py) has cap 0, so every step is eager: Σ_i n_i·o_i, each kernel its own fixed cost.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from ..base.datafiles import data_yaml
from ..deploy.engines import profile_of

EAGER, FULL, PIECEWISE = 0, 1, 2
KINDS = {"eager": EAGER, "full": FULL, "piecewise": PIECEWISE}


def graph_data() -> dict:
    return data_yaml("cuda_graphs.yaml")


def costs() -> tuple[float, float]:
    """(c, L): seconds of one kernel node inside a graph and of one graph launch."""
    c = graph_data()["costs"]
    return float(c["kernel_in_graph_s"]["value"]), float(c["graph_launch_s"]["value"])


@dataclass(frozen=True)
class Plan:
    """How one engine runs its steps as graphs on one deployment (module docstring)."""

    decode: int  # EAGER, FULL or PIECEWISE for a decode-only step
    mixed: int  # for a step with prefill tokens
    sizes: tuple  # captured batch sizes, ascending (empty: every size up to ``cap``)
    cap: int  # the largest captured batch (per attention-DP rank)
    padding: bool


def _capture_entry(engine_key: str) -> dict:
    """The capture-size entry of a profile: its key, then its ``inherits`` chain, then its name."""
    table = graph_data()["capture"]
    key = engine_key
    parents = {f"{p['name']}@{p['version']}": p.get("inherits") for p in data_yaml("engines.yaml")["profiles"]}
    while key is not None:
        if key in table:
            return table[key]
        key = parents.get(key)
    name = engine_key.split("@", 1)[0]
    if name in table:
        return table[name]
    raise ValueError(f"engine={engine_key!r} captures CUDA graphs but data/cuda_graphs.yaml has no capture sizes "
                     f"for it; allowed: {', '.join(sorted(table))}")


def sizes_of(entry: dict, cap: int) -> tuple:
    """Captured sizes up to ``cap`` (data/cuda_graphs.yaml ``capture``); () for ``every``."""
    if entry.get("every"):
        return ()
    out = {int(s) for s in entry.get("sizes", ()) if s <= cap}
    for start, stop, step in entry.get("ranges", ()):
        top = cap if stop is None else min(int(stop), cap)
        out.update(range(int(start), top + 1, int(step)))
    if entry.get("append_cap"):
        out.add(int(cap))
    return tuple(sorted(out))


def priced_vendors() -> tuple:
    """GPU vendors whose in-graph kernel cost is measured (cuda_graphs.yaml ``kernel_in_graph_s.vendors``)."""
    return tuple(graph_data()["costs"]["kernel_in_graph_s"]["vendors"])


def plan_of(engine_key: str, cap: int, vendor: str = "NVIDIA") -> Plan:
    """The graph plan of a profile with the capture cap ``cap`` (Runtime.cuda_graph_max_batch; 0: none) on a
    GPU of ``vendor``: eager where the vendor's in-graph kernel cost is not measured (priced_vendors)."""
    g = profile_of(engine_key).cuda_graphs
    mode = "none" if g is None or cap <= 0 or vendor not in priced_vendors() else g.mode.value
    rules = graph_data()["mode_rules"]
    if mode not in rules:
        raise ValueError(f"cuda_graphs.mode={mode!r} of engine={engine_key!r} has no rule in data/cuda_graphs.yaml; "
                         f"allowed: {', '.join(rules)}")
    r = rules[mode]
    if r["decode"] == "eager" and r["mixed"] == "eager":
        return Plan(EAGER, EAGER, (), 0, False)
    entry = _capture_entry(engine_key)
    sizes = sizes_of(entry, int(cap))
    top = sizes[-1] if sizes else int(cap)
    return Plan(KINDS[r["decode"]], KINDS[r["mixed"]], sizes, top, bool(entry.get("padding")))


def padded(plan: Plan, batch):
    """(graph batch, captured?) of a batch per rank (floats or arrays): the next captured size up with
    padding, the batch itself where it is a captured size without; captured only up to the cap."""
    b = np.asarray(batch, dtype=float)
    if not plan.sizes:  # every size is captured
        return b, (b >= 1) & (b <= plan.cap)
    s = np.asarray(plan.sizes, dtype=float)
    i = np.minimum(np.searchsorted(s, b, side="left"), s.size - 1)
    up = s[i]
    if plan.padding:
        captured = (b >= 1) & (b <= plan.cap)
        return np.where(captured, up, b), captured
    exact = (up == b) & (b <= plan.cap)
    return b, exact & (b >= 1)


def padded_scalar(plan: Plan, batch: float) -> tuple[float, bool]:
    """:func:`padded` on one plain number (the simulator's step: bisect, no numpy)."""
    if not (1 <= batch <= plan.cap):
        return batch, False
    if not plan.sizes:
        return batch, True
    up = plan.sizes[bisect_left(plan.sizes, batch)]
    if plan.padding:
        return float(up), True
    return batch, up == batch


def kernels_of(priced) -> int:
    """k_i of a priced operator (module docstring)."""
    sh = priced.op.shape or {}
    if "gemm" in sh:
        return len(sh["gemm"])
    if "moe" in sh:
        return 3
    return 1


def fixed_of(priced, kernel_overhead_s: float) -> float:
    """o_i per instance: the curve's fixed seconds, or the roof's per-kernel overhead."""
    if priced.parts is not None:
        return float(np.asarray(priced.parts[2]).reshape(-1)[0])
    return float(kernel_overhead_s)


def fixed_delta(ops, kernel_overhead_s: float, host_factor: float = 1.0) -> tuple[float, float]:
    """(full-graph change, piecewise change) of a stage's fixed seconds, from its priced operators at one
    decoding sequence (module docstring): the graph sum minus the eager sum, launches included. A launch is
    host work: it scales with the machine's ``efficiency.host_factor`` as the engine's host work does."""
    c, launch = costs()
    launch *= host_factor
    full = piece = 0.0
    attention = 0
    for p in ops:
        if p.op.kind in ("host", "collective"):
            continue
        o = fixed_of(p, kernel_overhead_s)
        d = p.op.count * (min(o, kernels_of(p) * c) - o)
        full += d
        if p.op.kind in ("attention", "scan"):
            attention += p.op.count
        else:
            piece += d
    return full + launch, piece + (attention + 1) * launch
