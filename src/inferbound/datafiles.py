"""The package's data files (``src/inferbound/data/*.yaml``), read once and cached, and the one YAML
reader every module uses: PyYAML's C loader (libyaml; several times faster than the pure-Python one
on the hardware catalog) when the installed PyYAML has it, else the safe Python loader. Both are
safe loaders: plain data only."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str):
    """Parse YAML text as plain data (safe loader, C implementation when available)."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506  (a safe loader)


@lru_cache(maxsize=None)
def data_yaml(name: str):
    """Parsed ``data/<name>``; callers treat the result as read-only."""
    return load_yaml((resources.files("inferbound") / "data" / name).read_text("utf-8"))
