"""The step contract: the price of any step of a deployment, for every workload.

A step of one replica runs D decoding sequences (sequence i has c_i tokens cached and adds one) and
prefill chunks (sequence j adds n_j tokens after p_j cached ones). What prices it is a :class:`StepLoad`
(step/load.py, re-exported here with ``uniform`` and ``of_sequences``): T = D + Σ n_j new tokens, S sampled
sequences, the number of sequences and, per attention kind, the query-key pairs and the cached tokens read.

Pricing (``price``): each pipeline stage's operators (``operators.stage_ops``) for one micro-batch,
priced by ``roofline.price_ops``, then one pipeline formula. With pp stages the step runs as
m = min(sequences, pp) micro-batches (or ``par.microbatches``), each 1/m of the load; t_i is stage i's
time for one micro-batch (``comm_overlap`` applied per stage), s the activation send between
neighbouring stages (α + b/β for the micro-batch's T/m·d 16-bit values), o the per-step overhead
(scheduler, sampling: once per step, not per stage):

    isolated step: the pipeline is empty before and after it (a static batch's prefill, a step after
    the replica was idle). Micro-batch k leaves the last stage after Σ_i t_i + (k − 1)·max_i t_i:
        T = Σ_i t_i + (m − 1)·max_i t_i + (pp − 1)·s + o
    (GPipe's fill and drain: (m + pp − 1) stage slots for balanced stages, bubble (pp − 1)/(m + pp − 1);
    Huang et al., "GPipe", NeurIPS 2019.)

    step in a stream: continuous batching, and a static batch's decode steps. The pipeline stays full
    across steps: while micro-batch k runs stage i, micro-batch k + 1 runs stage i − 1, and a sequence's
    next token waits for its own previous one. The step period is the busiest stage's work for all m
    micro-batches, or one micro-batch's trip through every stage if that is longer:
        T = max(m·max_i t_i, Σ_i t_i + (pp − 1)·s) + o
    (iteration-level scheduling with pipelined micro-batches: Orca, Yu et al., OSDI 2022, §4.2; vLLM
    runs pp virtual engines, one micro-batch in flight each.)

A step the engine replays from a CUDA graph (pricing/graphs.py: decode-only steps, and with piecewise
graphs any step, whose batch per attention-DP rank is within the engine's capture sizes) is priced at its
padded batch, every stage's T raised to the captured size (S, the sampled rows and the host work, stays),
and its fixed costs summed by the graph rule: each stage's t_i changes by graphs.fixed_delta
(:func:`graph_step`, :func:`graph_fixed`).

With pp = 1 both are t_0 + o. The split reports the average GPU over the step: m·mean_i of the stage
splits, the sends as communication, o as overhead, the rest as ``bubble``; FLOPs and bytes are the
average GPU's too (the power model's inputs). ``StepModel`` (stepmodel.py) is this same function with
the stage work tabulated over T and S; its parity with ``price`` is tested.
"""
from __future__ import annotations

import numpy as np

from ..pricing.comm import p2p
from ..base.dtypes import bytes_per_element
from ..model.spec import LayerGroup
from ..operators import _merged_groups, attention_ops, body_ops, head_ops, in_order, mixer_ops, stage_ops
from ..base.caches import cache
from ..base.numeric import fast_ndim
from ..pricing.roofline import SPLIT_KEYS, StepCost, Work, price_ops
from ..deploy.layout import stage_layers  # noqa: F401  (the stages a step runs; re-exported)
from ..deploy.topology import place
from ..pricing.collectives import comm_pricer_of
from ..pricing import graphs as G
from .load import SCALAR_CHUNKS, StepLoad, of_sequences, sequence_sums, uniform  # noqa: F401  (re-exported)

MODES = ("stream", "isolated")


def stages_of(dep) -> list[tuple[list[LayerGroup] | None, bool, bool]]:
    """(layers, first, last) of each stage; the whole model (layers None) without pipeline stages."""
    if dep.par.pp == 1:
        return [(None, True, True)]
    stages = stage_layers(dep.model, dep.par)
    return [(layers, i == 0, i == len(stages) - 1) for i, layers in enumerate(stages)]


