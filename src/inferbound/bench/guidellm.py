"""``guidellm benchmark [run] ...``: GuideLLM's load, read as its click options read it (data/bench.yaml
``load_tools.guidellm``: guidellm v0.6.1, the last release with the ``benchmark`` command), and its report.

Profiles (benchmark/profiles.py, scheduler/strategies.py), one ``--rate`` (a list is several benchmarks: refused,
run one command per rate):
- ``synchronous``: one request at a time; ``concurrent``: ``--rate`` streams, each sending its next request when the
  last finishes; ``throughput``: all requests at once, at most ``--rate`` in flight (the profile requires it);
- ``constant`` (``async``'s default strategy): request k (k = 1, 2, ...) at k/rate; ``poisson``: cumulative
  ``random.Random(--random-seed).expovariate(rate)`` gaps from the start; both at most Settings.max_concurrency
  (512) in flight, as the worker group limits strategies without their own;
- ``sweep`` (the default) runs synchronous, throughput and a series of constant rates: refused (name one). Data:
  synthetic only, ``--data prompt_tokens=L,output_tokens=O`` (key=value or JSON; SyntheticTextDatasetConfig) with no
  stdev/min/max (fixed lengths); the OpenAI backend sends max_tokens = O with ignore_eos
  (backends/openai/request_handlers.py). ``--max-requests`` N is required (the synthetic dataset has no end);
  ``--max-seconds`` is refused. Warm-up/cool-down (TransientPhaseConfig with requests known, no duration): a value
  in (0, 1) is int(value·N) requests, >= 1 that many; those first/last requests (send order) are sent and excluded
  from every figure, the rest measured.

Figures (schemas/request_stats.py; schemas/statistics.py): per request, start s, first token f, last token e, N
outputs: request_latency e − s (s), time_to_first_token_ms 1000(f − s), time_per_output_token_ms 1000(e − s)/N (TTFT
included, as the source divides), inter_token_latency_ms 1000(e − f)/(N − 1). Each DistributionSummary of
per-request values: the pdf of unique values with their shares; mean Σ v·p, variance Σ (v − mean)²·p, percentile q =
the first value whose cumulative share >= q (np.searchsorted side left), median = p50, mode the value of the largest
share, total_sum = mean·count, pdf null (guidellm keeps it only when asked). Per-second and concurrency metrics are
time-weighted distributions over the run; their means are closed forms (Σ over the window / the window: requests,
tokens, request-seconds), the rest of those summaries needs the event times (null, with a note). The window runs
from the first measured send to the last measured finish.
"""
from __future__ import annotations

import json
import math
import random

import numpy as np

from .argv import ToolParser, bench_data, check_count, parse, unknown_warning
from .load import Protocol
from .replay import Outcome

PROFILES = ("synchronous", "concurrent", "throughput", "constant", "poisson", "async")
PCTS = (("p001", 0.001), ("p01", 0.01), ("p05", 0.05), ("p10", 0.1), ("p25", 0.25), ("p50", 0.5), ("p75", 0.75),
        ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999))
STATUSES = ("successful", "errored", "incomplete", "total")
SUMMARY_KEYS = ("mean", "median", "mode", "variance", "std_dev", "min", "max", "count", "total_sum", "percentiles")
RATE_NOTE = ("guidellm per-second and concurrency distributions over time: only their means are predicted (the "
             "rest of those summaries is null)")
LABEL = "guidellm benchmark"


def _cfg() -> dict:
    return bench_data()["load_tools"]["guidellm"]


def _parser() -> ToolParser:
    d = _cfg()["defaults"]
    p = ToolParser(LABEL, allow_abbrev=False)
    p.add_argument("--target")
    p.add_argument("--data", action="append")
    p.add_argument("--profile", "--rate-type", default=d["profile"])
    p.add_argument("--rate", action="append")
    p.add_argument("--backend", "--backend-type", default=d["backend"])
    p.add_argument("--model")
    p.add_argument("--random-seed", type=int, default=d["random_seed"])
    p.add_argument("--warmup", "--warmup-percent")
    p.add_argument("--cooldown", "--cooldown-percent")
    p.add_argument("--rampup", type=float, default=0.0)
    p.add_argument("--max-seconds", type=float)
    p.add_argument("--max-requests", type=int)
    for flag in ("--scenario", "-c", "--backend-kwargs", "--backend-args", "--request-format", "--request-type",
                 "--processor", "--processor-args", "--data-args", "--data-samples", "--data-sampler",
                 "--output-dir", "--outputs", "--output-path", "--sample-requests", "--output-sampling",
                 "--max-errors", "--max-error-rate", "--max-global-error-rate", "--data-column-mapper",
                 "--data-num-workers"):
        p.add_argument(flag)
    for flag in ("--disable-console", "--disable-console-outputs", "--disable-console-interactive",
                 "--disable-progress", "--detect-saturation"):
        p.add_argument(flag, action="store_true")
    return p


