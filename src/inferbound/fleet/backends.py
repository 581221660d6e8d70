"""Where the fleet's replicas are simulated: this process, worker processes forked from it (the default
with more than one CPU), or Ray actors on a cluster (``--backend ray [--ray-address]``).

The unit is a :class:`Group`: the replicas one worker holds (fleet/replica.ReplicaRun). The fleet run
(run.py) decides every routing and scaling step itself and sends each group, per window, the requests
routed to its replicas and the time to advance to; the groups answer with their replicas' state. A
replica's figures are a pure function of its deployment and the requests it got, and the decisions are
taken in the parent in one order whatever the backend, so every backend and worker count gives the
same numbers bit for bit (tests/test_fleet_backends.py). Replicas go to the group holding the fewest.

Patterns from search/backends.py (this layer may not import search/): Linux fork, nothing re-imported;
workers ignore SIGINT (the parent takes Ctrl-C and ends them); ray is imported only here, when asked,
and an unreachable cluster is a one-line error naming ``ray_address``.
"""
from __future__ import annotations

import math
import os
import signal
import sys

from ..sim.metrics import summarize
from .replica import ReplicaRun

BACKENDS = ("local", "ray")
RAY_MISSING = "--backend ray needs ray: pip install 'inferbound[ray]'"


class Group:
    """Replicas held by one worker: ``pools`` is the list of (deployment, SimConfig) the slots run; ``steps``
    keeps every replica's step samples (replica.ReplicaRun) and gives each one's sim/ summary at the end."""

    def __init__(self, pools: list, steps: bool = False):
        self.pools, self.steps = pools, steps
        self.reps: dict[int, ReplicaRun] = {}

    def step(self, new: list[tuple[int, int]], feed: dict, until: float, want: list[int],
             ttft_since: float | None = None, done: bool = False) -> dict:
        """Create the ``new`` (slot, pool) replicas, add the requests fed to each, advance all to ``until``;
        return {slot: (outstanding, waiting, kv use, [TTFT s of first tokens in [ttft_since, until)])} for ``want``,
        and with ``done`` under the key -1 the (request id, finish s) of every request finished since the last
        call (closed-loop sessions, fleet/closed_loop.py)."""
        for slot, pool in new:
            dep, cfg = self.pools[pool]
            self.reps[slot] = ReplicaRun(dep, cfg, slot, self.steps)
        for slot, reqs in feed.items():
            self.reps[slot].add(reqs)
        for rep in self.reps.values():
            rep.watch = rep.watch or done
            rep.run_until(until)
        out = {}
        for slot in want:
            rep = self.reps.get(slot)
            if rep is not None:
                out[slot] = (*rep.state(), rep.ttft_since(ttft_since, until) if ttft_since is not None else [])
        if done:
            out[-1] = [c for rep in self.reps.values() for c in rep.completions()]
        return out

    def finish(self) -> dict:
        """Run every replica to its end; {slot: (request table, sim summary or None, busy s, J per GPU, GPUs,
        inter-token gaps as fleet/itl.py pools them)}."""
        out = {}
        for slot, rep in self.reps.items():
            rep.run_until(math.inf)
            summary = summarize(rep.run()) if self.steps and len(rep.ledger) else None  # only with step records
            out[slot] = (rep.table(), summary, rep.rep.busy_s, rep.rep.energy_j_per_gpu, rep.dep.par.replica_gpus,
                         rep.gaps())
        return out


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class Backend:
    """Groups behind one interface: ``step`` (scatter by slot, gather the states) and ``finish``."""

    def __init__(self, n: int):
        self.n = n
        self.count = [0] * n
        self.home: dict[int, int] = {}

    def place(self, slot: int) -> int:
        g = min(range(self.n), key=lambda k: (self.count[k], k))
        self.count[g] += 1
        self.home[slot] = g
        return g

    def step(self, new: list[tuple[int, int]], feed: dict, until: float, want: list[int], ttft_since=None,
             done: bool = False) -> dict:
        parts_new = [[] for _ in range(self.n)]
        for slot, pool in new:
            parts_new[self.place(slot)].append((slot, pool))
        parts_feed = [{} for _ in range(self.n)]
        for slot, reqs in feed.items():
            parts_feed[self.home[slot]][slot] = reqs
        parts_want = [[] for _ in range(self.n)]
        for slot in want:
            parts_want[self.home[slot]].append(slot)
        out, finished = {}, []
        for part in self._call("step", [(parts_new[g], parts_feed[g], until, parts_want[g], ttft_since, done)
                                        for g in range(self.n)]):
            finished += part.pop(-1, [])
            out.update(part)
        if done:
            out[-1] = finished
        return out

    def finish(self) -> dict:
        out = {}
        for part in self._call("finish", [() for _ in range(self.n)]):
            out.update(part)
        self.close()
        return out

    def close(self) -> None:
        pass


