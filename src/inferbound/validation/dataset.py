"""Read measured-performance CSVs (schema of shared/validation/README.md) into typed rows.

Columns: case, source, model, gpu, num_gpus, tp, pp, ep, weight_dtype, act_dtype, kv_dtype, framework,
scenario, batch_size, request_rate, num_requests, input_len, output_len, metric, value, source_url.
Optional columns (blank = not stated; the engine profile's default):
- ``concurrency``: a closed-loop serving run of N clients (``vllm bench serve --max-concurrency``,
  genai-perf ``--concurrency``); a serving row with ``batch_size`` and no ``request_rate`` means the same.
  On a max_throughput row: the benchmark's cap on requests in flight, issued in full (at least that many
  requests whatever ``num_requests`` or its default says: workloads/max_throughput.py);
- ``dataset``: a bundled length profile (data/datasets.yaml: sharegpt, mlperf_llama2_70b_openorca, ...),
  read by its first word; ``random`` (fixed lengths) or other text describes the stated lengths;
  ``input_len_std`` / ``output_len_std``: the spread of the lengths (modelled as normal);
- engine settings: ``engine`` (a profile name), ``engine_version``, ``max_num_seqs``,
  ``max_num_batched_tokens``, ``gpu_memory_utilization``, ``prefix_caching``, ``kv_offload`` (on/off),
  ``speculative`` (e.g. ``mtp:3``);
- ``scheduler_steps``: vLLM V0 multi-step scheduling, the run's ``--num-scheduler-steps N`` (deploy/engine_modes.py);
  ``cuda_graphs`` (on/off): off where the run disabled them (SGLang ``--disable-cuda-graph``, vLLM
  ``--enforce-eager``): steps priced eagerly; ``stream_interval`` (SGLang ``--stream-interval k``: tokens per
  streamed chunk) and ``scheduler_recv_interval`` (SGLang ``--scheduler-recv-interval k``: decode steps between the
  scheduler's receives of new requests) as the run set them (deploy/engine_modes.py);
- ``attention_dp`` (on/off): the engine ran attention data parallel beside expert parallelism
  (TensorRT-LLM ``enable_attention_dp``, SGLang ``--enable-dp-attention``; layouts named DEP<n>). ``tp``
  is then the engine's tp_size, which counts every attention rank: inferbound prices it as attention
  tp 1 over tp·dp ranks sharing the experts (config.Parallelism.attention_dp);
- ``bench_command`` (serving rows): the load tool's own command line the run used (``vllm bench serve ...``,
  ``genai-perf profile ...``, ``trtllm-bench ...``, ``guidellm benchmark ...``; bench/): the row is predicted
  by replaying that protocol (number of prompts, warm-ups, max concurrency, rate, lengths) instead of from
  request_rate/concurrency; rows without it are predicted as before.
Lengths may be means (593.37 tokens) and may be blank where the dataset profile publishes them.
Metrics: METRICS; ``tpot_ms`` excludes the first token; ``_p50``/``_p90``/``_p99`` are percentiles over
requests. Other columns are ignored. A row that cannot be parsed is kept with the reason, never dropped.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

# the schema's metric lists live with the run-time band lookup, which reads a metric's kind (deploy/bands.py)
from ..deploy.bands import LATENCIES, LATENCY_METRICS, METRICS, PERCENTILES, THROUGHPUT_METRICS  # noqa: F401
from ..workloads.lengths import profile_names

REQUIRED = ("case", "source", "model", "gpu", "num_gpus", "scenario", "metric", "value")
HEADER = REQUIRED + ("input_len", "output_len")  # columns a file must have (cells may be blank: dataset)
SCENARIOS = ("static_batch", "max_throughput", "serving")
FLAGS = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}


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
    input_len: float | None  # mean prompt tokens (blank: the dataset profile's)
    output_len: float | None
    metric: str
    value: float
    extra: dict = field(default_factory=dict)
    concurrency: int | None = None
    dataset: str | None = None  # a bundled profile name, or None (the stated lengths)
    dataset_text: str = ""
    input_len_std: float | None = None
    output_len_std: float | None = None
    engine: str | None = None
    engine_version: str | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float | None = None
    prefix_caching: bool | None = None
    kv_offload: bool | None = None
    speculative: str | None = None
    attention_dp: bool | None = None
    bench_command: str | None = None  # the load tool's command line (serving rows; predict.py replays it)
    scheduler_steps: int | None = None  # vLLM V0 --num-scheduler-steps (deploy/engine_modes.py)
    cuda_graphs: bool | None = None  # False: the run disabled CUDA graphs (eager steps)
    stream_interval: int | None = None  # SGLang --stream-interval (deploy/engine_modes.py)
    recv_interval: int | None = None  # SGLang --scheduler-recv-interval (deploy/engine_modes.py)

    @property
    def setup_key(self) -> tuple:
        """Rows that describe the same run (one prediction serves all their metrics)."""
        return (self.source, self.model, self.gpu, self.num_gpus, self.tp, self.pp, self.ep, self.weight_dtype,
                self.act_dtype, self.kv_dtype, self.scenario, self.batch_size, self.request_rate,
                self.num_requests, self.input_len, self.output_len, self.framework, self.concurrency, self.dataset,
                self.input_len_std, self.output_len_std, self.engine, self.engine_version, self.max_num_seqs,
                self.max_num_batched_tokens, self.gpu_memory_utilization, self.prefix_caching, self.kv_offload,
                self.speculative, self.attention_dp, self.bench_command, self.scheduler_steps, self.cuda_graphs,
                self.stream_interval, self.recv_interval)


@dataclass
class Unreadable:
    case: str
    metric: str
    reason: str
    raw: dict


def _int(raw: dict, key: str, default=None):
    v = (raw.get(key) or "").strip()
    if v.lower() == "not stated":  # the source does not give it: the row is not predicted (no guessed layout)
        raise ValueError(f"{key} not stated by the source; allowed: an integer, or blank for the schema default")
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


def _opt_flag(raw: dict, key: str):
    v = (raw.get(key) or "").strip().lower()
    if not v:
        return None
    if v not in FLAGS:
        raise ValueError(f"{key}={v!r} unknown; allowed: on, off")
    return FLAGS[v]


def _opt_len(raw: dict, key: str, low: float):
    """A length: a mean (non-integers allowed), >= ``low``."""
    v = _opt_float(raw, key)
    if v is not None and not (math.isfinite(v) and v >= low):
        raise ValueError(f"{key}={v!r} must be a number of tokens >= {low:g}")
    return v


def _dataset(raw: dict) -> str | None:
    """The bundled profile a ``dataset`` cell names by its first word, else None (the stated lengths)."""
    text = (raw.get("dataset") or "").strip()
    first = text.split()[0].strip(",;()").lower() if text else ""
    return first if first in profile_names() else None  # listed or not: the row may state its lengths


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
                  input_len=_opt_len(raw, "input_len", 0), output_len=_opt_len(raw, "output_len", 1), metric=metric,
                  value=float(raw["value"]), extra={k: v for k, v in raw.items() if k not in Row.__dataclass_fields__},
                  concurrency=_opt_int(raw, "concurrency"), dataset=_dataset(raw),
                  dataset_text=(raw.get("dataset") or "").strip(), input_len_std=_opt_float(raw, "input_len_std"),
                  output_len_std=_opt_float(raw, "output_len_std"), engine=_opt_str(raw, "engine"),
                  engine_version=_opt_str(raw, "engine_version"), max_num_seqs=_opt_int(raw, "max_num_seqs"),
                  max_num_batched_tokens=_opt_int(raw, "max_num_batched_tokens"),
                  gpu_memory_utilization=_opt_float(raw, "gpu_memory_utilization"),
                  prefix_caching=_opt_flag(raw, "prefix_caching"), kv_offload=_opt_flag(raw, "kv_offload"),
                  speculative=_opt_str(raw, "speculative"), attention_dp=_opt_flag(raw, "attention_dp"),
                  bench_command=_opt_str(raw, "bench_command"), scheduler_steps=_opt_int(raw, "scheduler_steps"),
                  cuda_graphs=_opt_flag(raw, "cuda_graphs"), stream_interval=_opt_int(raw, "stream_interval"),
                  recv_interval=_opt_int(raw, "scheduler_recv_interval"))
        if not row.value > 0:
            raise ValueError(f"value={row.value} must be > 0")
        for name in ("input_len", "output_len"):
            if getattr(row, name) is None and row.dataset is None:
                raise ValueError(f"{name} is blank and dataset={row.dataset_text!r} names no bundled profile; "
                                 f"allowed: a length, or a dataset profile of data/datasets.yaml")
        for name in ("input_len_std", "output_len_std"):
            v = getattr(row, name)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name}={v!r} must be a number of tokens >= 0")
        for name, v in (("scheduler_steps", row.scheduler_steps), ("stream_interval", row.stream_interval),
                        ("scheduler_recv_interval", row.recv_interval)):
            if v is not None and v < 1:
                raise ValueError(f"{name}={v} must be >= 1")
        if row.concurrency is not None and row.concurrency < 1:
            raise ValueError(f"concurrency={row.concurrency} must be >= 1")
        if row.gpu_memory_utilization is not None and not 0 < row.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization={row.gpu_memory_utilization} must be in (0, 1]")
        if scenario == "static_batch" and row.batch_size is None:
            raise ValueError("static_batch row without batch_size")
        if row.bench_command is not None and scenario != "serving":
            raise ValueError(f"bench_command on a {scenario} row; allowed: serving rows")
        if scenario == "serving" and row.request_rate is None and row.concurrency is None and \
                row.bench_command is None:
            if row.batch_size is None:
                raise ValueError("serving row without request_rate, concurrency or batch_size")
            row.concurrency = row.batch_size  # a serving row's batch size is its client count
        if scenario == "serving" and row.request_rate is not None and row.concurrency is not None:
            raise ValueError(f"request_rate={row.request_rate:g} and concurrency={row.concurrency}: a serving run is "
                             f"open loop (a rate) or closed loop (clients), not both")
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
        missing = [c for c in HEADER if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"file={str(path)!r} lacks column(s) {', '.join(missing)} of the validation schema")
        rows, bad = [], []
        for i, raw in enumerate(reader, start=2):
            r = parse_row(raw, i)
            (rows if isinstance(r, Row) else bad).append(r)
    return rows, bad
