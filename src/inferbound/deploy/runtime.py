"""An engine's runtime settings for one deployment, and the one rule that sizes its KV cache.

``engines.py`` types the cited engine profiles of data/engines.yaml; here a profile meets a deployment
(its GPU's memory, its TP size, its attention-DP groups) and the user's overrides, and becomes a
:class:`Runtime`: block size, token budget and running-sequence cap per attention group (each
data-parallel rank schedules its own, engines.yaml ``dp_*_scope``), chunked prefill and mixed steps,
KV reservation (``max``: prompt + max output held from admission, TensorRT-LLM's GUARANTEED_NO_EVICT;
``current``: blocks as the sequence grows, preempting when they run out: vLLM, SGLang), preemption,
the largest CUDA-graph decode batch, and the memory fraction of the engine's KV rule.

KV capacity per GPU (``kv_capacity_bytes``), with M the GPU's memory, W the weights per GPU, A the
activations of a profiling step at the token budget, N the non-torch reserve (runtime.yaml) and f the
engine's fraction (engine_rules.kv_cache_bytes):

    total_fraction (vLLM ``gpu_memory_utilization``):   KV = f·M − W − A − N
    static_fraction (SGLang ``mem_fraction_static``):    KV = f·M − W      (f automatic by GPU and TP)
    free_fraction (TensorRT-LLM ``kv_cache_free_gpu_memory_fraction``):  KV = f·(M − W − A − N)
    static_max_len (gpt-fast, llama.cpp: one static batch): KV = M − W − A − N

Every caller (memory fit and max batch, max throughput, search, the simulator's block pool) sizes the
cache with this function.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import engine_modes, offload, sampling, speculative
from ..base.caches import cache
from .engine_rules import cuda_graph_cap, sglang_max_running, tier_value
from .engines import EngineProfile, profile_for_framework, profile_of  # noqa: F401  (re-exported)
from .kv_capacity import draft_weight_bytes, kv_capacity_bytes, kv_token_bytes, runtime_reserve_bytes  # noqa: F401

RESERVATIONS = ("max", "current")
PREEMPTIONS = ("recompute", "swap", "none")


@dataclass(frozen=True)
class Runtime:
    """One engine's settings for one deployment (module docstring); limits are per attention group."""

    engine: str  # name@version
    label: str
    continuous: bool
    kv_rule: str
    memory_fraction: float | None  # None: SGLang's automatic fraction for this GPU and TP
    block_size: int
    token_budget: int
    max_num_seqs: int | None  # None: SGLang's automatic cap (from the KV pool)
    chunked_prefill: bool
    mixed_batches: bool
    reservation: str
    preemption: str
    cuda_graph_max_batch: int
    prefix_caching: bool
    sliding_window: bool
    overridden: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())  # adjustments the user should know about (printed as warnings)
    # issue 14 features (FEATURES below; docs/features/*.md): speculative decoding, prefix caching, KV offload
    speculative: str | None = None  # draft:MODEL | eagle | mtp | ngram (speculative.py)
    spec_tokens: int = 0  # k tokens drafted per step
    acceptance: float = 0.0  # a, probability a drafted token is accepted
    acceptance_positions: tuple | None = None  # a_1..a_k per position (speculative.acceptance_settings)
    spec_topk: int = 1  # tree drafting: candidates per depth (SGLang --speculative-eagle-topk)
    spec_draft_tokens: int = 0  # tree drafting: tokens verified per sequence (0: k + 1)
    spec_match_rate: float = 1.0  # ngram: share of sequences with a proposal
    prefix_hit_rate: float = 0.0  # share of each prompt's tokens found in the prefix cache (prefix.py)
    shared_prefix_len: int = 0  # tokens of a system prompt every request shares
    prefix_groups: int = 1  # distinct shared prefixes the requests pick from (prefix.py: LRU hit shares)
    kv_offload: str = "none"  # none | host (offload.py)
    kv_offload_bytes: float | None = None  # host KV pool per GPU (None: the default rule)
    scheduler_steps: int = 1  # vLLM V0 multi-step: decode steps per scheduler call (engine_modes.py)
    stream_interval: int = 1  # tokens per streamed chunk (SGLang --stream-interval; engine_modes.py)
    stream_first: str = "at_once"  # at_once | at_multiple: when the first chunk leaves (workloads/streaming.py)
    # sampling beyond the plain path (sampling.py): the requests' top_p and repetition penalty, and the bytes per
    # fp32 logit the engine's sampler moves for them (below 128 rows, from 128 rows)
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    sampler_bytes: tuple = (0.0, 0.0)
    recv_interval: int = 1  # SGLang --scheduler-recv-interval (engine_modes.py): decode steps between receives

    @property
    def name(self) -> str:
        return self.engine.split("@", 1)[0]

    def describe(self) -> str:
        """'vLLM 0.33.0 (V1): block 16, budget 8192, max 1024 seqs, gpu_memory_utilization 0.92'."""
        frac = "auto" if self.memory_fraction is None else f"{self.memory_fraction:g}"
        seqs = "auto" if self.max_num_seqs is None else f"{self.max_num_seqs}"
        extra = ""
        if self.speculative is not None:
            extra += f", speculative {self.speculative} k={self.spec_tokens} a={self.acceptance:g}"
        if self.prefix_hit_rate:
            extra += f", prefix hit rate {self.prefix_hit_rate:g}"
        if self.shared_prefix_len:
            extra += f", shared prefix {self.shared_prefix_len} tokens"
        if self.prefix_groups > 1:
            extra += f" in {self.prefix_groups} groups"
        if self.kv_offload != "none":
            extra += f", KV offload {self.kv_offload}"
        if self.stream_interval > 1:
            extra += f", stream interval {self.stream_interval}"
        extra += sampling.describe(self.top_p, self.repetition_penalty)
        if self.recv_interval > 1:
            extra += f", recv interval {self.recv_interval}"
        return (f"{self.label}: block {self.block_size}, token budget {self.token_budget}, max {seqs} seqs, "
                f"KV {self.kv_rule.replace('_', ' ')} {frac}, reservation {self.reservation}{extra}")