def _synthetic(data: list[str] | None) -> tuple[int, int]:
    allowed = "a synthetic config, e.g. --data prompt_tokens=512,output_tokens=128"
    if not data or len(data) != 1:
        raise ValueError(f"{LABEL}: --data {'is not given' if not data else 'given more than once'}; allowed: "
                         f"{allowed}")
    text = data[0].strip()
    try:
        cfg = json.loads(text) if text.startswith("{") else dict(kv.split("=", 1) for kv in text.split(","))
    except ValueError:
        cfg = {}
    if not isinstance(cfg, dict) or "prompt_tokens" not in cfg or "output_tokens" not in cfg:
        raise ValueError(f"{LABEL}: --data {text!r} is a dataset inferbound does not read; allowed: {allowed}")
    for k in ("prompt_tokens_stdev", "prompt_tokens_min", "prompt_tokens_max", "output_tokens_stdev",
              "output_tokens_min", "output_tokens_max", "prefix_tokens", "prefix_count", "turns"):
        v = cfg.get(k)
        if v not in (None, "", 0, "0") and not (k == "turns" and str(v) == "1") and \
                not (k.endswith(("_min", "_max")) and str(v) == str(cfg[k.split("_tokens")[0] + "_tokens"])):
            raise ValueError(f"{LABEL}: --data {k}={v} is not replayed (lengths drawn by guidellm's sampler); "
                             f"allowed: fixed prompt_tokens and output_tokens")
    try:
        L, O = int(cfg["prompt_tokens"]), int(cfg["output_tokens"])
    except (TypeError, ValueError):
        raise ValueError(f"{LABEL}: --data {text!r}: prompt_tokens and output_tokens must be integers >= 1") from None
    if L < 1 or O < 1:
        raise ValueError(f"{LABEL}: --data {text!r}; allowed: prompt_tokens >= 1 and output_tokens >= 1")
    return L, O


def _phase(text: str | None, n: int, flag: str) -> int:
    """Requests of a warm-up/cool-down phase (TransientPhaseConfig.compute_limits with max_requests only)."""
    if text is None:
        return 0
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{LABEL}: --{flag} {text!r}; allowed: a number (a share in (0, 1) or a request count)") \
            from None
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{LABEL}: --{flag} {text!r}; allowed: a finite number >= 0")
    return int(v * n) if v < 1 else int(v)


def _rate(ns) -> float | None:
    rates = [x for r in ns.rate or [] for x in r.split(",") if x.strip()]
    if len(rates) > 1:
        raise ValueError(f"{LABEL}: --rate {','.join(rates)} is {len(rates)} benchmarks; allowed: one rate (run one "
                         f"command per rate)")
    if not rates:
        return None
    try:
        r = float(rates[0])
    except ValueError:
        raise ValueError(f"{LABEL}: --rate {rates[0]!r}; allowed: a number > 0") from None
    if not r > 0 or math.isinf(r):
        raise ValueError(f"{LABEL}: --rate {rates[0]}; allowed: a finite number > 0")
    return r


