"""inferbound: what an LLM deployment will do before you rent the GPUs.

Python API (all SI units; results have ``.to_dict()``):

- :func:`make_deployment` — model + GPU + parallel layout + dtypes, validated together;
- :func:`estimate` — static batch: TTFT, TPOT, throughput, memory, energy, cost, bounds, explanation;
- :func:`max_throughput` — offline operating point under continuous batching;
- :func:`load_model`, :func:`count_params`, :func:`kv_bytes_per_token` — model arithmetic;
- :func:`get_gpu`, :func:`load_catalog` — the hardware catalog.

The serving simulator (``inferbound.sim``), search (``inferbound.search``), validation
(``inferbound.validation``) and calibration (``inferbound.calibration``) live in their subpackages.
"""
from .config import Dtypes, Parallelism
from .deployment import Deployment, make_deployment
from .estimate import Estimate, estimate
from .hardware import GPU, get_gpu, load_catalog
from .model import ModelSpec, count_params, kv_bytes_per_token, load_model
from .workloads import MaxThroughput, max_throughput

__version__ = "0.1.0"
__all__ = ["Deployment", "Dtypes", "Estimate", "GPU", "MaxThroughput", "ModelSpec", "Parallelism", "count_params",
           "estimate", "get_gpu", "kv_bytes_per_token", "load_catalog", "load_model", "make_deployment",
           "max_throughput"]
