"""Resolve the repo ids people type (Instruct, chat, base, re-release, vendor-quantized) to a catalog
architecture, with the weight dtype the id implies. The rules are data (data/model_variants.yaml);
this module only applies them: split the name on "-", drop fine-tune tokens, release stamps, prefixes
and quantization tokens, and require exactly one catalog entry whose name reduces to the same tokens;
a fine-tune published under another name (``deepseek-ai/DeepSeek-R1-Distill-Llama-70B``) is resolved
only through the ``based_on`` table, which cites the card naming its base.

Short aliases (``aliases``): each catalog id's name lower-cased (``llama-3.3-70b-instruct``) and, when no
other entry shares it, the name with the fine-tune tokens and release stamp dropped (``llama-3.3-70b``:
base and Instruct share the architecture), also without a trailing version (``mixtral-8x7b`` for
``Mixtral-8x7B-v0.1``) when that too is unique. ``suggest`` gives the closest ids and aliases to a miss.
"""
from __future__ import annotations

import difflib
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


def short_names(hf_id: str) -> tuple[str, ...]:
    """The reduced names of one catalog id that may become short aliases: the name with fine-tune tokens,
    release stamp and prefixes dropped and, when it ends in a version (``version_suffix``: ``v0.1``), that
    name without it (``mixtral-8x7b`` for ``Mixtral-8x7B-v0.1``). None for a quantized checkpoint's id."""
    core, dtype, _, _ = reduce(hf_id.split("/", 1)[-1])
    if dtype is not None or not core:
        return ()
    names = ["-".join(core)]
    if len(core) > 1 and re.match(rules()["version_suffix"], core[-1]):
        names.append("-".join(core[:-1]))
    return tuple(names)


def aliases(catalog: list[str]) -> dict[str, str]:
    """Short alias -> catalog HF id: the lower-cased name of each id, plus its ``short_names`` where
    exactly one catalog id has that short name (``mistral-7b`` is shared by v0.1 and v0.3: no alias)."""
    out = {hf_id.split("/", 1)[-1].lower(): hf_id for hf_id in catalog}
    reduced: dict[str, set[str]] = {}
    for hf_id in catalog:
        for short in short_names(hf_id):
            reduced.setdefault(short, set()).add(hf_id)
    for short, ids in reduced.items():
        if len(ids) == 1 and short not in out:
            out[short] = next(iter(ids))
    return out


def suggest(typed: str, catalog: list[str], n: int = 3) -> list[str]:
    """The catalog ids and aliases closest to ``typed`` (difflib ratio >= 0.6), best first."""
    names = {hf_id.lower(): hf_id for hf_id in catalog}
    names.update({a: a for a in aliases(catalog)})
    return [names[k] for k in difflib.get_close_matches(typed.lower(), list(names), n=n, cutoff=0.6)]


def _based_on(typed: str, catalog: list[str]) -> Variant | None:
    """A fine-tune published under its own name whose model card names a catalog base (``based_on``)."""
    for repo, row in (rules().get("based_on") or {}).items():
        if repo.lower() == typed.lower() and row["base"] in catalog:
            return Variant(typed=typed, base=row["base"], dtype=None,
                           note=f"its model card names {row['base']} as the base model ({row['source']})",
                           dropped=())
    return None


def resolve_variant(typed: str, catalog: list[str]) -> Variant | tuple[str, ...] | None:
    """The catalog entry ``typed`` is a variant of: a :class:`Variant`, the tuple of candidates when
    several match, or None when none does (or nothing was dropped: then it is not a variant)."""
    found = _based_on(typed, catalog)
    if found is not None:
        return found
    name = typed.split("/", 1)[-1]
    core, dtype, note, dropped = reduce(name)
    hits = [c for c in catalog if reduce(c.split("/", 1)[-1])[0] == core]
    if not dropped and not name.lower().startswith(tuple(p.lower() for p in rules()["prefixes"])):
        # nothing to drop: only the base name of a catalog fine-tune (``.../Llama-3.3-70B`` for the
        # catalog's Llama-3.3-70B-Instruct) is a variant; an exact name under another org is not
        hits = [c for c in hits if reduce(c.split("/", 1)[-1])[3]]
        if not hits:
            return None
    if len(hits) > 1:
        return tuple(sorted(hits))
    if not hits:
        return None
    return Variant(typed=typed, base=hits[0], dtype=dtype, note=note, dropped=dropped)
