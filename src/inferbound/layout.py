"""Rules a parallel layout must satisfy for a model on a GPU type."""
from __future__ import annotations

from .config import Parallelism
from .hardware import GPU
from .model import ModelSpec


def check_layout(m: ModelSpec, gpu: GPU, par: Parallelism) -> None:
    """Raise ValueError naming the offending field when the layout cannot run."""
    if m.num_heads % par.tp:
        raise ValueError(f"tp={par.tp} must divide num_heads={m.num_heads} of {m.name}")
    if par.pp > m.num_layers:
        raise ValueError(f"pp={par.pp} exceeds num_layers={m.num_layers} of {m.name}")
    if par.ep > 1 and m.moe is None:
        raise ValueError(f"ep={par.ep} needs a mixture-of-experts model; {m.name} is dense")
    if m.moe is not None and par.ep > 1 and m.moe.num_experts % par.ep:
        raise ValueError(f"ep={par.ep} must divide num_experts={m.moe.num_experts} of {m.name}")
    if par.nodes > 1 and par.num_gpus % par.nodes:
        raise ValueError(f"nodes={par.nodes} must divide the GPU count {par.num_gpus}")
