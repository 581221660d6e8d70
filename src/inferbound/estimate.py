"""Static-batch estimate: TTFT, TPOT, latency, throughput, the decode-step split and what binds it.

A static batch of B prompts of S tokens prefills together (one step of B·S tokens; TTFT is that step)
and then decodes output_len − 1 further steps together, step j seeing S + j cached tokens:

    TTFT = t_prefill(B, S)
    TPOT = (1/(N−1)) Σ_{j=1}^{N−1} t_decode(B, S + j − 1)    (N = output_len; step j feeds output
                                                              token j with S + j − 1 tokens cached)
    end-to-end = TTFT + (N − 1)·TPOT
    output tok/s = R·B·N / end-to-end  (R data-parallel replicas, each running the batch B);
    per GPU: / GPUs;  per user: 1 / TPOT
    energy and cost: energy.py (power from each step's compute and HBM utilization)

Decode time is piecewise linear in the context, so the sum is taken exactly for N ≤ 65 and by a
32-point midpoint rule otherwise (error far below the model's own).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import steps
from .config import Dtypes, Parallelism
from .deployment import Deployment, make_deployment
from .energy import energy_summary, step_power_w
from .memory import MemoryReport, max_batch, memory_report
from .roofline import StepCost


@dataclass
class Phase:
    """One phase's time, bound, split (seconds by kind) and a one-line explanation."""

    time_s: float
    bound: str
    split: dict
    explanation: str
    comm_kinds: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"time_s": self.time_s, "bound": self.bound,
                "split_s": {k: float(v) for k, v in self.split.items()},
                "communication_s": dict(self.comm_kinds), "explanation": self.explanation}


@dataclass
class Estimate:
    model: str
    gpu: str
    num_gpus: int
    parallelism: Parallelism
    dtypes: Dtypes
    compute_dtype: str
    batch: int
    input_len: int
    output_len: int
    ttft_s: float
    tpot_s: float
    e2e_s: float
    prefill: Phase
    decode: Phase
    memory: MemoryReport
    decode_compute_bound_batch: int | None
    decode_gemm_compute_bound_batch: int | None
    decode_without_kv_cache_s: float
    max_batch_at_context: int
    replicas: int = 1
    energy: dict = field(default_factory=dict)
    bands: dict = field(default_factory=dict)  # expected relative error by metric kind (calibration residuals)
    warnings: list[str] = field(default_factory=list)

    @property
    def output_tok_s(self) -> float:
        return self.replicas * self.batch * self.output_len / self.e2e_s

    @property
    def output_tok_s_per_gpu(self) -> float:
        return self.output_tok_s / self.num_gpus

    @property
    def tok_s_per_user(self) -> float:
        return 1.0 / self.tpot_s if self.output_len > 1 else self.output_len / self.e2e_s

    @property
    def prefill_tok_s(self) -> float:
        return self.replicas * self.batch * self.input_len / self.ttft_s

    def to_dict(self) -> dict:
        return {
            "model": self.model, "gpu": self.gpu, "num_gpus": self.num_gpus,
            "parallelism": self.parallelism.model_dump(), "dtypes": {**self.dtypes.model_dump(),
                                                                     "kv_effective": self.dtypes.kv_dtype},
            "compute_dtype": self.compute_dtype, "batch": self.batch, "input_len": self.input_len,
            "output_len": self.output_len,
            "ttft_ms": self.ttft_s * 1e3, "tpot_ms": self.tpot_s * 1e3, "e2e_ms": self.e2e_s * 1e3,
            "output_tok_s": self.output_tok_s, "output_tok_s_per_gpu": self.output_tok_s_per_gpu,
            "tok_s_per_user": self.tok_s_per_user, "prefill_tok_s": self.prefill_tok_s,
            "prefill": self.prefill.to_dict(), "decode": self.decode.to_dict(),
            "memory": self.memory.to_dict(),
            "decode_compute_bound_batch": self.decode_compute_bound_batch,
            "decode_gemm_compute_bound_batch": self.decode_gemm_compute_bound_batch,
            "decode_without_kv_cache_ms": self.decode_without_kv_cache_s * 1e3,
            "max_batch_at_context": self.max_batch_at_context, "replicas": self.replicas,
            "energy": dict(self.energy), "error_bands": dict(self.bands), "warnings": list(self.warnings),
        }


