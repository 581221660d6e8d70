"""Caches keyed by content, named, in one registry.

A value (a deployment, a GPU, a model) carries no caches: whatever is worth keeping between calls is kept
here, under a key made of the values it was computed from (equal inputs, one entry), so two equal
deployments share an entry and no entry outlives a change of its inputs. ``clear()`` empties every cache
(tests, a long-lived server after a catalog change); ``sizes()`` says what each holds.

Eviction is first-in first-out at ``maxsize`` entries (the oldest entry goes), which bounds memory in a
long search or a server; the functional ``functools.lru_cache`` caches of the package register here too.
"""
from __future__ import annotations

from typing import Callable, Hashable

_REGISTRY: dict[str, object] = {}


class ContentCache(dict):
    """A named dict with a size bound: ``get_or(key, build)`` returns the kept value or builds and keeps it."""

    def __init__(self, name: str, maxsize: int):
        super().__init__()
        self.name, self.maxsize = name, int(maxsize)

    def get_or(self, key: Hashable, build: Callable[[], object]):
        try:
            return self[key]
        except KeyError:
            pass
        if len(self) >= self.maxsize:
            del self[next(iter(self))]
        value = self[key] = build()
        return value


    def per_object(self, obj, build: Callable[[object], object]):
        """``build(obj)``, kept per object: keyed by its id and holding the object, so the id is not reused
        while the entry lives (for values such as a GPU or a calibration that hold dicts and do not hash)."""
        hit = self.get(id(obj))
        if hit is None or hit[0] is not obj:
            if len(self) >= self.maxsize:
                del self[next(iter(self))]
            hit = self[id(obj)] = (obj, build(obj))
        return hit[1]


def cache(name: str, maxsize: int = 1024) -> ContentCache:
    """The cache registered as ``name`` (made on first call); module-level, so one per process."""
    c = _REGISTRY.get(name)
    if c is None:
        c = _REGISTRY[name] = ContentCache(name, maxsize)
    return c


def register(name: str, fn):
    """Register a ``functools.lru_cache``-wrapped function under ``name`` (so ``clear()`` reaches it); returns it."""
    _REGISTRY[name] = fn
    return fn


def clear() -> None:
    """Empty every registered cache."""
    for c in _REGISTRY.values():
        c.clear() if isinstance(c, ContentCache) else c.cache_clear()


def sizes() -> dict[str, int]:
    """Entries held per cache name."""
    return {n: (len(c) if isinstance(c, ContentCache) else c.cache_info().currsize) for n, c in _REGISTRY.items()}
