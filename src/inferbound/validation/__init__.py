"""Validation against measured data: read the CSV schema, predict each row, summarize the error.

Names load on first use: importing ``validation.dataset`` (the schema's metric lists, which the error
bands read) does not import the predictors and the whole pricing stack behind them."""
from __future__ import annotations

from ..base.lazy import lazy_exports

_EXPORTS = {"LATENCY_METRICS": "dataset", "THROUGHPUT_METRICS": "dataset", "Row": "dataset", "read_csv": "dataset",
            "group_summary": "metrics", "summarize": "metrics",
            "PREDICTORS": "predict", "Prediction": "predict", "predict_rows": "predict"}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
