"""Validation against measured data: read the CSV schema, predict each row, summarize the error.

Names load on first use: importing ``validation.dataset`` (the schema's metric lists, which the error
bands read) does not import the predictors and the whole pricing stack behind them."""
from __future__ import annotations

import importlib

_EXPORTS = {"LATENCY_METRICS": "dataset", "THROUGHPUT_METRICS": "dataset", "Row": "dataset", "read_csv": "dataset",
            "group_summary": "metrics", "summarize": "metrics",
            "PREDICTORS": "predict", "Prediction": "predict", "predict_rows": "predict"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'inferbound.validation' has no attribute {name!r}")