def micro_batches(par, sequences):
    """Micro-batches a step of ``sequences`` runs as: min(sequences, pp) (or par.microbatches), >= 1."""
    if par.pp == 1:
        return 1.0
    cap = par.pp if par.microbatches is None else par.microbatches
    return np.maximum(1.0, np.minimum(np.asarray(sequences, dtype=float), cap))


def send_seconds(dep, tokens):
    """Activation send between neighbouring stages for a micro-batch of ``tokens`` new tokens: each of
    its attention groups' ranks sends (tokens/groups)·d values (16-bit) to the next stage."""
    par = dep.par
    link = place(dep.gpu, par, 2, par.tp * par.attention_groups)
    size = np.asarray(tokens, dtype=float) / par.attention_groups * dep.model.hidden_size \
        * bytes_per_element(dep.dtypes.high_precision)
    return p2p(size, link.outer or link.inner)[0]


def combine(dep, stages: list[Work], send, m, mode: str) -> StepCost:
    """The pipeline formula (module docstring) over each stage's priced work for one micro-batch."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} unknown; allowed: {', '.join(MODES)}")
    o = dep.gpu.efficiency.step_overhead_s
    ops = [p for w in stages for p in w.ops]
    if len(stages) == 1:
        w = stages[0]
        split = dict(w.split)
        split["overhead"] = split["overhead"] + o
        split["bubble"] = 0.0
        return StepCost(ops, w.time + o, split["overhead"], split, dict(w.comm_kinds), w.flops, w.bytes)
    pp = len(stages)
    times = [w.time for w in stages]
    longest = np.maximum.reduce([np.asarray(t, dtype=float) for t in times])
    path = sum(times)
    sends = (pp - 1) * send
    if mode == "isolated":
        total = path + (m - 1) * longest + sends + o
    else:
        total = np.maximum(m * longest, path + sends) + o
    share = m / pp
    split = {k: share * sum(w.split[k] for w in stages) for k in SPLIT_KEYS}
    split["communication"] = split["communication"] + sends
    split["overhead"] = split["overhead"] + o
    split["bubble"] = np.maximum(total - sum(split.values()), 0.0)
    kinds: dict = {"p2p": sends}
    for w in stages:
        for k, v in w.comm_kinds.items():
            kinds[k] = kinds.get(k, 0.0) + share * v
    return StepCost(ops, total, split["overhead"], split, kinds, share * sum(w.flops for w in stages),
                    share * sum(w.bytes for w in stages))


def price(dep, load: StepLoad, mode: str = "stream") -> StepCost:
    """The priced step: every stage's operators for one micro-batch (padded to its CUDA graph's batch where
    the engine replays one: :func:`graph_step`), then :func:`combine`."""
    par = dep.par
    m = micro_batches(par, load.sequences)
    mb = load if par.pp == 1 else load.scaled(1.0 / m)
    mb, kind = graph_step(dep, mb)
    works = [graph_fixed(dep, i, kind, stage_work(dep, mb, i, layers, first, last)).with_overlap(par.comm_overlap)
             for i, (layers, first, last) in enumerate(stages_of(dep))]
    return combine(dep, works, send_seconds(dep, mb.tokens) if par.pp > 1 else 0.0, m, mode)


# -- CUDA graphs (pricing/graphs.py) ---------------------------------------------------------------------
_PLANS = cache("CUDA-graph plans", 256)
_DELTAS = cache("CUDA-graph fixed-cost changes", 1024)


def graph_plan(dep) -> G.Plan:
    """How the deployment's engine runs its steps as graphs (graphs.plan_of with the runtime's cap)."""
    rt, vendor = dep.runtime, dep.gpu.vendor
    return _PLANS.get_or((rt.engine, rt.cuda_graph_max_batch, vendor),
                         lambda: G.plan_of(rt.engine, rt.cuda_graph_max_batch, vendor))


def graph_step(dep, mb: StepLoad) -> tuple[StepLoad, object]:
    """(the micro-batch as the graph runs it, graph kind): a decode-only micro-batch (T = its sequences) is
    keyed by its sequences per attention-DP rank, a step with prefill tokens by its tokens per rank; where
    the plan captures that size the step's T becomes the padded size times the ranks (graphs.padded) and
    its kind graphs.FULL or PIECEWISE, else it is unchanged and EAGER. Arrays broadcast. A speculative verify
    pass (T = sequences + its extra queries, the attention sums' fourth entry) replays the decode graph:
    vLLM captures uniform decode batches of 1 + num_speculative_tokens query tokens per request as full
    graphs (uniform_decode_query_len, vllm/v1/cudagraph_dispatcher.py), SGLang its TARGET_VERIFY graphs
    (sglang/srt/model_executor/cuda_graph_runner.py)."""
    plan = graph_plan(dep)
    if plan.decode == G.EAGER and plan.mixed == G.EAGER:
        return mb, G.EAGER
    g = float(dep.par.attention_groups)
    extra = next((v[3] for v in mb.attention.values() if len(v) > 3), 0.0)
    if fast_ndim(mb.tokens) == 0 and fast_ndim(mb.sequences) == 0 and fast_ndim(extra) == 0:
        # one plain-number step (a static batch's prefill, a decode over contexts): the same arithmetic on
        # Python floats (graphs.padded_scalar is graphs.padded on one number)
        t = float(mb.tokens)
        pad, captured = G.padded_scalar(plan, t / g)
        kind = (plan.decode if abs(t - float(mb.sequences) - float(extra)) < 1e-9 else plan.mixed) \
            if captured else G.EAGER
        if kind == G.EAGER:
            return mb, int(kind)
        return StepLoad(float(pad * g), mb.sampled, mb.sequences, mb.attention, mb.seqgroups), int(kind)
    tokens = np.asarray(mb.tokens, dtype=float)
    decode = np.abs(tokens - np.asarray(mb.sequences, dtype=float) - np.asarray(extra, dtype=float)) < 1e-9
    pad, captured = G.padded(plan, tokens / g)
    kind = np.where(captured, np.where(decode, plan.decode, plan.mixed), G.EAGER)
    graph = kind != G.EAGER
    new = np.where(graph, pad * g, tokens)
    if fast_ndim(mb.tokens) == 0:
        kind, new = int(kind), float(new)
    if not np.any(graph):
        return mb, kind
    return StepLoad(new, mb.sampled, mb.sequences, mb.attention, mb.seqgroups), kind


def graph_deltas(dep, stage: int) -> tuple[float, float]:
    """(full, piecewise) change of stage ``stage``'s fixed seconds under a graph (graphs.fixed_delta over the
    stage priced at one decoding sequence); kept per deployment."""
    def build():
        layers, first, last = stages_of(dep)[stage]
        w = stage_work(dep, uniform(dep.model, decode=1.0, context=1.0), stage, layers, first, last)
        return G.fixed_delta(w.ops, dep.gpu.efficiency.kernel_overhead_s, dep.gpu.efficiency.host_factor)
    return _DELTAS.get_or((dep, stage), build)


def graph_delta(dep, stage: int, kind):
    """Seconds stage ``stage`` changes by for graph ``kind`` (0 for EAGER; arrays broadcast)."""
    if fast_ndim(kind) == 0:
        if kind == G.EAGER:
            return 0.0
        full, piece = graph_deltas(dep, stage)
        return full if kind == G.FULL else piece
    full, piece = graph_deltas(dep, stage)
    return np.where(kind == G.FULL, full, np.where(kind == G.PIECEWISE, piece, 0.0))


def graph_fixed(dep, stage: int, kind, w: Work) -> Work:
    """Stage work ``w`` with its fixed costs summed by the graph rule for ``kind`` (:func:`graph_delta`)."""
    d = graph_delta(dep, stage, kind)
    if fast_ndim(d) == 0 and d == 0.0:
        return w
    split = dict(w.split)
    split["overhead"] = split["overhead"] + d
    return Work(split, w.comm_kinds, w.flops, w.bytes, w.ops)


#: priced bodies and heads of plain-number T or S, kept per (deployment, part, T or S)
_WORK = cache("step bodies and heads", 8192)


def stage_work(dep, mb: StepLoad, stage: int, layers, first: bool, last: bool) -> Work:
    """Stage ``stage``'s operators (operators.stage_ops) for the micro-batch ``mb``, priced: the body (a
    function of the step's T alone), the attention kernels and scans (of its load), the LM head (of its
    S alone), in execution order. A body or head of a plain-number T or S is priced once per deployment
    and kept (the contract is a pure function of the deployment and the load; a static batch's decode
    steps repeat the same T); a sweep's arrays price every operator in one call."""
    m_, dt, par, g = dep.model, dep.dtypes, dep.par, dep.gpu
    pricer = comm_pricer_of(dep)
    groups = _merged_groups(m_) if layers is None else layers

    def priced(ops):
        return price_ops(ops, g, dep.compute_dtype, dt.kv_dtype, pricer)
    if fast_ndim(mb.tokens) != 0:  # a sweep: one pricing call for every operator (nothing to keep)
        return priced(stage_ops(m_, dt, par, mb.tokens, mb.sampled, mb.attention, groups, first, last,
                                g.efficiency.moe_imbalance, mb.seqgroups, dep.runtime.sampler_bytes))
    body = _kept(dep, ("body", stage), mb.tokens, lambda: priced(
        body_ops(m_, dt, par, mb.tokens, groups, first, last, g.efficiency.moe_imbalance)))
    kernels = priced(attention_ops(m_, dt, par, groups, mb.attention, mb.tokens, mb.sampled)
                     + mixer_ops(m_, dt, par, groups, mb.seqgroups))
    w = body + kernels
    ops = in_order(body.ops, [p for p in kernels.ops if p.op.kind == "attention"],
                   [p for p in kernels.ops if p.op.kind == "scan"], name=lambda p: p.op.name)
    if last:
        head = _kept(dep, ("head",), mb.sampled,
                     lambda: priced(head_ops(m_, dt, par, mb.sampled, dep.runtime.sampler_bytes)))
        w = w + head
        ops = ops + head.ops
    return Work(w.split, w.comm_kinds, w.flops, w.bytes, ops)


