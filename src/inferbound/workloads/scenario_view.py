"""What the page's memory bar and time split show for a steady state (max-throughput, serving).

A static batch reports its own memory and phase split (estimate.py). A steady state is priced per step
in workloads/steady_state.py, and its result reports the operating point (requests in flight C, decode
batch D, the step time per output token t); this module prices that same point again with the same
functions to break it down, so the panels describe the scenario and not a static batch:

- **memory per GPU** at C requests in flight per replica (max-throughput: its operating concurrency;
  serving: the mean count in service)::

      weights  = weight_bytes_per_gpu + the draft's weights (speculative decoding)
      KV       = C · k̄ / groups + one copy per attention group of a shared prefix
      k̄        = Σ_c (s_c + τ·p·w_c)·k(H_c) / (1 + τ·p)     (steady_state.kv_per_decoder: the KV of a request
                                                            in flight, H_c its held tokens, whole blocks)
      activations at the token budget B: activation_bytes(B tokens, min(C/groups, B) sequences)
      reserve  = runtime_reserve_bytes (data/runtime.yaml)

  against the HBM and the engine's KV allocation (runtime.kv_capacity_bytes under the scenario's
  runtime: the offline benchmark's for max-throughput, workloads/max_throughput.bench_limits); a host KV
  tier holds evicted prefixes, not running KV (``kv_host_pool``, its pool; ``kv_in_host`` stays 0).

- **time split** per output token of the steady-state step at D (steady_state.steps): its step kinds j
  (a decode-only step, a step that carries prefill chunks) taken ``freq_j`` times per decode step::

      split_k = Σ_j freq_j · split_k(step j) / τ        Σ_k split_k = t  (the result's step_time_s)

  with the one-line explanation of explain.py; ``prefill_step_share`` = Σ_{j≥1} freq_j / Σ_j freq_j,
  the share of engine steps that carry prefill.

- **one bound**: ``bound`` is the bound of the decode-side step at D (explain.phase of ``steps(...).decode``),
  the same step the result's own ``bound`` and its error bands read (workloads/max_throughput.py,
  serving.py, deploy/bands.py), so the page, the API and the CLI name one bound for one operating point;
  ``largest_share`` names the resource with the largest share of the blended split above (prefill chunks
  included), which may differ from the decode step's bound when prompts are long.
"""
from __future__ import annotations

import math

import numpy as np

from ..step.explain import BOUND_WORDS, bound_of, explain, phase
from ..deploy.memory import MemoryReport, activation_bytes, kv_bytes_per_gpu, weight_bytes_per_gpu
from ..deploy.offload import tier_of
from ..deploy.prefix import active as prefix_active, pool_tokens
from ..deploy.runtime import draft_weight_bytes, kv_capacity_bytes, offline_runtime, runtime_reserve_bytes
from ..deploy.speculative import spec_of
from ..step.table import StepModel
from . import steady_state
from .features import Features
from .lengths import Mix
from .max_throughput import MAX_THROUGHPUT_GRID, bench_limits


def memory_at(dep, rt, mix: Mix, in_flight: float, basis: str) -> dict:
    """Memory per GPU with ``in_flight`` requests per replica under runtime ``rt`` (module docstring)."""
    m, dt, par = dep.model, dep.dtypes, dep.par
    groups = par.attention_groups
    per_decoder, _ = steady_state.kv_per_decoder(dep, mix, rt)
    spec = spec_of(rt)
    p = steady_state.prompts_per_decode(mix) * (spec.tau if spec is not None else 1.0)
    pool = pool_tokens(rt)
    kv = in_flight * per_decoder / (1 + p) / groups
    if pool:
        kv += float(kv_bytes_per_gpu(m, dt, par, groups, pool))
    cap = kv_capacity_bytes(dep, rt)
    tier = tier_of(dep, rt)
    w = weight_bytes_per_gpu(m, dt, par) + draft_weight_bytes(dep, rt)
    act = float(activation_bytes(m, dt, par, rt.token_budget, min(math.ceil(in_flight / groups), rt.token_budget)))
    reserve = runtime_reserve_bytes()
    rep = MemoryReport(weights=w, kv_cache=kv, activations=act, reserve=reserve, capacity=dep.gpu.hbm_bytes,
                       kv_capacity=cap, unused=max(dep.gpu.hbm_bytes - w - cap - reserve - act, 0.0),
                       kv_host_capacity=tier.capacity_bytes if tier is not None else 0.0)
    held = [steady_state.held_tokens(i, o, rt.reservation, rt.block_size) for i, o in zip(mix.inputs, mix.outputs)]
    return {**rep.to_dict(), "in_flight": float(in_flight), "kv_on_gpu": float(min(kv, cap) if rep.kv_host_capacity
                                                                             else kv),
            "kv_in_host": float(rep.in_host), "held_tokens": float(np.dot(mix.weights, held)),
            "kv_host_pool": float(tier.pool_bytes) if tier is not None else 0.0,  # evicted prefixes (offload.py)
            **_prefix_hits(dep, rt, mix),
            "kv_reservation": rt.reservation, "token_budget": rt.token_budget, "basis": basis}


