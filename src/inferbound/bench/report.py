"""A replayed benchmark in its tool's own output: the result dict (the JSON the tool saves) and its text block.

Definitions, as each tool computes them (per request: send s, first token f, finish e, output N; run length D):
TTFT = f − s; E2EL (vLLM) / E2E latency (SGLang) / request latency (genai-perf) = e − s; TPOT = (e − f)/(N − 1)
over requests with N > 1 (excludes the first token); ITL (vLLM, SGLang) = every gap between consecutive tokens,
pooled over requests; genai-perf's inter_token_latency is per request (e − f)/(N − 1), and
output_token_throughput_per_user its inverse. Means, medians, std (population) and percentiles are numpy's
(np.mean, np.median, np.std, np.percentile, linear interpolation), in ms.

- vLLM (serve.py benchmark/calculate_metrics): D = from the benchmark's start (0, before the first send) to
  the last finish or the sender's end; request_throughput = completed/D, output_throughput = Σ N/D,
  total_token_throughput = (Σ input + Σ N)/D; per metric of ``--percentile-metrics`` (default ttft,tpot,itl:
  e2el only when listed) mean_/median_/std_/p<P>_<metric>_ms; client_queue_time = s − release;
  max_concurrent_requests = the most requests in [s, e) at once (sweep, departures first);
  max_output_tokens_per_s needs each token's time, which the simulator does not keep: null (printed n/a).
- SGLang (bench_serving.py calculate_metrics): D as vLLM (its sender also sleeps one gap after the last
  request); input_throughput = Σ input/D; concurrency = Σ E2E/D; total_output_tokens_retokenized is the
  generated count (no tokenizer round trip here).
- genai-perf (llm_profile_data_parser.py, statistics.py): D = last response − first request; each request
  metric has avg, p1..p99, min, max, std; the system metrics (output_token_throughput = Σ N/D,
  request_throughput = count/D, request_count) only avg; ``input_config`` holds the arguments replayed
  (genai-perf writes its whole configuration there). time_to_second_token needs the second token's own
  time, which the simulator does not keep: left out, with a note.
"""
from __future__ import annotations

import math
from datetime import datetime

import numpy as np

from .load import Protocol
from .replay import Outcome

VLLM_HEADERS = {"ttft": ("TTFT", "Time to First Token"), "tpot": ("TPOT", "Time per Output Token (excl. 1st token)"),
                "itl": ("ITL", "Inter-token Latency"), "e2el": ("E2EL", "End-to-end Latency"),
                "client_queue_time": ("Client Queue Time", "Client-side Queueing"),
                "e2el_including_client_queue": ("E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency")}
GENAI_REQUEST = (("time_to_first_token", "ms"), ("time_to_second_token", "ms"), ("request_latency", "ms"),
                 ("inter_token_latency", "ms"), ("output_token_throughput_per_user", "tokens/sec/user"),
                 ("output_sequence_length", "tokens"), ("input_sequence_length", "tokens"))
GENAI_SYSTEM = (("output_token_throughput", "tokens/sec"), ("request_throughput", "requests/sec"),
                ("request_count", "count"))
GENAI_PCTS = (1, 5, 10, 25, 50, 75, 90, 95, 99)
GENAI_COLUMNS = ("avg", "min", "max", "p99", "p90", "p75")
NO_PEAK = "peak output token throughput (vLLM max_output_tokens_per_s) needs each token's time: not predicted (null)"
NO_TTST = "genai-perf time_to_second_token needs each request's second-token time: not predicted (left out)"


def _ms(x) -> np.ndarray:
    return np.asarray(x, dtype=float) * 1e3


def _p_word(p: float) -> str:
    return str(int(p)) if int(p) == p else str(p)


def duration(out: Outcome) -> float:
    """vLLM / SGLang D: from the start (0) to the last finish or the sender's end, whichever is later."""
    return max(float(out.finish_s.max()), out.sender_done_s)


def peak_concurrency(out: Outcome) -> int:
    ev = sorted([(float(s), 1) for s in out.send_s] + [(float(e), -1) for e in out.finish_s])
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return peak


