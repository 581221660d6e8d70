"""Every user-facing option, declared once: the CLI's typer parameters (cli/params.py) and the JSON
API's request schemas (web/schemas.py) are both built from these declarations, so the two faces take
the same options with the same names, defaults, help and ranges. Every CLI command's options are here,
the CLI-only ones too (files, --json, validate, calibrate, probe, serve, the catalogs).

An :class:`Opt` names the keyword (the Python argument and the JSON field), its kind, its default,
its help text, its CLI flag(s), its valid range (``ge``/``gt``/``le``/``lt``, checked on both faces with
a one-line error), its allowed values (``choices``: the tuple constant of the lowest layer that uses
them, imported here, never a second copy) and, for the API only, a work cap (``api_le``) and whether
each face offers it at all.

One declaration per name: :func:`_o` (opt.declare) refuses a name declared twice. Where commands genuinely differ
(search needs output_len >= 2 for a TPOT, a simulation caps the output length of a request, estimate
issues 10,000 requests where simulate simulates 1,000), the command's group states its own default,
bounds or help once, here, with :meth:`Opt.but`, which keeps the declaration it derives from (``base``).

Groups: ``DEPLOYMENT`` (model, GPU, layout, dtypes: make_deployment), ``ENGINE`` (the serving engine
and its overrides: runtime.resolve), ``STATIC`` (a static batch), ``ESTIMATE`` (its scenario),
``LENGTHS`` (request length mixes), ``SERVING`` (a simulated workload), ``SEARCH``; and per command
``ESTIMATE_OUTPUT``, ``SIMULATE_OUTPUT``, ``SEARCH_OUTPUT``, ``COMPARE``, ``VALIDATE``, ``CALIBRATE``,
``PROBE``, ``SERVE``, ``MODELS``, ``GPUS``.
"""
from __future__ import annotations

from pathlib import Path

from ..base.datafiles import data_yaml
from .opt import DECLARED, REQUIRED, Opt, any_given, by_name, declare as _o  # noqa: F401  (re-exported)
from ..base.dtypes import DTYPES
from ..deploy.config import COLLECTIVE_ALGOS
from ..deploy.offload import MODES as KV_OFFLOAD_MODES
from ..deploy.runtime import PREEMPTIONS, RESERVATIONS
from ..search.backends import BACKENDS
from ..search.emit import ENGINES as ENGINE_NAMES
from ..search.metrics import OBJECTIVES, SENSE
from ..search.space import dtype_combos, search_defaults
from ..validation.dataset import SCENARIOS as ROW_SCENARIOS
from ..workloads.lengths import dataset_names

MAX_GPUS = 4096
MAX_BATCH = 4096
MAX_TOKENS = 1_000_000
MAX_TOKEN_BUDGET = 1 << 20


def _default_engine() -> str:
    """The default engine named in data/engines.yaml (read raw: help text must not validate every profile)."""
    d = data_yaml("engines.yaml")["default"]
    return f"{d['engine']}@{d['version']}"


#: the estimate scenarios (workloads/: static.py, max_throughput.py, serving.py); validation rows name
#: theirs in the CSV schema's own words (ROW_SCENARIOS, validation/dataset.py)
SCENARIOS = ("static", "max-throughput", "serving")
#: the dtype combinations search sweeps (data/search.yaml space.dtypes)
SEARCH_DTYPES = tuple(c.name for c in dtype_combos())
#: search figures a frontier may plot (search/metrics.py SENSE)
METRICS = tuple(SENSE)
#: calibrate's leave-one-group-out keys
CV_KEYS = ("gpu", "source", "model")
#: uvicorn's log levels (uvicorn.config.LOG_LEVELS), case-insensitive
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


#: the user's own $/GPU-hour for catalog GPUs (hardware/prices.py): CLI --price GPU=USD (repeatable), JSON
#: prices {gpu_id: usd}; replaces the catalog's cited figure in every cost, labelled "(--price)"
PRICES = _o("prices", "price", None, "your own USD per GPU-hour for catalog GPUs (CLI: GPU=USD, repeatable, e.g. "
            "h100_sxm=2.49; JSON: {gpu_id: usd}); replaces the catalog's cited on-demand price, labelled (--price)",
            flags=("--price",))

