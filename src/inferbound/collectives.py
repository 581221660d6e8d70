"""Price the collective operators of a step on the deployment's topology (glue of comm + topology)."""
from __future__ import annotations

from .comm import collective_time
from .config import Parallelism
from .hardware import GPU
from .topology import place


def comm_pricer(gpu: GPU, par: Parallelism):
    """A function op -> (seconds, "algorithm over links") for ``price_step``."""
    cache: dict[tuple, object] = {}

    def placement(group: str, size: int):
        key = (group, size)
        if key not in cache:
            cache[key] = place(gpu, par, size, 1)
        return cache[key]

    def price(op):
        c = op.comm
        pl = placement(c["group"], c["size"])
        algo = par.collective_algo if c["kind"] == "all_reduce" else "auto"
        t, name = collective_time(c["kind"], c["bytes"], pl, gpu, algo)
        links = pl.inner.name + (f"+{pl.outer.name}" if pl.outer else "")
        return t, f"{name} over {links} ({c['group']}={c['size']})"

    return price
