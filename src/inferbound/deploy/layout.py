"""Rules a parallel layout must satisfy for a model on a GPU type."""
from __future__ import annotations

from functools import lru_cache

from .config import COLLECTIVE_ALGOS, NVLINK_ALGOS, Parallelism
from .eplb import expert_slots, smallest_redundant
from ..hardware import GPU
from ..model import ModelSpec
from ..model.groups import regroup
from ..model.spec import LayerGroup
from .topology import check_nodes, island_size


def check_layout(m: ModelSpec, gpu: GPU, par: Parallelism) -> None:
    """Raise ValueError naming the offending field when the layout cannot run."""
    if par.tp > m.num_heads:
        raise ValueError(f"tp={par.tp} exceeds the {m.num_heads} attention heads of {m.name}; allowed: "
                         f"divisors of {m.num_heads}")
    if m.num_heads % par.tp:
        divisors = ", ".join(str(d) for d in range(1, m.num_heads + 1) if m.num_heads % d == 0)
        raise ValueError(f"tp={par.tp} must divide num_heads={m.num_heads} of {m.name}; allowed: tp in {divisors}")
    if par.pp > m.num_layers:
        raise ValueError(f"pp={par.pp} exceeds num_layers={m.num_layers} of {m.name}; allowed: pp <= {m.num_layers}")
    if par.ep > 1 and m.moe is None:
        raise ValueError(f"ep={par.ep} needs a mixture-of-experts model; {m.name} is dense; allowed: ep=1")
    if par.moe_group % par.ep:
        raise ValueError(f"ep={par.ep} must divide the GPUs sharing a MoE layer, "
                         f"tp{'*dp' if par.attention_dp else ''}={par.moe_group} (experts reuse those GPUs); "
                         f"allowed: ep dividing {par.moe_group}")
    if par.redundant_experts and (m.moe is None or par.ep == 1):
        raise ValueError(f"redundant_experts={par.redundant_experts} needs expert parallelism (ep > 1) on a "
                         f"mixture-of-experts model; {m.name} has ep={par.ep}"
                         f"{'' if m.moe is not None else ' and is dense'}; allowed: 0")
    if m.moe is not None and par.ep > 1:
        e, n = m.moe.num_experts, par.redundant_experts
        if expert_slots(e, n) % par.ep:
            raise ValueError(f"ep={par.ep} must divide num_experts+redundant_experts={e}+{n}={e + n} of {m.name} "
                             f"(experts per GPU (E+N)/ep={(e + n) / par.ep:g} is not an integer); allowed: ep "
                             f"dividing {e + n}, or redundant_experts={n + smallest_redundant(e + n, par.ep)} "
                             f"(+ multiples of {par.ep})")
    if par.attention_dp and m.moe is None:
        raise ValueError(f"attention_dp needs a mixture-of-experts model; {m.name} is dense")
    if par.pp_split is not None and sum(par.pp_split) != m.num_layers:
        raise ValueError(f"pp_split={list(par.pp_split)} sums to {sum(par.pp_split)}, but {m.name} has "
                         f"{m.num_layers} layers")
    check_nodes(gpu, par)
    anywhere = ", ".join(a for a in COLLECTIVE_ALGOS if a not in NVLINK_ALGOS)
    if par.collective_algo in NVLINK_ALGOS and not gpu.nvlink:
        raise ValueError(f"collective_algo={par.collective_algo!r} assumes an NVLink/NVSwitch fabric, but "
                         f"{gpu.id} is PCIe-only; allowed: {anywhere}")
    if par.collective_algo == "nvls" and not gpu.nvls:
        raise ValueError(f"collective_algo='nvls' needs NVLink SHARP (NVSwitch gen3+), which {gpu.id} lacks; "
                         f"allowed: {', '.join(a for a in COLLECTIVE_ALGOS if a != 'nvls')}")
    if par.collective_algo in NVLINK_ALGOS and par.tp > island_size(gpu, par):
        raise ValueError(f"collective_algo={par.collective_algo!r} needs the TP group (tp={par.tp}) inside one "
                         f"NVLink island of {island_size(gpu, par)} GPUs; allowed: {anywhere}")


@lru_cache(maxsize=256)
def stage_layers(m: ModelSpec, par) -> list[list[LayerGroup]]:
    """Ordered layer groups of each pipeline stage: ``pp_split`` or an even split (earlier stages take
    the remainder); layers of one kind inside a stage are merged (order inside a stage does not price)."""
    n = m.num_layers
    if par.pp_split is not None:
        if sum(par.pp_split) != n:
            raise ValueError(f"pp_split={list(par.pp_split)} sums to {sum(par.pp_split)}, "
                             f"but {m.name} has {n} layers")
        sizes = list(par.pp_split)
    else:
        base, extra = divmod(n, par.pp)
        sizes = [base + (i < extra) for i in range(par.pp)]
    flat = [g.model_copy(update={"count": 1}) for g in m.layers for _ in range(g.count)]
    stages, start = [], 0
    for size in sizes:
        stages.append(regroup(flat[start:start + size]))
        start += size
    return stages
