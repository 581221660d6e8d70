"""Hardware catalog: GPU specs (SI units), efficiency factors, dtype resolution.

See ``catalog.py`` for the data files, unit conversion and the user hardware-file format, and
``precision.py`` for which tensor-core peak a (weight, activation) dtype pair runs at.
"""
from inferbound.hardware.catalog import (
    apply_overrides,
    get_gpu,
    gpu_table,
    load_catalog,
    skipped_gpus,
)
from inferbound.hardware.precision import peak_flops, resolve_compute_dtype
from inferbound.hardware.spec import GPU, Efficiency, Power

__all__ = [
    "GPU", "Efficiency", "Power", "load_catalog", "get_gpu", "resolve_compute_dtype", "peak_flops",
    "gpu_table", "skipped_gpus", "apply_overrides",
]