def _reservation(p: EngineProfile) -> str:
    kind = p.kv_reservation.value if p.kv_reservation is not None else "on_demand"
    return "max" if kind in ("max_output", "static") else "current"


def resolve(dep, engine: str | EngineProfile | None = None, offline: bool = False, **overrides) -> Runtime:
    """The runtime of ``engine`` on ``dep`` with ``overrides`` (block_size, token_budget, max_num_seqs,
    memory_fraction, reservation, preemption, chunked_prefill, prefix_caching; None = the profile's)."""
    p = engine if isinstance(engine, EngineProfile) else profile_of(engine)
    g, par = dep.gpu, dep.par
    mem, tp = g.hbm_bytes, par.tp
    tiers = (p.token_budget_offline if offline and p.token_budget_offline is not None else p.token_budget)
    budget = tier_value(tiers, mem, g.name, tp) if tiers is not None else 1 << 20
    seqs = tier_value(p.max_seqs, mem, g.name, tp) if p.max_seqs is not None else None
    chunked = bool(p.chunked_prefill.value) if p.chunked_prefill is not None else False
    len_note: tuple[str, ...] = ()
    if p.chunked_token_budget is not None and chunked:
        budget = p.chunked_token_budget.value
    elif tiers is not None and tiers.at_least_max_model_len and not chunked:
        if dep.model.max_position_embeddings is not None:
            budget = max(budget, int(dep.model.max_position_embeddings))  # max_model_len defaults to the config's
        else:  # no context length in config.json: the max(max_model_len, ·) term cannot be read off it
            len_note = (f"{dep.model.name} states no max_position_embeddings: the token budget stays at the "
                        f"profile's {budget} without the max(max_model_len, {budget}) term (vLLM then assumes "
                        f"max_model_len 2048, vllm/config.py _get_and_verify_max_len)",)
    frac = p.kv_sizing.fraction.value if p.kv_sizing.fraction is not None else None
    rt = Runtime(
        engine=p.key, label=p.label, continuous=bool(p.continuous_batching.value), kv_rule=p.kv_sizing.rule,
        memory_fraction=frac, block_size=int(p.block_tokens.value) if p.block_tokens is not None else 1,
        token_budget=int(budget), max_num_seqs=seqs, chunked_prefill=chunked,
        mixed_batches=bool(p.mixed_batches.value) if p.mixed_batches is not None else True,
        reservation=_reservation(p),
        preemption=p.preemption.value if p.preemption is not None and p.preemption.value != "retract" else
        ("recompute" if p.preemption is not None else "none"),
        cuda_graph_max_batch=0, prefix_caching=bool(p.prefix_caching.value) if p.prefix_caching else False,
        sliding_window=bool(p.sliding_window.value) if getattr(p, "sliding_window", None) is not None else True)
    given = {k: v for k, v in overrides.items() if v is not None}
    checks = {"block_size": 1, "token_budget": 1, "max_num_seqs": 1}
    for k, low in checks.items():
        v = given.get(k)
        if v is not None and (isinstance(v, bool) or int(v) != v or v < low):
            raise ValueError(f"{k}={v!r} must be an integer >= {low}")
    if "memory_fraction" in given and not 0 < float(given["memory_fraction"]) <= 1:
        raise ValueError(f"memory_fraction={given['memory_fraction']!r} must be in (0, 1]")
    if "reservation" in given and given["reservation"] not in RESERVATIONS:
        raise ValueError(f"kv_reservation={given['reservation']!r} unknown; allowed: {', '.join(RESERVATIONS)}")
    if "preemption" in given and given["preemption"] not in PREEMPTIONS:
        raise ValueError(f"preemption={given['preemption']!r} unknown; allowed: {', '.join(PREEMPTIONS)}")
    modes = engine_modes.settings(p, given)  # scheduler_steps, cuda_graphs (engine_modes.py)
    unknown = set(given) - set(checks) - {"memory_fraction", "reservation", "preemption", "chunked_prefill",
                                           "prefix_caching"} - set(FEATURES) - set(engine_modes.MODES)
    if unknown:
        raise ValueError(f"runtime option {sorted(unknown)[0]!r} unknown; allowed: block_size, token_budget, "
                         f"max_num_seqs, memory_fraction, reservation, preemption, chunked_prefill, prefix_caching, "
                         f"{', '.join(FEATURES)}")
    base = {k: (int(v) if k in checks else v) for k, v in given.items()
            if k not in FEATURES and k not in engine_modes.MODES}
    feats, notes = _features(dep, rt, given)
    rt = replace(rt, **{**base, **feats}, scheduler_steps=modes.steps, stream_interval=modes.stream,
                 stream_first=modes.stream_first, recv_interval=modes.recv, overridden=tuple(sorted(given)),
                 notes=rt.notes + len_note + notes + modes.notes)
    if rt.preemption == "none" and rt.reservation == "current" and given.get("preemption") == "none":
        # blocks granted as sequences grow run out under load, and an engine must then preempt someone
        raise ValueError(f"preemption='none' needs kv_reservation='max' (blocks held from admission, as TensorRT-LLM's "
                         f"GUARANTEED_NO_EVICT), but the reservation is 'current'; allowed: kv_reservation=max, or "
                         f"preemption recompute or swap")
    if rt.max_num_seqs is None and p.max_seqs_auto is not None:
        kv_tokens = kv_capacity_bytes(dep, rt, p) / max(kv_token_bytes(dep), 1e-30)
        context = dep.model.max_position_embeddings or 4096
        rt = replace(rt, max_num_seqs=max(1, sglang_max_running(p, int(kv_tokens), int(context))))
    if rt.max_num_seqs is None:
        rt = replace(rt, max_num_seqs=rt.token_budget)
    if rt.max_num_seqs > rt.token_budget and rt.mixed_batches:  # every running sequence must fit one step (vLLM)
        if "max_num_seqs" in given:
            raise ValueError(f"max_num_seqs={rt.max_num_seqs} must be <= token_budget={rt.token_budget} "
                             f"(every running sequence takes a token of the step)")
        rt = replace(rt, max_num_seqs=rt.token_budget, notes=rt.notes + (
            f"max_num_seqs lowered to the token budget {rt.token_budget} (the engine requires max_num_seqs <= "
            f"max_num_batched_tokens)",))
    graphs = cuda_graph_cap(p, mem, tp, rt.max_num_seqs, blackwell=g.name.lower().startswith(("b", "gb")))
    return replace(rt, cuda_graph_max_batch=0 if not modes.graphs else int(graphs))


