"""A calibration: residual factors fitted to measured rows, and error bands.

File format (YAML)::

    schema_version: 1
    fitted_on: {file: measured.csv, rows: 421, date: ...}
    kernels: {gemm: 1.02, attention: 0.97, moe: 1.0}                # multiply a whole kernel class's curve time
    engines: {trtllm@0.17: {step_s: 0.0011, seq_s: 2.0e-6}}          # host work per engine profile
    global: {collective: 0.8, ...}                                    # Efficiency fields applied to every GPU
    gpus: {h100_sxm: {memory: 0.83}, ...}                             # per-GPU Efficiency fields (legacy fits)
    serving: {request_overhead_s: 0.007}                             # front end (HTTP, tokenizer) per request
    bands: {"static_batch/throughput": 0.12, "extrapolated": 0.3}     # relative error bands (bands.py)
    cross_validation: {...}                                           # report of the fit

``kernels`` and ``engines`` are read by the pricing engine (kernel_pricing.py); ``global`` and ``gpus``
keys are :class:`~inferbound.hardware.Efficiency` fields that ``apply`` layers over the catalog's
efficiency (a user's --gpu-set still wins, applied afterwards).
Resolution of the active calibration: an explicit argument, else $INFERBOUND_CALIBRATION (a path
or ``none``), else the packaged ``data/calibration.yaml`` if present; ``none`` = catalog priors.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..base.caches import cache
from ..base.datafiles import dump_yaml, load_yaml
from ..hardware import GPU, apply_overrides

ENV = "INFERBOUND_CALIBRATION"


@dataclass
class Calibration:
    global_factors: dict = field(default_factory=dict)
    gpus: dict = field(default_factory=dict)
    bands: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    source: str = "in-memory"
    serving: dict = field(default_factory=dict)  # request_overhead_s: front-end latency added to TTFT
    kernel_factors: dict = field(default_factory=dict)  # kernel class -> multiplier of its curve time
    engines: dict = field(default_factory=dict)  # engine profile -> {step_s, seq_s} host work

    @property
    def request_overhead_s(self) -> float:
        return float(self.serving.get("request_overhead_s", 0.0))

    def overrides_for(self, gpu_id: str) -> dict:
        """Dotted overrides (efficiency.<field>, efficiency.compute_by_dtype.<dtype>) for one GPU."""
        out = {f"efficiency.{k}": v for k, v in self.global_factors.items()}
        for k, v in self.gpus.get(gpu_id, {}).items():
            if k == "compute_by_dtype":
                out.update({f"efficiency.compute_by_dtype.{d}": x for d, x in v.items()})
            else:
                out[f"efficiency.{k}"] = v
        return out

    def apply(self, gpu: GPU) -> GPU:
        o = self.overrides_for(gpu.id)
        return apply_overrides(gpu, o) if o else gpu

    def band(self, scenario: str, kind: str, bound: str | None) -> float | None:
        """Expected relative error for a prediction: most specific key first."""
        for key in (f"{scenario}/{kind}/{bound}", f"{scenario}/{kind}", f"*/{kind}", "*"):
            if key in self.bands:
                return float(self.bands[key])
        return None

    def to_yaml(self) -> str:
        doc = {"schema_version": 1, **({"fitted_on": self.meta.get("fitted_on")} if self.meta.get("fitted_on") else {}),
               "kernels": self.kernel_factors, "engines": self.engines,
               "global": self.global_factors, "gpus": self.gpus, "serving": self.serving, "bands": self.bands,
               **{k: v for k, v in self.meta.items() if k != "fitted_on"}}
        return dump_yaml(doc)

    def save(self, path: str | Path) -> None:
        Path(path).write_text("# inferbound calibration: fitted efficiency factors and error bands "
                              "(written by `inferbound calibrate`)\n" + self.to_yaml())


def from_dict(doc: dict, source: str) -> Calibration:
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise ValueError(f"calibration={source!r}: not a calibration file (schema_version: 1 expected)")
    meta = {k: v for k, v in doc.items()
            if k not in ("schema_version", "global", "gpus", "bands", "serving", "kernels", "engines")}
    return Calibration(dict(doc.get("global") or {}), dict(doc.get("gpus") or {}), dict(doc.get("bands") or {}),
                       meta, source, dict(doc.get("serving") or {}), dict(doc.get("kernels") or {}),
                       dict(doc.get("engines") or {}))


def load_file(path: str | Path) -> Calibration:
    p = Path(path).expanduser()
    if not p.is_file():
        raise ValueError(f"calibration={str(path)!r} is not a file; allowed: a calibration YAML, 'default' or 'none'")
    return from_dict(load_yaml(p.read_text()), str(p))


@lru_cache(maxsize=1)
def packaged() -> Calibration | None:
    res = resources.files("inferbound") / "data" / "calibration.yaml"
    if not res.is_file():
        return None
    return from_dict(load_yaml(res.read_text(), cache="calibration.yaml"), "packaged data/calibration.yaml")


def resolve(calibration=None) -> Calibration | None:
    """The calibration to use: a Calibration, a path, 'none', 'default', or None (= environment/default)."""
    if isinstance(calibration, Calibration):
        return calibration
    choice = calibration if calibration is not None else os.environ.get(ENV, "default")
    if str(choice).lower() == "none":
        return None
    if str(choice).lower() == "default":
        return packaged()
    return load_file(choice)


_KEYS = cache("calibration content key", 64)


def content_key(cal: Calibration | None) -> str | None:
    """What a calibration holds, as one hashable string (its fitted factors, bands and serving figures),
    kept per Calibration object; None for none."""
    if cal is None:
        return None
    return _KEYS.per_object(cal, lambda c: repr((c.global_factors, c.gpus, c.bands, c.serving, c.kernel_factors,
                                                 c.engines)))
