"""Hardware catalog: GPU specs (SI units), efficiency factors, dtype resolution.

See ``catalog.py`` for the data files, unit conversion and the user hardware-file format,
``precision.py`` for which tensor-core peak a (weight, activation) dtype pair runs at, and ``prices.py``
for the cited $/GPU-hour and the user's ``--price``.
"""
from inferbound.hardware.catalog import apply_overrides, get_gpu, gpu_table, load_catalog, skipped_gpus
from inferbound.hardware.precision import peak_flops, resolve_compute_dtype
from inferbound.hardware.prices import apply_prices, check_prices, parse_price_items, price_note, price_tag, with_price
from inferbound.hardware.spec import GPU, Efficiency, Power, Price

__all__ = [
    "GPU", "Efficiency", "Power", "load_catalog", "get_gpu", "resolve_compute_dtype", "peak_flops",
    "gpu_table", "skipped_gpus", "apply_overrides", "Price", "apply_prices", "check_prices", "parse_price_items",
    "price_note", "price_tag", "with_price",
]
