"""inferbound: what an LLM deployment will do before you rent the GPUs.

Python API (all SI units; results have ``.to_dict()``):

- :func:`make_deployment` — model + GPU + parallel layout + dtypes + serving engine, validated together;
- :func:`estimate` — static batch: TTFT, TPOT, throughput, memory, energy, cost, bounds, explanation;
- :func:`max_throughput` — offline operating point under continuous batching;
- ``search(model, query)`` — the best deployments for a :class:`SearchQuery` (a dict or keyword arguments
  of its fields too); ``inferbound.search`` is also the search package (``inferbound.search.search``, the
  long form it calls);
- :func:`simulate` — ``simulate(dep, load)``: the serving simulator on a deployment under a
  :class:`ServingLoad`;
- :class:`DeploymentOptions`, :class:`EngineSettings`, :class:`Lengths`, :class:`ServingLoad`,
  :class:`SearchQuery` — the typed option groups (frozen pydantic models built from faces/options.py);
- :func:`load_model`, :func:`count_params`, :func:`kv_bytes_per_token` — model arithmetic;
- :func:`get_gpu`, :func:`load_catalog` — the hardware catalog.

The step contract (``inferbound.step``), the serving simulator (``inferbound.sim``), validation
(``inferbound.validation``) and calibration (``inferbound.calibration``) live in their modules. Names
load on first use (a CLI command imports only what it runs).
"""
from __future__ import annotations

import importlib
import sys
import types

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
    "simulate": "faces.api", "SimResult": "sim", "SearchResult": "search",
    "DeploymentOptions": "faces.groups", "EngineSettings": "faces.groups", "Lengths": "faces.groups",
    "ServingLoad": "faces.groups", "SearchQuery": "faces.groups", "OptionError": "faces.groups",
}
__all__ = sorted([*_EXPORTS, "Estimate", "estimate", "search"])
_lazy_getattr = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str):
    """The exports on first use; ``search`` is the search package (made callable as it is set, see _Root),
    loaded on first use too, so ``import inferbound`` (and a CLI estimate) does not load the search and the
    simulator it runs."""
    if name == "search":
        return importlib.import_module(".search", __name__)
    return _lazy_getattr(name)


class _SearchPackage(types.ModuleType):
    """``inferbound.search`` is the search package, and called it is the typed search of faces/api.py:
    ``inferbound.search(model, query)`` (a package and a function cannot share the name otherwise: importing a
    submodule sets the package attribute back to the module)."""

    def __call__(self, model, query=None, **options):
        return importlib.import_module(".faces.api", __name__).search(model, query, **options)


class _Root(types.ModuleType):
    """The package root: the import system sets ``inferbound.search`` on it whenever the search package (or
    any of its submodules) is first imported, however it is imported; that package becomes callable then."""

    def __setattr__(self, name, value):
        if name == "search" and isinstance(value, types.ModuleType):
            value.__class__ = _SearchPackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Root