# the JSON API takes both in its own form (web/schemas.py ModelIn, its _SKIP): a catalog name or a pasted
# config.json (exactly one); 'default' or 'none' (never a server file)
MODEL = _o("model", "str", "llama-3.1-8b", "catalog alias, HF id, config.json path or folder", argument=True)
CALIBRATION = _o("calibration", "str", None, "calibration YAML, 'default' (packaged fit) or 'none' (catalog priors)")
GPU_FILE = _o("gpu_file", "path", None, "extra hardware YAML file(s)", api=False)
MODEL_OVERRIDES = _o("model_overrides", "kv", None, "override a model config field, KEY=VALUE", flags=("--set",))
GPU_OVERRIDES = _o("gpu_overrides", "kv", None, "override a GPU field, KEY=VALUE (SI units)", flags=("--gpu-set",))
GPU_SCALE = _o("gpu_scale", "kv", None, "what-if GPU: scale its figures, NAME=FACTOR[,NAME=FACTOR]: hbm_bw, flops, "
               "hbm_gb, link_bw, scaleup_bw, scaleout_bw, pcie_bw (e.g. hbm_bw=2,flops=1.5)", flags=("--gpu-scale",))

DEPLOYMENT: tuple[Opt, ...] = (
    MODEL,
    _o("gpu", "str", "h100_sxm", "GPU id from `inferbound gpus`"),
    _o("num_gpus", "int", None, "GPUs of the deployment (default tp*pp*dp)", ge=1, api_le=MAX_GPUS),
    _o("tp", "int", None, "tensor-parallel size (default: num_gpus/(pp*dp) or 1)", ge=1, api_le=MAX_GPUS),
    _o("pp", "int", 1, "pipeline-parallel stages", ge=1, api_le=MAX_GPUS),
    _o("ep", "int", 1, "expert-parallel size (MoE)", ge=1, api_le=MAX_GPUS),
    _o("dp", "int", 1, "data-parallel replicas (attention data parallel with --attention-dp)", ge=1, api_le=MAX_GPUS),
    _o("nodes", "int", 1, "machines the GPUs are spread over", ge=1, api_le=MAX_GPUS),
    _o("attention_dp", "bool", False, "attention data parallel (MoE, DeepSeek-style): beside EP, or with ep=1 the MoE TP-sharded over every GPU (SGLang --enable-dp-attention)"),
    _o("sequence_parallel", "bool", False, "reduce-scatter + all-gather instead of all-reduce"),
    _o("pp_split", "list_int", None, "layers per pipeline stage, e.g. 20,20,20,20"),
    _o("microbatches", "int", None, "pipeline micro-batches (default min(sequences, pp))", ge=1, api_le=MAX_BATCH),
    _o("collective_algo", "str", "auto", "all-reduce algorithm", choices=COLLECTIVE_ALGOS),
    _o("comm_overlap", "float", 0.0, "share of collective time hidden behind compute (0-1)", ge=0, le=1),
    _o("weight_dtype", "str", None, "weight format (default: as the checkpoint ships, its quantization_config "
       "or torch_dtype)", choices=DTYPES),
    _o("act_dtype", "str", None, "compute/activation format (default: the checkpoint's, else 16-bit)",
       choices=DTYPES),
    _o("kv_dtype", "str", None, "KV-cache format (default: as activations)", choices=DTYPES),
    _o("emulate", "bool", False, "allow formats the GPU lacks (weight-only emulation)"),
    _o("sliding_window", "bool", None, "honour the model's sliding windows (default: as the engine does)",
       flags=("--sliding-window/--no-sliding-window",)),
    MODEL_OVERRIDES,
    _o("assume_family", "str", None, "read a config of an unsupported model_type as this supported family"),
    GPU_OVERRIDES,
    GPU_FILE,
    PRICES,
    GPU_SCALE,
    CALIBRATION,
)

ENGINE_OPT = _o("engine", "str", None, "serving engine profile: vllm, sglang, trtllm, atom, gpt-fast, llama.cpp, or "
                f"NAME@VERSION (a version without a profile of its own: the nearest, noted; default: "
                f"{_default_engine()}, data/engines.yaml)")
