"""Predict every measured row with the scenario it states; rows that cannot be predicted say why.

One prediction per distinct setup (all metrics of a run share it). Blank dtypes: weights as the checkpoint
ships them (checkpoint.py), activations as the weights when those are a compute format (else bf16),
the KV cache as the activations. ``num_gpus`` beyond tp·pp is data parallel. The row's ``framework``
text names the engine profile (data/engines.yaml ``frameworks``): its memory rule, block size, token
budget, caps, reservation and scheduling, and its departures from the model (sliding windows).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


from ..deployment import Deployment, make_deployment
from ..engines import engine_for_framework
from ..estimate import estimate
from .. import step
from ..memory import weight_bytes_per_gpu
from ..workloads import max_throughput
from .dataset import Row


@dataclass
class Prediction:
    row: Row
    predicted: float | None
    reason: str = ""  # why not covered
    bound: str | None = None  # what binds the phase behind this metric (prefill for TTFT, else decode)
    note: str = ""  # a guess the user should know about (e.g. an unknown framework: the default engine)

    @property
    def covered(self) -> bool:
        return self.predicted is not None

    @property
    def error(self) -> float | None:
        """Signed relative error (predicted − measured) / measured."""
        return None if self.predicted is None else (self.predicted - self.row.value) / self.row.value


def engine_of(framework: str) -> str | None:
    """The engine profile a row's ``framework`` names (engines.yaml ``frameworks``); blank or text no rule
    matches: the default engine (predict_rows notes it on the row)."""
    if not framework.strip():
        return None
    try:
        return "@".join(engine_for_framework(framework))
    except ValueError:
        return None


def deployment_for(row: Row, calibration=None, gpu_files=None) -> Deployment:
    weight = row.weight_dtype  # blank: as the checkpoint ships (checkpoint.py)
    act = row.act_dtype or (None if weight is None else (weight if weight in ("bf16", "fp16", "fp8") else "bf16"))
    if row.num_gpus % (row.tp * row.pp):
        raise ValueError(f"num_gpus={row.num_gpus} is not a multiple of tp*pp={row.tp * row.pp}")
    dp = row.num_gpus // (row.tp * row.pp)
    engine = engine_of(row.framework)
    dep = make_deployment(model=row.model, gpu=row.gpu, num_gpus=row.num_gpus, tp=row.tp, pp=row.pp,
                          ep=row.ep or 1, dp=dp, nodes=max(1, -(-row.num_gpus // 8)) if row.num_gpus > 8 else 1,
                          weight_dtype=weight, act_dtype=act, kv_dtype=row.kv_dtype, gpu_files=gpu_files,
                          calibration=calibration, engine=engine)
    return dep


def predict_static(dep: Deployment, row: Row) -> dict[str, float]:
    """Metrics of a static batch run (TensorRT-LLM v0.9 tables, gpt-fast, llama.cpp)."""
    e = estimate(dep, batch=row.batch_size, input_len=row.input_len, output_len=row.output_len)
    replicas = dep.par.replicas
    return {
        "output_tok_s": e.output_tok_s, "output_tok_s_per_gpu": e.output_tok_s_per_gpu,
        "total_tok_s": e.batch * (e.input_len + e.output_len) / e.e2e_s * replicas,
        "requests_per_s": e.batch / e.e2e_s * replicas, "ttft_ms": e.ttft_s * 1e3, "itl_ms": e.tpot_s * 1e3,
        "tok_s_per_user": e.tok_s_per_user, "prefill_tok_s": e.prefill_tok_s,
        "achieved_mem_bw_gbps": weight_bytes_per_gpu(dep.model, dep.dtypes, dep.par) / e.tpot_s / 1e9,
        "_bound_prefill": e.prefill.bound, "_bound_decode": e.decode.bound,
    }


#: requests of a max_throughput row whose count is blank ("thousands are issued at once")
DEFAULT_OFFLINE_REQUESTS = 3000


def predict_max_throughput(dep: Deployment, row: Row) -> dict[str, float]:
    """Metrics of the offline max-throughput operating point (workloads/max_throughput.py)."""
    r = max_throughput(dep, input_len=row.input_len, output_len=row.output_len,
                       num_requests=row.num_requests or DEFAULT_OFFLINE_REQUESTS)
    return {"output_tok_s": r.output_tok_s, "output_tok_s_per_gpu": r.output_tok_s_per_gpu,
            "total_tok_s": r.total_tok_s, "requests_per_s": r.requests_per_s, "tok_s_per_user": r.tok_s_per_user,
            "itl_ms": r.step_time_s * 1e3, "_bound_decode": r.bound}


def predict_serving(dep: Deployment, row: Row) -> dict[str, float]:
    """Metrics of a serving run: Poisson arrivals at the row's rate through the simulator (sim/), fixed
    lengths, seed 0; latency metrics are means over requests, as in the schema. The calibration's
    ``request_overhead_s`` (HTTP front end, tokenizer: outside the engine's steps) is added to TTFT."""
    from ..sim import simulate  # late import: the simulator is the heaviest module
    n = row.num_requests or DEFAULT_OFFLINE_REQUESTS
    r = simulate(dep, rate=row.request_rate, requests=n, input_len=row.input_len, output_len=row.output_len,
                 seed=0).summary
    bound = step.decode(dep, max(1.0, r["mean_running"]), row.input_len + row.output_len / 2).bound
    front_end_ms = (dep.calibration.request_overhead_s if dep.calibration is not None else 0.0) * 1e3
    return {"ttft_ms": r["ttft_ms_mean"] + front_end_ms, "itl_ms": r["itl_ms_mean"], "output_tok_s": r["output_tok_s"],
            "output_tok_s_per_gpu": r["output_tok_s_per_gpu"], "total_tok_s": r["total_tok_s"],
            "requests_per_s": r["requests_per_s"], "tok_s_per_user": 1e3 / r["tpot_ms_mean"],
            "_bound_decode": str(bound), "_bound_prefill": "compute"}


#: scenario -> function(deployment, row) -> {metric: value}
PREDICTORS: dict[str, Callable[[Deployment, Row], dict[str, float]]] = {
    "static_batch": predict_static, "max_throughput": predict_max_throughput, "serving": predict_serving}


def predict_rows(rows: list[Row], calibration=None, progress=None, gpu_files=None) -> list[Prediction]:
    """Predictions for every row, in input order; ``progress(n_done, n_total)`` is called per setup."""
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
            dep = deployment_for(first, calibration, gpu_files)
            note = "" if not first.framework.strip() or engine_of(first.framework) else \
                f"framework={first.framework!r} names no engine profile: predicted with the default {dep.engine}"
            values = predictor(dep, first)
            for r in group:
                bound = values.get("_bound_prefill" if r.metric == "ttft_ms" else "_bound_decode")
                out[id(r)] = Prediction(r, float(values[r.metric]), bound=bound, note=note) if r.metric in values \
                    else Prediction(r, None, f"metric={r.metric!r} not predicted for scenario {r.scenario}")
        except (ValueError, KeyError) as e:
            reason = e.args[0] if e.args else str(e)
            for r in group:
                out[id(r)] = Prediction(r, None, str(reason))
        if progress:
            progress(i + 1, len(by_setup))
    return [out[id(r)] for r in rows]