def _prefix_hits(dep, rt, mix: Mix) -> dict:
    """{'prefix_hits': shares of requests hitting on the GPU / in the host tier, mean cached tokens} where
    the runtime states prefix hits (workloads/features.py); {} otherwise."""
    if not prefix_active(rt):
        return {}
    fx = Features(dep, rt, mix)
    return {"prefix_hits": {"device_share": fx.s_dev, "host_share": fx.s_host,
                            "cached_tokens": float(np.dot(mix.weights, fx.cached)),
                            "host_tokens": float(np.dot(mix.weights, fx.host_tokens))}}


def step_at(dep, rt, mix: Mix, decode: float, label: str, decode_only: bool = False) -> dict:
    """The time split per output token of the steady-state step at D = ``decode`` (module docstring);
    ``decode_only``: its decode step alone (closed-loop waves, whose D may exceed the random-arrival caps)."""
    g = dep.par.attention_groups
    sm = StepModel(dep, rt.token_budget * g + g, grid_points=MAX_THROUGHPUT_GRID)
    st = steady_state.steps(sm, rt, float(decode), mix, decode_only=decode_only)
    split, kinds = {}, {}
    for f, c in zip(st.freq, st.costs):
        for out, parts in ((split, c.split), (kinds, c.comm_kinds)):
            for k, v in parts.items():
                out[k] = out.get(k, 0.0) + float(np.mean(np.asarray(f * v, dtype=float))) / st.tau
    split = {k: v for k, v in split.items() if v > 0}
    kinds = {k: v for k, v in kinds.items() if v > 0}
    time = float(np.mean(st.per_token("time")))
    bound = phase(st.decode, "").bound  # the decode-side step's, as the result and its bands (docstring)
    freq = [float(np.mean(f)) for f in st.freq]
    return {"time_s": time, "bound": bound, "split_s": split, "communication_s": kinds,
            "largest_share": bound_of(split),
            "explanation": explain(f"{label}, per output token", bound_of(split), split, time, kinds)
            + f"; the decode step alone: {BOUND_WORDS[bound]}",
            "prefill_step_share": sum(freq[1:]) / sum(freq) if sum(freq) > 0 else 0.0,
            "tokens_per_step": float(st.tau), "decode_batch": float(decode)}


def max_throughput_view(dep, r, mix: Mix) -> dict:
    """Memory and time split at a MaxThroughput result's operating point."""
    rt = bench_limits(dep, offline_runtime(dep), mix)
    basis = (f"max-throughput point: {r.concurrency:,.0f} requests in flight per replica (decode batch "
             f"{r.decode_batch:,.4g}), KV of their held tokens (reservation {rt.reservation}); activations at the "
             f"token budget {rt.token_budget:,}")
    return {"memory": memory_at(dep, rt, mix, r.concurrency, basis),
            "step": step_at(dep, rt, mix, r.decode_batch, "Max-throughput step")}


def serving_view(dep, s, mix: Mix) -> dict:
    """Memory at a ServingEstimate's mean count in service and the split of its steady-state step."""
    rt = dep.runtime
    basis = (f"serving steady state: {s.in_service:,.1f} requests in service per replica (mean), KV of their "
             f"held tokens (reservation {rt.reservation}); activations at the token budget {rt.token_budget:,}")
    wave = getattr(s, "wave_step", None)
    # waves: the decode step at the waves' D alone (its bound); their prefill steps are in wave_step, and the
    # random-arrival step kinds at that D may carry more prompt tokens than the token budget runs
    step = step_at(dep, rt, mix, s.decode_batch, "Serving step", decode_only=bool(wave))
    if wave:  # closed-loop waves (closed_loop.py): the split of the result's own TPOT, not of a random-arrival step
        split = {k: v for k, v in wave["split_s"].items() if v > 0}
        kinds = {k: v for k, v in wave["communication_s"].items() if v > 0}
        # one bound: the result's, of the waves' own decode step at their running count (closed_loop.py)
        step.update(time_s=s.tpot_s, split_s=split, communication_s=kinds, largest_share=bound_of(split),
                    prefill_step_share=wave["prefill_step_share"], bound=s.bound,
                    explanation=explain("Serving step in closed-loop waves, per output token", bound_of(split), split,
                                        s.tpot_s, kinds) + f"; the decode step alone: {BOUND_WORDS[s.bound]}")
    return {"memory": memory_at(dep, rt, mix, s.in_service, basis), "step": step}
