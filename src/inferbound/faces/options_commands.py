"""The CLI's own options (faces/options.py re-exports every name): the files a command writes, --json, and the
commands the JSON API has no form of: ``ESTIMATE_OUTPUT``, ``SIMULATE_OUTPUT``, ``SEARCH_OUTPUT``, ``COMPARE``,
``VALIDATE``, ``CALIBRATE``, ``PROBE``, ``SERVE``, ``MODELS``, ``GPUS``, ``BENCH``, ``FLEET``."""
from __future__ import annotations

from pathlib import Path

from ..base.choices import BACKENDS
from ..validation.dataset import SCENARIOS as ROW_SCENARIOS
from .opt import REQUIRED, Opt, by_name, declare as _o
from .options_deploy import (CALIBRATION, DEPLOYMENT, ENGINE_OPT, GPU_FILE, GPU_OVERRIDES, MODEL, MODEL_OVERRIDES,
                             PRICES)
from .options_workload import SCENARIO, SIM_REQUESTS_CLI_CAP

#: calibrate's leave-one-group-out keys
CV_KEYS = ("gpu", "source", "model")
#: uvicorn's log levels (uvicorn.config.LOG_LEVELS), case-insensitive
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


# ---- the CLI's own options: files it writes, --json, and the commands the JSON API has no form of ----
# (the API returns its figures in the reply and reads or writes no file a client names: api=False)

JSON = _o("json", "bool", False, "print JSON instead of tables", api=False)
STRICT = _o("strict", "bool", False, "exit with code 3 when the deployment does not fit (after printing)", api=False)
PLOT = _o("plot", "path1", None, "write a plot to FILE.png", api=False)
CSV = _o("csv", "path1", None, "write the rows to FILE.csv", api=False)
OUT = _o("out", "path1", None, "file to write", api=False)
FILE = _o("file", "path1", REQUIRED, "CSV in the validation schema (see docs/accuracy.md)", argument=True, api=False)

ESTIMATE_OUTPUT: tuple[Opt, ...] = (JSON, STRICT)  # estimate, roofline, memory

SIMULATE_OUTPUT: tuple[Opt, ...] = (
    PLOT.but(help="write queue/KV/TTFT plots to FILE.png"),
    _o("max_requests", "int", SIM_REQUESTS_CLI_CAP, "largest --requests this run may simulate; memory and time grow "
       "linearly with the requests (options.py: about 2.6 GB and 2.5 min per 100,000 at --rate 1)", ge=1, api=False),
    JSON,
)

SEARCH_OUTPUT: tuple[Opt, ...] = (
    _o("pareto", "str", None, "another frontier X,Y: tokens_per_joule,ttft_ms", api=False),
    PLOT.but(help="write the frontier(s) to FILE.png"),
    _o("html", "path1", None, "write the frontier(s) to an offline FILE.html", api=False),
    CSV.but(help="write the ranked table to FILE.csv"),
    _o("backend", "str", "local", "where layouts are evaluated", choices=BACKENDS, api=False),
    _o("ray_address", "str", None, "Ray cluster (default: a local one)", api=False),
    _o("workers", "int", None, "processes of the local backend (default: this machine's CPUs)", ge=1, api=False),
    GPU_OVERRIDES.but(help="override a field of every searched GPU, KEY=VALUE (SI units)", api=False),
    GPU_FILE,
    JSON,
)

COMPARE: tuple[Opt, ...] = (
    FILE.but(default=None, help="comparison YAML: a workload: mapping and a deployments: list (option names as keys)"),
    CSV,
    PLOT.but(help="write a bar chart of the figures to FILE.png"),
    JSON,
)

VALIDATE: tuple[Opt, ...] = (
    FILE,
    OUT.but(help="write per-row CSV"),
    PLOT.but(help="predicted vs measured PNG"),
    CALIBRATION,
    GPU_FILE,
    # measured rows name their scenario in the CSV schema's words (validation/dataset.py ROW_SCENARIOS)
    SCENARIO.but(default=None, choices=ROW_SCENARIOS, help="only rows of this scenario", api=False),
    ENGINE_OPT.but(help="engine profile for rows whose engine/framework names none (default: the engines.yaml "
                        "default)", api=False),
    JSON,
)

