"""Simulator settings: the deployment's engine runtime (runtime.py, cited in data/engines.yaml), the
replicas, and their validation.

One simulated replica schedules for all its attention groups: its token budget, running-sequence cap
and block pool are the engine's per-group figures times the groups (each data-parallel rank of an
attention-DP replica schedules and caches its own sequences; the step model prices the replica).
"""
from __future__ import annotations

from ..deploy.deployment import Deployment
from ..deploy.offload import defaults as offload_defaults
from ..deploy.pools import pool_deployment
from ..deploy.runtime import Runtime, resolve
from ..deploy.speculative import spec_of
from .blocks import host_blocks, kv_capacity_blocks
from .event_loop import PREEMPTION, SimConfig


def _int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    return int(value)


def runtime_with(dep: Deployment, **overrides) -> Runtime:
    """The deployment's runtime, with simulator-level overrides (None = keep) applied on top."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return dep.runtime
    return resolve(dep, dep.engine, **{**dict(dep.engine_options), **given})


def sim_config(dep: Deployment, rt: Runtime | None = None, replicas=None, prefill_replicas=0, decode_replicas=0,
               num_blocks=None, seed: int = 0) -> SimConfig:
    """Size and validate the simulated replicas (one-line errors).

    ``replicas`` defaults to the deployment's data-parallel copies (``par.replicas``). Disaggregated
    mode needs both ``prefill_replicas`` and ``decode_replicas`` >= 1. ``num_blocks`` overrides the
    pool size computed from memory (blocks.kv_capacity_blocks); a host KV tier (kv_offload=host) adds its
    blocks behind the device's (blocks.host_blocks). The runtime's speculative decoding and prefix caching
    come along (the scheduler's rules); ``seed`` seeds the acceptance draws.
    """
    rt = rt or dep.runtime
    groups = dep.par.attention_groups
    budget, seqs = rt.token_budget * groups, rt.max_num_seqs * groups
    if rt.mixed_batches and seqs > budget:  # vLLM's own check (SchedulerConfig): every running sequence fits a step
        raise ValueError(f"max_num_seqs={rt.max_num_seqs} must be <= max_num_batched_tokens={rt.token_budget}")
    pre = rt.preemption if rt.preemption != "none" else "recompute"
    if pre not in PREEMPTION:
        raise ValueError(f"preemption={pre!r} unknown; allowed: {', '.join(PREEMPTION)}")
    px = _int("prefill_replicas", prefill_replicas or 0, 0)
    dx = _int("decode_replicas", decode_replicas or 0, 0)
    if (px > 0) != (dx > 0):
        raise ValueError(f"prefill_replicas={px}, decode_replicas={dx}: disaggregated mode needs both >= 1 "
                         f"(or both 0 for aggregated)")
    reps = _int("replicas", dep.par.replicas if replicas is None else replicas, 1)
    if px and replicas not in (None, 1):
        raise ValueError(f"replicas={replicas} is for aggregated mode; with prefill/decode replicas leave it unset")
    blocks = kv_capacity_blocks(dep, rt) if num_blocks is None else _int("num_blocks", num_blocks, 1)
    host = host_blocks(dep, rt)
    return SimConfig(block_size=rt.block_size, max_num_batched_tokens=budget, max_num_seqs=seqs,
                     num_blocks=blocks + host, preemption=pre, replicas=reps if not px else px + dx,
                     prefill_replicas=px, decode_replicas=dx, reserve_full=rt.reservation == "max",
                     chunked_prefill=rt.chunked_prefill, mixed_batches=rt.mixed_batches, engine=rt.describe(),
                     spec=spec_of(rt), prefix_caching=bool(rt.prefix_caching),
                     device_blocks=blocks if host else None,
                     host_overlap=float(offload_defaults()["overlap"]["value"]), seed=int(seed),
                     scheduler_steps=int(rt.scheduler_steps), recv_interval=int(rt.recv_interval))


def pool_configs(dep: Deployment, overrides: dict, prefill_layout, decode_layout, prefill_replicas, decode_replicas,
                 num_blocks=None, seed: int = 0) -> tuple[Deployment, SimConfig, tuple | None]:
    """Disaggregated pools with their own layouts (deploy/pools.py): (prefill deployment, its SimConfig,
    (decode deployment, its SimConfig) or None when neither layout is given). Each pool's runtime is its own
    deployment's with the simulator's ``overrides`` (runtime_with) on top; ``num_blocks`` sizes both pools."""
    if not prefill_layout and not decode_layout:
        return dep, sim_config(dep, runtime_with(dep, **overrides), None, prefill_replicas, decode_replicas,
                               num_blocks, seed), None
    if not (prefill_replicas and decode_replicas):
        raise ValueError(f"prefill_layout={prefill_layout!r}, decode_layout={decode_layout!r} are for "
                         f"disaggregated mode; allowed: with prefill_replicas >= 1 and decode_replicas >= 1 "
                         f"(got {prefill_replicas or 0} and {decode_replicas or 0})")
    pre = pool_deployment(dep, prefill_layout, "prefill_layout")
    dec = pool_deployment(dep, decode_layout, "decode_layout")
    cfg = sim_config(pre, runtime_with(pre, **overrides), None, prefill_replicas, decode_replicas, num_blocks, seed)
    d_cfg = sim_config(dec, runtime_with(dec, **overrides), None, prefill_replicas, decode_replicas, num_blocks, seed)
    return pre, cfg, (dec, d_cfg)
