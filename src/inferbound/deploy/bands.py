"""Error bands at run time: the relative error a prediction carries, read from the deployment's calibration
and widened for each way the deployment extrapolates beyond the fit. Every face (CLI, JSON API, page,
Python API) and every workload asks this module, so one question has one band.

The calibration's ``bands`` (written offline from cross-validated residuals: calibration/bands.py) hold:

- base bands by key, most specific first: ``<scenario>/<kind>/<bound>``, ``<scenario>/<kind>``,
  ``*/<kind>``, ``*`` (``Calibration.band``); ``kind`` is ``throughput`` or ``latency`` (``kind_of``);
- ``extrapolation``: the widening factor of each way a prediction can leave the fit's data;
- ``coverage``: the GPUs, engine profiles, formats and model families the fit saw.

Band of a prediction = base band × Π (the factors of the ways ``dep`` extrapolates), rounded to 4 digits:

- ``gpu``: the deployment's GPU id has no row in the fit;
- ``cross_vendor``: its kernel curves are a prior derived from another vendor's GPU, or it has none
  (AMD, Gaudi, TPU, Trainium; or ``efficiency.kernel_curves`` off); else ``prior_curves``: its curves
  are a prior derived from a measured GPU of its own vendor (data/kernels.yaml ``priors``);
- ``engine``: the engine profile had no row in the fit;
- ``dtype``: the compute format or the weight format is absent from the fit;
- ``family``: the model family is absent from the fit.

Which band each figure of an output carries (``FIGURES``): a figure is read at the metric kind the
measured rows of that figure have in the validation schema (``kind_of``), except the step time of a
static batch and of the offline max-throughput point (``tpot``), which sets their throughput exactly
(tok/s = batch / TPOT) and so carries the throughput band. Static batch and max throughput read the
bound of the phase the figure comes from (decode for throughput and TPOT, prefill for TTFT); serving,
analytic or simulated, reads no bound (the simulator has no single bound), so both answer alike.

The validation schema's metric lists live here (the run-time lookup needs the kind of a metric;
validation/dataset.py imports them).
"""
from __future__ import annotations

from functools import lru_cache

from ..hardware.kernel_data import measured_gpus, prior_templates
from ..hardware import get_gpu

# --- the validation schema's metrics and their kind (validation/dataset.py re-exports these) -----------
PERCENTILES = ("p50", "p90", "p99")
LATENCIES = ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")
METRICS = ("output_tok_s", "output_tok_s_per_gpu", "total_tok_s", "requests_per_s", *LATENCIES,
           *(f"{m}_{p}" for m in LATENCIES for p in PERCENTILES), "tok_s_per_user", "achieved_mem_bw_gbps",
           "prefill_tok_s")
THROUGHPUT_METRICS = frozenset({"output_tok_s", "output_tok_s_per_gpu", "total_tok_s", "requests_per_s",
                                "tok_s_per_user", "achieved_mem_bw_gbps", "prefill_tok_s"})
LATENCY_METRICS = frozenset(m for m in METRICS if m not in THROUGHPUT_METRICS)
KINDS = ("throughput", "latency")

#: per scenario (the validation schema's names), each figure of its output that carries a band:
#: (metric kind, phase whose bound is read: "decode", "prefill" or None) (module docstring)
FIGURES = {
    "static_batch": {"throughput": ("throughput", "decode"), "tpot": ("throughput", "decode"),
                     "ttft": ("latency", "prefill")},
    "max_throughput": {"throughput": ("throughput", "decode"), "tpot": ("throughput", "decode")},
    "serving": {"throughput": ("throughput", None), "ttft": ("latency", None), "tpot": ("latency", None),
                "itl": ("latency", None), "e2e": ("latency", None)},
}


def kind_of(metric: str) -> str:
    """``latency`` for a latency metric of the validation schema (TTFT, ITL, TPOT, E2E and their
    percentiles), else ``throughput``."""
    return "latency" if metric in LATENCY_METRICS else "throughput"