def decode_contexts(input_len: int, output_len: int) -> np.ndarray:
    """Cached-token counts of the decode steps that average into TPOT (see module docstring)."""
    n = output_len - 1
    if n <= 0:
        return np.array([float(input_len)])
    if n <= 64:
        return input_len + np.arange(n, dtype=float)
    return input_len + (np.arange(32) + 0.5) * (n / 32) - 0.5


def _phase(cost: StepCost, label: str) -> Phase:
    split = {k: float(np.mean(v)) for k, v in cost.split.items() if np.any(np.asarray(v) > 0)}
    kinds = {k: float(np.mean(v)) for k, v in cost.comm_kinds.items() if np.any(np.asarray(v) > 0)}
    time = float(np.mean(cost.time))
    bound = str(max(("compute", split.get("compute", 0.0)),
                    ("memory", split.get("weights", 0) + split.get("kv", 0) + split.get("activations", 0)),
                    ("communication", split.get("communication", 0.0)), key=lambda kv: kv[1])[0])
    return Phase(time, bound, split, explain(label, bound, split, time, kinds), kinds)


BOUND_WORDS = {"compute": "compute-bound", "memory": "HBM-bound", "communication": "communication-bound"}
SPLIT_WORDS = {"compute": "matmul/attention compute", "weights": "weights", "kv": "KV", "activations":
               "activations", "overhead": "launch/step overhead", "bubble": "pipeline bubble"}
COMM_WORDS = {"all_reduce": "all-reduce", "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
              "all_to_all": "all-to-all", "p2p": "pipeline sends"}


def explain(label: str, bound: str, split: dict, time: float, comm_kinds: dict | None = None) -> str:
    """'<label>: HBM-bound, weights 58%, KV 27%, all-reduce 15%' (shares of the phase time)."""
    items = {SPLIT_WORDS[k]: v for k, v in split.items() if k != "communication" and v > 0}
    items.update({COMM_WORDS.get(k, k): v for k, v in (comm_kinds or {}).items() if v > 0})
    parts = sorted(((v / time, k) for k, v in items.items()), reverse=True)
    shares = ", ".join(f"{k} {f:.0%}" for f, k in parts if f >= 0.01)
    return f"{label}: {BOUND_WORDS[bound]}, {shares}"


def error_bands(dep: Deployment, scenario: str, prefill_bound: str, decode_bound: str) -> dict:
    """Expected relative error of each kind of metric, from the calibration's out-of-fold residuals for
    this scenario and bound (empty without a calibration)."""
    cal = dep.calibration
    if cal is None:
        return {}
    out = {"throughput": cal.band(scenario, "throughput", decode_bound),
           "tpot": cal.band(scenario, "throughput", decode_bound),
           "ttft": cal.band(scenario, "latency", prefill_bound)}
    return {k: v for k, v in out.items() if v is not None}


def _compute_share(m, gpu, dt, par, compute_dtype, batches, context, gemm_only: bool):
    """(compute seconds, memory seconds) of decode steps at each batch; optionally GEMMs only."""
    cost = steps.decode_cost(m, gpu, dt, par, compute_dtype, batches, context)
    if not gemm_only:
        return (np.asarray(cost.split["compute"]),
                np.asarray(cost.split["weights"] + cost.split["kv"] + cost.split["activations"]))
    gemms = [p for p in cost.ops if p.op.kind == "gemm"]
    return (sum(np.where(p.compute_bound, p.t_compute, 0.0) * p.op.count for p in gemms),
            sum(np.where(p.compute_bound, 0.0, p.t_memory) * p.op.count for p in gemms))


