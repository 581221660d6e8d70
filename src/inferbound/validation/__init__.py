"""Validation against measured data: read the CSV schema, predict each row, summarize the error."""
from .dataset import LATENCY_METRICS, THROUGHPUT_METRICS, Row, read_csv
from .metrics import group_summary, summarize
from .predict import PREDICTORS, Prediction, predict_rows

__all__ = ["LATENCY_METRICS", "PREDICTORS", "Prediction", "Row", "THROUGHPUT_METRICS", "group_summary",
           "predict_rows", "read_csv", "summarize"]