ENGINE: tuple[Opt, ...] = (
    ENGINE_OPT,
    _o("block_size", "int", None, "KV block (page) tokens (default: the engine's)", ge=1, api_le=4096),
    _o("token_budget", "int", None, "tokens per step: vLLM max_num_batched_tokens, SGLang chunked_prefill_size, "
       "TensorRT-LLM max_num_tokens (default: the engine's)", ge=1, api_le=MAX_TOKEN_BUDGET,
       flags=("--token-budget", "--max-batched-tokens")),
    _o("max_num_seqs", "int", None, "running sequences per replica rank (default: the engine's)", ge=1,
       api_le=MAX_BATCH * 16, flags=("--max-num-seqs", "--max-seqs")),
    _o("memory_fraction", "float", None, "the engine's KV memory fraction: vLLM gpu_memory_utilization, SGLang "
       "mem_fraction_static, TensorRT-LLM kv_cache_free_gpu_memory_fraction (default: the engine's)", gt=0, le=1,
       flags=("--memory-fraction", "--kv-fraction")),
    _o("kv_reservation", "str", None, "KV a running sequence holds: max (prompt + max output, never evict) or "
       "current (as it grows, preempt when full) (default: the engine's)", choices=RESERVATIONS),
    _o("preemption", "str", None, "when blocks run out: recompute (free the KV, prefill again on readmission: vLLM, "
       "SGLang's retract), swap (to host memory: vLLM V0) or none (TensorRT-LLM's GUARANTEED_NO_EVICT: with "
       "--kv-reservation max nothing is evicted) (default: the engine's)", choices=PREEMPTIONS),
    # engine features (docs/features/: speculative.md, prefix-caching.md, kv-offload.md)
    _o("speculative", "str", None, "speculative decoding: draft:MODEL (a draft model), eagle (an EAGLE head), "
       "mtp (the model's multi-token-prediction layers) or ngram (prompt lookup)"),
    _o("spec_tokens", "int", None, "speculative decoding: tokens drafted per step, k (default for mtp: the model's "
       "num_nextn_predict_layers)", ge=1, le=32),
    _o("acceptance", "float", None, "speculative decoding: probability a drafted token is accepted, in [0, 1) "
       "(default for mtp: 0.85, DeepSeek-V3 report; data/features.yaml)", ge=0, lt=1),
    _o("prefix_hit_rate", "float", None, "prefix caching: share of each prompt's tokens found in the cache (0-1)",
       ge=0, le=1),
    _o("shared_prefix_len", "int", None, "prefix caching: tokens of a system prompt every request shares "
       "(instead of --prefix-hit-rate)", ge=0, api_le=MAX_TOKENS),
    _o("kv_offload", "str", None, "KV offload tier: none, or host (CPU memory over PCIe / NVLink-C2C; "
       "data/hardware.yaml)", choices=KV_OFFLOAD_MODES),
    _o("kv_offload_gb", "float", None, "host KV pool per GPU, GB (default: 2x the GPU's KV cache, SGLang's "
       "hicache_ratio, capped by the host memory per GPU)", gt=0, api_le=1e6),
)

LONG_CONTEXT = _o("allow_long_context", "bool", False, "accept input_len + output_len beyond the model's "
                  "max_position_embeddings (a printed warning instead of an error; contextlen.py)")

MAX_SIM_REQUESTS = 20_000  # the JSON API's cap; the CLI takes up to SIM_REQUESTS_CLI_CAP (issue: bad input)
# the CLI's default cap (simulate --max-requests raises it): memory and time grow linearly with the requests,
# about 26 KB and 1.6 ms per request at --rate 1 (100,000: 2.6 GB peak, 156 s on a 2-core dev machine)
SIM_REQUESTS_CLI_CAP = 100_000
MAX_SIM_OUTPUT = 131_072  # the JSON API's cap on the output tokens of one simulated request
MAX_OFFLINE_REQUESTS = 1_000_000  # the JSON API's cap on max-throughput's requests issued at once (closed form)

