"""GET endpoints: the model and GPU catalogs, and what this server offers (dtypes, caps, features)."""
from __future__ import annotations

import importlib.util
from functools import lru_cache

from fastapi import APIRouter

from .. import __version__
from ..faces import options as opts
from ..calibration import resolve as resolve_calibration
from ..base.dtypes import DTYPES
from ..deploy.speculative import METHODS as SPECULATIVE_METHODS
from ..hardware import gpu_table, load_catalog, skipped_gpus
from ..workloads.lengths import dataset_names
from . import schemas
from .errors import jsonable

router = APIRouter(prefix="/api", tags=["catalog"])


def available(module: str) -> bool:
    """Whether an optional inferbound subpackage (sim, search) is installed."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


@lru_cache(maxsize=1)
def _model_rows() -> list[dict]:
    from ..faces.report import model_rows  # the same rows as `inferbound models --json`
    return jsonable(model_rows())


@router.get("/models", summary="Bundled model catalog")
def models() -> list[dict]:
    """Alias, HF id, family, parameters (total/active), layers, attention type, KV bytes per token (bf16)."""
    return _model_rows()


@router.get("/gpus", summary="GPU catalog")
def gpus() -> dict:
    """GPUs in vendor units (as `inferbound gpus --json`): HBM GB = 1e9 bytes, dense TFLOP/s, $/h."""
    return jsonable({"gpus": gpu_table(load_catalog()), "skipped": skipped_gpus()})


@router.get("/meta", summary="Server capabilities and caps")
def meta() -> dict:
    """Version, dtypes, scenarios, the work caps of one request, optional features, active calibration."""
    try:
        cal = resolve_calibration(None)
        calibration = None if cal is None else cal.source
    except ValueError as e:  # a broken $INFERBOUND_CALIBRATION is the operator's, reported not raised
        calibration = f"unusable: {e}"
    return {
        "version": __version__, "dtypes": list(DTYPES), "scenarios": list(opts.SCENARIOS),
        "datasets": list(dataset_names()),
        # a draft model is not offered here (schemas.ModelIn._speculative: the API loads no model by path)
        "speculative": [m for m in SPECULATIVE_METHODS if m != "draft"],
        "kv_offload": list(opts.KV_OFFLOAD_MODES), "collective_algos": list(opts.COLLECTIVE_ALGOS),
        "features": {"simulate": available("inferbound.sim"), "search": available("inferbound.search")},
        "calibration": calibration,
        "limits": {"num_gpus": schemas.MAX_GPUS, "batch": schemas.MAX_BATCH, "tokens": schemas.MAX_TOKENS,
                   "offline_requests": schemas.MAX_OFFLINE_REQUESTS, "sim_requests": schemas.MAX_SIM_REQUESTS,
                   "sim_output_len": schemas.MAX_SIM_OUTPUT, "sim_output_tokens": schemas.MAX_SIM_OUTPUT_TOKENS,
                   "csv_chars": schemas.MAX_CSV_CHARS, "config_layers": schemas.MAX_CONFIG_LAYERS,
                   "compare_deployments": schemas.MAX_COMPARE_DEPLOYMENTS},
    }
