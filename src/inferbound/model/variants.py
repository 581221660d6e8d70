"""Resolve the repo ids people type (Instruct, chat, base, re-release, vendor-quantized) to a catalog
architecture, with the weight dtype the id implies. The rules are data (data/model_variants.yaml);
this module only applies them: split the name on "-", drop fine-tune tokens, release stamps, prefixes
and quantization tokens, and require exactly one catalog entry whose name reduces to the same tokens.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..base.datafiles import data_yaml


@dataclass(frozen=True)
class Variant:
    """A typed id resolved to ``base`` (a catalog HF id); ``dtype``/``note``: the format the id implies."""

    typed: str
    base: str
    dtype: str | None
    note: str | None
    dropped: tuple[str, ...]


def rules() -> dict:
    return data_yaml("model_variants.yaml")


def _remove_seq(tokens: list[str], seq: list[str]) -> tuple[list[str], bool]:
    low, s = [t.lower() for t in tokens], [x.lower() for x in seq]
    for i in range(len(tokens) - len(s) + 1):
        if low[i:i + len(s)] == s:
            return tokens[:i] + tokens[i + len(s):], True
    return tokens, False


def reduce(name: str) -> tuple[tuple[str, ...], str | None, str | None, tuple[str, ...]]:
    """(core tokens, implied dtype, note, dropped tokens) of a repo name (the part after ``org/``)."""
    rl = rules()
    for p in rl["prefixes"]:
        if name.lower().startswith(p.lower()):
            name = name[len(p):]
    tokens = [t for t in name.split("-") if t]
    dtype = note = None
    dropped: list[str] = []
    for rule in rl["quantized"]:
        tokens, hit = _remove_seq(tokens, rule["tokens"])
        if hit and dtype is None:
            dtype, note = rule["dtype"], rule["note"]
            dropped.append("-".join(rule["tokens"]))
    for seq in rl["fine_tune"]:
        while True:
            tokens, hit = _remove_seq(tokens, seq)
            if not hit:
                break
            dropped.append("-".join(seq))
    stamp = re.compile(rl["release_stamp"])
    kept = []
    for t in tokens:
        (dropped.append(t) if stamp.match(t) else kept.append(t))
    return tuple(t.lower() for t in kept), dtype, note, tuple(dropped)


def resolve_variant(typed: str, catalog: list[str]) -> Variant | tuple[str, ...] | None:
    """The catalog entry ``typed`` is a variant of: a :class:`Variant`, the tuple of candidates when
    several match, or None when none does (or nothing was dropped: then it is not a variant)."""
    name = typed.split("/", 1)[-1]
    core, dtype, note, dropped = reduce(name)
    if not dropped and not name.lower().startswith(tuple(p.lower() for p in rules()["prefixes"])):
        return None
    hits = [c for c in catalog if reduce(c.split("/", 1)[-1])[0] == core]
    if len(hits) > 1:
        return tuple(sorted(hits))
    if not hits:
        return None
    return Variant(typed=typed, base=hits[0], dtype=dtype, note=note, dropped=dropped)
