"""Serving-engine runtime policies (vLLM, SGLang, TensorRT-LLM, ATOM, static engines) as cited data.

``data/engines.yaml`` holds one profile per engine *version family*; every default there carries the
engine file (at a version) or docs page it was read from (the schema: ``engine_schema.py``). This module
loads that file, merges a version's overrides over its family's profile, and finds the profile a name, a
version or a row's framework text names (``get_engine``, ``resolve_version``, ``default_engine``,
``engine_for_framework``). The rules that are functions of the hardware rather than constants (KV
capacity per GPU, SGLang's memory fraction, vLLM's memory tiers, CUDA-graph caps, trtllm-bench's limits)
live in ``engine_rules.py``.

Versions (``resolve_version``; docs/engines.md "Versions"). A version is compared as its leading numbers
(``v0.6.3.post1`` = 0.6.3; trailing zeros ignored: 0.17.0 = 0.17). The profile of an asked version V:

1. a profile whose own version is V: that profile, no note;
2. else, V's major number matches no profile of the engine (``vllm@99``, ``vllm@1.0``): a one-line error
   naming the versions known (nothing was read from such a release);
3. else the profile whose ``covers`` range [min, below) holds V; else the newest profile not newer than V;
   V older than every profile: the oldest. Each of these is a substitution, stated in a note (one line:
   asked version, profile used, why) that the Deployment carries into every face's warnings and
   ``validate`` into the row's reason; V newer than every checked version says so.

Engines with no numbered profile (gpt-fast, llama.cpp: ``static``) have one profile for every version
(noted when a number is asked).

Framework text (``framework_resolution``): the first ``frameworks`` rule whose pattern matches names
the engine; its version is read only right after the engine's name as written (``vLLM 0.6.3``,
``sglang==0.5.6``, ``TensorRT-LLM v0.17``, ``vllm/vllm-openai:v0.10.1``, ``rocm/vllm:..._vllm_0.10.1``,
``atom0.1.1``), never from other numbers in the text (``random-range-ratio 0.8``).

The lead's code uses a profile for: the KV rule and fraction (memory.py), ``block_tokens`` (block
rounding), token budget and max running sequences (workloads, simulator), ``kv_reservation``
(``max_output`` = reserve prompt + max new tokens; ``prompt_on_admission`` / ``on_demand`` = grow and
preempt; ``estimated_output`` = SGLang's decaying new_token_ratio, then retract), the CUDA-graph cap
(decode steps above it pay eager launch overhead), the DP scope of the limits (``per_rank`` or
``total`` divided by the engine) and ``flags`` for emitted launch commands.
"""
from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import NamedTuple, Optional

from ..base.caches import cache
from ..base.datafiles import data_yaml
from .engine_schema import (  # noqa: F401  (re-exported: the schema's types are part of this module's API)
    GIB, MIB, Cited, CudaGraphs, DefaultEngine, EngineCatalog, EngineProfile, Flags, FrameworkRule, KvSizing,
    OutputEstimate, Platform, ReqPool, SglangAuto, Tier, Tiered, TrtBench, VersionRange)

_LEAF_KEYS = ("value", "tiers", "kind", "min")  # cited value, tier table, rule, range: replaced whole


def _copy(x):
    """A copy of parsed YAML (dicts and lists copied, scalars shared): ``copy.deepcopy``'s result on plain data,
    several times faster (the profiles' merge is most of ``load_engines`` in a cold process, issue 18)."""
    if type(x) is dict:
        return {k: _copy(v) for k, v in x.items()}
    if type(x) is list:
        return [_copy(v) for v in x]
    return x if isinstance(x, (str, int, float, bool, type(None))) else copy.deepcopy(x)


def _merge(base: dict, over: dict) -> dict:
    out = _copy(base)
    for k, v in over.items():
        nested = isinstance(v, dict) and isinstance(out.get(k), dict) and not any(x in v for x in _LEAF_KEYS)
        out[k] = _merge(out[k], v) if nested else _copy(v)
    return out


@lru_cache(maxsize=None)
def load_engines() -> EngineCatalog:
    """Parse and validate data/engines.yaml (``inherits: name@version`` copies a profile, then overrides)."""
    raw = data_yaml("engines.yaml")
    done: dict[str, dict] = {}
    for p in raw["profiles"]:
        p = dict(p)
        parent = p.pop("inherits", None)
        if parent is not None:
            if parent not in done:
                raise ValueError(f"inherits={parent!r} unknown; allowed: an earlier profile ({', '.join(done)})")
            base = {k: v for k, v in done[parent].items() if k != "default"}
            p = _merge(base, p)
            p["notes"] = [f"fields not overridden here were read from {parent}"] + list(p.get("notes", []))
        done[f"{p['name']}@{p['version']}"] = p
    return EngineCatalog(default=raw["default"], profiles=tuple(done.values()), frameworks=raw["frameworks"])


