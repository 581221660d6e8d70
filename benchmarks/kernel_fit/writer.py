"""Write kernels.yaml: block style for the structure, one flow-style line per curve, a comment header."""
from __future__ import annotations

import yaml


def _round(x):
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v) for v in x]
    return x


def _flow(x) -> str:
    text = yaml.safe_dump(_round(x), default_flow_style=True, width=10**9, sort_keys=False).strip()
    return text.removesuffix("...").strip()   # a bare scalar is dumped as a document: drop its end marker


def _is_leaf(d) -> bool:
    if not isinstance(d, dict):
        return True
    return any(k in d for k in ("e_c", "e_m", "alpha_s", "busbw")) or all(
        not isinstance(v, dict) and not (isinstance(v, list) and v and isinstance(v[0], (dict, list)))
        for v in d.values()) and len(d) <= 8


def _emit(key, val, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    k = key if isinstance(key, str) and key.replace("_", "").replace(".", "").isalnum() else _flow(key)
    if isinstance(val, dict) and not _is_leaf(val):
        lines.append(f"{pad}{k}:")
        for k2, v2 in val.items():
            _emit(k2, v2, indent + 2, lines)
    elif isinstance(val, list) and len(_flow(val)) > 100:
        lines.append(f"{pad}{k}:")
        for v in val:
            lines.append(f"{pad}  - {_flow(v)}")
    else:
        lines.append(f"{pad}{k}: {_flow(val)}")


def dump(doc: dict, header: list[str], comments: dict[str, str]) -> str:
    """YAML text of ``doc``; ``comments`` maps a GPU id to a comment line written above its entry."""
    lines = [f"# {h}" if h else "#" for h in header]
    for key, val in doc.items():
        if key in ("gpus", "priors"):
            lines.append(f"{key}:")
            for gid, e in val.items():
                if gid in comments:
                    lines.append(f"  # {comments[gid]}")
                _emit(gid, e, 2, lines)
        else:
            _emit(key, val, 0, lines)
    return "\n".join(lines) + "\n"
