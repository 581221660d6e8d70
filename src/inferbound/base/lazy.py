"""Package exports that load on first use (PEP 562 module ``__getattr__``), so importing a package, or
one of its submodules, does not import every module the package exports names from."""
from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, exports: dict[str, str]):
    """A module ``__getattr__`` for ``package``: name -> the submodule (relative to the package) that
    defines it; the value is imported once and kept on the package."""
    def __getattr__(name: str):
        if name in exports:
            value = getattr(importlib.import_module(f".{exports[name]}", package), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