# ---------------------------------------------------------------- versions

def _vtuple(v: str) -> tuple[int, ...]:
    m = re.match(r"v?(\d+(?:\.\d+)*)", v.strip().lower())
    if m is None:
        raise ValueError(f"engine_version={v!r} not a version; allowed: digits and dots such as 0.6.3")
    return tuple(int(x) for x in m.group(1).split("."))


def version_tuple(v: str) -> tuple[int, ...]:
    """'0.5.12' -> (0, 5, 12), 'v0.6.3rc1' -> (0, 6, 3): the numeric part of an engine version, for ordering."""
    return _vtuple(v)


def _trim(t: tuple[int, ...]) -> tuple[int, ...]:
    """0.17.0 -> 0.17: trailing zeros do not make another version (compare trimmed tuples: (1,) = (1, 0))."""
    while len(t) > 1 and t[-1] == 0:
        t = t[:-1]
    return t


def _in_range(v: tuple[int, ...], r: VersionRange) -> bool:
    v = _trim(v)
    return _trim(_vtuple(r.min)) <= v and (r.below is None or v < _trim(_vtuple(r.below)))


def _numbered(p: EngineProfile) -> Optional[tuple[int, ...]]:
    try:
        return _vtuple(p.version)
    except ValueError:
        return None


def _span(p: EngineProfile) -> str:
    return f"{p.covers.min} <= version < {p.covers.below}" if p.covers.below else f"versions >= {p.covers.min}"


class Resolution(NamedTuple):
    """The profile an (engine, version) names, and the substitution note (None: the profile is that version)."""
    profile: EngineProfile
    note: Optional[str] = None


#: (name, version) -> (catalog, Resolution), used while load_engines() returns that same catalog
_RESOLVED = cache("engine versions resolved", 256)


def resolve_version(name: str, version: Optional[str] = None) -> Resolution:
    """The profile of ``name`` for ``version`` by the module docstring's rule, with its substitution note
    (kept per (name, version) while the parsed catalog is the same object)."""
    cat = load_engines()
    hit = _RESOLVED.get((name, version))
    if hit is not None and hit[0] is cat:
        return hit[1]
    out = _resolve_version(cat, name, version)
    _RESOLVED.pop((name, version), None)
    _RESOLVED.get_or((name, version), lambda: (cat, out))
    return out


def _resolve_version(cat: EngineCatalog, name: str, version: Optional[str]) -> Resolution:
    key = name.strip().lower()
    mine = [p for p in cat.profiles if p.name == key]
    if not mine:
        raise ValueError(f"engine={name!r} unknown; allowed: {', '.join(sorted({p.name for p in cat.profiles}))}")
    default = next(p for p in mine if p.default)
    asked = (version or "").strip()
    if not asked:
        return Resolution(default)
    for p in mine:
        if p.version == asked.lstrip("vV"):
            return Resolution(p)
    v = _trim(_vtuple(asked))
    numbered = sorted(((_trim(t), p) for p in mine if (t := _numbered(p)) is not None), key=lambda x: x[0])
    if not numbered:
        return Resolution(default, f"engine {key} {asked} predicted with the {default.key} profile: {key} has one "
                                   f"profile for every version")
    for t, p in numbered:
        if t == v:
            return Resolution(p)
    majors = sorted({t[0] for t, _ in numbered})
    if v[0] not in majors:
        spans = ", ".join(f"{p.key} ({_span(p)})" for _, p in numbered)
        raise ValueError(f"engine_version={version!r} is outside every {key} profile (major version "
                         f"{' or '.join(map(str, majors))}); allowed: {spans}")
    covering = [p for _, p in numbered if _in_range(v, p.covers)]
    older = [p for t, p in numbered if t <= v]
    if covering:
        p, why = covering[0], f"no profile of its own; {covering[0].key} stands for {_span(covering[0])}"
    elif older:
        p, why = older[-1], f"no profile covers it; {older[-1].key} is the newest profile not newer than it"
    else:
        p, why = numbered[0][1], f"older than every {key} profile; {numbered[0][1].key} is the oldest"
    newest_t, newest = numbered[-1]
    if v > newest_t and p is newest:
        why += f"; newer than every {key} version checked (newest {newest.version}): its defaults are assumed unchanged"
    return Resolution(p, f"engine {key} {asked} predicted with the {p.key} profile: {why}")


