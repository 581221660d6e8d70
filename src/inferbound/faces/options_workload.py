"""Options of a workload (faces/options.py re-exports every name): ``STATIC`` (a static batch), ``ESTIMATE``
(its scenario), ``LENGTHS`` (request length mixes), ``SERVING`` (a simulated workload), the request lengths,
arrivals and SLOs they share, and the JSON API's caps on simulated and offline requests."""
from __future__ import annotations

from ..workloads.lengths import dataset_names
from .opt import Opt, declare as _o
from .options_deploy import MAX_BATCH, MAX_TOKENS

#: the estimate scenarios (workloads/: static.py, max_throughput.py, serving.py); validation rows name
#: theirs in the CSV schema's own words (ROW_SCENARIOS, validation/dataset.py)
SCENARIOS = ("static", "max-throughput", "serving")


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
#: disaggregated pools with their own layouts (deploy/pools.py): simulate's pools, estimate's analytic pair
#: (workloads/disagg.py)
PREFILL_LAYOUT = _o("prefill_layout", "str", None, "disaggregated: the prefill pool's own layout, KEY=VALUE,...: tp, "
                    "pp, ep, dp, nodes, attention_dp, redundant_experts, ep_a2a, comm_overlap (e.g. "
                    "tp=1,dp=32,ep=32,attention_dp=1,nodes=4; default: the deployment's)")
DECODE_LAYOUT = _o("decode_layout", "str", None, "disaggregated: the decode pool's own layout, as --prefill-layout "
                   "(e.g. tp=1,dp=72,ep=72,attention_dp=1,nodes=9,redundant_experts=32)")
_ANALYTIC = (" estimate: the analytic prefill/decode pair (workloads/disagg.py) at capacity (max-throughput) or at "
             "--rate (serving)")

IMAGES = _o("images", "int", 0, "images per request (a multimodal checkpoint: llava, gemma3, llama4, mistral3, "
            "qwen2_5_vl): each adds its vision tower's tokens per image to the prompt and the tower's encoder pass to "
            "the prefill (model/towers.py; static, max-throughput and serving scenarios: workloads/images.py)", ge=0, le=64)

ESTIMATE: tuple[Opt, ...] = (
    SCENARIO,
    IMAGES,
    PREFILL_LAYOUT.but(api=False, help=PREFILL_LAYOUT.help + ";" + _ANALYTIC),
    DECODE_LAYOUT.but(api=False, help=DECODE_LAYOUT.help + ";" + _ANALYTIC),
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
    PREFILL_LAYOUT,
    DECODE_LAYOUT,
    _o("num_blocks", "int", None, "KV blocks per replica (default: from the engine's KV allocation)", ge=1,
       api_le=100_000_000),
    SLO_TTFT_MS,
    SLO_TPOT_MS,
    SLO_E2E_MS,
    _o("timeline", "bool", False, "include per-step samples (thinned to 500 points)", cli=False),
)