CALIBRATE: tuple[Opt, ...] = (
    FILE,
    OUT.but(default=Path("calibration.yaml"), help="calibration YAML to write"),
    _o("scenarios", "str", ",".join(ROW_SCENARIOS[:2]), f"scenarios to fit on, comma-separated: "
       f"{', '.join(ROW_SCENARIOS)}", api=False),
    _o("cv", "str", "gpu,source", f"leave-one-group-out keys: {','.join(CV_KEYS)} or none", api=False),
    _o("max_evals", "int", 150, "model evaluations per fit", ge=1, api=False),
    JSON,
)

PROBE: tuple[Opt, ...] = (
    MODEL.but(default="smollm2-135m", argument=False, help="dense Llama-style model: catalog alias, HF id or "
              "config path"),
    MODEL_OVERRIDES,
    _o("quick", "bool", False, "short run (CI): smaller shapes, fewer setups and steps", api=False),
    OUT.but(default=Path("probe-out"), help="folder for local_gpu.yaml and the measured CSVs",
            extra={"metavar": "DIR"}),
    _o("dtype", "str", None, "fp32 or bf16 (default: fp32 on CPU, bf16 on CUDA)", api=False),
    _o("threads", "int", None, "CPU threads (default: all available cores)", ge=1, api=False),
    JSON,
)

SERVE: tuple[Opt, ...] = (
    _o("host", "str", "127.0.0.1", "address to bind (default loopback only; 0.0.0.0 exposes it to the network)",
       api=False),
    _o("port", "int", 8000, "TCP port", ge=0, le=65535, api=False),
    _o("work_seconds", "float", 20.0, "wall-clock cap of one simulation or search", ge=0.1, api=False),
    _o("log_level", "str", "info", f"uvicorn log level: {', '.join(LOG_LEVELS)}", api=False),
)

MODELS: tuple[Opt, ...] = (JSON,)
GPUS: tuple[Opt, ...] = (JSON, GPU_FILE, PRICES)


# ---- inferbound bench (bench/): the serve command and the load tool's own command line ----
BENCH: tuple[Opt, ...] = (
    _o("serve_command", "str", None, "the deployment as its launch command, quoted: vllm serve MODEL [flags], "
       "python -m sglang.launch_server --model-path MODEL [flags] or trtllm-serve MODEL [flags] (not for "
       "trtllm-bench, which launches its own engine from its flags)", flags=("--serve",),
       api=False),
    by_name(DEPLOYMENT)["gpu"],
    ENGINE_OPT.but(help="engine profile version for the serve command's engine, NAME@VERSION (default: its "
                        "data/engines.yaml default)", api=False),
    JSON.but(help="print the tool's own result JSON instead of its text block"),
    _o("load_command", "argv", REQUIRED, "after --: the load tool's command line (vllm bench serve ..., python "
       "benchmarks/benchmark_serving.py ..., python -m sglang.bench_serving ..., genai-perf profile ..., "
       "trtllm-bench -m MODEL throughput|latency ..., guidellm benchmark ...)",
       argument=True, api=False),
)


# ---- inferbound fleet (fleet/): a day of traffic over pools of replicas, routing, autoscaling ----
FLEET: tuple[Opt, ...] = (
    FILE.but(help="fleet YAML: traffic, pools, router, slo, optional autoscale, sessions, seed "
                  "(docs/fleet-example.yaml, docs/fleet.md)"),
    JSON,
    PLOT.but(help="write the day (arrivals, queue, replicas, SLO attainment per minute) to FILE.png"),
    _o("size_for_slo", "bool", False, "find the fewest replicas per pool (with several pools, the cheapest mix) "
       "meeting the SLO at --attainment; prints the one-fewer cases that miss it", api=False),
    _o("attainment", "float", 0.99, "--size-for-slo: the share of requests that must meet every SLO", gt=0, le=1,
       api=False),
    by_name(SEARCH_OUTPUT)["backend"].but(help="where the replicas are simulated: local worker processes, or Ray"),
    by_name(SEARCH_OUTPUT)["ray_address"],
    by_name(SEARCH_OUTPUT)["workers"].but(help="processes of the local backend (default: the CPUs this process may "
                                               "use, at most one per replica)"),
)