def get_engine(name: str, version: Optional[str] = None) -> EngineProfile:
    """The profile of ``name`` for ``version`` (its own, else the nearest: ``resolve_version``)."""
    return resolve_version(name, version).profile


def _split(engine: str | None, version: str | None = None) -> tuple[str, Optional[str]]:
    if engine is None:
        return default_engine()
    if "@" in engine:
        engine, version = engine.split("@", 1)
    return engine, version


def profile_of(engine: str | None = None, version: str | None = None) -> EngineProfile:
    """The engine profile named (``vllm``, ``vllm@0.6.3``, ``sglang``, ``trtllm``; None: the default)."""
    return get_engine(*_split(engine, version))


def engine_note(engine: str | None = None, version: str | None = None) -> Optional[str]:
    """The substitution note of the profile named (None: it is the version asked, or none was asked)."""
    return resolve_version(*_split(engine, version)).note


def platform_notes(profile: EngineProfile, vendor: str) -> list[str]:
    """The profile's cited notes for a GPU of ``vendor`` (engines.yaml ``platforms``), e.g. vLLM on ROCm."""
    out = []
    for key, pl in profile.platforms.items():
        if pl is not None and pl.vendor.lower() == (vendor or "").strip().lower():
            out += [f"{profile.key} on {key} ({pl.source}): {n}" for n in pl.notes]
    return out


def default_engine() -> tuple[str, str]:
    d = load_engines().default
    return d.engine, d.version


# ---------------------------------------------------------------- framework text

#: what may stand between an engine's name and its version: an image name and a tag colon
#: (``vllm/vllm-openai:v0.10.1``, ``sglang-rocm:v0.5.6``), else at most one of ``== = @ : _ / -`` with spaces
_AFTER_NAME = r"(?:[-/][a-z][\w-]*:|[ \t]*(?:==|[=@:_/-])?[ \t]*)v?(\d+(?:\.\d+)+|\d+\.x)(?![\d])"


def version_after_name(text: str, names: str) -> Optional[str]:
    """The first version written right after an occurrence of the engine's ``names`` regex, else None."""
    m = re.search(f"(?:{names}){_AFTER_NAME}", text, flags=re.IGNORECASE)
    return m.group(1).lower().replace(".x", ".0") if m else None


def framework_rule(text: str) -> Optional[FrameworkRule]:
    """The first ``frameworks`` rule whose pattern matches the text (None: no engine recognized)."""
    return next((r for r in load_engines().frameworks if re.search(r.pattern, text, flags=re.IGNORECASE)), None)


def framework_resolution(text: str, version: Optional[str] = None) -> tuple[FrameworkRule, Resolution]:
    """The first ``frameworks`` rule matching a row's framework text, and the profile it names: the rule's
    fixed version, else ``version`` (the row's ``engine_version``: a version, or text read like the
    framework's, 'vLLM 0.10.0 (rocm/vllm-dev, ...)'; text naming none is noted), else the version right
    after the engine's name, else the rule's ``fallback_version`` (None: the engine's default profile)."""
    r = framework_rule(text)
    if r is None:
        allowed = ", ".join(r.pattern for r in load_engines().frameworks)
        raise ValueError(f"framework={text!r} matches no engine rule; allowed patterns: {allowed}")
    if r.version is not None:
        return r, resolve_version(r.engine, r.version)
    names, given, unread = r.names or r.pattern, (version or "").strip(), None
    if given and not re.match(r"v?\d", given, flags=re.IGNORECASE):  # free text ('vLLM 0.10.0 (rocm/...)')
        found = version_after_name(given, names)
        if found is None:
            unread = f"engine_version={given!r} names no {r.engine} version right after the engine's name"
        given = found or ""
    res = resolve_version(r.engine, given or version_after_name(text, names) or r.fallback_version)
    return r, res if unread is None else Resolution(res.profile, "; ".join(x for x in (unread, res.note) if x))


def engine_for_framework(text: str) -> tuple[str, str]:
    """(engine, profile version) for a validation row's ``framework`` text (``framework_resolution``)."""
    p = framework_resolution(text)[1].profile
    return p.name, p.version


def profile_for_framework(text: str) -> EngineProfile:
    """The profile a validation row's ``framework`` text names (engines.yaml ``frameworks``)."""
    return framework_resolution(text)[1].profile
