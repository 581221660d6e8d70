"""Layer groups of one kind: what makes two layers price alike, and layers merged by kind."""
from __future__ import annotations

from .spec import LayerGroup


def group_key(g: LayerGroup) -> tuple:
    """What makes two layers price alike: attention kind and window, MoE, sequence mixer, MLP."""
    return g.attention, g.window, g.moe, g.mixer, g.mlp


def regroup(layers) -> list[LayerGroup]:
    """Layers (groups) of one kind merged, in first-seen order (order inside a step does not price)."""
    counts: dict[tuple, int] = {}
    for g in layers:
        counts[group_key(g)] = counts.get(group_key(g), 0) + g.count
    return [LayerGroup(count=c, attention=a, window=w, moe=e, mixer=x, mlp=p) for (a, w, e, x, p), c in counts.items()]
