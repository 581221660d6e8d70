"""``trtllm-bench --model M throughput|latency ...``: TensorRT-LLM's offline benchmark, read as its click options read
it (data/bench.yaml ``load_tools.trtllm-throughput`` / ``trtllm-latency``: source version, defaults), its protocol
as a :class:`~inferbound.bench.load.Protocol`, its engine as a trtllm-serve command, and its report.

trtllm-bench launches the engine itself from its own flags (``--tp``, ``--pp``, ``--ep``, ``--max_batch_size``,
``--max_num_tokens``, ``--kv_cache_free_gpu_mem_fraction``), so the deployment is read from them
(:func:`serve_words`) and no ``--serve`` command is needed. Its requests come from a dataset file written by
``prepare_dataset.py token-norm-dist``; inferbound reads no file, so the dataset is described inline with that
tool's own options: ``--num-requests N --input-mean L --output-mean O`` (``--input-stdev``/``--output-stdev`` 0 or
absent: fixed lengths L and O); otherwise one line says what to give.

Protocol (benchmark/throughput.py, low_latency.py, utils/asynchronous.py):
- every request is enqueued at once (``enqueue_messages``); ``--concurrency`` C > 0 is an asyncio semaphore, the
  default −1 of ``throughput`` none (all requests in flight at once); ``latency`` runs C = 1 (its default) with
  max_batch_size 1, chunked context off and streaming on;
- measured requests: min(``--num_requests``, dataset size), 0 meaning the whole dataset;
- ``--warmup`` W (default 2) requests drawn from the dataset (``generate_warmup_dataset``: random.choices, the same
  lengths here) run first under the same concurrency and are not measured;
- EOS: ``throughput`` sends ``end_id = --eos_id`` (default −1, EOS disabled); ``latency`` ignores EOS without
  speculative decoding: outputs run to their length.
- Engine limits: without ``--max_batch_size``/``--max_num_tokens`` trtllm-bench derives them from the dataset
  (bench/build/tuning.py), as workloads/max_throughput.bench_limits does (offline runtime), with chunked context
  as the profile's trtllm_bench.chunked_context (data/engines.yaml: default on in newer throughput.py, whose
  ``--enable_chunked_context/--disable_chunked_context`` both read here; ``--config`` is the YAML's alias).

Report (dataclasses/reporting.py ReportUtility.get_statistics_dict / report_statistics; statistics.py): per request,
start s (inside the semaphore), first token f, end e, N outputs: latency e − s, TTFT f − s, TPOT (e − f)/(N − 1),
generation throughput (N − 1)/(e − f), per-user output throughput [w/ ctx] N/(e − s); total latency = max e − min s;
request throughput n/total, output ΣN/total, total (Σ input + ΣN)/total, per GPU output/world size. PercentileStats:
sorted values at index int(n·q) for p50, p90, p95, p99, with minimum, maximum, average; ``dataset`` is
DatasetMetadata of the replayed lengths. Average concurrency: Σ latency/total latency (Little's law; the newer
source's statistics.py was not read: a note says so). Issue rate as the source computes it: ((last start − first
start) in ns / n) × 1e9.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..deploy.runtime import offline_runtime
from ..workloads.lengths import fixed
from ..workloads.max_throughput import bench_limits
from .argv import ToolParser, bench_data, check_count, parse, split, unknown_warning
from .load import Protocol
from .replay import Outcome
from .serve import positive_int

MODES = ("throughput", "latency")
PCT_KEYS = ("p50", "p90", "p95", "p99", "minimum", "maximum", "average")
SHOWN = ("minimum", "maximum", "average", "p50", "p90", "p95", "p99")
CONCURRENCY_NOTE = ("trtllm-bench avg_num_concurrent_requests taken as sum of request latencies / total latency "
                    "(Little's law; the definition in the newer statistics.py was not read)")
LIMITS_NOTE = ("trtllm-bench picks max_batch_size and max_num_tokens from the dataset when they are not given "
               "(bench/build/tuning.py); inferbound's reading of that heuristic is used: give --max_batch_size and "
               "--max_num_tokens to pin them")


def _cfg(mode: str) -> dict:
    return bench_data()["load_tools"][f"trtllm-{mode}"]


def _parser(mode: str) -> ToolParser:
    d = _cfg(mode)["defaults"]
    p = ToolParser(_cfg(mode)["label"], allow_abbrev=False)
    p.add_argument("-m", "--model")
    p.add_argument("--model_path")
    p.add_argument("--engine_dir")
    p.add_argument("--backend", default=d["backend"], choices=("pytorch", "tensorrt", "_autodeploy"))
    p.add_argument("--kv_cache_free_gpu_mem_fraction", type=float, default=d["kv_cache_free_gpu_mem_fraction"])
    p.add_argument("--max_seq_len", type=positive_int)
    p.add_argument("--dataset")
    p.add_argument("--num_requests", type=int, default=d["num_requests"])
    p.add_argument("--warmup", type=int, default=d["warmup"])
    p.add_argument("--tp", type=positive_int, default=d["tp"])
    p.add_argument("--pp", type=positive_int, default=d["pp"])
    p.add_argument("--ep", type=positive_int)
    p.add_argument("--beam_width", type=int, default=d["beam_width"])
    p.add_argument("--concurrency", type=int, default=d["concurrency"])
    p.add_argument("--modality")
    p.add_argument("--max_input_len", type=int)
    for flag in ("--report_json", "--iteration_log", "-w", "--workspace", "--log_level", "--revision"):
        p.add_argument(flag)
    if mode == "throughput":
        p.add_argument("--extra_llm_api_options", "--config")
        p.add_argument("--max_batch_size", type=positive_int)
        p.add_argument("--max_num_tokens", type=positive_int)
        p.add_argument("--eos_id", type=int, default=d["eos_id"])
        p.add_argument("--target_input_len", type=positive_int)
        p.add_argument("--target_output_len", type=positive_int)
        p.add_argument("--cluster_size", type=int)
        p.add_argument("--scheduler_policy", default=d["scheduler_policy"],
                       choices=("guaranteed_no_evict", "max_utilization"))
        for flag in ("--output_json", "--request_json"):
            p.add_argument(flag)
        p.add_argument("--streaming", action="store_true")
        # newer throughput.py: --enable_chunked_context/--disable_chunked_context (default True, data/engines.yaml
        # trtllm_bench.chunked_context); @000a01de: --enable_chunked_context only. Neither given: the profile's
        p.add_argument("--enable_chunked_context", dest="chunking", action="store_const", const=True)
        p.add_argument("--disable_chunked_context", dest="chunking", action="store_const", const=False)
    else:
        p.add_argument("--medusa_choices")
    # the dataset, as prepare_dataset.py token-norm-dist describes it (inline: inferbound reads no file)
    p.add_argument("--num-requests", dest="ds_num_requests", type=positive_int)
    p.add_argument("--input-mean", dest="ds_input_mean", type=positive_int)
    p.add_argument("--input-stdev", dest="ds_input_stdev", type=int)
    p.add_argument("--output-mean", dest="ds_output_mean", type=positive_int)
    p.add_argument("--output-stdev", dest="ds_output_stdev", type=int)
    p.add_argument("--random-seed", "--tokenizer", "--stdout", dest="ds_ignored", nargs="?")
    return p


def _dataset(label: str, ns) -> tuple[int, int, int]:
    """(dataset size, input length, output length) from the inline token-norm-dist options."""
    what = ("the dataset's prepare_dataset.py token-norm-dist options inline: --num-requests N --input-mean L "
            "--output-mean O (--input-stdev 0 --output-stdev 0)")
    if ns.ds_input_mean is None or ns.ds_output_mean is None:
        shown = f"--dataset {ns.dataset!r}" if ns.dataset else "no dataset"
        raise ValueError(f"{label}: {shown}: inferbound reads no dataset file; allowed: {what}")
    for name, v in (("--input-stdev", ns.ds_input_stdev), ("--output-stdev", ns.ds_output_stdev)):
        if v:
            raise ValueError(f"{label}: {name} {v} (normal lengths drawn by prepare_dataset.py are not replayed); "
                             f"allowed: 0 (fixed lengths)")
    size = ns.ds_num_requests or (ns.num_requests if ns.num_requests > 0 else None)
    if size is None:
        raise ValueError(f"{label}: the dataset's size is not given; allowed: --num-requests N (prepare_dataset.py) "
                         f"or --num_requests N (trtllm-bench)")
    return size, ns.ds_input_mean, ns.ds_output_mean


def parse_trtllm_bench(words: list[str]) -> Protocol:
    """``words`` after ``trtllm-bench``: the top-level options, then ``throughput`` or ``latency`` and its own."""
    modes = [w for w in words if w in MODES]
    if not modes:
        raise ValueError(f"trtllm-bench: no subcommand; allowed: {', '.join(MODES)} (build is not a benchmark)")
    mode = modes[0]
    i = words.index(mode)
    cfg = _cfg(mode)
    label = cfg["label"]
    ns, unknown = parse(_parser(mode), words[:i] + words[i + 1:])
    if not ns.model:
        raise ValueError(f"{label}: --model is required (trtllm-bench -m MODEL {mode} ...); allowed: a HF model id")
    if ns.beam_width != 1:
        raise ValueError(f"{label}: --beam_width {ns.beam_width} is not replayed; allowed: 1")
    if ns.modality:
        raise ValueError(f"{label}: --modality {ns.modality} is not replayed; allowed: text requests (no --modality)")
    if not 0 < ns.kv_cache_free_gpu_mem_fraction <= 1:
        raise ValueError(f"{label}: --kv_cache_free_gpu_mem_fraction {ns.kv_cache_free_gpu_mem_fraction}; allowed: "
                         f"a fraction in (0, 1]")
    size, L, O = _dataset(label, ns)
    n = check_count(label, "--num-requests/--num_requests",
                    min(ns.num_requests, size) if ns.num_requests > 0 else size)
    warm = check_count(label, "--warmup", max(ns.warmup, 0))
    cap = ns.concurrency if ns.concurrency > 0 else None
    streaming = True if mode == "latency" else bool(ns.streaming)
    ignore = True if mode == "latency" else ns.eos_id < 0
    notes = [] if ignore else [f"{label}: --eos_id {ns.eos_id} lets a request stop at EOS, which cannot be "
                               f"predicted: output lengths are taken as the requested maximum"]
    warnings = []
    if ns.backend == "tensorrt":
        warnings.append(f"{label}: --backend tensorrt (a prebuilt engine) is priced with the trtllm-serve profile of "
                        f"the PyTorch backend")
    if mode == "throughput" and ns.extra_llm_api_options:
        warnings.append(f"{label}: the options YAML {ns.extra_llm_api_options!r} is not read (its settings are not "
                        f"modelled)")
    serve = ["trtllm-serve", ns.model, "--tp_size", str(ns.tp), "--pp_size", str(ns.pp),
             "--kv_cache_free_gpu_memory_fraction", str(ns.kv_cache_free_gpu_mem_fraction)]
    if ns.ep:
        serve += ["--ep_size", str(ns.ep)]
    if mode == "latency":
        serve += ["--max_batch_size", "1"]
    else:
        serve += [w for flag, v in (("--max_batch_size", ns.max_batch_size), ("--max_num_tokens", ns.max_num_tokens))
                  if v for w in (flag, str(v))]
        if ns.max_batch_size is None or ns.max_num_tokens is None:
            notes.append(LIMITS_NOTE)
    if ns.max_seq_len:
        serve += ["--max_seq_len", str(ns.max_seq_len)]
    ins, outs = np.full(n, L, dtype=np.int64), np.full(n, O, dtype=np.int64)
    args = {"model": ns.model, "mode": mode, "num_requests": n, "concurrency": ns.concurrency, "warmup": warm,
            "tp": ns.tp, "pp": ns.pp, "ep": ns.ep, "backend": ns.backend, "serve": serve,
            "scheduler_policy": getattr(ns, "scheduler_policy", "guaranteed_no_evict"),
            "kv_fraction": ns.kv_cache_free_gpu_mem_fraction,
            "chunking": getattr(ns, "chunking", None)}
    return Protocol(f"trtllm-{mode}", ins, outs, np.zeros(n), 0.0, cap, ins[:1].repeat(warm), outs[:1].repeat(warm),
                    cap, math.inf, ignore, args, {"streaming": streaming}, notes + [CONCURRENCY_NOTE],
                    warnings + unknown_warning(label, unknown))


def serve_words(proto: Protocol) -> list[str]:
    """The trtllm-serve command equivalent to the engine trtllm-bench launches (its flags)."""
    return list(proto.args["serve"])


def runtime_for(dep, proto: Protocol):
    """The engine's settings as trtllm-bench runs it: the offline runtime with trtllm-bench's derived limits
    (throughput; its flags win where given) or batch 1 without chunking (latency, low_latency.py)."""
    rt = offline_runtime(dep)
    if proto.args["mode"] == "latency":
        return replace(rt, max_num_seqs=1, chunked_prefill=False)
    rt = bench_limits(dep, rt, fixed(float(proto.inputs.mean()), float(proto.outputs.mean())))
    chunking = proto.args["chunking"]  # None: bench_limits' (the profile's cited trtllm-bench default)
    return rt if chunking is None else replace(rt, chunked_prefill=chunking)


def percentiles(values) -> dict:
    """PercentileStats.from_iterable: sorted[int(n q)], minimum, maximum, average."""
    v = np.sort(np.asarray(values, dtype=float))
    n = v.size
    out = {k: float(v[int(n * q)]) for k, q in (("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99))}
    out.update(minimum=float(v[0]), maximum=float(v[-1]), average=float(v.sum() / n))
    return out


def trtllm_result(proto: Protocol, out: Outcome, dep, rt) -> dict:
    """get_statistics_dict of ReportUtility, predicted (module docstring); ``machine`` is None (no GPU queried)."""
    s, f, e, N = out.send_s, out.first_s, out.finish_s, out.outputs.astype(float)
    lat = e - s
    total = float(e.max() - s.min())
    n = int(N.size)
    world = dep.par.tp * dep.par.pp
    gen = N > 1
    tpot = np.where(gen, (e - f) / np.maximum(N - 1, 1), 0.0)
    gtps = np.where(gen, (N - 1) / np.maximum(e - f, 1e-12), 0.0)
    ms = lambda d: {k: v * 1e3 for k, v in d.items()}  # noqa: E731
    res = {"engine": {"model": proto.args["model"], "model_path": "None", "engine_dir": "None",
                      "version": rt.engine.split("@")[-1], "backend": "Pytorch", "dtype": dep.dtypes.act,
                      "kv_cache_dtype": dep.dtypes.kv, "quantization": None if dep.dtypes.weight in ("bf16", "fp16")
                      else dep.dtypes.weight},
           "machine": None,
           "world_info": {"tp_size": dep.par.tp, "pp_size": dep.par.pp, "ep_size": dep.par.ep, "world_size": world,
                          "max_batch_size": rt.max_num_seqs, "max_num_tokens": rt.token_budget,
                          "scheduling_policy": proto.args["scheduler_policy"].upper(),
                          "kv_cache_percentage": proto.args["kv_fraction"],
                          "issue_rate": float((s.max() - s.min()) * 1e9 / n * 1e9)},
           "request_info": {"num_requests": n, "avg_num_concurrent_requests": float(lat.sum() / total),
                            "avg_input_length": float(out.inputs.sum() / n), "avg_output_length": float(N.sum() / n)},
           "performance": {"total_latency_ms": total * 1e3, "avg_request_latency_ms": float(lat.mean() * 1e3),
                           "request_throughput_req_s": n / total,
                           "system_output_throughput_tok_s": float(N.sum() / total),
                           "system_total_throughput_tok_s": float((out.inputs.sum() + N.sum()) / total),
                           "output_throughput_per_user_tok_s": float(np.mean(N / lat)),
                           "output_throughput_per_gpu_tok_s": float(N.sum() / total / world),
                           "request_latency_percentiles_ms": ms(percentiles(lat))}}
    res["dataset"] = _dataset_metadata(out.inputs, N)
    if proto.report["streaming"]:
        res["streaming_metrics"] = {"token_output_speed_tok_s": float(gtps.mean()),
                                    "avg_ttft_ms": float((f - s).mean() * 1e3), "avg_tpot_ms": float(tpot.mean() * 1e3),
                                    "tpot_percentiles": ms(percentiles(tpot)),
                                    "ttft_percentiles": ms(percentiles(f - s)),
                                    "gen_tps_percentiles": percentiles(gtps)}
    return res


def _dataset_metadata(inputs, outputs) -> dict:
    """DatasetMetadata.model_dump (dataclasses/general.py @0f593773): the replayed requests' lengths."""
    isl, osl = percentiles(inputs), percentiles(outputs)
    seq = percentiles(np.asarray(inputs, dtype=float) + np.asarray(outputs, dtype=float))
    return {"isl_stats": isl, "osl_stats": osl, "seq_len_stats": seq, "num_requests": int(np.size(inputs)),
            "dataset_path": None, "max_isl": int(isl["maximum"]), "max_osl": int(osl["maximum"]),
            "max_sequence_length": int(seq["maximum"]), "avg_isl": int(isl["average"]),
            "avg_osl": int(osl["average"]), "avg_sequence_length": int(seq["average"])}


