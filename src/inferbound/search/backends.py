"""Where the layouts are evaluated: on this machine (numpy, one or more processes) or over a Ray cluster.

Every backend runs :func:`evaluate.evaluate_layout` on every deployment and returns the results in
layout order, so the ranking, frontier and table that follow are identical (each layout's figures are
a pure function of its deployment and the workload; tests/test_search.py checks the forked and Ray
backends against one process).

- local: in this process, or, with ``workers`` > 1 (data/search.yaml ``local``: by default the CPUs this
  process may use), over worker processes forked from it (Linux: nothing is re-imported, the layouts
  are inherited, only their figures travel back). The layout list goes out in contiguous chunks,
  ``chunks_per_worker`` per worker, gathered in order; fewer than ``min_layouts_per_worker`` layouts per
  worker stay in one process (a fork and the results' trip back cost more than they save), and so does a
  search inside a daemonic process (a multiprocessing pool's worker may not start processes).
- ray: ``chunks_per_cpu`` x (cluster CPUs) contiguous chunks, one task per chunk, gathered back in chunk
  order. ``ray`` is an optional extra, imported only here and only when asked.

Ctrl-C (KeyboardInterrupt) stops every backend promptly and propagates: forked workers ignore SIGINT
(the terminal sends it to the whole process group), so the parent alone takes it and leaving the pool
terminates them; a KeyboardInterrupt raised inside a worker all the same comes back as
:class:`WorkerInterrupted` and is raised again in the parent (a worker dying of it would leave its
chunk unanswered, and the parent waiting for ever); Ray's pending tasks are cancelled.
"""
from __future__ import annotations

import os
import signal
import sys
from typing import Callable

import numpy as np

from ..deploy.deployment import Deployment
from .evaluate import LayoutPoints, Workload, evaluate_layout
from .space import search_defaults
from ..base.choices import BACKENDS  # noqa: F401  (re-exported; defined there for faces/options.py)

RAY_MISSING = "--backend ray needs ray: pip install 'inferbound[ray]'"

Progress = Callable[[int, int], None] | None


def evaluate_chunk(deps: list[Deployment], workload: Workload) -> list[LayoutPoints | None]:
    """Evaluate a list of layouts (the unit of work of every backend)."""
    return [evaluate_layout(d, workload) for d in deps]


def evaluate_all(deps: list[Deployment], workload: Workload, backend: str = "local", ray_address: str | None = None,
                 progress: Progress = None, workers: int | None = None) -> list[LayoutPoints | None]:
    if backend == "local":
        n = local_workers(len(deps), workers)
        return _forked(deps, workload, progress, n) if n > 1 else _local(deps, workload, progress)
    if backend == "ray":
        return _ray(deps, workload, ray_address, progress)
    raise ValueError(f"backend={backend!r} unknown; allowed: {', '.join(BACKENDS)}")


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def local_workers(layouts: int, workers: int | None = None) -> int:
    """Processes the local backend uses for ``layouts`` layouts: ``workers`` (None: data/search.yaml
    ``local.workers``, 'auto' = the available CPUs), no more than the layouts fill at
    ``min_layouts_per_worker`` each, and 1 where processes cannot be forked (module docstring)."""
    conf = search_defaults()["local"]
    if workers is None:
        workers = available_cpus() if conf["workers"] == "auto" else int(conf["workers"])
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers={workers} must be an integer >= 1")
    if not sys.platform.startswith("linux"):  # fork is Linux's safe default; elsewhere one process
        return 1
    import multiprocessing
    if multiprocessing.current_process().daemon:  # a pool's worker may not start processes of its own
        return 1
    return int(max(1, min(workers, layouts // int(conf["min_layouts_per_worker"]))))


def _local(deps, workload, progress: Progress):
    out: list[LayoutPoints | None] = []
    step = max(1, len(deps) // 100)
    for i, d in enumerate(deps):
        out.append(evaluate_layout(d, workload))
        if progress is not None and ((i + 1) % step == 0 or i + 1 == len(deps)):
            progress(i + 1, len(deps))
    return out


_JOB: tuple | None = None  # (deployments, workload) a forked worker inherits


class WorkerInterrupted(Exception):
    """A KeyboardInterrupt inside a forked worker, carried back to the parent as an ordinary exception."""


def _ignore_sigint() -> None:
    """Pool initializer: Ctrl-C is the parent's to handle (it terminates the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _chunk(bounds: tuple[int, int]) -> list[LayoutPoints | None]:
    deps, workload = _JOB
    try:
        return evaluate_chunk(deps[bounds[0]:bounds[1]], workload)
    except KeyboardInterrupt:
        raise WorkerInterrupted() from None


def _forked(deps, workload, progress: Progress, workers: int):
    import multiprocessing
    global _JOB
    n = min(len(deps), workers * int(search_defaults()["local"]["chunks_per_worker"]))
    edges = np.linspace(0, len(deps), n + 1).astype(int)
    bounds = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    _JOB = (deps, workload)
    out: list[LayoutPoints | None] = []
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_sigint) as pool:
            for part in pool.imap(_chunk, bounds):  # leaving the block on any exception terminates the workers
                out += part
                if progress is not None:
                    progress(len(out), len(deps))
    except WorkerInterrupted:
        raise KeyboardInterrupt from None
    finally:
        _JOB = None
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
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for r in ready:
                    k = index[r]
                    done[k] = ray.get(r)
                    finished += len(done[k])
                    if progress is not None:
                        progress(finished, len(deps))
        except BaseException:  # Ctrl-C, a deadline, a failed task: the rest of the work is not wanted
            for r in pending:
                ray.cancel(r, force=True)
            raise
        return [p for k in range(len(refs)) for p in done[k]]
    finally:
        if started:
            ray.shutdown()
