"""Load-tool command lines read as each tool reads them, into one :class:`Protocol`: the requests' lengths,
when each is sent, how many run at once, the warm-up requests, ignore-eos, and what the tool reports.

Tools (flag names and defaults: data/bench.yaml ``load_tools``, each with the source version mirrored):
``vllm bench serve``, the older ``python benchmarks/benchmark_serving.py``, ``python -m sglang.bench_serving``,
``genai-perf profile``. Only the synthetic random datasets are replayed (``--dataset-name random``; genai-perf's
synthetic prompts); a file dataset is refused with one line, as is a flag that changes the load in a way not
replayed (vLLM ``--ramp-up-strategy``, ``--random-prefix-len`` > 0; genai-perf ``--measurement-interval``).

Warm-up requests, as each tool sends them before its clock starts (excluded from every figure):
vLLM ``--num-warmups`` copies of the first request, at most ``--max-concurrency`` at once; the older
benchmark_serving.py one "initial single prompt test run" of the first request; SGLang ``--warmup-requests``
copies of the first prompt with output min(len, 32), all at once; genai-perf ``--warmup-request-count``
requests of the same load.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import sampling
from .argv import ToolParser, bench_data, check_count, parse, split, unknown_warning
from .serve import positive_int

TOOLS = ("vllm", "vllm-legacy", "sglang", "genai-perf")
LOADERS = "vllm bench serve, python benchmarks/benchmark_serving.py, python -m sglang.bench_serving, " \
          "genai-perf profile, trtllm-bench throughput|latency, guidellm benchmark"
EOS_NOTE = ("without ignore-eos the engine stops a request at EOS, which cannot be predicted: output lengths are "
            "taken as the requested maximum")


@dataclass
class Protocol:
    """One benchmark run as its tool would make it (module docstring)."""

    tool: str
    inputs: np.ndarray  # prompt tokens per measured request, in send order
    outputs: np.ndarray  # output tokens per measured request
    send_s: np.ndarray  # when the tool releases each request (before any concurrency limit), s
    sender_done_s: float  # when the sender is done (trailing sleep), s
    max_concurrency: int | None  # at most this many in flight (None: unbounded)
    warmup_inputs: np.ndarray  # the warm-up requests
    warmup_outputs: np.ndarray
    warmup_concurrency: int | None
    request_rate: float
    ignore_eos: bool
    args: dict  # the tool's arguments its result echoes (backend, model, dataset, lengths, ...)
    report: dict = field(default_factory=dict)  # what the tool reports: percentiles, goodput, streaming
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sampling: dict = field(default_factory=dict)  # engine options the requests' sampling implies (top_p, ...)

    @property
    def label(self) -> str:
        return bench_data()["load_tools"][self.tool]["label"]

    @property
    def source(self) -> str:
        return bench_data()["load_tools"][self.tool]["source"]


def _defaults(tool: str) -> dict:
    return bench_data()["load_tools"][tool]["defaults"]


def _rate(text: str) -> float:
    return float(text)  # argparse names the flag on ValueError; the range is checked by sampling.send_times


def _random_only(tool: str, name: str, dataset: str | None) -> None:
    if name == "random-mm":  # images per prompt: the simulator replays text prompts (workloads/images.py)
        raise ValueError(f"{tool}: --dataset-name 'random-mm' (images per prompt) is not replayed: the simulator "
                         f"replays text prompts; allowed: random (images are priced by `inferbound estimate --images N`, "
                         f"static, max-throughput or serving)")
    if name != "random":
        raise ValueError(f"{tool}: --dataset-name {name!r} is not replayed (its prompts are a file inferbound does "
                         f"not read); allowed: random")


def _vllm_parser(tool: str) -> ToolParser:
    d = _defaults(tool)
    p = ToolParser(bench_data()["load_tools"][tool]["label"])
    p.add_argument("--backend", default=d["backend"])
    p.add_argument("--model")
    p.add_argument("--dataset-name", default=d["dataset_name"])
    p.add_argument("--dataset-path")
    p.add_argument("--num-prompts", type=positive_int, default=d["num_prompts"])
    p.add_argument("--seed", type=int, default=d["seed"])
    p.add_argument("--random-input-len", type=positive_int, default=d["random_input_len"])
    p.add_argument("--random-output-len", type=positive_int, default=d["random_output_len"])
    p.add_argument("--random-range-ratio", type=float, default=d["random_range_ratio"])
    p.add_argument("--random-prefix-len", type=int, default=d["random_prefix_len"])
    p.add_argument("--request-rate", type=_rate, default=d["request_rate"])
    p.add_argument("--burstiness", type=float, default=d["burstiness"])
    p.add_argument("--max-concurrency", type=positive_int)
    p.add_argument("--ignore-eos", action="store_true")
    p.add_argument("--percentile-metrics")
    p.add_argument("--metric-percentiles", default=d["metric_percentiles"])
    p.add_argument("--goodput", nargs="+")
    if tool == "vllm":
        p.add_argument("--num-warmups", type=int, default=d["num_warmups"])
        p.add_argument("--input-len", type=positive_int)
        p.add_argument("--output-len", type=positive_int)
        p.add_argument("--ramp-up-strategy")
    for flag in ("--temperature", "--top-p", "--top-k", "--min-p", "--repetition-penalty", "--frequency-penalty",
                 "--presence-penalty"):  # the requests' sampling (request_sampling)
        p.add_argument(flag, type=float)
    for flag in ("--host", "--port", "--base-url", "--endpoint", "--tokenizer", "--label", "--result-dir",
                 "--result-filename", "--served-model-name", "--ready-check-timeout-sec", "--tokenizer-mode"):
        p.add_argument(flag)
    for flag in ("--save-result", "--save-detailed", "--disable-tqdm", "--trust-remote-code", "--append-result"):
        p.add_argument(flag, action="store_true")
    p.add_argument("--metadata", nargs="*")
    return p


def _goodput(pairs: list[str] | None, tool: str) -> dict:
    out = {}
    for pair in pairs or []:
        name, _, value = pair.partition(":")
        try:
            v = float(value)
        except ValueError:
            v = -1.0
        if name not in ("ttft", "tpot", "e2el") or v < 0:
            raise ValueError(f"{tool}: --goodput {pair!r}; allowed: KEY:VALUE with KEY ttft, tpot or e2el and a "
                             f"VALUE of milliseconds >= 0")
        out[name] = v
    return out


def request_sampling(ns, label: str) -> tuple[dict, list[str]]:
    """(engine options, warnings) of the requests' sampling flags, read as the vLLM tools send them: without
    --temperature the request is greedy (``sampling_params["temperature"] = 0.0  # Default to greedy decoding``,
    vllm/benchmarks/serve.py and benchmark_serving.py), and a greedy request's top_p is reset to 1 by the
    engine (vllm/sampling_params.py: temperature < 1e-5 sets top_p 1, top_k 0, min_p 0), so --top-p is priced
    only with a temperature > 0; penalties apply to greedy requests too (the V1 sampler applies them before
    any sampling). Priced by deploy/sampling.py (the ``sampler`` operator)."""
    opts, warns = {}, []
    temp, top_p = ns.temperature, ns.top_p
    if top_p is not None and top_p < 1.0:
        if temp is not None and temp > 0.0:
            opts["top_p"] = top_p
        else:
            warns.append(f"{label}: --top-p {top_p:g} with greedy decoding (temperature "
                         f"{0.0 if temp is None else temp:g}; the tool's default is 0): the engine ignores top_p")
    if ns.repetition_penalty is not None and ns.repetition_penalty != 1.0:
        opts["repetition_penalty"] = ns.repetition_penalty
    for flag, v in (("--frequency-penalty", ns.frequency_penalty), ("--presence-penalty", ns.presence_penalty)):
        if v and "repetition_penalty" not in opts:
            warns.append(f"{label}: {flag} {v:g} runs vLLM's apply_penalties as --repetition-penalty does; "
                         f"priced only with --repetition-penalty (not priced)")
    if (ns.top_k or ns.min_p) and temp and "top_p" not in opts:
        warns.append(f"{label}: --top-k / --min-p without --top-p: their filtering is not priced")
    return opts, warns


def parse_vllm(words: list[str], tool: str = "vllm") -> Protocol:
    cfg = bench_data()["load_tools"][tool]
    label = cfg["label"]
    ns, unknown = parse(_vllm_parser(tool), words, underscores_as_dashes=True)
    if tool == "vllm" and ns.input_len is not None:
        ns.random_input_len = ns.input_len  # main_async: --input-len maps to --random-input-len
    if tool == "vllm" and ns.output_len is not None:
        ns.random_output_len = ns.output_len
    _random_only(label, ns.dataset_name, ns.dataset_path)
    if ns.random_prefix_len:
        raise ValueError(f"{label}: --random-prefix-len {ns.random_prefix_len} is not replayed (a shared prefix "
                         f"the prefix cache would hit); allowed: 0")
    if getattr(ns, "ramp_up_strategy", None):
        raise ValueError(f"{label}: --ramp-up-strategy {ns.ramp_up_strategy} is not replayed; allowed: a constant "
                         f"--request-rate")
    n, L, O, r = ns.num_prompts, ns.random_input_len, ns.random_output_len, ns.random_range_ratio
    check_count(label, "--num-prompts", n + max(int(getattr(ns, "num_warmups", 0) or 0), 0))
    notes = []
    if tool == "vllm":
        ins, outs = sampling.symmetric(L, O, r, n, ns.seed)
        send, done = sampling.send_times(cfg["arrivals"], ns.request_rate, n, ns.seed, ns.burstiness)
        ignore = ns.ignore_eos or ns.backend in cfg["openai_compatible_backends"]  # random dataset: ignore EOS
        warm = max(int(ns.num_warmups), 0)
    else:
        ins, outs, rs, zeros = sampling.lower_fraction(L, O, r, n, ns.seed)
        if zeros:
            notes.append(f"{zeros} sampled length(s) of 0 tokens counted as 1")
        send, done = sampling.send_times(cfg["arrivals"], ns.request_rate, n, ns.seed, ns.burstiness, rs)
        ignore = ns.ignore_eos
        warm = 1  # the "initial single prompt test run" before the clock starts
    metrics = (ns.percentile_metrics or cfg["defaults"]["percentile_metrics"]).split(",")
    bad = [m for m in metrics if m not in ("ttft", "tpot", "itl", "e2el", "client_queue_time",
                                           "e2el_including_client_queue")]
    if bad:
        raise ValueError(f"{label}: --percentile-metrics {bad[0]!r} unknown; allowed: ttft, tpot, itl, e2el, "
                         f"client_queue_time, e2el_including_client_queue")
    try:
        pcts = [float(p) for p in ns.metric_percentiles.split(",")]
    except ValueError:
        raise ValueError(f"{label}: --metric-percentiles {ns.metric_percentiles!r}; allowed: comma-separated "
                         f"numbers in [0, 100]") from None
    if any(not 0 <= p <= 100 for p in pcts):
        raise ValueError(f"{label}: --metric-percentiles {ns.metric_percentiles!r}; allowed: numbers in [0, 100]")
    args = {"backend": ns.backend, "model": ns.model, "label": ns.label, "tokenizer": ns.tokenizer,
            "num_prompts": n, "request_rate": ns.request_rate, "burstiness": ns.burstiness,
            "max_concurrency": ns.max_concurrency}
    report = {"percentile_metrics": metrics, "percentiles": pcts, "goodput": _goodput(ns.goodput, label)}
    first = (ins[:1].repeat(warm), outs[:1].repeat(warm))
    opts, sample_warns = request_sampling(ns, label)
    return Protocol(tool, ins, outs, send, done, ns.max_concurrency, first[0], first[1],
                    ns.max_concurrency if tool == "vllm" else 1, ns.request_rate, bool(ignore), args, report,
                    notes + ([] if ignore else [EOS_NOTE]), unknown_warning(label, unknown) + sample_warns, opts)


def _sglang_parser() -> ToolParser:
    d = _defaults("sglang")
    p = ToolParser("sglang.bench_serving")
    p.add_argument("--backend", default=d["backend"])
    p.add_argument("--model")
    p.add_argument("--dataset-name", default=d["dataset_name"])
    p.add_argument("--dataset-path", default="")
    p.add_argument("--num-prompts", type=positive_int, default=d["num_prompts"])
    p.add_argument("--random-input-len", type=positive_int, default=d["random_input_len"])
    p.add_argument("--random-output-len", type=positive_int, default=d["random_output_len"])
    p.add_argument("--random-range-ratio", type=float, default=d["random_range_ratio"])
    p.add_argument("--request-rate", type=_rate, default=d["request_rate"])
    p.add_argument("--max-concurrency", type=positive_int)
    p.add_argument("--seed", type=int, default=d["seed"])
    p.add_argument("--warmup-requests", type=int, default=d["warmup_requests"])
    p.add_argument("--disable-ignore-eos", action="store_true")
    p.add_argument("--sharegpt-output-len", type=int)
    for flag in ("--host", "--port", "--base-url", "--tokenizer", "--output-file", "--extra-request-body"):
        p.add_argument(flag)
    for flag in ("--output-details", "--disable-tqdm", "--disable-stream", "--apply-chat-template", "--flush-cache"):
        p.add_argument(flag, action="store_true")
    return p


def parse_sglang(words: list[str]) -> Protocol:
    cfg = bench_data()["load_tools"]["sglang"]
    ns, unknown = parse(_sglang_parser(), words)
    _random_only("sglang.bench_serving", ns.dataset_name, ns.dataset_path)
    n = check_count("sglang.bench_serving", "--num-prompts", ns.num_prompts)
    check_count("sglang.bench_serving", "--warmup-requests", ns.warmup_requests)
    ins, outs, rs, zeros = sampling.lower_fraction(ns.random_input_len, ns.random_output_len,
                                                   ns.random_range_ratio, n, ns.seed, input_floor=1)
    send, done = sampling.send_times(cfg["arrivals"], ns.request_rate, n, ns.seed, 1.0, rs)
    # async_request_openai_completions / the sglang backends send ignore_eos = not --disable-ignore-eos; the
    # chat-completions function sends none
    ignore = not ns.disable_ignore_eos and not ns.backend.endswith("-chat")
    notes = [f"{zeros} sampled length(s) of 0 tokens counted as 1"] if zeros else []
    warm = max(int(ns.warmup_requests), 0)
    cap = int(cfg["warmup_output_cap"])
    args = {"backend": ns.backend, "dataset_name": ns.dataset_name, "request_rate": ns.request_rate,
            "max_concurrency": ns.max_concurrency, "sharegpt_output_len": ns.sharegpt_output_len,
            "random_input_len": ns.random_input_len, "random_output_len": ns.random_output_len,
            "random_range_ratio": ns.random_range_ratio, "num_prompts": n}
    return Protocol("sglang", ins, outs, send, done, ns.max_concurrency, ins[:1].repeat(warm),
                    np.minimum(outs[:1], cap).repeat(warm), None, ns.request_rate, ignore, args, {},
                    notes + ([] if ignore else [EOS_NOTE]), unknown_warning("sglang.bench_serving", unknown))


def _genai_parser() -> ToolParser:
    p = ToolParser("genai-perf profile")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--concurrency", type=positive_int)
    load.add_argument("--request-rate", type=float)
    p.add_argument("-m", "--model", nargs="+")
    p.add_argument("--synthetic-input-tokens-mean", "--isl", type=int)
    p.add_argument("--synthetic-input-tokens-stddev", type=int)
    p.add_argument("--output-tokens-mean", "--osl", type=int)
    p.add_argument("--output-tokens-stddev", type=int)
    p.add_argument("--output-tokens-mean-deterministic", action="store_true")
    p.add_argument("--num-dataset-entries", "--num-prompts", type=positive_int)
    p.add_argument("--request-count", "--num-requests", type=positive_int)
    p.add_argument("--warmup-request-count", "--num-warmup-requests", type=int)
    p.add_argument("--random-seed", type=int)
    p.add_argument("--extra-inputs", action="append")
    p.add_argument("--streaming", action="store_true")
    p.add_argument("--measurement-interval", "-p", type=int)
    p.add_argument("--input-file")
    for flag in ("--endpoint-type", "--service-kind", "--backend", "--url", "-u", "--tokenizer", "--artifact-dir",
                 "--profile-export-file", "--endpoint"):
        p.add_argument(flag)
    for flag in ("--generate-plots", "-v", "--verbose"):
        p.add_argument(flag, action="store_true")
    return p


def parse_genai_perf(words: list[str]) -> Protocol:
    d = _defaults("genai-perf")
    ns, unknown = parse(_genai_parser(), words)
    tool = "genai-perf profile"
    if ns.measurement_interval is not None:
        raise ValueError(f"{tool}: --measurement-interval {ns.measurement_interval} is not replayed; allowed: "
                         f"--request-count (or its default)")
    if ns.input_file:
        raise ValueError(f"{tool}: --input-file {ns.input_file!r} is not replayed; allowed: synthetic prompts")
    if ns.output_tokens_mean is None:
        raise ValueError(f"{tool}: --output-tokens-mean is not set, so the server decides the output length (EOS, "
                         f"its own max_tokens); allowed: --output-tokens-mean N")
    extra = dict(x.split(":", 1) for x in ns.extra_inputs or [] if ":" in x)
    ignore = str(extra.get("ignore_eos", "")).lower() == "true" or ns.output_tokens_mean_deterministic or \
        "min_tokens" in extra
    conc = ns.concurrency if ns.request_rate is None else None
    if conc is None and ns.request_rate is None:
        conc = int(d["concurrency"])
    count = ns.request_count or max(int(d["request_count_min"]), int(d["request_count_per_client"]) * (conc or 0))
    entries = check_count(tool, "--num-dataset-entries", ns.num_dataset_entries or int(d["num_dataset_entries"]))
    check_count(tool, "--request-count/--warmup-request-count", count + max(ns.warmup_request_count or 0, 0))
    seed = d["random_seed"] if ns.random_seed is None else ns.random_seed
    in_mean = d["synthetic_input_tokens_mean"] if ns.synthetic_input_tokens_mean is None else \
        ns.synthetic_input_tokens_mean
    in_std = d["synthetic_input_tokens_stddev"] if ns.synthetic_input_tokens_stddev is None else \
        ns.synthetic_input_tokens_stddev
    out_std = d["output_tokens_stddev"] if ns.output_tokens_stddev is None else ns.output_tokens_stddev
    ins, outs, zeros = sampling.gaussian(in_mean, in_std, ns.output_tokens_mean, out_std, entries, seed)
    warm = max(int(d["warmup_request_count"] if ns.warmup_request_count is None else ns.warmup_request_count), 0)
    order = np.arange(warm + count) % entries  # requests step through the dataset's payloads in turn
    notes = [f"{zeros} synthetic prompt(s) of 0 tokens counted as 1"] if zeros else []
    if in_std or out_std:
        notes.append("lengths drawn from genai-perf's distributions with its seed; not token-for-token its prompts")
    rate = math.inf if ns.request_rate is None else ns.request_rate
    send, done = sampling.send_times("constant", rate, count, seed)
    if not ns.streaming:
        notes.append("without --streaming genai-perf sees one response per request: TTFT is the request latency "
                     "and ITL is not reported")
    args = {"model": (ns.model or [None])[0], "concurrency": conc, "request_rate": ns.request_rate,
            "request_count": count, "warmup_request_count": warm, "num_dataset_entries": entries,
            "synthetic_input_tokens_mean": in_mean, "synthetic_input_tokens_stddev": in_std,
            "output_tokens_mean": ns.output_tokens_mean, "output_tokens_stddev": out_std, "random_seed": seed,
            "streaming": bool(ns.streaming)}
    w, m = order[:warm], order[warm:]
    return Protocol("genai-perf", ins[m], outs[m], send, done, conc, ins[w], outs[w], conc, rate, bool(ignore),
                    args, {"streaming": bool(ns.streaming)}, notes + ([] if ignore else [EOS_NOTE]),
                    unknown_warning(tool, unknown))


def parse_load(command: str | list[str]) -> Protocol:
    """The Protocol of a load tool's command line (module docstring); one-line ValueErrors."""
    w = split(command)
    if w[:3] == ["vllm", "bench", "serve"]:
        return parse_vllm(w[3:], "vllm")
    if len(w) >= 2 and w[0] in ("python", "python3"):
        if w[1].endswith("benchmark_serving.py"):
            return parse_vllm(w[2:], "vllm-legacy")
        if w[1:3] == ["-m", "sglang.bench_serving"]:
            return parse_sglang(w[3:])
    if w[:2] == ["genai-perf", "profile"]:
        return parse_genai_perf(w[2:])
    shown = " ".join(w[:3]) if w else ""
    raise ValueError(f"load command {shown!r} unknown; allowed: {LOADERS}")
