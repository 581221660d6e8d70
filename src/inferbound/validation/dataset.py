"""Read measured-performance CSVs (schema of shared/validation/README.md) into typed rows.

Columns: case, source, model, gpu, num_gpus, tp, pp, ep, weight_dtype, act_dtype, kv_dtype, framework,
scenario, batch_size, request_rate, num_requests, input_len, output_len, metric, value, source_url.
Extra columns are ignored; blank cells are allowed where the schema says so. A row that cannot be
parsed is kept with the reason, never dropped.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

REQUIRED = ("case", "source", "model", "gpu", "num_gpus", "scenario", "input_len", "output_len", "metric", "value")
SCENARIOS = ("static_batch", "max_throughput", "serving")
METRICS = ("output_tok_s", "output_tok_s_per_gpu", "total_tok_s", "requests_per_s", "ttft_ms", "itl_ms",
           "tok_s_per_user", "achieved_mem_bw_gbps", "prefill_tok_s")
THROUGHPUT_METRICS = frozenset({"output_tok_s", "output_tok_s_per_gpu", "total_tok_s", "requests_per_s",
                                "tok_s_per_user", "achieved_mem_bw_gbps", "prefill_tok_s"})
LATENCY_METRICS = frozenset({"ttft_ms", "itl_ms"})


@dataclass
class Row:
    case: str
    source: str
    model: str
    gpu: str
    num_gpus: int
    tp: int
    pp: int
    ep: int | None
    weight_dtype: str | None
    act_dtype: str | None
    kv_dtype: str | None
    framework: str
    scenario: str
    batch_size: int | None
    request_rate: float | None
    num_requests: int | None
    input_len: int
    output_len: int
    metric: str
    value: float
    extra: dict = field(default_factory=dict)

    @property
    def setup_key(self) -> tuple:
        """Rows that describe the same run (one prediction serves all their metrics)."""
        return (self.source, self.model, self.gpu, self.num_gpus, self.tp, self.pp, self.ep, self.weight_dtype,
                self.act_dtype, self.kv_dtype, self.scenario, self.batch_size, self.request_rate,
                self.num_requests, self.input_len, self.output_len, self.framework)


@dataclass
class Unreadable:
    case: str
    metric: str
    reason: str
    raw: dict


def _int(raw: dict, key: str, default=None):
    v = (raw.get(key) or "").strip()
    if not v:
        if default is None:
            raise ValueError(f"{key} is blank")
        return default
    f = float(v)
    if f != int(f):
        raise ValueError(f"{key}={v!r} is not an integer")
    return int(f)


def _opt_int(raw: dict, key: str):
    v = (raw.get(key) or "").strip()
    return _int(raw, key) if v else None


def _opt_float(raw: dict, key: str):
    v = (raw.get(key) or "").strip()
    if not v:
        return None
    return math.inf if v.lower() in ("inf", "infinity") else float(v)


def _opt_str(raw: dict, key: str):
    v = (raw.get(key) or "").strip()
    return v or None


def parse_row(raw: dict, line: int) -> Row | Unreadable:
    case = (raw.get("case") or f"line{line}").strip()
    metric = (raw.get("metric") or "").strip()
    try:
        missing = [k for k in REQUIRED if not (raw.get(k) or "").strip()]
        if missing:
            raise ValueError(f"missing field(s): {', '.join(missing)}")
        scenario = raw["scenario"].strip()
        if scenario not in SCENARIOS:
            raise ValueError(f"scenario={scenario!r} unknown; allowed: {', '.join(SCENARIOS)}")
        if metric not in METRICS:
            raise ValueError(f"metric={metric!r} unknown; allowed: {', '.join(METRICS)}")
        num_gpus = _int(raw, "num_gpus")
        row = Row(case=case, source=raw["source"].strip(), model=raw["model"].strip(), gpu=raw["gpu"].strip(),
                  num_gpus=num_gpus, tp=_int(raw, "tp", num_gpus), pp=_int(raw, "pp", 1), ep=_opt_int(raw, "ep"),
                  weight_dtype=_opt_str(raw, "weight_dtype"), act_dtype=_opt_str(raw, "act_dtype"),
                  kv_dtype=_opt_str(raw, "kv_dtype"), framework=(raw.get("framework") or "").strip(),
                  scenario=scenario, batch_size=_opt_int(raw, "batch_size"),
                  request_rate=_opt_float(raw, "request_rate"), num_requests=_opt_int(raw, "num_requests"),
                  input_len=_int(raw, "input_len"), output_len=_int(raw, "output_len"), metric=metric,
                  value=float(raw["value"]), extra={k: v for k, v in raw.items() if k not in Row.__dataclass_fields__})
        if not row.value > 0:
            raise ValueError(f"value={row.value} must be > 0")
        if scenario == "static_batch" and row.batch_size is None:
            raise ValueError("static_batch row without batch_size")
        if scenario == "serving" and row.request_rate is None:
            raise ValueError("serving row without request_rate")
        return row
    except (ValueError, KeyError) as e:
        return Unreadable(case, metric, f"unreadable row: {e}", raw)


def read_csv(path: str | Path) -> tuple[list[Row], list[Unreadable]]:
    """All rows of ``path``: parsed rows and unreadable ones with the reason."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"file={str(path)!r} does not exist")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"file={str(path)!r} lacks column(s) {', '.join(missing)} of the validation schema")
        rows, bad = [], []
        for i, raw in enumerate(reader, start=2):
            r = parse_row(raw, i)
            (rows if isinstance(r, Row) else bad).append(r)
    return rows, bad