_BAR = "=" * 59


def _head(title: str) -> str:
    return f"{_BAR}\n= {title}\n{_BAR}\n"


def trtllm_text(res: dict) -> str:
    """report_statistics' printed report (PyTorch backend sections; machine: "No GPU info available")."""
    e, w, r, p = res["engine"], res["world_info"], res["request_info"], res["performance"]
    kv = f"{w['kv_cache_percentage'] * 100.0:.2f}%"
    t = ("\n\n" + _head("PYTORCH BACKEND") + f"Model:\t\t\t{e['model']}\nModel Path:\t\t{e['model_path']}\n"
         f"TensorRT LLM Version:\t{e['version']}\nDtype:\t\t\t{e['dtype']}\nKV Cache Dtype:\t\t{e['kv_cache_dtype']}\n"
         f"Quantization:\t\t{e['quantization']}\n\n")
    t += _head("MACHINE DETAILS ") + "No GPU info available\n\n"
    t += (_head("WORLD + RUNTIME INFORMATION ") + f"TP Size:                {w['tp_size']}\n"
          f"PP Size:                {w['pp_size']}\nEP Size:                {w['ep_size']}\n"
          f"Max Runtime Batch Size: {w['max_batch_size']}\nMax Runtime Tokens:     {w['max_num_tokens']}\n"
          f"Scheduling Policy:      {w['scheduling_policy']}\nKV Memory Percentage:   {kv}\n"
          f"Issue Rate (req/sec):   {w['issue_rate']:.4E}\n\n")
    t += (_head("REQUEST DETAILS ") + f"Number of requests:             {r['num_requests']}\n"
          f"Number of concurrent requests:  {r['avg_num_concurrent_requests']:.4f}\n"
          f"Average Input Length (tokens):  {r['avg_input_length']:.4f}\n"
          f"Average Output Length (tokens): {r['avg_output_length']:.4f}\n")
    t += _head("PERFORMANCE OVERVIEW ")
    t += (f"Request Throughput (req/sec):                     {p['request_throughput_req_s']:.4f}\n"
          f"Total Output Throughput (tokens/sec):             {p['system_output_throughput_tok_s']:.4f}\n"
          f"Total Token Throughput (tokens/sec):              {p['system_total_throughput_tok_s']:.4f}\n"
          f"Total Latency (ms):                               {p['total_latency_ms']:.4f}\n"
          f"Average request latency (ms):                     {p['avg_request_latency_ms']:.4f}\n"
          f"Per User Output Throughput [w/ ctx] (tps/user):   {p['output_throughput_per_user_tok_s']:.4f}\n"
          f"Per GPU Output Throughput (tps/gpu):              {p['output_throughput_per_gpu_tok_s']:.4f}\n")
    s = res.get("streaming_metrics")
    if s:
        def rows(tag, d):
            return "\n".join(f"[{tag}] {k.upper():<7}: {d[k]:.4f}" for k in SHOWN)
        t += (f"Average time-to-first-token [TTFT] (ms):          {s['avg_ttft_ms']:.4f}\n"
              f"Average time-per-output-token [TPOT] (ms):        {s['avg_tpot_ms']:.4f}\n"
              f"Per User Output Speed (tps/user):                 {s['token_output_speed_tok_s']:.4f}\n"
              "\n-- Per-Request Time-per-Output-Token [TPOT] Breakdown (ms)\n\n"
              f"{rows('TPOT', s['tpot_percentiles'])}\n"
              "\n-- Per-Request Time-to-First-Token [TTFT] Breakdown (ms) \n\n"
              f"{rows('TTFT', s['ttft_percentiles'])}\n"
              "\n-- Per-Request Generation Throughput [GTPS] Breakdown (tps/user)\n\n"
              f"{rows('GTPS', s['gen_tps_percentiles'])}\n")
    lat = p["request_latency_percentiles_ms"]
    t += "\n-- Request Latency Breakdown (ms) -----------------------\n\n" + \
        "\n".join(f"[Latency] {k.upper():<7}: {lat[k]:.4f}" for k in lat) + "\n"
    return t + _BAR


def is_trtllm(words: list[str]) -> bool:
    return bool(words) and words[0] == "trtllm-bench"


__all__ = ["parse_trtllm_bench", "serve_words", "runtime_for", "trtllm_result", "trtllm_text", "split"]
