"""How long a new replica takes before it serves: its weights read from storage, then the engine's init.

    startup_s = W / B + T_init

- W: weight bytes per GPU of the deployment (deploy/memory_terms.weight_bytes_per_gpu: every GPU of the
  replica reads its own shard at once, so the replica waits for one shard);
- B: the storage's read bandwidth per GPU, GB/s (1e9 bytes/s): ``local_nvme``, ``network_fs`` or
  ``object_store``, each cited in data/fleet.yaml ``startup.bandwidth_gb_s`` (a datasheet, an achieved
  vLLM log line, a NIC line rate shared by a node's GPUs);
- T_init: the engine's init after the weights are in (CUDA-graph capture, KV-cache allocation, warm-up),
  from a published startup log of that engine (data/fleet.yaml ``startup.engine_init_s``).

An engine without a cited init time is a one-line error asking for ``autoscale.startup`` (seconds): no figure
is guessed. Example (hand-worked in tests/test_fleet_startup.py): Llama-3.1-8B bf16 on one GPU, W = 16.06 GB,
from the object store at 1.5625 GB/s: 10.28 s, plus vLLM's 34.11 s: 44.39 s.
"""
from __future__ import annotations

from ..base.datafiles import data_yaml


def sources() -> tuple[str, ...]:
    """The storage kinds data/fleet.yaml prices."""
    return tuple(data_yaml("fleet.yaml")["startup"]["bandwidth_gb_s"])


def startup_s(dep, source: str | None = None) -> tuple[float, str]:
    """(seconds, note) a new replica of ``dep`` takes to start, reading its weights from ``source`` (None: the
    default of data/fleet.yaml); the note names every figure of the sum."""
    cfg = data_yaml("fleet.yaml")["startup"]
    bws = cfg["bandwidth_gb_s"]
    source = cfg["default_source"] if source is None else source
    if source not in bws:
        raise ValueError(f"autoscale.source={source!r} unknown; allowed: {', '.join(bws)}")
    engine = dep.runtime.name
    inits = cfg["engine_init_s"]
    if engine not in inits:
        raise ValueError(f"engine={engine!r}: no cited init time in data/fleet.yaml (startup.engine_init_s: "
                         f"{', '.join(inits)}); allowed: one of those engines, or autoscale.startup in seconds")
    w_gb = float(dep.weight_bytes_per_gpu) / 1e9
    bw = float(bws[source])
    load = w_gb / bw
    init = float(inits[engine])
    total = load + init
    note = (f"replica startup {total:.1f} s = {w_gb:.2f} GB weights per GPU / {bw:g} GB/s ({source.replace('_', ' ')}) "
            f"= {load:.1f} s + {init:g} s {engine} init (CUDA graphs, KV allocation; data/fleet.yaml)")
    return total, note


__all__ = ["sources", "startup_s"]