def compute_bound_batch(m, gpu, dt, par, compute_dtype, context, gemm_only: bool = False,
                        limit: int = 1 << 16) -> int | None:
    """Smallest decode batch at ``context`` whose step time is mostly compute, None if none up to ``limit``.

    With ``gemm_only`` only the weight matmuls are compared (attention's KV reads grow with the batch
    too, so a whole step at long context may never turn compute-bound).
    """
    batches = np.unique(np.round(np.geomspace(1, limit, 400)))
    comp, mem = _compute_share(m, gpu, dt, par, compute_dtype, batches, context, gemm_only)
    hit = np.nonzero(comp >= mem)[0]
    if hit.size == 0:
        return None
    lo = int(batches[hit[0] - 1]) if hit[0] > 0 else 0
    exact = np.arange(lo + 1, int(batches[hit[0]]) + 1, dtype=float)
    comp, mem = _compute_share(m, gpu, dt, par, compute_dtype, exact, context, gemm_only)
    return int(exact[np.nonzero(comp >= mem)[0][0]])


def estimate(deployment: Deployment | None = None, batch: int = 8, input_len: int = 1024,
             output_len: int = 256, details: bool = True, **deployment_kwargs) -> Estimate:
    """Estimate a static-batch run (see module docstring).

    Pass a :class:`Deployment`, or the keyword arguments of :func:`make_deployment`
    (``model``, ``gpu``, ``num_gpus``, ``tp``, ``weight_dtype``, ...). ``details=False`` skips the
    extras (compute-bound batch, no-KV-cache decode, max batch) that bulk validation does not need.
    """
    dep = deployment or make_deployment(**deployment_kwargs)
    m, g, dt, par, cdt = dep.model, dep.gpu, dep.dtypes, dep.par, dep.compute_dtype
    for name, v, low in (("batch", batch, 1), ("input_len", input_len, 0), ("output_len", output_len, 1)):
        if v < low:
            raise ValueError(f"{name}={v} must be >= {low}")
    warnings: list[str] = []
    pre = steps.prefill_cost(m, g, dt, par, cdt, batch, max(input_len, 1))
    ctx = decode_contexts(input_len, output_len)
    dec = steps.decode_cost(m, g, dt, par, cdt, batch, ctx)
    ttft = float(pre.time)
    tpot = float(np.mean(dec.time))
    e2e = ttft + (output_len - 1) * tpot
    mem = memory_report(m, g, dt, par, batch, input_len + output_len, step_tokens=batch * input_len)
    if not mem.fits:
        warnings.append(f"does not fit: needs {mem.total / 1e9:.1f} GB per GPU of {g.hbm_bytes / 1e9:.0f} GB")
    mid = float(ctx[len(ctx) // 2])
    layout = dep.label()
    no_cache = steps.no_kv_cache_decode_time(m, g, dt, par, cdt, batch, input_len, output_len) if details else 0.0
    n_dec = output_len - 1
    prefill_j = float(step_power_w(g, cdt, pre)) * ttft * dep.num_gpus
    decode_j = float(np.mean(step_power_w(g, cdt, dec) * dec.time)) * n_dec * dep.num_gpus
    reps = par.replicas
    energy = energy_summary(g, dep.num_gpus, prefill_j, decode_j, e2e, ttft,
                            input_tokens=reps * batch * input_len, output_tokens=reps * batch * output_len)
    prefill_phase = _phase(pre, f"prefill of {batch}x{input_len} tokens on {layout}")
    decode_phase = _phase(dec, f"decode at batch {batch}, context ~{mid:.0f} on {layout}")
    bands = error_bands(dep, "static_batch", prefill_phase.bound, decode_phase.bound)
    return Estimate(
        model=m.name, gpu=g.id, num_gpus=dep.num_gpus, parallelism=par, dtypes=dt, compute_dtype=cdt,
        batch=batch, input_len=input_len, output_len=output_len, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
        prefill=prefill_phase, decode=decode_phase, bands=bands,
        memory=mem, decode_compute_bound_batch=compute_bound_batch(m, g, dt, par, cdt, mid) if details else None,
        decode_gemm_compute_bound_batch=compute_bound_batch(m, g, dt, par, cdt, mid, gemm_only=True) if details else None,
        decode_without_kv_cache_s=no_cache,
        max_batch_at_context=int(max_batch(m, g, dt, par, input_len + output_len)) if details else -1, replicas=reps,
        energy=energy, warnings=warnings)
