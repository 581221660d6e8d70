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

Engine features (docs/features/): with speculative decoding a decode step is the target's verify pass
over k + 1 tokens per sequence plus the draft's k passes, and it yields τ tokens per sequence
(speculative.py): TPOT = (1/(N−1)) Σ_j t_step(B, S + j − 1) / τ, energy per token likewise / τ, and the
draft also prefills the prompt (TTFT). A prefix hit rate (prefix.py) prefills I − P tokens after P
cached. A host KV tier (offload.py) holds evicted prefixes, not a running batch's KV: the batch's KV
stays on the GPU (it fits or it does not), and the tier is only described.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from ..base.caches import cache
from ..base.numeric import sorted_unique
from ..deploy import offload, prefix
from ..deploy.config import Dtypes, Parallelism
from ..deploy.deployment import Deployment, make_deployment
from ..deploy.memory import MemoryReport, max_batch, memory_report
from ..deploy.speculative import drafter_of
from ..pricing.energy import energy_summary, step_power_w
from ..step import contract as step
from ..step.explain import Phase, error_bands, phase
from ..step.towers import image_tokens, images_note, tower_prefill
from ..step.speculative import crossover_batch, draft_prefill_cost, step_cost as spec_step_cost

#: the decode batch whose weight matmuls turn compute-bound, one figure per deployment
_GEMM_BOUND_BATCH = cache("decode GEMM compute-bound batch", 1024)


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
    deployment: Deployment
    replicas: int = 1
    energy: dict = field(default_factory=dict)
    bands: dict = field(default_factory=dict)  # expected relative error by metric kind (calibration residuals)
    warnings: list[str] = field(default_factory=list)
    features: dict = field(default_factory=dict)  # speculative / prefix / kv_offload figures (docs/features/)

    # -- details, computed when asked (the CLI table and to_dict ask; bulk validation does not) ----------
    @cached_property
    def _mid_context(self) -> float:
        ctx = decode_contexts(self.input_len, self.output_len)
        return float(ctx[len(ctx) // 2])

    @cached_property
    def _extra_steps(self) -> tuple:
        """(decode time without a KV cache, the decode cost of the first batch grid of the compute-bound
        search at the mid context with the slice of its elements): see :func:`extra_steps`."""
        return extra_steps(self.deployment, self.batch, self.input_len, self.output_len, self._mid_context)

    @cached_property
    def decode_compute_bound_batch(self) -> int | None:
        """Smallest decode batch at the mid context whose whole step is mostly compute."""
        return compute_bound_batch(self.deployment, self._mid_context, first=self._extra_steps[1])

    @cached_property
    def decode_gemm_compute_bound_batch(self) -> int | None:
        """Smallest decode batch whose weight matmuls are mostly compute (GEMMs do not see the context,
        so one figure per deployment, kept per deployment)."""
        dep = self.deployment
        return _GEMM_BOUND_BATCH.get_or(dep, lambda: compute_bound_batch(dep, self._mid_context, gemm_only=True,
                                                                         first=self._extra_steps[1]))

    @cached_property
    def decode_without_kv_cache_s(self) -> float:
        """Decode time if every step recomputed its whole prefix (no KV cache)."""
        return self._extra_steps[0]

    @cached_property
    def max_batch_at_context(self) -> int:
        """Largest batch that fits at input + output tokens each."""
        return int(max_batch(self.deployment, self.input_len + self.output_len))

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

    @property
    def fits(self) -> bool:
        """Whether the batch fits the deployment's memory (else every figure is hypothetical)."""
        return bool(np.all(self.memory.fits))

    def to_dict(self) -> dict:
        return {
            "fits": self.fits, "fit_reason": self.memory.reason, "hypothetical": not self.fits,
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
            "features": {**self.features, **({"speculative": {**self.features["speculative"],
                                                              "crossover_batch": self.speculative_crossover_batch}}
                                             if "speculative" in self.features else {})},
        }

    @cached_property
    def speculative_crossover_batch(self) -> int | None:
        """Smallest batch at the mid context where speculative decoding stops raising tok/s (None: off, or
        it still helps at 4096)."""
        return crossover_batch(self.deployment, self._mid_context) if "speculative" in self.features else None


def decode_contexts(input_len: int, output_len: int) -> np.ndarray:
    """Cached-token counts of the decode steps that average into TPOT (see module docstring)."""
    n = output_len - 1
    if n <= 0:
        return np.array([float(input_len)])
    if n <= 64:
        return input_len + np.arange(n, dtype=float)
    return input_len + (np.arange(32) + 0.5) * (n / 32) - 0.5


@lru_cache(maxsize=64)
def _no_kv_steps(output_len: int) -> np.ndarray:
    """The decode steps j (1 <= j <= N − 1) at which :func:`no_kv_cache_decode_time` prices the prefix
    (read-only, kept)."""
    n = output_len - 1
    j = sorted_unique(np.linspace(1, n, min(n, 64)).round())
    j.flags.writeable = False
    return j


def _no_kv_total(prefill_times, output_len: int) -> float:
    """(N − 1)·mean of the prefix prefills at :func:`_no_kv_steps`."""
    return float(np.mean(np.asarray(prefill_times)) * (output_len - 1))


def no_kv_cache_decode_time(dep: Deployment, batch, input_len: int, output_len: int) -> float:
    """Decode time without a KV cache: step j recomputes the whole prefix of S + j tokens.

    Σ_{j=1}^{N-1} t_prefill(B, S + j): quadratic in N (the seed's O(N²)), against the linear sum with
    a cache. Evaluated at up to 64 evenly spaced steps and scaled.
    """
    if output_len - 1 <= 0:
        return 0.0
    return _no_kv_total(step.prefill(dep, batch, input_len + _no_kv_steps(output_len)).time, output_len)


@lru_cache(maxsize=8)
def _first_grid(limit: int) -> np.ndarray:
    """The geometric grid of 48 batches that :func:`compute_bound_batch` starts from (read-only, kept)."""
    grid = sorted_unique(np.round(np.geomspace(1, limit, 48)))
    grid.flags.writeable = False
    return grid


def extra_steps(dep: Deployment, batch, input_len: int, output_len: int, context, limit: int = 1 << 16):
    """(:func:`no_kv_cache_decode_time`, (decode cost at the first grid of :func:`compute_bound_batch`,
    the slice of its elements)) of a static batch, priced together.

    A load's array elements are independent steps of the step contract, so the prefix prefills
    (``batch`` prompts of S + j tokens) and the grid's decode steps (g sequences at ``context``) are one
    load of ``uniform`` (a prefill element decodes no sequence, a decode element prefills none) priced
    in one call. With pipeline stages a prefill is an isolated step and a decode a step in a stream
    (step.combine), so they are priced apart there.
    """
    grid = _first_grid(limit)
    if output_len - 1 <= 0 or dep.par.pp > 1:
        no_kv = no_kv_cache_decode_time(dep, batch, input_len, output_len)
        return no_kv, (step.decode(dep, grid, context), slice(None))
    j = _no_kv_steps(output_len)
    zj, zg = np.zeros(j.size), np.zeros(grid.size)
    load = step.uniform(dep.model, decode=np.concatenate([zj, grid]),
                        context=np.concatenate([zj, np.full(grid.size, float(context))]),
                        prompts=np.concatenate([np.full(j.size, float(batch)), zg]),
                        new=np.concatenate([input_len + j, zg]))
    cost = step.price(dep, load, "stream")
    return _no_kv_total(np.asarray(cost.time)[:j.size], output_len), (cost, slice(j.size, None))


def _compute_shares(cost, part=slice(None)) -> dict:
    """{whole step, GEMMs only: (compute seconds, memory seconds)} of priced decode steps (elements
    ``part``)."""
    shape = np.shape(cost.time)
    whole = (cost.split["compute"], cost.split["weights"] + cost.split["kv"] + cost.split["activations"])
    gemms = [p for p in cost.ops if p.op.kind == "gemm"]
    only = (sum(np.where(p.compute_bound, p.t_compute, 0.0) * p.op.count for p in gemms),
            sum(np.where(p.compute_bound, 0.0, p.t_memory) * p.op.count for p in gemms))
    return {k: tuple(np.broadcast_to(np.asarray(x), shape)[part] for x in v) for k, v in ((False, whole), (True, only))}


def compute_bound_batch(dep: Deployment, context, gemm_only: bool = False, limit: int = 1 << 16,
                        first=None) -> int | None:
    """Smallest decode batch at ``context`` whose step time is mostly compute, None if none up to ``limit``.

    With ``gemm_only`` only the weight matmuls are compared (attention's KV reads grow with the batch
    too, so a whole step at long context may never turn compute-bound). The compute share grows with
    the batch, so the first batch where compute >= memory is bracketed on a geometric grid of 48
    batches, then found by pricing at most 64 evenly spaced batches in the bracket until it is exact.
    ``first``: (cost, slice) of the first grid's decode steps, when already priced (:func:`extra_steps`).
    """
    lo, hi = 0, int(limit)
    grid = _first_grid(limit)
    while True:
        if first is not None:
            comp, mem = _compute_shares(*first)[gemm_only]
            first = None
        else:
            comp, mem = _compute_shares(step.decode(dep, grid, context))[gemm_only]
        hit = np.nonzero(comp >= mem)[0]
        if hit.size == 0:
            if hi == limit and lo == 0:
                return None
            lo = int(grid[-1])
        else:
            hi = int(grid[hit[0]])
            lo = int(grid[hit[0] - 1]) if hit[0] > 0 else lo
        if hi - lo <= 1:
            return hi
        grid = sorted_unique(np.round(np.linspace(lo + 1, hi, min(64, hi - lo))))


def estimate(deployment: Deployment | None = None, batch: int = 8, input_len: int = 1024,
             output_len: int = 256, images: int = 0, **deployment_kwargs) -> Estimate:
    """Estimate a static-batch run (see module docstring).

    Pass a :class:`Deployment`, or the keyword arguments of :func:`make_deployment`
    (``model``, ``gpu``, ``num_gpus``, ``tp``, ``weight_dtype``, ...). The extras (compute-bound batch,
    no-KV-cache decode, max batch) are computed when first read. ``images``: images per request of a
    multimodal checkpoint (step/towers.py): their tokens join each prompt (``input_len`` of the result is
    text + image tokens) and the towers' encoder pass joins the prefill step.
    """
    dep = deployment or make_deployment(**deployment_kwargs)
    m, g, dt, par, cdt = dep.model, dep.gpu, dep.dtypes, dep.par, dep.compute_dtype
    for name, v, low in (("batch", batch, 1), ("input_len", input_len, 0), ("output_len", output_len, 1)):
        if v < low:
            raise ValueError(f"{name}={v} must be >= {low}")
    warnings: list[str] = list(dep.warnings)
    if images:  # a multimodal request (model/towers.py): image tokens join the prompt, the encoder the prefill
        warnings.append(images_note(m, images, input_len))
        input_len += image_tokens(m, images)
    ctx = decode_contexts(input_len, output_len)
    pre, dec, tau, mem, features = _steps(dep, batch, input_len, output_len, ctx)
    pre = step.add_work(pre, tower_prefill(dep, batch * images)) if images else pre
    ttft = float(pre.time)
    tpot = float(np.mean(dec.time)) / tau
    e2e = ttft + (output_len - 1) * tpot
    if not mem.fits:
        warnings.append(f"does not fit: {mem.reason}; every figure is hypothetical")
    if output_len == 1:  # TPOT is not a time of this run; vLLM's benchmark leaves it out too
        warnings.append(f"output_len=1: no decode step runs (end-to-end = TTFT); TPOT {tpot * 1e3:,.2f} ms is the "
                        f"decode step that would follow, for reference (vLLM benchmarks/benchmark_serving.py "
                        f"calculate_metrics counts TPOT only where output_len > 1)")
    if prefix.groups(dep.runtime) > 1 and prefix.active(dep.runtime):
        warnings.append(f"prefix_groups={prefix.groups(dep.runtime)}: a static batch counts every prompt as a hit of its "
                        f"group's prefix (warm cache); the steady-state scenarios derive the hit share (prefix.py)")
    mid = float(ctx[len(ctx) // 2])
    layout = dep.label()
    n_dec = output_len - 1
    prefill_j = float(step_power_w(g, cdt, pre)) * ttft * dep.num_gpus
    decode_j = float(np.mean(step_power_w(g, cdt, dec) * dec.time)) * n_dec / tau * dep.num_gpus
    reps = par.replicas
    energy = energy_summary(g, dep.num_gpus, prefill_j, decode_j, e2e, ttft,
                            input_tokens=reps * batch * input_len, output_tokens=reps * batch * output_len)
    prefill_phase = phase(pre, f"prefill of {batch}x{input_len} tokens on {layout}")
    decode_phase = phase(dec, f"decode at batch {batch}, context ~{mid:.0f} on {layout}")
    bands = error_bands(dep, "static_batch", prefill_phase.bound, decode_phase.bound)
    return Estimate(
        model=m.name, gpu=g.id, num_gpus=dep.num_gpus, parallelism=par, dtypes=dt, compute_dtype=cdt,
        batch=batch, input_len=input_len, output_len=output_len, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
        prefill=prefill_phase, decode=decode_phase, bands=bands, memory=mem, deployment=dep, replicas=reps,
        energy=energy, warnings=warnings, features=features)


def _steps(dep: Deployment, batch: int, input_len: int, output_len: int, ctx=None):
    """(prefill StepCost, decode StepCosts over decode_contexts (``ctx``, if computed), τ, MemoryReport,
    feature figures) of a static batch under the deployment's engine features (module docstring)."""
    rt, m = dep.runtime, dep.model
    ctx = decode_contexts(input_len, output_len) if ctx is None else ctx
    cached = float(prefix.cached_tokens(rt, max(input_len, 1)))
    features = {}
    if cached:
        pre = step.price(dep, step.uniform(m, prompts=batch, new=max(input_len, 1) - cached, past=cached), "isolated")
        features["prefix"] = {"cached_tokens": cached, "prefilled_tokens": max(input_len, 1) - cached}
    else:
        pre = step.prefill(dep, batch, max(input_len, 1))
    dec, tau = spec_step_cost(dep, batch, ctx)
    dr = drafter_of(dep)
    if dr is not None:
        if dr.model is not None:
            load = step.uniform(dr.model, prompts=batch, new=max(input_len, 1) - cached, past=cached)
            pre = step.add_work(pre, draft_prefill_cost(dr, lambda ld: step.price(dr.deployment, ld, "isolated"), load))
        features["speculative"] = {"method": dr.spec.method, "draft": dr.spec.draft_model, "k": dr.spec.k,
                                   "acceptance": dr.spec.acceptance, "tokens_per_step": tau,
                                   "step_ms": float(np.mean(dec.time)) * 1e3, "describe": dr.spec.describe()}
    mem = memory_report(dep, batch, input_len + output_len, step_tokens=batch * input_len)
    tier = offload.tier_of(dep)
    if tier is not None:  # the tier holds evicted prefixes (offload.py): a static batch's KV stays on the GPU
        features["kv_offload"] = {"tier": tier.describe(), "host_pool_bytes_per_gpu": tier.pool_bytes}
    return pre, dec, tau, mem, features
