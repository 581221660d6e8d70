"""How many: the fewest replicas per pool (with several pools, the cheapest mix) whose fleet meets the SLO
at a given attainment (``--size-for-slo [--attainment 0.99]``), on the fleet file's own traffic.

Every candidate runs the same arrivals (drawn once) with fixed replica counts (the file's autoscale is set
aside: sizing answers how many to keep). Cost per day = Σ pools replicas · GPUs per replica · $/GPU-hour ·
24 (the catalog's cited price, or --price). Attainment is taken to grow with replicas:

- one pool: doubling from 1 to the first count that meets the target, then bisection between it and half;
- several pools: each pool's count alone (as above) bounds it; the mixes with 0..that count per pool are tried
  cheapest first (ties: fewer replicas), and the first that meets the target is the answer.

The answer is printed with each case of one replica fewer in one pool, which misses the target (each of those
is cheaper, so it was tried first and failed; a pool at 0 has no such case).
"""
from __future__ import annotations

import itertools

from ..pricing.energy import dollars_per_second
from .result import build
from .run import arrivals_of, build_pools, run_fleet
from .spec import FleetSpec

MAX_REPLICAS = 4096  # per pool: a count the search will not pass (a one-line error instead)


class Sizer:
    """Runs and remembers candidates: counts -> (attainment, --json dict)."""

    def __init__(self, spec: FleetSpec, attainment: float, **backend):
        if not 0 < attainment <= 1:
            raise ValueError(f"attainment={attainment!r} must be in (0, 1]")
        self.spec, self.target, self.backend = spec, float(attainment), backend
        self.arrivals = arrivals_of(spec)
        self.pools = build_pools(spec)
        self.seen: dict[tuple, dict] = {}

    def run(self, counts: tuple) -> dict:
        if counts not in self.seen:
            fr = run_fleet(self.spec, self.arrivals, replicas=list(counts), autoscale=False, **self.backend)
            self.seen[counts] = build(fr)
        return self.seen[counts]

    def meets(self, counts: tuple) -> bool:
        return self.run(counts)["slo_attainment"] >= self.target

    def cost_per_day(self, counts: tuple) -> float | None:
        total = 0.0
        for (dep, *_), c in zip(self.pools, counts):
            dps = dollars_per_second(dep.gpu, dep.par.replica_gpus)
            if dps is None:
                return None
            total += c * dps * 86400.0
        return total

    def alone(self, p: int) -> int:
        """The fewest replicas of pool p alone meeting the target (module docstring)."""
        def of(n):
            return tuple(n if k == p else 0 for k in range(len(self.pools)))
        hi = 1
        while not self.meets(of(hi)):
            if hi >= MAX_REPLICAS:
                raise ValueError(f"pools[{self.spec.pools[p].name}]: the SLO is not met at attainment {self.target:g} "
                                 f"even with {hi} replicas; allowed: a looser slo or a lower --attainment")
            hi *= 2
        lo = hi // 2  # misses (or 0)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.meets(of(mid)):
                hi = mid
            else:
                lo = mid
        return hi


def _key(sizer: Sizer, counts: tuple):
    cost = sizer.cost_per_day(counts)
    return (cost if cost is not None else sum(c * d.par.replica_gpus for (d, _), c in zip(sizer.pools, counts)),
            sum(counts), counts)


def size_for_slo(spec: FleetSpec, attainment: float = 0.99, **backend) -> dict:
    """{"replicas": {pool: n}, "cost_per_day_usd", "slo_attainment", "result" (its --json dict),
    "fewer": [{"pool", "replicas", "slo_attainment", "cost_per_day_usd"}, ...], "runs"} (module docstring)."""
    sizer = Sizer(spec, attainment, **backend)
    names = [p.name for p in spec.pools]
    bounds = [sizer.alone(p) for p in range(len(names))]
    if len(names) == 1:
        best = (bounds[0],)
    else:
        mixes = [c for c in itertools.product(*(range(b + 1) for b in bounds)) if any(c)]
        best = next(c for c in sorted(mixes, key=lambda c: _key(sizer, c)) if sizer.meets(c))
    fewer = []
    for p, c in enumerate(best):
        if c > 0:
            less = tuple(x - (k == p) for k, x in enumerate(best))
            res = sizer.run(less) if any(less) else None
            fewer.append({"pool": names[p], "replicas": dict(zip(names, less)),
                          "slo_attainment": None if res is None else res["slo_attainment"],
                          "cost_per_day_usd": sizer.cost_per_day(less)})
    res = sizer.run(best)
    notes = [] if sizer.cost_per_day(best) is not None else [
        "a pool's GPU has no catalog price: mixes ordered by GPU count instead of cost (give --price GPU=USD)"]
    return {"replicas": dict(zip(names, best)), "attainment_target": sizer.target,
            "slo_attainment": res["slo_attainment"], "cost_per_day_usd": sizer.cost_per_day(best),
            "fewer": fewer, "runs": len(sizer.seen), "result": res, "notes": notes}
