"""Layer groups of one kind: what makes two layers price alike, and layers merged by kind."""
from __future__ import annotations

from .spec import LayerGroup


def group_key(g: LayerGroup) -> tuple:
    """What makes two layers price alike: attention kind and window, MoE, sequence mixer, MLP, and the
    heads and MLP width of their own where they have them (geometry.py)."""
    return g.attention, g.window, g.moe, g.mixer, g.mlp, g.attn, g.mlp_width


def regroup(layers) -> list[LayerGroup]:
    """Layers (groups) of one kind merged, in first-seen order (order inside a step does not price)."""
    counts: dict[tuple, int] = {}
    for g in layers:
        counts[group_key(g)] = counts.get(group_key(g), 0) + g.count
    return [LayerGroup(count=c, attention=a, window=w, moe=e, mixer=x, mlp=p, attn=h, mlp_width=f)
            for (a, w, e, x, p, h, f), c in counts.items()]
