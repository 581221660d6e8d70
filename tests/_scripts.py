"""Loading a benchmarks/ script as a module in a test (the scripts are files, not an installed package)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(name: str):
    """benchmarks/<name>.py executed as module ``name`` (its ``if __name__ == "__main__"`` block not run)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