def _goodput(out: Outcome, slo: dict, D: float) -> float | None:
    if not slo:
        return None
    n_out = out.outputs
    tpot = np.where(n_out > 1, (out.latency_s - out.ttft_s) / np.maximum(n_out - 1, 1), 0.0)
    ok = np.ones(n_out.size, dtype=bool)
    for name, values in (("ttft", out.ttft_s), ("tpot", tpot), ("e2el", out.latency_s)):
        if name in slo:
            ok &= slo[name] / 1e3 >= values
    return int(ok.sum()) / D


def vllm_result(proto: Protocol, out: Outcome) -> dict:
    """The JSON ``vllm bench serve --save-result`` writes (main_async result_json), predicted."""
    a, D = proto.args, duration(out)
    tot_in, tot_out = int(out.inputs.sum()), int(out.outputs.sum())
    legacy = proto.tool == "vllm-legacy"
    res = {"date": datetime.now().strftime("%Y%m%d-%H%M%S"), **({} if legacy else {"endpoint_type": a["backend"]}),
           "backend": a["backend"], **({} if legacy else {"label": a["label"]}), "model_id": a["model"],
           "tokenizer_id": a["tokenizer"] or a["model"], "num_prompts": a["num_prompts"],
           "request_rate": a["request_rate"] if a["request_rate"] < math.inf else "inf",
           "burstiness": a["burstiness"], "max_concurrency": a["max_concurrency"],
           "duration": D, "completed": int(out.outputs.size), **({} if legacy else {"failed": 0}),
           "total_input_tokens": tot_in, "total_output_tokens": tot_out,
           "request_throughput": out.outputs.size / D,
           "request_goodput": _goodput(out, proto.report["goodput"], D),
           "output_throughput": tot_out / D, "total_token_throughput": (tot_in + tot_out) / D}
    if not legacy:
        res.update(max_output_tokens_per_s=None, max_concurrent_requests=peak_concurrency(out), rtfx=0.0)
    values = {"ttft": out.ttft_s, "tpot": out.tpot_s, "itl": out.itl_s, "e2el": out.latency_s}
    if a["max_concurrency"] is not None:
        values["client_queue_time"] = out.send_s - out.release_s
        if a["request_rate"] < math.inf:
            values["e2el_including_client_queue"] = out.latency_s + out.send_s - out.release_s
    for name in VLLM_HEADERS:
        if name not in proto.report["percentile_metrics"] or name not in values:
            continue
        x = _ms(values[name]) if len(values[name]) else np.zeros(1)
        res[f"mean_{name}_ms"], res[f"median_{name}_ms"] = float(np.mean(x)), float(np.median(x))
        res[f"std_{name}_ms"] = float(np.std(x))
        for p in proto.report["percentiles"]:
            res[f"p{_p_word(p)}_{name}_ms"] = float(np.percentile(x, p))
    return res


def vllm_text(proto: Protocol, res: dict) -> str:
    """The block vLLM prints (benchmark(): "Serving Benchmark Result")."""
    lines = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="=")]

    def row(label, value, fmt="{:<10}"):
        lines.append("{:<40} ".format(label) + (fmt.format(value) if value is not None else "{:<10}".format("n/a")))
    row("Successful requests:", res["completed"])
    if "failed" in res:
        row("Failed requests:", res["failed"])
    if res["max_concurrency"] is not None:
        row("Maximum request concurrency:", res["max_concurrency"])
    if res["request_rate"] != "inf":
        row("Request rate configured (RPS):", res["request_rate"], "{:<10.2f}")
    row("Benchmark duration (s):", res["duration"], "{:<10.2f}")
    row("Total input tokens:", res["total_input_tokens"])
    row("Total generated tokens:", res["total_output_tokens"])
    row("Request throughput (req/s):", res["request_throughput"], "{:<10.2f}")
    if res["request_goodput"] is not None:
        row("Request goodput (req/s):", res["request_goodput"], "{:<10.2f}")
    row("Output token throughput (tok/s):", res["output_throughput"], "{:<10.2f}")
    if "max_concurrent_requests" in res:
        row("Peak output token throughput (tok/s):", res["max_output_tokens_per_s"], "{:<10.2f}")
        row("Peak concurrent requests:", res["max_concurrent_requests"], "{:<10.2f}")
    row("Total token throughput (tok/s):", res["total_token_throughput"], "{:<10.2f}")
    for name, (short, header) in VLLM_HEADERS.items():
        if f"mean_{name}_ms" not in res:
            continue
        lines.append("{s:{c}^{n}}".format(s=header, n=50, c="-"))
        row(f"Mean {short} (ms):", res[f"mean_{name}_ms"], "{:<10.2f}")
        row(f"Median {short} (ms):", res[f"median_{name}_ms"], "{:<10.2f}")
        for p in proto.report["percentiles"]:
            row(f"P{_p_word(p)} {short} (ms):", res[f"p{_p_word(p)}_{name}_ms"], "{:<10.2f}")
    lines.append("=" * 50)
    return "\n".join(lines)


