"""inferbound: what an LLM deployment will do before you rent the GPUs.

Python API (all SI units; results have ``.to_dict()``):

- :func:`make_deployment` — model + GPU + parallel layout + dtypes + serving engine, validated together;
- :func:`estimate` — static batch: TTFT, TPOT, throughput, memory, energy, cost, bounds, explanation;
- :func:`max_throughput` — offline operating point under continuous batching;
- :func:`load_model`, :func:`count_params`, :func:`kv_bytes_per_token` — model arithmetic;
- :func:`get_gpu`, :func:`load_catalog` — the hardware catalog.

The step contract (``inferbound.step``), the serving simulator (``inferbound.sim``), search
(``inferbound.search``), validation (``inferbound.validation``) and calibration
(``inferbound.calibration``) live in their modules. Names load on first use (a CLI command imports
only what it runs).
"""
from __future__ import annotations

from .workloads.static import Estimate, estimate  # noqa: F401  (eager: the submodule shares the function's name)
from .base.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "Dtypes": "deploy.config", "Parallelism": "deploy.config", "Deployment": "deploy.deployment",
    "make_deployment": "deploy.deployment",
    "GPU": "hardware", "get_gpu": "hardware",
    "load_catalog": "hardware", "ModelSpec": "model", "count_params": "model", "kv_bytes_per_token": "model",
    "load_model": "model",
    # from the defining module: ``workloads.max_throughput`` is also the submodule's name, which shadows the
    # function on the package once the submodule is imported
    "MaxThroughput": "workloads.max_throughput", "max_throughput": "workloads.max_throughput",
}
__all__ = sorted([*_EXPORTS, "Estimate", "estimate"])
__getattr__ = lazy_exports(__name__, _EXPORTS)