INPUT_LEN = _o("input_len", "int", 1024, "prompt tokens per request", ge=1, api_le=MAX_TOKENS, flags=("--input",))
OUTPUT_LEN = _o("output_len", "int", 256, "generated tokens per request", ge=1, api_le=MAX_TOKENS, flags=("--output",))
REQUESTS = _o("requests", "int", 1000, "requests to simulate", ge=1, api_le=MAX_SIM_REQUESTS)
RATE = _o("rate", "float", None, "serving: Poisson arrivals, requests/s (open loop)", gt=0, le=1e9)
CONCURRENCY = _o("concurrency", "int", None, "serving: N closed-loop clients (each sends its next request when the "
                 "previous completes)", ge=1, le=1_000_000)
THINK_TIME = _o("think_time", "float", 0.0, "serving, closed loop: seconds between a response and the next request",
                ge=0, le=3600)
SLO_TTFT_MS = _o("slo_ttft_ms", "float", None, "goodput SLO on TTFT (ms)", gt=0, api_le=1e9)
SLO_TPOT_MS = _o("slo_tpot_ms", "float", None, "goodput SLO on TPOT (ms)", gt=0, api_le=1e9)
SLO_E2E_MS = _o("slo_e2e_ms", "float", None, "goodput SLO on end-to-end latency (ms)", gt=0, api_le=1e9)

STATIC: tuple[Opt, ...] = (
    _o("batch", "int", 8, "sequences in the static batch", ge=1, api_le=MAX_BATCH),
    INPUT_LEN,
    OUTPUT_LEN,
    LONG_CONTEXT,
)


SCENARIO = _o("scenario", "str", "static", "static (one batch), max-throughput (offline, in-flight batching) or "
              "serving (online steady state at --rate or --concurrency)", choices=SCENARIOS)

#: the scenario of `estimate` (and of compare.py workloads)
ESTIMATE: tuple[Opt, ...] = (
    SCENARIO,
    REQUESTS.but(default=10_000, help="requests issued (max-throughput; serving --concurrency: the run's prompts, "
                 "1000 when not given, as vllm bench serve)", api_le=MAX_OFFLINE_REQUESTS),
    RATE,
    CONCURRENCY.but(help="serving: N closed-loop clients (each sends its next request when the previous completes); "
                         "max-throughput: the requests in flight (trtllm-bench --concurrency), at least N issued"),
    THINK_TIME,
)

INPUT_DIST = _o("input_dist", "str", None, "prompt length distribution: fixed, uniform:LO:HI, normal:MEAN:STD, "
                "exponential[:MEAN]")
OUTPUT_DIST = _o("output_dist", "str", None, "output length distribution (as --input-dist)")
TRACE = _o("trace", "path1", None, "CSV or JSONL trace: arrival_s (or timestamp), input_len, output_len", api=False)
DATASET = _o("dataset", "str", None, f"a bundled request-length profile (data/datasets.yaml): "
             f"{', '.join(dataset_names())} (any case); its measured length classes, else its published "
             f"means, replace --input/--output")
#: request lengths beyond fixed --input/--output (workloads/lengths.workload_mix)
LENGTHS: tuple[Opt, ...] = (INPUT_DIST, OUTPUT_DIST, TRACE, DATASET)


SERVING: tuple[Opt, ...] = (
    # a simulation takes 'inf' (every request at t=0) and, on the CLI, any rate, clients or think time
    RATE.but(kind="rate", default=1.0, help="Poisson arrival rate, requests/s ('inf': all at t=0)", le=None,
             api_le=1e9),
    CONCURRENCY.but(help="closed loop: N clients, each sending its next request when the previous completes "
                         "(instead of --rate)", le=None, api_le=4096),
    THINK_TIME.but(help="closed loop: seconds between a response and the client's next request", le=None,
                   api_le=3600),
    REQUESTS,
    INPUT_LEN,
    OUTPUT_LEN.but(api_le=MAX_SIM_OUTPUT),
    INPUT_DIST,
    OUTPUT_DIST,
    LONG_CONTEXT,
    TRACE,
    DATASET,
    _o("seed", "int", 0, "random seed", ge=0, le=2**32 - 1),
    _o("replicas", "int", None, "aggregated replicas (default: the deployment's data-parallel copies)", ge=1,
       api_le=64),
    _o("prefill_replicas", "int", 0, "disaggregated: prefill replicas", ge=0, api_le=64),
    _o("decode_replicas", "int", 0, "disaggregated: decode replicas", ge=0, api_le=64),
    _o("num_blocks", "int", None, "KV blocks per replica (default: from the engine's KV allocation)", ge=1,
       api_le=100_000_000),
    SLO_TTFT_MS,
    SLO_TPOT_MS,
    SLO_E2E_MS,
    _o("timeline", "bool", False, "include per-step samples (thinned to 500 points)", cli=False),
)


