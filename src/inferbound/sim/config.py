"""Simulator settings: engine defaults from data/serving.yaml (sources there) and their validation."""
from __future__ import annotations

from ..datafiles import data_yaml
from ..deployment import Deployment
from .blocks import kv_capacity_blocks
from .engine import PREEMPTION, EngineConfig


def serving_defaults() -> dict:
    """The ``scheduler`` section of data/serving.yaml."""
    return data_yaml("serving.yaml")["scheduler"]


def _int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    return int(value)


def engine_config(dep: Deployment, block_size=None, max_num_batched_tokens=None, max_num_seqs=None,
                  preemption=None, replicas=None, prefill_replicas=0, decode_replicas=0, num_blocks=None,
                  gpu_memory_utilization=None) -> EngineConfig:
    """Fill defaults, validate (one-line errors) and size the KV pool of one replica.

    ``replicas`` defaults to the deployment's data-parallel copies (``par.replicas``). Disaggregated
    mode needs both ``prefill_replicas`` and ``decode_replicas`` >= 1. ``num_blocks`` overrides the
    pool size computed from memory (blocks.kv_capacity_blocks).
    """
    d = serving_defaults()
    bs = _int("block_size", d["block_size"] if block_size is None else block_size, 1)
    budget = _int("max_num_batched_tokens", d["max_num_batched_tokens"] if max_num_batched_tokens is None
                  else max_num_batched_tokens, 1)
    seqs = _int("max_num_seqs", d["max_num_seqs"] if max_num_seqs is None else max_num_seqs, 1)
    if seqs > budget:  # vLLM's own check (SchedulerConfig): every running sequence must fit one step
        raise ValueError(f"max_num_seqs={seqs} must be <= max_num_batched_tokens={budget}")
    pre = d["preemption"] if preemption is None else preemption
    if pre not in PREEMPTION:
        raise ValueError(f"preemption={pre!r} unknown; allowed: {', '.join(PREEMPTION)}")
    util = d["gpu_memory_utilization"] if gpu_memory_utilization is None else gpu_memory_utilization
    if not isinstance(util, (int, float)) or not 0 < util <= 1:
        raise ValueError(f"gpu_memory_utilization={util!r} must be in (0, 1]")
    px = _int("prefill_replicas", prefill_replicas or 0, 0)
    dx = _int("decode_replicas", decode_replicas or 0, 0)
    if (px > 0) != (dx > 0):
        raise ValueError(f"prefill_replicas={px}, decode_replicas={dx}: disaggregated mode needs both >= 1 "
                         f"(or both 0 for aggregated)")
    reps = _int("replicas", dep.par.replicas if replicas is None else replicas, 1)
    if px and replicas not in (None, 1):
        raise ValueError(f"replicas={replicas} is for aggregated mode; with prefill/decode replicas leave it unset")
    blocks = kv_capacity_blocks(dep, bs, budget, seqs, util) if num_blocks is None else _int("num_blocks", num_blocks, 1)
    return EngineConfig(block_size=bs, max_num_batched_tokens=budget, max_num_seqs=seqs, num_blocks=blocks,
                        preemption=pre, replicas=reps if not px else px + dx, prefill_replicas=px,
                        decode_replicas=dx)
