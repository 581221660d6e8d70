"""Prefill-only streams with prefix hits on the GPU or in the host tier: the experiments engines publish.

The vLLM offloading-connector blog (vllm-project.github.io _posts/2025-12-29-offloading-connector.md:
Llama-3.1-8B-Instruct, one H100, GPU prefix caching off, 10,000 prompts of 512 tokens) measures the
throughput of a stream of prefills against the share of prompts found in the CPU tier, and the TTFT of
one prompt loaded from the CPU against its recompute. Both are priced here from the step contract
(step/contract.py) and the host tier (deploy/offload.py), nothing else:

Stream (``stream_rate``): a share s_dev of prompts hits on the GPU, s_host in host memory, the rest
misses; a hit reuses P = ⌊(I − 1)/b⌋·b tokens (prefix.hit_tokens at a full hit) and prefills I − P. The
engine fills each step to its token budget B, so a step carries k = B / N̄ prompts,
N̄ = (1 − s)·I + s·(I − P), s = s_dev + s_host. Their host-tier loads L = k·s_host·κ·P run beside the
step (offload.added_seconds):

    t = t_step(k prompts) + max(0, L/β_host − ω·t_step)         rate = k / t      (requests/s)

Single prompt (``single_ttft``): an isolated step of the prompt, I new tokens (a miss), or I − P new
tokens after P cached plus the wait for its own load (offload.request_wait; vLLM: the whole load); each
path also pays the host's hashing and lookup of the prompt's ⌊I/b⌋ full blocks (prefix.lookup_seconds).
"""
from __future__ import annotations

from ..deploy import offload, prefix
from ..deploy.memory import kv_bytes_per_gpu
from ..step.contract import price, uniform


def _full_hit(dep, input_len: int) -> float:
    """P of a full hit: ⌊(I − 1)/b⌋·b (prefix.whole_blocks)."""
    return float(prefix.whole_blocks(input_len - 1, dep.runtime.block_size))


def _kv(dep, tokens: float) -> float:
    """KV bytes per GPU of one sequence's ``tokens`` (on its attention group's GPU)."""
    return float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, dep.par.attention_groups, tokens))


def stream_rate(dep, input_len: int, s_dev: float = 0.0, s_host: float = 0.0) -> dict:
    """{'rate': requests/s per replica, 'prompts_per_step': k, 'step_s', 'load_s'} of a prefill-only stream
    at hit shares ``s_dev`` (GPU) and ``s_host`` (host tier; needs kv_offload=host) (module docstring)."""
    if not 0.0 <= s_dev + s_host <= 1.0 or s_dev < 0 or s_host < 0:
        raise ValueError(f"s_dev={s_dev!r}, s_host={s_host!r}: shares must be >= 0 with s_dev + s_host <= 1")
    tier = offload.tier_of(dep)
    if s_host and tier is None:
        raise ValueError(f"s_host={s_host!r} needs a host tier; allowed: kv_offload=host")
    i, p = float(input_len), _full_hit(dep, input_len)
    s = s_dev + s_host
    budget = float(dep.runtime.token_budget * dep.par.attention_groups)
    k = budget / ((1 - s) * i + s * (i - p))
    m = dep.model
    load = uniform(m, prompts=k * (1 - s), new=i)
    if s:
        load = load + uniform(m, prompts=k * s, new=i - p, past=p)
    t_step = float(price(dep, load, "stream").time)
    moved = k * s_host * _kv(dep, p) / dep.par.attention_groups if s_host else 0.0
    load_s = float(offload.load_seconds(tier, moved)) if moved else 0.0
    t = t_step + (float(offload.added_seconds(tier, moved, t_step)) if moved else 0.0)
    return {"rate": k / t, "prompts_per_step": k, "step_s": t_step, "load_s": load_s}


def single_ttft(dep, input_len: int, where: str = "miss") -> float:
    """Seconds of one prompt's prefill alone: ``where`` = miss (recompute), gpu (a device hit) or host
    (a host-tier hit, its own load waited for as the engine does: offload.request_wait)."""
    if where not in ("miss", "gpu", "host"):
        raise ValueError(f"where={where!r} unknown; allowed: miss, gpu, host")
    i = float(input_len)
    # vLLM V1 hashes every full block of each arriving prompt and looks it up (hit or miss) before the
    # prompt is scheduled: ⌊I/b⌋·t_block on the host, in the request's path (prefix.lookup_seconds).
    host = float(prefix.lookup_seconds(dep.runtime, input_len))
    if where == "miss":
        return host + float(price(dep, uniform(dep.model, prompts=1.0, new=i), "isolated").time)
    p = _full_hit(dep, input_len)
    t = host + float(price(dep, uniform(dep.model, prompts=1.0, new=i - p, past=p), "isolated").time)
    if where == "gpu":
        return t
    tier = offload.tier_of(dep)
    if tier is None:
        raise ValueError("where='host' needs a host tier; allowed: kv_offload=host")
    return t + float(offload.request_wait(tier, _kv(dep, p), t))
