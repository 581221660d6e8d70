"""Every user-facing option, declared once: the CLI's typer parameters (cli/params.py) and the JSON
API's request schemas (web/schemas.py) are both built from these declarations, so the two faces take
the same options with the same names, defaults, help and ranges.

An :class:`Opt` names the keyword (the Python argument and the JSON field), its kind, its default,
its help text, its CLI flag(s), its valid range (``ge``/``gt``/``le``, checked on both faces with a
one-line error) and, for the API only, a work cap (``api_le``) and whether the face offers it at all.
Groups: ``DEPLOYMENT`` (model, GPU, layout, dtypes: make_deployment), ``ENGINE`` (the serving engine
and its overrides: runtime.resolve), ``STATIC`` (a static batch), ``SERVING`` (a simulated workload).
Commands add their own declarations from the same class.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..base.dtypes import DTYPES

MAX_GPUS = 4096
MAX_BATCH = 4096
MAX_TOKENS = 1_000_000
MAX_TOKEN_BUDGET = 1 << 20


@dataclass(frozen=True)
class Opt:
    name: str
    kind: str  # int | float | bool | str | list_int | kv | path | rate | price (GPU=USD pairs)
    default: object
    help: str
    flags: tuple[str, ...] = ()  # CLI spellings; default --<name with dashes>
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None  # strict upper bound (acceptance < 1)
    api_le: float | None = None  # work cap of the JSON API (beyond ``le``)
    choices: tuple[str, ...] | None = None
    cli: bool = True
    api: bool = True
    argument: bool = False  # positional CLI argument
    api_kind: str | None = None  # the JSON type when it differs from the CLI's (kv: dict; list_int: list)
    extra: dict = field(default_factory=dict)

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    def check(self, value):
        """One-line ValueError naming the option when ``value`` is outside its declared range or choices."""
        if value is None:
            return value
        label = self.name
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{label}={value!r} unknown; allowed: {', '.join(self.choices)}")
        if self.kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ValueError(f"{label}={value!r} must be a number")
            if self.kind == "int" and int(value) != value:
                raise ValueError(f"{label}={value!r} must be an integer")
            for bound, ok, word in ((self.ge, lambda v, b: v >= b, ">="), (self.gt, lambda v, b: v > b, ">"),
                                    (self.le, lambda v, b: v <= b, "<="), (self.lt, lambda v, b: v < b, "<")):
                if bound is not None and not ok(value, bound):
                    kind = "an integer" if self.kind == "int" else "a number"
                    shown = f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"
                    raise ValueError(f"{label}={value!r} must be {kind} {word} {shown}")
        return value


def _o(name, kind, default, help, **kw) -> Opt:
    return Opt(name, kind, default, help, **kw)


def _default_engine() -> str:
    """The default engine named in data/engines.yaml (read raw: help text must not validate every profile)."""
    from ..base.datafiles import data_yaml
    d = data_yaml("engines.yaml")["default"]
    return f"{d['engine']}@{d['version']}"


ENGINE_NAMES = ("vllm", "sglang", "trtllm")  # engines search can emit launch commands for (search/emit.py)
BACKENDS = ("local", "ray")  # where search evaluates layouts (search/backends.py)


#: the user's own $/GPU-hour for catalog GPUs (hardware/prices.py): CLI --price GPU=USD (repeatable), JSON
#: prices {gpu_id: usd}; replaces the catalog's cited figure in every cost, labelled "(--price)"
PRICES = _o("prices", "price", None, "your own USD per GPU-hour for catalog GPUs (CLI: GPU=USD, repeatable, e.g. "
            "h100_sxm=2.49; JSON: {gpu_id: usd}); replaces the catalog's cited on-demand price, labelled (--price)",
            flags=("--price",))

DEPLOYMENT: tuple[Opt, ...] = (
    _o("model", "str", "llama-3.1-8b", "catalog alias, HF id, config.json path or folder", argument=True),
    _o("gpu", "str", "h100_sxm", "GPU id from `inferbound gpus`"),
    _o("num_gpus", "int", None, "GPUs of the deployment (default tp*pp*dp)", ge=1, api_le=MAX_GPUS),
    _o("tp", "int", None, "tensor-parallel size (default: num_gpus/(pp*dp) or 1)", ge=1, api_le=MAX_GPUS),
    _o("pp", "int", 1, "pipeline-parallel stages", ge=1, api_le=MAX_GPUS),
    _o("ep", "int", 1, "expert-parallel size (MoE)", ge=1, api_le=MAX_GPUS),
    _o("dp", "int", 1, "data-parallel replicas (attention data parallel with --attention-dp)", ge=1, api_le=MAX_GPUS),
    _o("nodes", "int", 1, "machines the GPUs are spread over", ge=1, api_le=MAX_GPUS),
    _o("attention_dp", "bool", False, "attention data parallel beside EP (MoE, DeepSeek-style)"),
    _o("sequence_parallel", "bool", False, "reduce-scatter + all-gather instead of all-reduce"),
    _o("pp_split", "list_int", None, "layers per pipeline stage, e.g. 20,20,20,20"),
    _o("microbatches", "int", None, "pipeline micro-batches (default min(sequences, pp))", ge=1, api_le=MAX_BATCH),
    _o("collective_algo", "str", "auto", "all-reduce algorithm",
       choices=("auto", "ring", "tree", "oneshot", "twoshot", "nvls")),
    _o("comm_overlap", "float", 0.0, "share of collective time hidden behind compute (0-1)", ge=0, le=1),
    _o("weight_dtype", "str", None, "weight format (default: as the checkpoint ships, its quantization_config "
       "or torch_dtype)", choices=DTYPES),
    _o("act_dtype", "str", None, "compute/activation format (default: the checkpoint's, else 16-bit)",
       choices=DTYPES),
    _o("kv_dtype", "str", None, "KV-cache format (default: as activations)", choices=DTYPES),
    _o("emulate", "bool", False, "allow formats the GPU lacks (weight-only emulation)"),
    _o("sliding_window", "bool", None, "honour the model's sliding windows (default: as the engine does)",
       flags=("--sliding-window/--no-sliding-window",)),
    _o("model_overrides", "kv", None, "override a model config field, KEY=VALUE", flags=("--set",)),
    _o("assume_family", "str", None, "read a config of an unsupported model_type as this supported family"),
    _o("gpu_overrides", "kv", None, "override a GPU field, KEY=VALUE (SI units)", flags=("--gpu-set",)),
    _o("gpu_file", "path", None, "extra hardware YAML file(s)", api=False),
    PRICES,
    _o("gpu_scale", "kv", None, "what-if GPU: scale its figures, NAME=FACTOR[,NAME=FACTOR]: hbm_bw, flops, hbm_gb, "
       "link_bw, scaleup_bw, scaleout_bw, pcie_bw (e.g. hbm_bw=2,flops=1.5)", flags=("--gpu-scale",)),
    _o("calibration", "str", None, "calibration YAML, 'default' (packaged fit) or 'none' (catalog priors)"),
)

ENGINE: tuple[Opt, ...] = (
    _o("engine", "str", None, "serving engine profile: vllm, sglang, trtllm, gpt-fast, llama.cpp, or NAME@VERSION "
       f"(default: {_default_engine()}, data/engines.yaml)"),
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
       "current (as it grows, preempt when full) (default: the engine's)", choices=("max", "current")),
    _o("preemption", "str", None, "when blocks run out: recompute or swap (default: the engine's)",
       choices=("recompute", "swap")),
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
       "data/hardware.yaml)", choices=("none", "host")),
    _o("kv_offload_gb", "float", None, "host KV pool per GPU, GB (default: 2x the GPU's KV cache, SGLang's "
       "hicache_ratio, capped by the host memory per GPU)", gt=0, api_le=1e6),
)

LONG_CONTEXT = _o("allow_long_context", "bool", False, "accept input_len + output_len beyond the model's "
                  "max_position_embeddings (a printed warning instead of an error; contextlen.py)")

STATIC: tuple[Opt, ...] = (
    _o("batch", "int", 8, "sequences in the static batch", ge=1, api_le=MAX_BATCH),
    _o("input_len", "int", 1024, "prompt tokens per request", ge=1, api_le=MAX_TOKENS, flags=("--input",)),
    _o("output_len", "int", 256, "generated tokens per request", ge=1, api_le=MAX_TOKENS, flags=("--output",)),
    LONG_CONTEXT,
)


#: the scenario of `estimate` (and of compare.py workloads)
ESTIMATE: tuple[Opt, ...] = (
    _o("scenario", "str", "static", "static (one batch), max-throughput (offline, in-flight batching) or serving "
       "(online steady state at --rate or --concurrency)", choices=("static", "max-throughput", "serving")),
    _o("requests", "int", 10_000, "requests issued (max-throughput)", ge=1, api_le=1_000_000),
    _o("rate", "float", None, "serving: Poisson arrivals, requests/s (open loop)", gt=0, le=1e9),
    _o("concurrency", "int", None, "serving: N closed-loop clients (each sends its next request when the previous "
       "completes)", ge=1, le=1_000_000),
    _o("think_time", "float", 0.0, "serving, closed loop: seconds between a response and the next request", ge=0,
       le=3600),
)


MAX_SIM_REQUESTS = 20_000  # the JSON API's cap; the CLI takes up to SIM_REQUESTS_CLI_CAP (issue: bad input)
# the CLI's default cap (simulate --max-requests raises it): memory and time grow linearly with the requests,
# about 26 KB and 1.6 ms per request at --rate 1 (100,000: 2.6 GB peak, 156 s on a 2-core dev machine)
SIM_REQUESTS_CLI_CAP = 100_000

INPUT_DIST = _o("input_dist", "str", None, "prompt length distribution: fixed, uniform:LO:HI, normal:MEAN:STD, "
                "exponential[:MEAN]")
OUTPUT_DIST = _o("output_dist", "str", None, "output length distribution (as --input-dist)")
TRACE = _o("trace", "path1", None, "CSV or JSONL trace: arrival_s (or timestamp), input_len, output_len", api=False)
DATASET = _o("dataset", "str", None, "a bundled request-length profile (data/datasets.yaml): sharegpt, "
             "mlperf_llama2_70b_openorca, mlperf_llama3.1_405b, cnn_dailymail; its published means replace "
             "--input/--output where it has them")
#: request lengths beyond fixed --input/--output (workloads/lengths.workload_mix)
LENGTHS: tuple[Opt, ...] = (INPUT_DIST, OUTPUT_DIST, TRACE, DATASET)


def any_given(values: dict, opts: tuple[Opt, ...]) -> bool:
    """Whether ``values`` (parsed options) set any of ``opts``."""
    return any(values.get(o.name) for o in opts)

SERVING: tuple[Opt, ...] = (
    _o("rate", "rate", 1.0, "Poisson arrival rate, requests/s ('inf': all at t=0)"),
    _o("concurrency", "int", None, "closed loop: N clients, each sending its next request when the previous "
       "completes (instead of --rate)", ge=1, api_le=4096),
    _o("think_time", "float", 0.0, "closed loop: seconds between a response and the client's next request", ge=0,
       api_le=3600),
    _o("requests", "int", 1000, "requests to simulate", ge=1, api_le=MAX_SIM_REQUESTS),
    _o("input_len", "int", 1024, "prompt tokens per request", ge=1, api_le=MAX_TOKENS, flags=("--input",)),
    _o("output_len", "int", 256, "generated tokens per request", ge=1, api_le=131_072, flags=("--output",)),
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
    _o("slo_ttft_ms", "float", None, "goodput SLO on TTFT (ms)", gt=0, api_le=1e9),
    _o("slo_tpot_ms", "float", None, "goodput SLO on TPOT (ms)", gt=0, api_le=1e9),
    _o("slo_e2e_ms", "float", None, "goodput SLO on end-to-end latency (ms)", gt=0, api_le=1e9),
)


OBJECTIVES = ("tok_s_per_gpu", "tok_s_per_user", "tokens_per_joule", "usd_per_mtok", "gpus_for_rate")

SEARCH: tuple[Opt, ...] = (
    _o("model", "str", "llama-3.1-8b", "catalog alias, HF id, config.json path or folder", argument=True),
    _o("gpus", "list_str", None, "GPU ids, comma-separated (default: the whole catalog)"),
    _o("max_gpus", "int", None, "largest layout in GPUs (default 8)", ge=1, api_le=72),
    _o("objective", "str", "tok_s_per_gpu", "what to maximize or minimize", choices=OBJECTIVES),
    _o("slo_ttft_ms", "float", None, "time-to-first-token SLO (ms)", gt=0, api_le=1e9),
    _o("slo_tpot_ms", "float", None, "TPOT / ITL SLO (ms)", gt=0, api_le=1e9),
    _o("slo_e2e_ms", "float", None, "end-to-end latency SLO (ms)", gt=0, api_le=1e9),
    _o("max_dollars_per_hour", "float", None, "budget: $/h of the fleet", gt=0, api_le=1e9),
    _o("max_watts", "float", None, "budget: watts of the fleet", gt=0, api_le=1e12),
    _o("max_total_gpus", "int", None, "budget: GPUs of the fleet", ge=1, api_le=1_000_000, flags=("--gpu-budget",)),
    _o("target_rate", "float", None, "requests/s the fleet must serve", gt=0, api_le=1e9),
    _o("input_len", "int", 1024, "prompt tokens per request", ge=1, api_le=MAX_TOKENS, flags=("--input",)),
    _o("output_len", "int", 256, "generated tokens per request", ge=2, api_le=MAX_TOKENS, flags=("--output",)),
    LONG_CONTEXT,
    _o("disaggregated", "bool", False, "separate prefill and decode pools"),
    _o("both_modes", "bool", False, "sweep aggregated and disaggregated serving, ranked together"),
    _o("dtypes", "list_str", None, "dtype combinations: bf16,fp8,int4,fp4"),
    _o("all_layouts", "bool", False, "also PP inside NVLink islands, partial EP"),
    _o("top", "int", 10, "rows of the ranked table", ge=1, api_le=100),
    PRICES,
    _o("gpu_scale", "kv", None, "also search a what-if copy of every GPU, NAME=FACTOR[,...]: hbm_bw, flops, hbm_gb, "
       "link_bw, scaleup_bw, scaleout_bw, pcie_bw", flags=("--gpu-scale",)),
    _o("calibration", "str", None, "calibration YAML, 'default' (packaged fit) or 'none' (catalog priors)"),
)


def engine_options(values: dict) -> dict:
    """The runtime.resolve overrides among parsed option ``values`` (ENGINE names -> runtime fields)."""
    rename = {"kv_reservation": "reservation"}
    return {rename.get(o.name, o.name): values.get(o.name) for o in ENGINE
            if o.name != "engine" and values.get(o.name) is not None}


def by_name(*groups: tuple[Opt, ...]) -> dict[str, Opt]:
    return {o.name: o for g in groups for o in g}
