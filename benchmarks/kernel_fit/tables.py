"""Where aiconfigurator-core's measured tables live, which one to read, and how to read it.

The tables ship in the wheel under ``aiconfigurator_core/systems/data/<system>/<op>/<framework>/<version>/``
(parquet; schema in benchmarks/fit_kernels.py's docstring). They are located with importlib's finder
(the package itself is never imported) and read with pyarrow. Only the offline fit uses this module.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import numpy as np
from packaging.version import InvalidVersion, Version

#: aiconfigurator system name -> inferbound GPU id (hardware.yaml). Systems without a catalog entry are
#: listed with None and skipped (rtx_pro_6000_server and b60 have no hardware.yaml entry; a100_pcie,
#: h100_pcie, a30 and l4 ship a system yaml but no measured tables in aiconfigurator-core 0.12.0).
GPU_MAP: dict[str, str | None] = {
    "a100_sxm": "a100_80gb_sxm",   # aic a100_sxm.yaml: 80 GiB, 2.039 TB/s = the 80 GB SXM4 part
    "h100_sxm": "h100_sxm",
    "h200_sxm": "h200_sxm",
    "b200_sxm": "b200_hgx",
    "b300_sxm": "b300_hgx",
    "gb200": "gb200_nvl72",
    "gb300": "gb300_nvl72",
    "l40s": "l40s",
    "rtx_pro_6000_server": None,
    "b60": None,
}

#: framework preference when several tables measure the same kernel: TensorRT-LLM first (its tables are
#: the most complete and are AIConfigurator's default backend), then vLLM, then SGLang; newest version first
FRAMEWORK_ORDER = ("trtllm", "vllm", "sglang")


def systems_root(override: str | None = None) -> Path:
    """The wheel's ``systems`` directory (found without importing aiconfigurator_core)."""
    if override:
        return Path(override)
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("aiconfigurator-core is not installed: pip install --no-deps aiconfigurator-core "
                         "(or pass --systems DIR)")
    return Path(list(spec.submodule_search_locations)[0]) / "systems"


def aic_version() -> str:
    try:
        return importlib.metadata.version("aiconfigurator-core")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _vkey(v: str) -> Version:
    try:
        return Version(v)
    except InvalidVersion:
        return Version("0")


def tables(root: Path, system: str, op: str, filename: str) -> list[Path]:
    """Every ``<op>/<framework>/<version>/<filename>`` of a system, preferred first (FRAMEWORK_ORDER, newest)."""
    base = root / "data" / system / op
    found = list(base.glob(f"*/*/{filename}")) if base.exists() else []
    out: list[Path] = []
    frameworks = sorted({p.parent.parent.name for p in found},
                        key=lambda f: FRAMEWORK_ORDER.index(f) if f in FRAMEWORK_ORDER else len(FRAMEWORK_ORDER))
    for fw in frameworks:
        out += sorted((p for p in found if p.parent.parent.name == fw), key=lambda p: _vkey(p.parent.name),
                      reverse=True)
    return out


def framework_version(p: Path) -> tuple[str, str]:
    return p.parent.parent.name, p.parent.name


def rel(root: Path, p: Path) -> str:
    """Path of a table relative to the systems data directory (for provenance)."""
    return str(p.relative_to(root / "data"))


def read(path: Path, **equal) -> dict[str, np.ndarray]:
    """Columns of a parquet table as numpy arrays, rows filtered by column == value (value may be a set)."""
    import pyarrow.parquet as pq

    t = pq.read_table(path).to_pydict()
    cols = {k: np.asarray(v) for k, v in t.items()}
    keep = np.ones(len(next(iter(cols.values()))), dtype=bool)
    for col, val in equal.items():
        if col not in cols:
            return {k: v[:0] for k, v in cols.items()}
        keep &= np.isin(cols[col], list(val)) if isinstance(val, (set, frozenset, list, tuple)) else cols[col] == val
    return {k: v[keep] for k, v in cols.items()}


def subset(x: dict, mask) -> dict:
    return {k: (v[mask] if isinstance(v, np.ndarray) and v.shape[:1] == np.shape(mask) else v) for k, v in x.items()}