def _kept(dep, key: tuple, x, build) -> Work:
    """``build()``, kept under (``dep``, ``key``, x) when x is a plain number (:func:`stage_work`)."""
    if fast_ndim(x) != 0:
        return build()
    return _WORK.get_or((dep, *key, float(x)), build)


def prefill(dep, batch, input_len) -> StepCost:
    """A static batch's prefill: ``batch`` prompts of ``input_len`` tokens in one isolated step."""
    return price(dep, uniform(dep.model, prompts=batch, new=input_len), "isolated")


def decode(dep, batch, context) -> StepCost:
    """A static batch's decode step: ``batch`` sequences after ``context`` cached tokens, in a stream."""
    return price(dep, uniform(dep.model, decode=batch, context=context), "stream")


# -- work added to a priced step (speculative drafts, host-memory KV reads) ------------------------------
def add_work(a: StepCost, b: StepCost | None) -> StepCost:
    """``a`` and ``b`` run back to back in one step: times, splits, collective kinds, FLOPs and bytes add
    (``a``'s operators are kept as the step's detail)."""
    if b is None:
        return a
    kinds = dict(a.comm_kinds)
    for k, v in b.comm_kinds.items():
        kinds[k] = kinds.get(k, 0.0) + v
    split = {k: a.split.get(k, 0.0) + b.split.get(k, 0.0) for k in set(a.split) | set(b.split)}
    return StepCost(a.ops, a.time + b.time, a.overhead + b.overhead, split, kinds, a.flops + b.flops,
                    a.bytes + b.bytes)


def scale_cost(c: StepCost, f) -> StepCost:
    """``f`` copies of the priced work ``c`` (arrays allowed)."""
    return StepCost(c.ops, c.time * f, c.overhead * f, {k: v * f for k, v in c.split.items()},
                    {k: v * f for k, v in c.comm_kinds.items()}, c.flops * f, c.bytes * f)


def with_time(c: StepCost, seconds, key: str, kind: str | None = None) -> StepCost:
    """``c`` with ``seconds`` (arrays allowed; negative removes) added to split ``key`` and the step's time
    (and to collective kind ``kind``, e.g. a host-memory transfer)."""
    split = dict(c.split)
    split[key] = split.get(key, 0.0) + seconds
    kinds = dict(c.comm_kinds)
    if kind is not None:
        kinds[kind] = kinds.get(kind, 0.0) + seconds
    over = c.overhead + seconds if key == "overhead" else c.overhead
    return StepCost(c.ops, c.time + seconds, over, split, kinds, c.flops, c.bytes)