# --- kernel-curve provenance (hardware/kernel_data.py: what pricing/kernels/curves.py builds from) -----
def curve_source(gpu_id: str) -> tuple[str, str | None] | None:
    """Where a catalog GPU id's kernel curves come from: ("measured", None), ("prior", the measured GPU
    it is derived from), or None (kernels.yaml has neither; ``pricing.kernels.curves_for`` gives None)."""
    if gpu_id in measured_gpus():
        return "measured", None
    derived = prior_templates()
    if gpu_id in derived:
        return "prior", derived[gpu_id]
    return None


@lru_cache(maxsize=None)
def _vendor(gpu_id: str) -> str:
    """The first word of a catalog GPU's vendor, lower case ('' if unknown)."""
    try:
        v = get_gpu(gpu_id).vendor
    except ValueError:
        return ""
    return v.split()[0].lower() if v else ""


# --- the band of a prediction -----------------------------------------------------------------------
def widening(cal, dep) -> tuple[float, list[str]]:
    """(multiplier, reasons) of the ways ``dep`` extrapolates beyond ``cal``'s fit (module docstring);
    (1.0, []) when the calibration states no extrapolation factors or coverage."""
    b = getattr(cal, "bands", None) or {}
    ext = b.get("extrapolation") or {}
    cov = b.get("coverage") or {}
    if not ext or not cov:
        return 1.0, []
    factor, why = 1.0, []
    gpu = dep.gpu.id
    source = curve_source(gpu) if dep.gpu.efficiency.kernel_curves else None
    if gpu not in cov.get("gpus", []):
        factor *= ext.get("gpu", 1.0)
        why.append(f"GPU {gpu} absent from the fit")
    if source is None or (source[0] == "prior" and _vendor(source[1] or "") != _vendor(gpu)):
        factor *= ext.get("cross_vendor", 1.0)
        why.append("no measured kernels of this vendor (curves from another vendor's template, or none)")
    elif source[0] == "prior":
        factor *= ext.get("prior_curves", 1.0)
        why.append(f"prior kernel curves (derived from {source[1]})")
    if dep.engine not in cov.get("engines", []):
        factor *= ext.get("engine", 1.0)
        why.append(f"engine {dep.engine} absent from the fit")
    if dep.compute_dtype not in cov.get("dtypes", []) or dep.dtypes.weight not in cov.get("dtypes", []):
        factor *= ext.get("dtype", 1.0)
        why.append(f"format {dep.dtypes.weight}/{dep.compute_dtype} absent from the fit")
    if dep.model.family not in cov.get("families", []):
        factor *= ext.get("family", 1.0)
        why.append(f"model family {dep.model.family} absent from the fit")
    return factor, why


def band_for(cal, dep, scenario: str, kind: str, bound: str | None = None) -> float | None:
    """Expected relative error of a ``kind`` figure of ``scenario`` for ``dep`` under calibration ``cal``:
    the base band times the widening of the ways it extrapolates, rounded to 4 digits; None without a band."""
    if cal is None:
        return None
    base = cal.band(scenario, kind, bound)
    if base is None:
        return None
    return round(base * widening(cal, dep)[0], 4)


def band(dep, scenario: str, kind: str, bound: str | None = None) -> float | None:
    """:func:`band_for` under the deployment's own calibration (None without one)."""
    return band_for(dep.calibration, dep, scenario, kind, bound)


def band_reasons(dep) -> list[str]:
    """Why ``dep``'s bands are wider than the calibration's base bands (empty: inside the fit's data)."""
    return [] if dep.calibration is None else widening(dep.calibration, dep)[1]


def error_bands(dep, scenario: str, prefill_bound: str | None = None, decode_bound: str | None = None) -> dict:
    """{figure: band} of one output of ``scenario`` (``FIGURES``; static_batch, max_throughput, serving);
    figures without a band are left out (all of them without a calibration)."""
    bounds = {"prefill": prefill_bound, "decode": decode_bound, None: None}
    out = {name: band(dep, scenario, kind, bounds[phase]) for name, (kind, phase) in FIGURES[scenario].items()}
    return {k: v for k, v in out.items() if v is not None}
