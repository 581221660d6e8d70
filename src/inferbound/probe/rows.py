"""Measured probe runs as rows of the validation CSV schema (shared/validation/README.md).

One :class:`Measurement` is one static batch: ``batch`` sequences, ``input_len`` tokens already in
the cache (a real prefill of that prompt, or random cache contents for a long context), then
``steps`` decode steps at contexts input_len .. input_len+steps−1. In the schema that is a
``static_batch`` row set with output_len = steps + 1 (the first output token comes from the
prefill), and::

    ttft_ms        = median(prefill seconds) · 1e3          (only when a prefill was timed)
    tok_s_per_user = 1 / median(decode step seconds)

KV-cache-off runs go to a separate file (framework ``pytorch-eager-nokvcache``): the predictor's
static batch assumes a cache, so ``validate`` would price them wrongly; the probe report compares
them with ``estimate.no_kv_cache_decode_time`` instead.
"""
from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..model import ModelSpec, load_model
from ..model.loader import resolve
from .device import median

#: columns of the validation schema, in the README's order, then the probe's extra columns (ignored
#: by the reader): timed samples behind the value and how the cache was filled
COLUMNS = ("case", "source", "model", "gpu", "num_gpus", "tp", "pp", "ep", "weight_dtype", "act_dtype", "kv_dtype",
           "framework", "scenario", "batch_size", "request_rate", "num_requests", "input_len", "output_len",
           "metric", "value", "source_url", "samples", "cache_fill")
SOURCE = "inferbound_probe"
FRAMEWORK = "pytorch-eager"
FRAMEWORK_NO_CACHE = "pytorch-eager-nokvcache"


@dataclass
class Measurement:
    batch: int
    input_len: int
    steps: int
    decode_s: list[float]
    prefill_s: list[float] = field(default_factory=list)
    kv_cache: bool = True
    cache_fill: str = "prefill"   # "prefill" | "random" | "none" (no cache)

    @property
    def decode_step_s(self) -> float:
        return median(self.decode_s)

    @property
    def prefill_step_s(self) -> float | None:
        return median(self.prefill_s) if self.prefill_s else None

    def to_dict(self) -> dict:
        return {**asdict(self), "decode_step_s": self.decode_step_s, "prefill_step_s": self.prefill_step_s}


def csv_rows(ms: list[Measurement], model: str, gpu: str, dtype: str, note: str, first_case: int = 1) -> list[dict]:
    """Schema rows of ``ms`` (see module docstring); cases are numbered probe-0001, ..."""
    out = []
    for meas in ms:
        base = {"source": SOURCE, "model": model, "gpu": gpu, "num_gpus": 1, "tp": 1, "pp": 1, "ep": "",
                "weight_dtype": dtype, "act_dtype": dtype, "kv_dtype": dtype,
                "framework": FRAMEWORK if meas.kv_cache else FRAMEWORK_NO_CACHE, "scenario": "static_batch",
                "batch_size": meas.batch, "request_rate": "", "num_requests": "", "input_len": meas.input_len,
                "output_len": meas.steps + 1, "source_url": note, "cache_fill": meas.cache_fill}
        if meas.prefill_s:
            out.append({**base, "metric": "ttft_ms", "value": f"{meas.prefill_step_s * 1e3:.6g}",
                        "samples": len(meas.prefill_s)})
        out.append({**base, "metric": "tok_s_per_user", "value": f"{1.0 / meas.decode_step_s:.6g}",
                    "samples": len(meas.decode_s)})
    for i, row in enumerate(out):
        row["case"] = f"probe-{first_case + i:04d}"
    return out


def write_csv(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path


def row_model(model: str | dict, overrides: dict | None, out_dir: Path) -> tuple[str, ModelSpec]:
    """(the ``model`` cell of the rows, the ModelSpec the probe builds).

    A catalog id or alias without overrides is written as its HF id, a config path as its absolute
    path; with ``overrides`` (or a config dict) the config is written to ``out_dir/<name>-probe.json``
    and that path is the cell, so ``validate`` prices exactly the model that ran.
    """
    spec = load_model(model, overrides or None)
    if isinstance(model, str) and not overrides:
        path = Path(model).expanduser()
        return (str(path.resolve()) if path.exists() else resolve(model)[0]), spec
    if isinstance(model, dict):
        name, raw = str(model.get("_name_or_path") or "custom"), dict(model)
    else:
        name, raw = resolve(model)
    raw = {**raw, **(overrides or {})}
    out = out_dir / f"{Path(name).name.lower()}-probe.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    written = load_model(str(out))
    if written.model_dump(exclude={"name"}) != spec.model_dump(exclude={"name"}):
        bad = sorted(k for k in (overrides or {}) if k in ModelSpec.model_fields)
        raise ValueError(f"overrides={bad!r} set ModelSpec fields a config.json cannot carry; "
                         f"allowed: config.json keys (num_hidden_layers, hidden_size, ...)")
    return str(out.resolve()), written