#: runtime.resolve overrides of the issue-14 features (options.py ENGINE declares them; docs/features/)
FEATURES = ("speculative", "spec_tokens", "acceptance", "prefix_hit_rate", "shared_prefix_len", "prefix_groups", "kv_offload",
            "kv_offload_gb") + speculative.ACCEPTANCE_FORMS[1:] + speculative.DRAFT_SHAPE + sampling.MODES


def _number(name: str, v, low, high=None, high_open: bool = False, integer: bool = False):
    """``v`` checked as a number in [low, high] (or [low, high)); one-line ValueError naming ``name``."""
    bad = isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or (integer and int(v) != v)
    if not bad:
        bad = v < low or (high is not None and (v >= high if high_open else v > high))
    if bad:
        kind = "an integer" if integer else "a number"
        rng = f">= {low:g}" if high is None else f"in [{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name}={v!r} must be {kind} {rng}")
    return int(v) if integer else float(v)


def _features(dep, rt: Runtime, given: dict) -> tuple[dict, tuple[str, ...]]:
    """The feature overrides validated (one-line errors naming the field) and the notes they imply:
    speculative decoding (speculative.py), prefix caching (prefix.py), KV offload (offload.py)."""
    out, notes = {}, []
    spec = given.get("speculative")
    k, a = given.get("spec_tokens"), given.get("acceptance")
    if spec is None:
        for name, v in (("spec_tokens", k), *((f, given.get(f)) for f in speculative.ACCEPTANCE_FORMS +
                                               speculative.DRAFT_SHAPE)):
            if v is not None:
                raise ValueError(f"{name}={v!r} given without speculative; allowed: set speculative "
                                 f"({speculative.ALLOWED})")
    else:
        method, _ = speculative.parse_method(spec)
        m = dep.model
        if method == "mtp" and not m.mtp_layers:
            raise ValueError(f"speculative='mtp' needs a model with multi-token-prediction layers "
                             f"(num_nextn_predict_layers >= 1); {m.name} has none; allowed: draft:MODEL, eagle, ngram")
        if k is None and given.get("acceptance_positions") is not None:
            k, _, _, _ = speculative.acceptance_settings(method, None, given)  # k = the list's length
        if k is None:
            if method != "mtp":
                raise ValueError(f"speculative={spec!r} needs spec_tokens (tokens drafted per step, an integer "
                                 f">= 1), e.g. spec_tokens=3")
            k = m.mtp_layers
            notes.append(f"spec_tokens defaults to the model's num_nextn_predict_layers={k} (vLLM's default for MTP)")
        k = _number("spec_tokens", k, 1, 32, integer=True)
        _, a_form, spec_fields, spec_notes = speculative.acceptance_settings(method, k, given)
        notes.extend(spec_notes)
        if a is None:
            a = a_form
        if a is None:
            if method != "mtp":
                raise ValueError(f"speculative={spec!r} needs acceptance (the probability a drafted token is "
                                 f"accepted, a number in [0, 1)), e.g. acceptance=0.7; or one of "
                                 f"{', '.join(speculative.ACCEPTANCE_FORMS[1:])}")
            d = speculative.defaults()["mtp_acceptance"]
            a = float(d["value"])
            notes.append(f"acceptance defaults to {a:g} for MTP ({d['source']})")
        a = _number("acceptance", a, 0.0, 1.0, high_open=True)
        out.update(speculative=str(spec).strip(), spec_tokens=k, acceptance=a, **spec_fields)
    h, s = given.get("prefix_hit_rate"), given.get("shared_prefix_len")
    if h is not None:
        out["prefix_hit_rate"] = _number("prefix_hit_rate", h, 0.0, 1.0)
    if s is not None:
        out["shared_prefix_len"] = _number("shared_prefix_len", s, 0, integer=True)
    n_groups = given.get("prefix_groups")
    if n_groups is not None:
        out["prefix_groups"] = _number("prefix_groups", n_groups, 1, integer=True)
        if out["prefix_groups"] > 1 and not out.get("shared_prefix_len"):
            raise ValueError(f"prefix_groups={n_groups!r} needs shared_prefix_len (the tokens of each group's prefix); "
                             f"allowed: prefix_groups=1, or give shared_prefix_len")
    if out.get("prefix_hit_rate") and out.get("shared_prefix_len"):
        raise ValueError(f"prefix_hit_rate={h!r} and shared_prefix_len={s!r} given together; allowed: one of them")
    if out.get("prefix_hit_rate") or out.get("shared_prefix_len"):
        if given.get("prefix_caching") is False:
            raise ValueError("prefix_hit_rate/shared_prefix_len need prefix caching, and prefix_caching=False was "
                             "given; allowed: prefix caching on, or no prefix hits")
        if not rt.prefix_caching and given.get("prefix_caching") is not True:
            out["prefix_caching"] = True
            notes.append(f"prefix caching turned on for the prefix hits ({rt.label} has it off by default)")
    mode, gb = given.get("kv_offload"), given.get("kv_offload_gb")
    if mode is not None:
        if mode not in offload.MODES:
            raise ValueError(f"kv_offload={mode!r} unknown; allowed: {', '.join(offload.MODES)}")
        if mode == "host":
            offload.host_link(dep.gpu)  # a GPU without a host tier: one line now
            if out.get("prefix_groups", 1) <= 1:
                notes.append("kv_offload=host keeps evicted prefixes in host memory (the running batch's KV stays on "
                             "the GPU); without shared_prefix_len and prefix_groups > 1 no prefix is evicted, so the "
                             "tier changes no figure here (docs/features/kv-offload.md)")
        out["kv_offload"] = mode
    if gb is not None:
        if out.get("kv_offload", "none") != "host":
            raise ValueError(f"kv_offload_gb={gb!r} given without kv_offload='host'; allowed: set kv_offload=host")
        out["kv_offload_bytes"] = _number("kv_offload_gb", gb, 0.0) * 1e9
        if not out["kv_offload_bytes"]:
            raise ValueError(f"kv_offload_gb={gb!r} must be a number > 0")
    fields, sample_notes = sampling.settings(rt.engine, given, dep.gpu.vendor)  # the profile's version
    out.update(fields)
    return out, tuple(notes) + sample_notes


_OFFLINE = cache("offline runtime", 512)


def offline_runtime(dep) -> Runtime:
    """The engine's settings when it runs an offline benchmark (its offline token budget, and for
    TensorRT-LLM the limits trtllm-bench derives), the deployment's overrides kept; kept per deployment."""
    return _OFFLINE.get_or(dep, lambda: resolve(dep, dep.engine, offline=True, **dict(dep.engine_options)))