def parse_guidellm(words: list[str]) -> Protocol:
    """``words`` after ``guidellm benchmark`` (``run`` optional)."""
    if words[:1] == ["run"]:
        words = words[1:]
    ns, unknown = parse(_parser(), words)
    prof = ns.profile
    if prof not in PROFILES:
        why = "several benchmarks" if prof == "sweep" else "unknown"
        raise ValueError(f"{LABEL}: --profile {prof!r} is not replayed ({why}); allowed: {', '.join(PROFILES)}")
    if ns.max_seconds is not None:
        raise ValueError(f"{LABEL}: --max-seconds {ns.max_seconds:g} is not replayed; allowed: --max-requests N")
    if ns.max_requests is None or ns.max_requests < 1:
        raise ValueError(f"{LABEL}: --max-requests is {ns.max_requests} (the synthetic dataset has no end); allowed: "
                         f"an integer >= 1")
    if ns.rampup:
        raise ValueError(f"{LABEL}: --rampup {ns.rampup:g} is not replayed; allowed: 0")
    L, O = _synthetic(ns.data)
    n = check_count(LABEL, "--max-requests", ns.max_requests)
    rate = _rate(ns)
    if prof in ("concurrent", "throughput", "constant", "poisson", "async") and rate is None:
        raise ValueError(f"{LABEL}: --profile {prof} needs --rate; allowed: a number > 0")
    strategy = "constant" if prof == "async" else prof
    cap = {"synchronous": 1, "concurrent": None if rate is None else int(rate),
           "throughput": None if rate is None else int(rate)}.get(strategy, int(_cfg()["defaults"]["max_concurrency"]))
    if strategy in ("concurrent", "throughput") and (cap < 1 or cap != rate):
        raise ValueError(f"{LABEL}: --rate {rate:g} for --profile {strategy} is a request count; allowed: an integer "
                         f">= 1")
    if strategy == "constant":
        send = np.arange(1, n + 1) / rate
    elif strategy == "poisson":
        rng = random.Random(ns.random_seed)
        send = np.cumsum([rng.expovariate(rate) for _ in range(n)])
    else:
        send = np.zeros(n)
    warm, cool = _phase(ns.warmup, n, "warmup"), _phase(ns.cooldown, n, "cooldown")
    if warm + cool >= n:
        raise ValueError(f"{LABEL}: --warmup and --cooldown leave no measured request ({warm} + {cool} of {n}); "
                         f"allowed: fewer warm-up/cool-down requests or a larger --max-requests")
    ins, outs = np.full(n, L, dtype=np.int64), np.full(n, O, dtype=np.int64)
    args = {"target": ns.target, "model": ns.model, "profile": prof, "strategy": strategy, "rate": rate,
            "max_concurrency": cap, "max_requests": n, "prompt_tokens": L, "output_tokens": O,
            "random_seed": ns.random_seed, "backend": ns.backend}
    notes = [RATE_NOTE]
    if warm or cool:
        notes.append(f"{warm} warm-up and {cool} cool-down request(s) of the {n} sent are excluded from every figure, "
                     f"as guidellm excludes its transient phases")
    return Protocol("guidellm", ins, outs, send, float(send[-1]), cap, ins[:0], outs[:0], None,
                    math.inf if rate is None or strategy in ("concurrent", "throughput") else rate, True, args,
                    {"warmup": warm, "cooldown": cool}, notes, unknown_warning(LABEL, unknown))


