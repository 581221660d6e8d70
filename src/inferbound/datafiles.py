"""The package's data files (``src/inferbound/data/*.yaml``), read once and cached."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml


@lru_cache(maxsize=None)
def data_yaml(name: str):
    """Parsed ``data/<name>``; callers treat the result as read-only."""
    return yaml.safe_load((resources.files("inferbound") / "data" / name).read_text())