def sglang_result(proto: Protocol, out: Outcome) -> dict:
    """The JSONL line ``sglang.bench_serving`` appends (benchmark() ``result``), predicted."""
    a, D = proto.args, duration(out)
    tot_in, tot_out = int(out.inputs.sum()), int(out.outputs.sum())
    e2e, ttft, tpot = _ms(out.latency_s), _ms(out.ttft_s), _ms(out.tpot_s) if out.tpot_s.size else np.zeros(1)
    itl = _ms(out.itl_s) if out.itl_s.size else np.zeros(1)
    res = {k: a[k] for k in ("backend", "dataset_name", "request_rate", "max_concurrency", "sharegpt_output_len",
                             "random_input_len", "random_output_len", "random_range_ratio")}
    res.update(duration=D, completed=int(out.outputs.size), total_input_tokens=tot_in, total_output_tokens=tot_out,
               total_output_tokens_retokenized=tot_out, request_throughput=out.outputs.size / D,
               input_throughput=tot_in / D, output_throughput=tot_out / D)
    for name, x in (("e2e_latency", e2e), ("ttft", ttft), ("tpot", tpot)):
        res.update({f"mean_{name}_ms": float(np.mean(x)), f"median_{name}_ms": float(np.median(x)),
                    f"std_{name}_ms": float(np.std(x)), f"p99_{name}_ms": float(np.percentile(x, 99))})
    res.update(mean_itl_ms=float(np.mean(itl)), median_itl_ms=float(np.median(itl)), std_itl_ms=float(np.std(itl)),
               p95_itl_ms=float(np.percentile(itl, 95)), p99_itl_ms=float(np.percentile(itl, 99)),
               concurrency=float(out.latency_s.sum() / D), accept_length=None)
    return res


def sglang_text(res: dict, out: Outcome) -> str:
    """The block SGLang prints (benchmark(): "Serving Benchmark Result"); its total token throughput and max
    ITL are printed, not saved."""
    f = "{:<40} {:<10.2f}".format
    total = (res["total_input_tokens"] + res["total_output_tokens"]) / res["duration"]
    max_itl = float(np.max(_ms(out.itl_s))) if out.itl_s.size else 0.0
    lines = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
             "{:<40} {:<10}".format("Backend:", res["backend"]),
             "{:<40} {:<10}".format("Traffic request rate:", res["request_rate"]),
             "{:<40} {:<10}".format("Max request concurrency:", res["max_concurrency"] or "not set"),
             "{:<40} {:<10}".format("Successful requests:", res["completed"]),
             f("Benchmark duration (s):", res["duration"]),
             "{:<40} {:<10}".format("Total input tokens:", res["total_input_tokens"]),
             "{:<40} {:<10}".format("Total generated tokens:", res["total_output_tokens"]),
             "{:<40} {:<10}".format("Total generated tokens (retokenized):", res["total_output_tokens_retokenized"]),
             f("Request throughput (req/s):", res["request_throughput"]),
             f("Input token throughput (tok/s):", res["input_throughput"]),
             f("Output token throughput (tok/s):", res["output_throughput"]),
             f("Total token throughput (tok/s):", total),
             f("Concurrency:", res["concurrency"]),
             "{s:{c}^{n}}".format(s="End-to-End Latency", n=50, c="-"),
             f("Mean E2E Latency (ms):", res["mean_e2e_latency_ms"]),
             f("Median E2E Latency (ms):", res["median_e2e_latency_ms"]),
             "{s:{c}^{n}}".format(s="Time to First Token", n=50, c="-"),
             f("Mean TTFT (ms):", res["mean_ttft_ms"]), f("Median TTFT (ms):", res["median_ttft_ms"]),
             f("P99 TTFT (ms):", res["p99_ttft_ms"]),
             "{s:{c}^{n}}".format(s="Inter-Token Latency", n=50, c="-"),
             f("Mean ITL (ms):", res["mean_itl_ms"]), f("Median ITL (ms):", res["median_itl_ms"]),
             f("P95 ITL (ms):", res["p95_itl_ms"]), f("P99 ITL (ms):", res["p99_itl_ms"]),
             f("Max ITL (ms):", max_itl), "=" * 50]
    return "\n".join(lines)