def summary(values) -> dict:
    """DistributionSummary.from_values (uniform weights) of ``values``; empty: guidellm's zeros."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {**{k: 0.0 for k in SUMMARY_KEYS[:-3]}, "min": 0.0, "max": 0.0, "count": 0, "total_sum": 0.0,
                "percentiles": {k: 0.0 for k, _ in PCTS}, "pdf": None}
    vals, counts = np.unique(v, return_counts=True)
    prob = counts / counts.sum()
    cdf = np.cumsum(prob)
    pct = {k: float(vals[min(np.searchsorted(cdf, q, side="left"), vals.size - 1)]) for k, q in PCTS}
    mean = float(np.sum(vals * prob))
    var = float(np.sum((vals - mean) ** 2 * prob))
    return {"mean": mean, "median": pct["p50"], "mode": float(vals[np.argmax(prob)]), "variance": var,
            "std_dev": math.sqrt(var), "min": float(vals[0]), "max": float(vals[-1]), "count": int(v.size),
            "total_sum": mean * v.size, "percentiles": pct, "pdf": None}


def _mean_only(mean: float, count: int) -> dict:
    return {**{k: None for k in SUMMARY_KEYS}, "mean": mean, "count": count, "pdf": None}


def _status(ok: dict) -> dict:
    """StatusDistributionSummary: every request completed (errored and incomplete empty)."""
    empty = summary([]) if ok["percentiles"] is not None else _mean_only(0.0, 0)
    return {"successful": ok, "errored": empty, "incomplete": empty, "total": ok}


def guidellm_result(proto: Protocol, out: Outcome) -> dict:
    """The benchmarks.json report (``benchmarks[0]``: config.strategy, duration, metrics), predicted."""
    w, c = proto.report["warmup"], proto.report["cooldown"]
    keep = slice(w, out.outputs.size - c)
    s, f, e = out.send_s[keep], out.first_s[keep], out.finish_s[keep]
    N, In = out.outputs[keep].astype(float), out.inputs[keep].astype(float)
    n = int(N.size)
    window = float(e.max() - s.min())
    lat = e - s
    itl = np.where(N > 1, (e - f) / np.maximum(N - 1, 1), 0.0)[N > 1]
    a = proto.args
    strategy = {"type_": a["strategy"]}
    if a["strategy"] == "concurrent":
        strategy["streams"] = a["max_concurrency"]
    elif a["strategy"] in ("constant", "poisson"):
        strategy.update(rate=a["rate"], max_concurrency=a["max_concurrency"])
    elif a["strategy"] == "throughput":
        strategy["max_concurrency"] = a["max_concurrency"]
    metrics = {
        "request_totals": {"successful": n, "errored": 0, "incomplete": 0, "total": n},
        "requests_per_second": _status(_mean_only(n / window, n)),
        "request_concurrency": _status(_mean_only(float(lat.sum() / window), n)),
        "request_latency": _status(summary(lat)),
        "prompt_token_count": _status(summary(In)),
        "output_token_count": _status(summary(N)),
        "total_token_count": _status(summary(In + N)),
        "time_to_first_token_ms": _status(summary((f - s) * 1e3)),
        "time_per_output_token_ms": _status(summary((e - s) * 1e3 / N)),
        "inter_token_latency_ms": _status(summary(itl * 1e3)),
        "prompt_tokens_per_second": _status(_mean_only(float(In.sum() / window), n)),
        "output_tokens_per_second": _status(_mean_only(float(N.sum() / window), n)),
        "tokens_per_second": _status(_mean_only(float((In + N).sum() / window), n)),
    }
    return {"benchmarks": [{"config": {"strategy": strategy, "profile": a["profile"]}, "duration": window,
                            "warmup_requests": w, "cooldown_requests": c, "metrics": metrics}]}


def _num(v, precision: int = 1) -> str:
    return "-" if v is None else f"{v:,.{precision}f}"


def guidellm_text(res: dict) -> str:
    """The console's "Request Latency Statistics" and "Server Throughput Statistics" tables (outputs/console.py:
    median and p95 of successful requests; concurrency median and mean, per-second means of all requests)."""
    b = res["benchmarks"][0]
    m = b["metrics"]
    st = b["config"]["strategy"]["type_"]

    def ok(name, stat):
        d = m[name]["successful"]
        return d["median"] if stat == "median" else d["percentiles"]["p95"]

    lat = [("Request Latency", "Sec", "request_latency"), ("TTFT", "ms", "time_to_first_token_ms"),
           ("ITL", "ms", "inter_token_latency_ms"), ("TPOT", "ms", "time_per_output_token_ms")]
    head1 = ["Benchmark"] + [g for g, _, _ in lat for _ in (0, 1)]
    head2 = ["Strategy"] + [u for _, u, _ in lat for _ in (0, 1)]
    head3 = [""] + ["Mdn", "p95"] * len(lat)
    row = [st] + [_num(ok(k, s)) for _, _, k in lat for s in ("median", "p95")]
    t = _table("Request Latency Statistics (Completed Requests)", [head1, head2, head3], row)
    tot = lambda k: m[k]["total"]  # noqa: E731
    head1 = ["Benchmark", "Requests", "Requests", "Requests", "Input Tokens", "Output Tokens", "Total Tokens"]
    head2 = ["Strategy", "Concurrency", "Concurrency", "Per Sec", "Per Sec", "Per Sec", "Per Sec"]
    head3 = ["", "Mdn", "Mean", "Mean", "Mean", "Mean", "Mean"]
    row = [st, _num(tot("request_concurrency")["median"]), _num(tot("request_concurrency")["mean"]),
           _num(tot("requests_per_second")["mean"]), _num(tot("prompt_tokens_per_second")["mean"]),
           _num(tot("output_tokens_per_second")["mean"]), _num(tot("tokens_per_second")["mean"])]
    return t + "\n\n" + _table("Server Throughput Statistics (All Requests)", [head1, head2, head3], row)


def _table(title: str, heads: list[list[str]], row: list[str]) -> str:
    widths = [max(len(h[i]) for h in heads + [row]) for i in range(len(row))]
    line = lambda cells: "| " + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in  # noqa: E731
                                           enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([title, *[line(h) for h in heads], sep, line(row)])