class InProcess(Backend):
    def __init__(self, pools, steps: bool = False):
        super().__init__(1)
        self.group = Group(pools, steps)

    def _call(self, method, args):
        return [getattr(self.group, method)(*args[0])]


def _serve(conn, pools, steps: bool) -> None:
    """A forked worker: a Group answering (method, args) messages until None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    group = Group(pools, steps)
    while True:
        msg = conn.recv()
        if msg is None:
            return
        try:
            conn.send((True, getattr(group, msg[0])(*msg[1])))
        except Exception as e:  # carried back and raised in the parent
            conn.send((False, f"{type(e).__name__}: {e}"))


class Forked(Backend):
    def __init__(self, pools, n: int, steps: bool = False):
        import multiprocessing
        super().__init__(n)
        ctx = multiprocessing.get_context("fork")
        self.conns, self.procs = [], []
        for _ in range(n):
            a, b = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(b, pools, steps), daemon=True)
            p.start()
            self.conns.append(a)
            self.procs.append(p)

    def _call(self, method, args):
        for c, a in zip(self.conns, args):
            c.send((method, a))
        out = []
        for c in self.conns:
            ok, value = c.recv()
            if not ok:
                self.close()
                raise RuntimeError(f"fleet worker failed: {value}")
            out.append(value)
        return out

    def close(self) -> None:
        for c in self.conns:
            try:
                c.send(None)
            except (BrokenPipeError, OSError):
                pass
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
        self.conns, self.procs = [], []


class RayActors(Backend):
    def __init__(self, pools, address: str | None, n: int | None, steps: bool = False):
        try:
            import ray
        except ImportError:
            raise ValueError(RAY_MISSING) from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            try:
                if address is None:
                    ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
                else:
                    ray.init(address=address)
            except (ConnectionError, RuntimeError, ValueError) as e:
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise ValueError(f"ray_address={address!r}: cannot start or reach a Ray cluster: {first}") from None
        n = n or max(1, int(ray.cluster_resources().get("CPU", 1)))
        super().__init__(n)
        actor = ray.remote(num_cpus=1)(Group) if n > 1 else ray.remote(Group)
        self.actors = [actor.remote(pools, steps) for _ in range(n)]

    def _call(self, method, args):
        return self.ray.get([getattr(a, method).remote(*x) for a, x in zip(self.actors, args)])

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
        self.actors = []
        if self.started:
            self.ray.shutdown()
            self.started = False


def make_backend(pools: list, backend: str = "local", workers: int | None = None, ray_address: str | None = None,
                 replicas: int = 1, steps: bool = False) -> Backend:
    """The backend for ``replicas`` replicas: local (this process when one worker, else forked workers,
    ``workers`` default the CPUs this process may use, at most one per replica) or ray."""
    if backend == "ray":
        return RayActors(pools, ray_address, workers, steps)
    if backend != "local":
        raise ValueError(f"backend={backend!r} unknown; allowed: {', '.join(BACKENDS)}")
    if workers is not None and (isinstance(workers, bool) or int(workers) != workers or workers < 1):
        raise ValueError(f"workers={workers!r} must be an integer >= 1")
    n = min(int(workers) if workers is not None else available_cpus(), max(1, replicas))
    import multiprocessing
    if n <= 1 or not sys.platform.startswith("linux") or multiprocessing.current_process().daemon:
        return InProcess(pools, steps)
    return Forked(pools, n, steps)
