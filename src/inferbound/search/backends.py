"""Where the layouts are evaluated: in this process (numpy) or over a Ray cluster.

Both run :func:`evaluate.evaluate_layout` on every deployment and return the results in layout
order, so the ranking, frontier and table that follow are identical. Ray splits the layout list into
``chunks_per_cpu`` x (cluster CPUs) contiguous chunks (data/search.yaml), runs one task per chunk and
gathers them back in chunk order. ``ray`` is an optional extra, imported only here and only when asked.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..deployment import Deployment
from .evaluate import LayoutPoints, Workload, evaluate_layout
from .space import search_defaults

BACKENDS = ("local", "ray")
RAY_MISSING = "--backend ray needs ray: pip install 'inferbound[ray]'"

Progress = Callable[[int, int], None] | None


def evaluate_chunk(deps: list[Deployment], workload: Workload) -> list[LayoutPoints | None]:
    """Evaluate a list of layouts (the unit of work of every backend)."""
    return [evaluate_layout(d, workload) for d in deps]


def evaluate_all(deps: list[Deployment], workload: Workload, backend: str = "local", ray_address: str | None = None,
                 progress: Progress = None) -> list[LayoutPoints | None]:
    if backend == "local":
        return _local(deps, workload, progress)
    if backend == "ray":
        return _ray(deps, workload, ray_address, progress)
    raise ValueError(f"backend={backend!r} unknown; allowed: {', '.join(BACKENDS)}")


def _local(deps, workload, progress: Progress):
    out: list[LayoutPoints | None] = []
    step = max(1, len(deps) // 100)
    for i, d in enumerate(deps):
        out.append(evaluate_layout(d, workload))
        if progress is not None and ((i + 1) % step == 0 or i + 1 == len(deps)):
            progress(i + 1, len(deps))
    return out


def _ray(deps, workload, address: str | None, progress: Progress):
    try:
        import ray
    except ImportError:
        raise ValueError(RAY_MISSING) from None
    started = not ray.is_initialized()
    if started:
        try:
            if address is None:  # a local cluster on this machine
                ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
            else:  # an existing cluster: 'auto', 'HOST:PORT' or 'ray://HOST:10001'
                ray.init(address=address)
        except (ConnectionError, RuntimeError, ValueError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ValueError(f"ray_address={address!r}: cannot start or reach a Ray cluster: {first}") from None
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n = max(1, min(len(deps), cpus * int(search_defaults()["ray"]["chunks_per_cpu"])))
        bounds = np.array_split(np.arange(len(deps)), n)
        task = ray.remote(evaluate_chunk)
        w = ray.put(workload)
        refs = [task.remote([deps[i] for i in b], w) for b in bounds if b.size]
        index = {r: k for k, r in enumerate(refs)}
        done: dict[int, list] = {}
        pending, finished = list(refs), 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for r in ready:
                k = index[r]
                done[k] = ray.get(r)
                finished += len(done[k])
                if progress is not None:
                    progress(finished, len(deps))
        return [p for k in range(len(refs)) for p in done[k]]
    finally:
        if started:
            ray.shutdown()
