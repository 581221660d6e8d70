"""Typed, validated reads of a raw ``config.json`` dict.

Every field the loader uses goes through a :class:`Reader` method that checks its JSON type, its range
and (where the arithmetic needs it) divisibility before the value is used, and raises
:class:`ConfigError` with one line naming the field, its value (``repr``) and what is allowed:

    model acme/x: num_hidden_layers=32.7 is not an integer; allowed: an integer in 1..4096

JSON booleans are not integers here (``true`` layers is refused), strings are not booleans
(``"false"`` is refused rather than read as true), integral floats (``32.0``) are accepted as integers,
NaN and infinities never are. Upper bounds are sanity limits far above any published model (they keep
a typo such as 10**9 layers from allocating per-layer tables): see ``LIMITS``.

``Reader.warn`` collects the guesses the user should know about (a size taken from a config class's
default rather than from the file); the loader stores them in ``ModelSpec.warnings``.
"""
from __future__ import annotations

import math
from typing import Any

#: (lowest, highest) allowed for integer fields, by kind. The upper limits are ~30-1000x the largest
#: published values (DeepSeek-V3: 61 layers, 7168 hidden, 256 experts; vocabularies up to ~262k).
LIMITS = {
    "layers": (1, 4096), "width": (1, 1 << 20), "heads": (1, 1 << 14), "vocab": (1, 1 << 24),
    "experts": (0, 1 << 16), "tokens": (1, 1 << 34), "small": (0, 1 << 20),
}


class ConfigError(ValueError):
    """A config.json the loader cannot interpret; the one-line message names the field, value and rule."""


_MISSING = object()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class _Seen(dict):
    """A dict that records which keys were looked up (to tell an override that has no effect)."""

    def __init__(self, data: dict):
        super().__init__(data)
        self.seen: set[str] = set()

    def get(self, key, default=None):
        self.seen.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.seen.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.seen.add(key)
        return super().__contains__(key)


class Reader:
    """Validated access to ``raw`` (a config dict) for the model called ``name``; ``raw.seen`` lists
    the keys the interpretation looked at."""

    def __init__(self, raw: dict[str, Any], name: str):
        self.raw, self.name = _Seen(raw), _one_line(name)
        self.warnings: list[str] = []

    # ------------------------------------------------------------------ errors and warnings
    def error(self, key: str, value: Any, problem: str, allowed: str) -> ConfigError:
        return ConfigError(_one_line(f"model {self.name}: {key}={value!r} {problem}; allowed: {allowed}"))

    def missing(self, keys: list[str]) -> ConfigError:
        return ConfigError(_one_line(f"model {self.name}: config.json lacks {', '.join(keys)} "
                                     f"(set them with --set KEY=VALUE / overrides)"))

    def warn(self, text: str) -> None:
        self.warnings.append(_one_line(text))

    # ------------------------------------------------------------------ lookup
    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def key_of(self, *keys: str) -> str | None:
        """The first of ``keys`` present (not null) in the config."""
        return next((k for k in keys if self.raw.get(k) is not None), None)

    def _pick(self, keys: tuple[str, ...]):
        k = self.key_of(*keys)
        return (k, self.raw[k]) if k is not None else (keys[0], _MISSING)

    # ------------------------------------------------------------------ typed reads
    def int(self, *keys: str, default: Any = _MISSING, kind: str = "width", lo: int | None = None) -> int:
        """An integer field (first of ``keys`` present); ``default`` when absent, else ConfigError."""
        key, value = self._pick(keys)
        if value is _MISSING:
            if default is _MISSING:
                raise self.missing([key])
            return default
        return self.check_int(key, value, kind, lo)

    def opt_int(self, *keys: str, kind: str = "width", lo: int | None = None) -> int | None:
        key, value = self._pick(keys)
        return None if value is _MISSING else self.check_int(key, value, kind, lo)

    def check_int(self, key: str, value: Any, kind: str = "width", lo: int | None = None) -> int:
        low, high = LIMITS[kind]
        low = low if lo is None else lo
        allowed = f"an integer in {low}..{high}"
        if isinstance(value, bool):
            raise self.error(key, value, "is a boolean", allowed)
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise self.error(key, value, "is not an integer", allowed)
            value = int(value)
        if not isinstance(value, int):
            raise self.error(key, value, f"is {_a(_json_type(value))}, not an integer", allowed)
        if not low <= value <= high:
            raise self.error(key, value, "is out of range", allowed)
        return value

    def bool(self, key: str, default: bool) -> bool:
        """A JSON boolean; absent or null means ``default``."""
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, value, f"is {_a(_json_type(value))}, not a boolean", "true or false")
        return value

    def number(self, key: str, default: float | None = None, lo: float = 0.0) -> float | None:
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < lo:
            raise self.error(key, value, "is not a finite number", f"a number >= {lo:g}")
        return float(value)

    def str(self, key: str, default: str | None = None) -> str | None:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(key, value, f"is {_a(_json_type(value))}, not a string", "a string")
        return value

    def list(self, key: str) -> list | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.error(key, value, f"is {_a(_json_type(value))}, not a list", "a JSON list")
        return value

    def str_list(self, key: str, length: int | None = None, allowed: tuple[str, ...] | None = None) -> list[str] | None:
        """A list of strings, of ``length`` entries, each one of ``allowed`` when given."""
        items = self.list(key)
        if items is None:
            return None
        if length is not None and len(items) != length:
            raise self.error(key, _short(items), f"has {len(items)} entries", f"{length} entries (one per layer)")
        for i, item in enumerate(items):
            if not isinstance(item, str) or (allowed is not None and item not in allowed):
                what = ", ".join(repr(a) for a in allowed) if allowed else "strings"
                raise self.error(f"{key}[{i}]", item, "is not a known entry", what)
        return items

    def int_list(self, key: str, lo: int, hi: int, length: int | None = None) -> list[int] | None:
        """A list of integers in lo..hi (layer indices, 0/1 flags), of ``length`` entries when given."""
        items = self.list(key)
        if items is None:
            return None
        if length is not None and len(items) != length:
            raise self.error(key, _short(items), f"has {len(items)} entries", f"{length} entries (one per layer)")
        out = []
        for i, item in enumerate(items):
            if isinstance(item, bool) or not isinstance(item, int) or not lo <= item <= hi:
                raise self.error(f"{key}[{i}]", item, "is not allowed", f"an integer in {lo}..{hi}")
            out.append(item)
        return out

    def dict(self, key: str) -> dict | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, value, f"is {_a(_json_type(value))}, not an object", "a JSON object")
        return value

    # ------------------------------------------------------------------ relations
    def divides(self, small_key: str, small: int, big_key: str, big: int, why: str) -> None:
        if big % small:
            raise ConfigError(_one_line(
                f"model {self.name}: {small_key}={small!r} does not divide {big_key}={big!r}; "
                f"allowed: a divisor of {big} ({why})"))


def _json_type(value: Any) -> str:
    return {str: "string", list: "list", dict: "object", bool: "boolean", float: "number",
            int: "integer", type(None): "null"}.get(type(value), type(value).__name__)


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _short(items: list) -> str:
    return f"<list of {len(items)}>"
