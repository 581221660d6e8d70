"""POST /api/validate: measured rows as CSV text in the body, predicted and scored.

The CSV follows ``inferbound.validation.dataset`` (header row, one measured metric per row); rows are
parsed with its ``parse_row`` and predicted with ``predict_rows``, as ``inferbound validate`` does
with a file. Differences, both for safety: a row's model must be a catalog name (the library would
also accept a path; here the row is reported as not covered), and rows past the web caps (batch,
lengths, GPUs) are not predicted. At most MAX_ROWS rows and MAX_SETUPS distinct setups per call.
"""
from __future__ import annotations

import csv
import dataclasses
import io

from fastapi import APIRouter, Request

from ..validation import group_summary, predict_rows, summarize
from ..validation.dataset import REQUIRED, Row, parse_row
from ..validation.predict import Prediction
from .budget import heavy_slot
from .compute import computing
from .errors import ApiError, jsonable
from .modelsource import catalog_spec, catalog_id
from .schemas import MAX_BATCH, MAX_GPUS, MAX_TOKENS, ValidateIn

router = APIRouter(prefix="/api", tags=["validation"])

MAX_ROWS = 5000
MAX_SETUPS = 500


def read_rows(text: str) -> tuple[list[Row], list]:
    """(rows, unreadable) of CSV text; ApiError for a missing column, a broken CSV or too many rows."""
    try:
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ApiError("csv", f"the header lacks column(s) {', '.join(missing)} of the validation schema")
        rows, bad = [], []
        for i, raw in enumerate(reader, start=2):
            if i - 1 > MAX_ROWS:
                raise ApiError("csv", f"more than {MAX_ROWS:,} rows; the cap per call is {MAX_ROWS:,}")
            raw = {k: v for k, v in raw.items() if isinstance(k, str)}  # extra cells land under None
            raw = {k: v if isinstance(v, str) else "" for k, v in raw.items()}  # short rows give None
            r = parse_row(raw, i)
            (rows if isinstance(r, Row) else bad).append(r)
    except csv.Error as e:
        raise ApiError("csv", f"not readable as CSV: {e}") from None
    return rows, bad


def _uncovered_reason(row: Row) -> str | None:
    if catalog_id(row.model) is None:
        return f"model={row.model!r} is not a catalog name (the web API reads no files)"
    for name, v, cap in (("batch_size", row.batch_size or 1, MAX_BATCH), ("input_len", row.input_len, MAX_TOKENS),
                         ("output_len", row.output_len, MAX_TOKENS), ("num_gpus", row.num_gpus, MAX_GPUS),
                         ("tp", row.tp, MAX_GPUS), ("pp", row.pp, MAX_GPUS), ("ep", row.ep or 1, MAX_GPUS)):
        if not 1 <= v <= cap:
            return f"{name}={v} is outside 1..{cap:,}, the web API's cap"
    return None


@router.post("/validate", summary="Score predictions against measured rows (CSV text)")
def validate(req: ValidateIn, request: Request) -> dict:
    """Per row: measured, predicted, signed relative error or why not covered; per source/scenario/metric:
    MAPE, median APE, share within ±25 %, bias; rows that could not be read, with the reason."""
    rows, bad = read_rows(req.csv)
    reasons = [_uncovered_reason(r) for r in rows]
    safe = [dataclasses.replace(r, model=catalog_spec(catalog_id(r.model))) for r, why in zip(rows, reasons)
            if why is None]
    setups = {r.setup_key for r in safe}
    if len(setups) > MAX_SETUPS:
        raise ApiError("csv", f"{len(setups):,} distinct setups; the cap per call is {MAX_SETUPS:,}")
    with heavy_slot(request), computing(req):
        predicted = iter(predict_rows(safe, calibration=req.calibration_arg))
    preds = []
    for r, why in zip(rows, reasons):  # back to the rows as given (model names, not specs)
        p = None if why else next(predicted)
        preds.append(Prediction(r, None, why) if p is None else Prediction(r, p.predicted, p.reason))
    return jsonable({
        "rows": [{"case": p.row.case, "source": p.row.source, "model": p.row.model, "gpu": p.row.gpu,
                  "scenario": p.row.scenario, "metric": p.row.metric, "measured": p.row.value,
                  "predicted": p.predicted, "error": p.error, "reason": p.reason} for p in preds],
        "unreadable": [{"case": u.case, "metric": u.metric, "reason": u.reason} for u in bad],
        "summary": group_summary(preds),
        "overall": summarize([p.error for p in preds if p.covered]),
        "not_covered": sum(not p.covered for p in preds),
    })