MAX_SEARCH_GPUS = 72  # largest layout a search sweeps (one NVL72 rack): the JSON API's cap, the CLI's unless --no-cap

SEARCH: tuple[Opt, ...] = (
    MODEL,
    _o("gpus", "list_str", None, "GPU ids, comma-separated (default: the whole catalog)"),
    _o("max_gpus", "int", search_defaults()["space"]["max_gpus"], "largest layout in GPUs (data/search.yaml "
       "space.max_gpus)", ge=1, api_le=MAX_SEARCH_GPUS),
    _o("no_cap", "bool", False, f"lift the search's size caps: --max-gpus above {MAX_SEARCH_GPUS} (the JSON API's "
       "cap) and the peak-memory budget (data/search.yaml limits.memory_budget_gb)", api=False),
    _o("objective", "str", "tok_s_per_gpu", "what to maximize or minimize", choices=OBJECTIVES),
    SLO_TTFT_MS.but(help="time-to-first-token SLO (ms)"),
    SLO_TPOT_MS.but(help="TPOT / ITL SLO (ms)"),
    SLO_E2E_MS.but(help="end-to-end latency SLO (ms)"),
    _o("max_dollars_per_hour", "float", None, "budget: $/h of the fleet", gt=0, api_le=1e9),
    _o("max_watts", "float", None, "budget: watts of the fleet", gt=0, api_le=1e12),
    _o("max_total_gpus", "int", None, "budget: GPUs of the fleet", ge=1, api_le=1_000_000, flags=("--gpu-budget",)),
    _o("target_rate", "float", None, "requests/s the fleet must serve", gt=0, api_le=1e9),
    INPUT_LEN,
    OUTPUT_LEN.but(ge=2),  # search.search: a TPOT needs a second output token
    LONG_CONTEXT,
    _o("disaggregated", "bool", False, "separate prefill and decode pools"),
    _o("both_modes", "bool", False, "sweep aggregated and disaggregated serving, ranked together"),
    _o("dtypes", "list_str", None, f"dtype combinations: {','.join(SEARCH_DTYPES)}", choices=SEARCH_DTYPES),
    _o("all_layouts", "bool", False, "also PP inside NVLink islands, partial EP"),
    _o("top", "int", 10, "rows of the ranked table", ge=1, api_le=100),
    PRICES,
    GPU_SCALE.but(help="also search a what-if copy of every GPU, NAME=FACTOR[,...]: hbm_bw, flops, hbm_gb, link_bw, "
                       "scaleup_bw, scaleout_bw, pcie_bw"),
    CALIBRATION,
    _o("emit", "str", None, "print a launch command for this engine (the search then models it)",
       choices=ENGINE_NAMES),
    _o("emit_rank", "int", 1, "row whose launch command --emit prints", ge=1, api_le=100),
    _o("frontier_x", "str", None, "frontier x axis (default: data/search.yaml output.frontier)", choices=METRICS,
       cli=False),
    _o("frontier_y", "str", None, "frontier y axis (default: data/search.yaml output.frontier)", choices=METRICS,
       cli=False),
    _o("max_points", "int", 500, "frontier points returned, thinned evenly along x", ge=2, le=2000, cli=False),
)


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


def engine_options(values: dict) -> dict:
    """The runtime.resolve overrides among parsed option ``values`` (ENGINE names -> runtime fields)."""
    rename = {"kv_reservation": "reservation"}
    return {rename.get(o.name, o.name): values.get(o.name) for o in ENGINE
            if o.name != "engine" and values.get(o.name) is not None}


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