def _genai_stats(x, unit: str) -> dict:
    x = np.asarray(x, dtype=float)
    d = {"unit": unit, "avg": float(np.mean(x))}
    d.update({f"p{p}": float(np.percentile(x, p)) for p in GENAI_PCTS})
    d.update(min=float(np.min(x)), max=float(np.max(x)), std=float(np.std(x)))
    return d


def genai_result(proto: Protocol, out: Outcome) -> dict:
    """profile_export_genai_perf.json (the stats dict and its input_config), predicted."""
    D = float(out.finish_s.max() - out.send_s.min())
    lat, n = out.latency_s, out.outputs
    streaming = proto.report["streaming"]
    res = {"time_to_first_token": _genai_stats(_ms(out.ttft_s if streaming else lat), "ms"),
           "request_latency": _genai_stats(_ms(lat), "ms")}
    if streaming:
        keep = n > 1
        itl = (lat[keep] - out.ttft_s[keep]) / (n[keep] - 1)
        if itl.size:
            res["inter_token_latency"] = _genai_stats(_ms(itl), "ms")
            res["output_token_throughput_per_user"] = _genai_stats(1.0 / itl, "tokens/sec/user")
    res["output_sequence_length"] = _genai_stats(n, "tokens")
    res["input_sequence_length"] = _genai_stats(out.inputs, "tokens")
    res["output_token_throughput"] = {"unit": "tokens/sec", "avg": float(n.sum() / D)}
    res["request_throughput"] = {"unit": "requests/sec", "avg": float(n.size / D)}
    res["request_count"] = {"unit": "count", "avg": float(n.size)}  # statistics.py: the mean of [count]
    res["input_config"] = dict(proto.args)
    return res


def genai_text(proto: Protocol, res: dict) -> str:
    """genai-perf's console table (console_exporter.py: request metrics, then system metrics avg only)."""
    rows = [("Statistic", *GENAI_COLUMNS)]
    streaming_only = ("time_to_first_token", "time_to_second_token", "inter_token_latency",
                      "output_token_throughput_per_user")
    for name, unit in GENAI_REQUEST:
        if name not in res or (not proto.report["streaming"] and name in streaming_only):
            continue
        label = f"{name.replace('_', ' ').title()} ({unit})"
        rows.append((label, *(f"{res[name][c]:,.2f}" for c in GENAI_COLUMNS)))
    for name, unit in GENAI_SYSTEM:
        label = f"{name.replace('_', ' ').title()} ({unit})"
        rows.append((label, f"{res[name]['avg']:,.2f}", *("N/A",) * (len(GENAI_COLUMNS) - 1)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    title = "NVIDIA GenAI-Perf | LLM Metrics"
    line = "  ".join(r.rjust(w) for r, w in zip(rows[0], widths))
    out = [title.center(len(line)), line, "-" * len(line)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows[1:]]
    return "\n".join(out)
