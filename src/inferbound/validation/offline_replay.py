"""A finite offline benchmark replayed in the simulator: every prompt submitted at t = 0, the run timed to its
last finish, so the drain (the batch shrinking to the longest outputs) is in the figure.

Used by predict.py for a ``max_throughput`` row that states ``num_requests`` (at most
:data:`REPLAY_MAX_REQUESTS`) and whose lengths are several classes (a dataset profile's measured classes,
data/datasets.yaml); other max_throughput rows keep the analytic operating point and its finite run
(workloads/max_throughput.finite_run). The protocol is vLLM's offline benchmark
(vllm-project/vllm @ 1a91bc2dc0dd379cb803bfcadd8a312e0da5d45f, vllm/benchmarks/throughput.py): ``run_vllm``
passes every sampled prompt to one ``llm.generate`` call with ``ignore_eos=True`` and
``max_tokens = expected_output_len``, and times that call (``elapsed_time = end − start``); ``main`` then reports
``requests_per_second = len(requests) / elapsed_time``, ``tokens_per_second = total_num_tokens / elapsed_time``
(prompt + output tokens) and ``total_output_tokens / elapsed_time``.

The replay:
- requests: n = the row's ``num_requests`` (raised to a stated concurrency, as max_throughput does), all at
  t = 0, each request's lengths drawn from the classes by mix_requests.py's rule (largest-remainder counts
  k_c of w_c·n, labels shuffled with ``numpy.random.default_rng(seed)``, seed 0; lengths round(I_c), round(O_c));
- engine: the deployment's offline runtime (deploy/runtime.offline_runtime: the engine's offline token budget,
  e.g. vLLM's ``LLM`` class default; trtllm-bench's derived limits through max_throughput.bench_limits), a stated
  concurrency as the running-sequence cap (max_throughput.with_concurrency), the simulator's scheduler
  (``inferbound.sim.simulate``: chunked prefill, token budget, KV blocks, preemption);
- figures: makespan T = the simulator's run duration D = end − start (sim/metrics.summarize), the last finish
  since every arrival is at 0; requests/s = n / T, total tokens/s = Σ(prompt + output) / T, output tokens/s =
  Σ output / T; latencies are the simulator's per-request means (E2E from t = 0, so mean E2E is the mean finish).
"""
from __future__ import annotations

import math
from dataclasses import replace

from ..deploy.deployment import Deployment
from ..deploy.runtime import offline_runtime
from ..sim import simulate
from ..step import contract as step
from ..workloads.lengths import Mix
from ..workloads.max_throughput import bench_limits, with_concurrency
from .mix_requests import mix_requests

#: the largest stated run replayed request by request: the simulator's cost per validation row (a 2,000-request
#: run of Llama-3.1-8B takes ~0.3 s here); longer runs (MLPerf's 24,576+ samples) keep the analytic finite run,
#: in which fill and drain are a small share of the run
REPLAY_MAX_REQUESTS = 5000


def replays(mix: Mix, num_requests: int | None) -> bool:
    """Whether a max_throughput row is replayed (module docstring): a stated run of at most
    REPLAY_MAX_REQUESTS requests over several length classes."""
    return num_requests is not None and num_requests <= REPLAY_MAX_REQUESTS and len(mix.weights) > 1


def offline_deployment(dep: Deployment, mix: Mix, concurrency: int | None = None) -> Deployment:
    """``dep`` running as its engine runs an offline benchmark: a stated concurrency as the sequence cap, then
    the offline runtime's token budget, running-sequence cap and chunking where they differ from the online
    runtime's (as engine options, so the simulator's runtime is the offline one)."""
    dep = with_concurrency(dep, concurrency)
    rt = bench_limits(dep, offline_runtime(dep), mix)
    online = dep.runtime
    over = {k: getattr(rt, k) for k in ("token_budget", "max_num_seqs", "chunked_prefill")
            if getattr(rt, k) != getattr(online, k)}
    if not over:
        return dep
    return replace(dep, engine_options=tuple(sorted({**dict(dep.engine_options), **over}.items())))


def replay_offline(dep: Deployment, mix: Mix, num_requests: int, concurrency: int | None = None,
                   seed: int = 0) -> dict:
    """{metric: value} of the replayed run (module docstring), with ``_note`` naming the distribution."""
    n = max(int(num_requests), int(concurrency or 0))
    run_dep = offline_deployment(dep, mix, concurrency)
    reqs = mix_requests(mix, math.inf, n, seed)
    r = simulate(run_dep, trace=reqs, seed=seed).summary
    T = float(r["duration_s"])
    if not T > 0 or r["completed"] != n:
        raise ValueError(f"num_requests={n}: the replayed run completed {r['completed']} of {n} requests; "
                         f"allowed: a run whose every request fits the KV cache")
    i_tok, o_tok = float(r["input_tokens"]), float(r["output_tokens"])
    bound = step.decode(run_dep, max(1.0, r["mean_running"]), i_tok / n + o_tok / n / 2).bound
    note = (f"replayed: {n:,} prompts at t = 0 in the simulator ({run_dep.runtime.label}, offline token budget "
            f"{run_dep.runtime.token_budget:,}), lengths drawn from {mix.label}'s {len(mix.weights)} length classes "
            f"(seed {seed}; {i_tok / n:,.1f} in / {o_tok / n:,.1f} out per request); throughput = prompts / "
            f"makespan {T:.3f} s (vllm/benchmarks/throughput.py)")
    out = {"requests_per_s": n / T, "output_tok_s": o_tok / T, "output_tok_s_per_gpu": o_tok / T / dep.num_gpus,
           "total_tok_s": (i_tok + o_tok) / T, "tok_s_per_user": 1e3 / r["tpot_ms_mean"],
           "itl_ms": r["itl_ms_mean"], "tpot_ms": r["tpot_ms_mean"], "e2e_ms": r["e2e_ms_mean"],
           "ttft_ms": r["ttft_ms_mean"], "_bound_decode": str(bound), "_note": "; ".join((*mix.notes, note))}
    return out
