"""Predict every measured row with the scenario it states; rows that cannot be predicted say why.

One prediction per distinct setup (all metrics of a run share it). Blank dtypes: weights as the checkpoint
ships them (checkpoint.py), activations as 16-bit weights, else checkpoint.py's rule (fp8/fp4 weights
at their own format on GPUs with those tensor cores unless the checkpoint is weight-only, else bf16),
the KV cache as the activations. ``num_gpus`` beyond tp·pp is data parallel. The engine profile
(data/engines.yaml): the row's ``engine`` (+ ``engine_version``) column, else the ``framework`` text
(+ ``engine_version``) through the ``frameworks`` rules: its memory rule, block size, token budget,
caps, reservation and scheduling, and its departures from the model (sliding windows). Stated engine
settings (``max_num_seqs``, ``max_num_batched_tokens``, ``gpu_memory_utilization``) override the
profile's defaults. Lengths: the row's means with their spread (``input_len_std``/``output_len_std``), or
the ``dataset`` profile's published means (workloads/lengths.py).

Engine features: ``speculative`` as ``METHOD:K`` (``mtp:3``, ``eagle:4``, ``ngram:3``) or
``draft:MODEL:K`` runs speculative decoding with k = K drafted tokens (speculative.py; an MTP row without
a stated acceptance takes data/features.yaml's, noted); ``kv_offload=on`` a host KV tier (offload.py).

Serving rows: a rate (open loop, Poisson) runs through the simulator (sim/), a concurrency (closed loop)
through the analytic steady state (workloads/serving.py, whose random-arrival assumption matches
desynchronized benchmark clients; docs/serving.md); percentiles come from the same predictor. An open-loop
row whose lengths are several classes (a dataset profile's measured classes) draws each request's lengths
from them (mix_requests.py), so its p50/p90/p99 are over that distribution; a profile without a cited spread
(ShareGPT's vLLM filter) stays one class at its means. The row's reason names the distribution used.

Max-throughput rows: the analytic operating point and its finite run (workloads/max_throughput.py); a row that
states a run of at most offline_replay.REPLAY_MAX_REQUESTS requests over several length classes is replayed in
the simulator with every prompt at t = 0, its throughput prompts / makespan (offline_replay.py, as vLLM's
benchmark_throughput computes it), and its reason says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


from ..deploy.deployment import Deployment, make_deployment
from ..deploy.engines import framework_resolution, framework_rule, get_engine, resolve_version
from ..workloads.static import estimate
from ..step import contract as step
from ..deploy.memory import weight_bytes_per_gpu
from ..workloads import max_throughput
from ..workloads.lengths import Mix, dataset_profile, from_classes, from_dataset, from_row_moments
from .dataset import PERCENTILES, Row
from .mix_requests import describe_lengths, mix_requests
from .offline_replay import REPLAY_MAX_REQUESTS, replay_offline, replays
from .replayed import predict_replayed
from ..sim import simulate
from ..workloads.serving import serving


@dataclass
class Prediction:
    row: Row
    predicted: float | None
    reason: str = ""  # why not covered; a covered row: the notes behind its prediction (= note)
    bound: str | None = None  # what binds the phase behind this metric (prefill for TTFT, else decode)
    note: str = ""  # a guess the user should know about (e.g. an unknown framework: the default engine)

    @property
    def covered(self) -> bool:
        return self.predicted is not None

    @property
    def error(self) -> float | None:
        """Signed relative error (predicted − measured) / measured."""
        return None if self.predicted is None else (self.predicted - self.row.value) / self.row.value


def engine_of(framework: str, version: str | None = None) -> str | None:
    """The engine profile (name@version) a row's ``framework`` text names (engines.yaml ``frameworks``),
    at ``version`` (the row's ``engine_version``) if given, else the version written right after the
    engine's name (deploy/engines.py). Blank text or text no rule matches: None, the default engine
    (predict_rows says so in the row's reason). A version outside every profile of the engine named:
    ValueError (the row is not covered, and its reason says why)."""
    if not framework.strip() or framework_rule(framework) is None:
        return None
    return framework_resolution(framework, version)[1].profile.key


def row_engine_note(row: Row) -> str:
    """The row's engine substitution, '' when none: the version it names has no profile of its own and the
    nearest one is used (deploy/engines.resolve_version), stated in the row's reason."""
    if row.engine:
        return resolve_version(row.engine, row.engine_version).note or ""
    if not row.framework.strip() or framework_rule(row.framework) is None:
        return ""
    return framework_resolution(row.framework, row.engine_version)[1].note or ""


def row_engine(row: Row) -> str | None:
    """name@version of the row's engine: the ``engine`` column (with ``engine_version``), else its text."""
    if row.engine:
        p = get_engine(row.engine, row.engine_version)
        return f"{p.name}@{p.version}"
    return engine_of(row.framework, row.engine_version)


def row_engine_options(row: Row) -> dict:
    """The engine settings a row states, as runtime overrides (runtime.resolve)."""
    out = {}
    if row.max_num_seqs is not None:
        out["max_num_seqs"] = row.max_num_seqs
    if row.max_num_batched_tokens is not None:
        out["token_budget"] = row.max_num_batched_tokens
    if row.gpu_memory_utilization is not None:
        out["memory_fraction"] = row.gpu_memory_utilization
    if row.prefix_caching is not None:
        out["prefix_caching"] = row.prefix_caching
    if row.speculative:
        out.update(row_speculative(row.speculative))
    if row.kv_offload:
        out["kv_offload"] = "host"
    if row.scheduler_steps is not None:
        out["scheduler_steps"] = row.scheduler_steps
    if row.cuda_graphs is not None:
        out["cuda_graphs"] = "on" if row.cuda_graphs else "off"
    if row.stream_interval is not None:
        out["stream_interval"] = row.stream_interval
    if row.recv_interval is not None:
        out["recv_interval"] = row.recv_interval
    return out


def row_speculative(text: str) -> dict:
    """Runtime overrides of a row's ``speculative`` column: ``METHOD:K`` or ``draft:MODEL:K``."""
    parts = [p.strip() for p in str(text).split(":")]
    if len(parts) >= 2 and parts[-1].isdigit():
        method, k = ":".join(parts[:-1]), int(parts[-1])
    else:
        method, k = ":".join(parts), None
    out = {"speculative": method}
    if k is not None:
        out["spec_tokens"] = k
    return out


def row_lengths(row: Row) -> Mix:
    """The row's request lengths: its dataset profile (stated means take the profile's place), else its
    means with their spread. A profile whose classes measure the prompts only (``output_std`` null: every class
    at the output mean, its spread unpublished, e.g. mlperf_llama2_70b_openorca) keeps its prompt classes when
    the row states only its output mean, which then replaces the profile's in every class (noted)."""
    if row.dataset is not None:
        name, p = dataset_profile(row.dataset)
        if p.get("classes") and p.get("output_std") is None and row.input_len is None and row.output_len is not None:
            mix = from_classes(name, p["classes"])
            note = (f"dataset {name}: its {len(mix.weights)} measured prompt classes; the spread of its outputs is "
                    f"not published, so every class is at the row's output mean {row.output_len:g}",)
            return Mix(mix.weights, mix.inputs, tuple(float(row.output_len) for _ in mix.outputs), name, note)
        return from_dataset(row.dataset, row.input_len, row.output_len)
    return from_row_moments(row.input_len, row.output_len, row.input_len_std, row.output_len_std)


def deployment_for(row: Row, calibration=None, gpu_files=None, default_engine: str | None = None) -> Deployment:
    weight = row.weight_dtype  # blank: as the checkpoint ships (checkpoint.py)
    act = row.act_dtype or (weight if weight in ("bf16", "fp16") else None)  # None: checkpoint.py's rule
    if row.num_gpus % (row.tp * row.pp):
        raise ValueError(f"num_gpus={row.num_gpus} is not a multiple of tp*pp={row.tp * row.pp}")
    dp = row.num_gpus // (row.tp * row.pp)
    tp, att_dp = row.tp, bool(row.attention_dp) and row.tp * dp > 1
    if att_dp:  # the engine's tp_size counts the attention-DP ranks (dataset.py): attention tp 1 over them all
        tp, dp = 1, row.tp * dp
    dep = make_deployment(model=row.model, gpu=row.gpu, num_gpus=row.num_gpus, tp=tp, pp=row.pp,
                          ep=row.ep or 1, dp=dp, attention_dp=att_dp,
                          nodes=max(1, -(-row.num_gpus // 8)) if row.num_gpus > 8 else 1,
                          weight_dtype=weight, act_dtype=act, kv_dtype=row.kv_dtype, gpu_files=gpu_files,
                          calibration=calibration, engine=row_engine(row) or default_engine,
                          engine_options=row_engine_options(row))
    return dep


def _integer_lengths(row: Row) -> tuple[int, int]:
    """A static batch's lengths (every sequence alike): the row's, which must be whole tokens."""
    i, o = row.input_len, row.output_len
    if i is None or o is None or i != int(i) or o != int(o):
        raise ValueError(f"input_len={i}, output_len={o}: a static batch needs whole token counts")
    return int(i), int(o)


def predict_static(dep: Deployment, row: Row) -> dict[str, float]:
    """Metrics of a static batch run (TensorRT-LLM v0.9 tables, gpt-fast, llama.cpp, AMD latency tables)."""
    i, o = _integer_lengths(row)
    e = estimate(dep, batch=row.batch_size, input_len=i, output_len=o)
    replicas = dep.par.replicas
    return {
        "output_tok_s": e.output_tok_s, "output_tok_s_per_gpu": e.output_tok_s_per_gpu,
        "total_tok_s": e.batch * (e.input_len + e.output_len) / e.e2e_s * replicas,
        "requests_per_s": e.batch / e.e2e_s * replicas, "ttft_ms": e.ttft_s * 1e3, "itl_ms": e.tpot_s * 1e3,
        "tpot_ms": e.tpot_s * 1e3, "e2e_ms": e.e2e_s * 1e3,
        "tok_s_per_user": e.tok_s_per_user, "prefill_tok_s": e.prefill_tok_s,
        "achieved_mem_bw_gbps": weight_bytes_per_gpu(dep.model, dep.dtypes, dep.par) / e.tpot_s / 1e9,
        "_bound_prefill": e.prefill.bound, "_bound_decode": e.decode.bound,
        # a static batch is uniform: every request has the same TTFT, token gaps and end-to-end latency
        **{f"{m}_{p}": v for m, v in (("ttft_ms", e.ttft_s * 1e3), ("itl_ms", e.tpot_s * 1e3),
                                      ("tpot_ms", e.tpot_s * 1e3), ("e2e_ms", e.e2e_s * 1e3)) for p in PERCENTILES},
    }


#: requests of a max_throughput row whose count is blank ("thousands are issued at once"); a row that states
#: a larger concurrency issues that many (max_throughput: a stated concurrency wins over the request count)
DEFAULT_OFFLINE_REQUESTS = 3000


def predict_max_throughput(dep: Deployment, row: Row) -> dict[str, float]:
    """Metrics of the offline max-throughput operating point (workloads/max_throughput.py); a row's
    concurrency caps the requests in flight (``max_throughput(concurrency=)``). A stated run of at most
    offline_replay.REPLAY_MAX_REQUESTS requests over several length classes is replayed in the simulator, all
    prompts at t = 0 (offline_replay.py: throughput = prompts / makespan, as vLLM's benchmark_throughput)."""
    mix = row_lengths(row)
    if replays(mix, row.num_requests):
        return replay_offline(dep, mix, row.num_requests, row.concurrency)
    n = row.num_requests or DEFAULT_OFFLINE_REQUESTS
    r = max_throughput(dep, num_requests=n, lengths=mix, concurrency=row.concurrency)
    n = r.num_requests
    why = ("its lengths are one class, no spread cited" if len(mix.weights) == 1 else
           f"{row.num_requests:,} requests > {REPLAY_MAX_REQUESTS:,}") if row.num_requests is not None else ""
    note = "; ".join((*mix.notes, *([f"not replayed ({why}): the analytic run of {n:,} requests "
                                     f"(max_throughput.finite_run)"] if why else [])))
    # mean request latency: with a concurrency cap C, Little's law in service, C/X; all n requests issued
    # at t = 0 and none capped, the k-th completes near k/X, a mean of n/(2X)
    in_flight = r.concurrency * dep.par.replicas
    e2e_s = in_flight / r.requests_per_s if row.concurrency is not None else n / (2 * r.requests_per_s)
    run = r.run_output_tok_s  # a benchmark reports its whole run (fill and drain included)
    return {"output_tok_s": run, "output_tok_s_per_gpu": run / dep.num_gpus,
            "total_tok_s": run * (r.input_len + r.output_len) / r.output_len, "requests_per_s": run / r.output_len,
            "tok_s_per_user": r.tok_s_per_user, "itl_ms": r.step_time_s * 1e3, "tpot_ms": r.step_time_s * 1e3,
            "e2e_ms": e2e_s * 1e3, "_bound_decode": r.bound, "_note": note}


def _front_end_ms(dep: Deployment) -> float:
    """The calibration's ``request_overhead_s`` (HTTP front end, tokenizer: outside the engine's steps)."""
    return (dep.calibration.request_overhead_s if dep.calibration is not None else 0.0) * 1e3


def predict_serving(dep: Deployment, row: Row) -> dict[str, float]:
    """Metrics of a serving run. A rate: Poisson arrivals through the simulator (sim/), seed 0, lengths drawn
    from the row's spread or fixed at its means; a concurrency: the analytic closed-loop steady state
    (workloads/serving.py). Latencies are means over requests unless the metric names a percentile; the
    front end (``_front_end_ms``) is added to TTFT and E2E. A row with ``bench_command``: that benchmark's
    protocol replayed (replayed.py)."""
    if row.bench_command is not None:
        return predict_replayed(dep, row.bench_command, row.input_len, row.output_len, _front_end_ms(dep))
    mix = row_lengths(row)
    if row.concurrency is not None:
        return _closed_loop(dep, row, mix)
    n = row.num_requests or DEFAULT_OFFLINE_REQUESTS
    i, o = int(round(mix.mean_input)), int(round(mix.mean_output))
    dists, trace = {}, None
    if row.dataset is None and (row.input_len_std or row.output_len_std):
        dists = {"input_dist": f"normal:{row.input_len}:{row.input_len_std or 0}",
                 "output_dist": f"normal:{row.output_len}:{row.output_len_std or 0}"}
        lengths = (f"lengths: normal({row.input_len:g}, {row.input_len_std or 0:g}) in / normal({row.output_len:g}, "
                   f"{row.output_len_std or 0:g}) out per request: percentiles over that distribution")
    else:  # a dataset's classes: each request drawn from them (mix_requests.py); one class: every request alike
        trace = mix_requests(mix, row.request_rate, n, seed=0) if len(mix.weights) > 1 else None
        lengths = "; ".join((*mix.notes, describe_lengths(mix, row.dataset)))
    r = simulate(dep, rate=row.request_rate, requests=n, input_len=i, output_len=o, seed=0, trace=trace,
                 **dists).summary
    bound = step.decode(dep, max(1.0, r["mean_running"]), mix.mean_input + mix.mean_output / 2).bound
    fe = _front_end_ms(dep)
    out = {"output_tok_s": r["output_tok_s"], "output_tok_s_per_gpu": r["output_tok_s_per_gpu"],
           "total_tok_s": r["total_tok_s"], "requests_per_s": r["requests_per_s"],
           "tok_s_per_user": 1e3 / r["tpot_ms_mean"], "_bound_decode": str(bound), "_bound_prefill": "compute",
           "_note": lengths}
    for metric, key, shift in (("ttft_ms", "ttft", fe), ("itl_ms", "itl", 0.0), ("tpot_ms", "tpot", 0.0),
                               ("e2e_ms", "e2e", fe)):
        out[metric] = r[f"{key}_ms_mean"] + shift
        for p in PERCENTILES:
            if r.get(f"{key}_ms_{p}") is not None:
                out[f"{metric}_{p}"] = float(r[f"{key}_ms_{p}"]) + shift
    return out


def _closed_loop(dep: Deployment, row: Row, mix: Mix) -> dict[str, float]:
    s = serving(dep, concurrency=row.concurrency, lengths=mix, requests=row.num_requests)  # the row's run, if stated
    fe = _front_end_ms(dep)
    out = {"output_tok_s": s.output_tok_s, "output_tok_s_per_gpu": s.output_tok_s_per_gpu,
           "total_tok_s": s.requests_per_s * (s.input_len + s.output_len), "requests_per_s": s.requests_per_s,
           "tok_s_per_user": s.tok_s_per_user, "itl_ms": s.itl_s * 1e3, "tpot_ms": s.tpot_s * 1e3,
           "_bound_decode": s.bound, "_bound_prefill": "compute"}
    for metric, stats, shift in (("ttft_ms", s.ttft_s, fe), ("e2e_ms", s.e2e_s, fe)):
        out[metric] = stats["mean"] * 1e3 + shift
        for p in PERCENTILES:
            out[f"{metric}_{p}"] = stats[p] * 1e3 + shift
    return out


#: scenario -> function(deployment, row) -> {metric: value}
PREDICTORS: dict[str, Callable[[Deployment, Row], dict[str, float]]] = {
    "static_batch": predict_static, "max_throughput": predict_max_throughput, "serving": predict_serving}


def predict_rows(rows: list[Row], calibration=None, progress=None, gpu_files=None,
                 engine: str | None = None) -> list[Prediction]:
    """Predictions for every row, in input order; ``progress(n_done, n_total)`` is called per setup.
    ``engine``: the profile of rows whose ``engine``/``framework`` names none (None: the default engine)."""
    by_setup: dict[tuple, list[Row]] = {}
    for r in rows:
        by_setup.setdefault(r.setup_key, []).append(r)
    out: dict[str, Prediction] = {}
    for i, group in enumerate(by_setup.values()):
        first = group[0]
        try:
            predictor = PREDICTORS.get(first.scenario)
            if predictor is None:
                raise ValueError(f"scenario={first.scenario!r} has no predictor")
            dep = deployment_for(first, calibration, gpu_files, engine)
            fallback = "the given" if engine else "the default"
            note = row_engine_note(first) if first.engine or not first.framework.strip() or row_engine(first) else \
                f"framework={first.framework!r} names no engine profile: predicted with {fallback} {dep.engine}"
            feature_notes = [n for n in dep.runtime.notes if " defaults to " in n]  # e.g. MTP's acceptance
            if feature_notes:
                note = "; ".join(x for x in (note, *feature_notes) if x)
            if first.dataset is None and first.dataset_text and not first.dataset_text.lower().startswith("random"):
                note = "; ".join(x for x in (note, f"dataset={first.dataset_text!r} is not a bundled profile: "
                                                   f"modelled at the stated lengths") if x)
            values = predictor(dep, first)
            note = "; ".join(x for x in (note, values.get("_note", "")) if x)  # e.g. the length distribution used
            for r in group:
                bound = values.get("_bound_prefill" if r.metric == "ttft_ms" else "_bound_decode")
                # a covered row's reason: the notes behind its prediction (engine fallback or substitution, ...)
                out[id(r)] = Prediction(r, float(values[r.metric]), note, bound=bound, note=note) \
                    if r.metric in values else Prediction(r, None, "; ".join(x for x in (
                        f"metric={r.metric!r} not predicted for scenario {r.scenario}", note) if x))
        except (ValueError, KeyError) as e:
            reason = e.args[0] if e.args else str(e)
            for r in group:
                out[id(r)] = Prediction(r, None, str(reason))
        if progress:
            progress(i + 1, len(by_setup))
    return [out[id(r)] for r in rows]
