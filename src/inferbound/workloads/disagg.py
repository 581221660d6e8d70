"""Disaggregated serving with two pools of their own layouts, and the KV transfers between them.

The prefill pool (deployment P: its own TP/EP/DP, GPUs G_p over N_p nodes, deploy/pools.py) runs
prompt-only steps; the decode pool (deployment D, G_d GPUs over N_d nodes) runs decode-only steps. Each is
priced by the one step contract (step/contract.price) under its own layout. Prompts of I tokens, outputs of
O tokens.

Prefill pool, per replica of P (g_p attention groups, token budget B_p per group):

    k   = max(1, floor(B_p·g_p / I))          prompts per step (one step holds them: SGLang
                                               --chunked-prefill-size, the LMSYS blog's 16,384 per device)
    t_p = price(k prompts of I tokens)         seconds per step
    X_p = replicas_p · k·I / t_p               input tok/s of the pool; per node X_p / N_p

Decode pool, per replica of D (g_d groups): D_b sequences per replica decode at context c (default
I + (O − 1)/2, the mean over a request's decode), D_b the smallest of the caps of
steady_state.caps (KV cache, token budget, running sequences) unless given:

    t_d = price(D_b decodes at c)              TPOT
    X_d = replicas_d · D_b / t_d               output tok/s of the pool; per node X_d / N_d

At a given rate λ below the decode capacity, the decode batch is Little's: D = (λ/replicas_d)·(O − 1)·t_d(D)
(the smallest root, by bisection), and TPOT is t_d at that batch.

KV transfer of one prompt (the links of deploy/topology: each GPU's scale-out NIC, else PCIe). The prompt's
KV is K = kv_bytes_for_context(I) over all layers. A GPU of P holding it sends its shard b_s =
kv_bytes_per_gpu(P, one sequence per attention group, I) (TP shards and pipeline stages send in parallel,
each on its own NIC), a GPU of D receives b_r; on a link of bandwidth β·η and latency α the transfer alone
takes S = b/(β·η) + α. A replica has one lane per attention group (a request's KV lives on one
attention-DP rank; a TP group's GPUs carry one request's shards side by side): lanes L_p =
replicas_p·g_p, L_d = replicas_d·g_d. Transfers that share a lane share its bandwidth: n concurrent
transfers on one lane each move at β·η/n (fair share, data/disagg.yaml kv_transfer.queue). At a request
rate λ spread evenly over the lanes, each lane is busy

    ρ_s = λ·S_s / L_p      (a prefill lane)      ρ_r = λ·S_r / L_d   (a decode lane)

and with processor sharing a transfer's mean time on the busier lane is S/(1 − ρ) (M/G/1-PS, Kleinrock
1976, sec. 4.4). The lanes carry at most λ_link = λ/ρ requests/s; at ρ >= 1 the transfer queue grows
without bound (a note says so and the sojourn is infinite).

Capacity of the pair: λ_max = min(X_p/I, X_d/(O − 1), λ_link) requests/s; at a rate λ the pools are
busy λ·I/X_p and λ·(O − 1)/X_d (X_d at the capped batch), and the first output gap after the first token (TTFT is measured on the
prefill side, as sim/event_loop.py) carries the transfer: ITL_1 = t_d + S/(1 − ρ).

Not modelled here: the prefill queue's wait at a rate (the simulator has it), prefix hits and
speculative decoding in the pools (the aggregated steady state has them).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from ..base.datafiles import data_yaml
from ..deploy.deployment import Deployment
from ..deploy.memory import kv_bytes_per_gpu
from ..deploy.pools import pool_deployment
from ..deploy.topology import Link, network_link, pcie_link
from ..model.kv import kv_bytes_for_context
from ..step import contract as C
from . import steady_state


def kv_link(dep: Deployment) -> Link:
    """The link a pool's GPU sends or receives KV on: its scale-out NIC if it has one, else PCIe."""
    return network_link(dep.gpu) if dep.gpu.scaleout_bw > 0 else pcie_link(dep.gpu)


def transfer_lanes(dep: Deployment) -> int:
    """Lanes a pool's KV transfers share: one per attention group of each replica (module docstring)."""
    return dep.par.replicas * dep.par.attention_groups


def transfer_bytes(dep: Deployment, prompt_tokens) -> float:
    """b: the bytes one GPU of ``dep`` sends or receives for one prompt's KV (its shard of one sequence)."""
    return float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, dep.par.attention_groups, prompt_tokens))


def queue_discipline() -> str:
    return str(data_yaml("disagg.yaml")["kv_transfer"]["queue"]["discipline"])


@dataclass(frozen=True)
class Phase:
    """One pool's steady figures under its own layout."""

    role: str  # prefill or decode
    layout: str  # Deployment.label()
    gpus: int
    nodes: int
    replicas: int
    batch: float  # prompts (prefill) or sequences (decode) per replica step
    step_s: float
    tok_s: float  # input tok/s (prefill) or output tok/s (decode) of the whole pool
    bound: str
    cap: str = ""  # decode: what sets the batch

    @property
    def tok_s_per_node(self) -> float:
        return self.tok_s / self.nodes

    @property
    def tok_s_per_gpu(self) -> float:
        return self.tok_s / self.gpus


@dataclass(frozen=True)
class Transfer:
    """One prompt's KV transfer and the links' load at the rate."""

    kv_bytes: float  # K: the prompt's KV over all layers (bytes)
    send_bytes_per_gpu: float  # b_s
    recv_bytes_per_gpu: float  # b_r
    send_lanes: int  # L_p
    recv_lanes: int  # L_d
    link: str
    link_bw: float  # β·η, bytes/s per GPU
    alone_s: float  # max(S_s, S_r): the transfer on idle links
    rho_send: float
    rho_recv: float
    sojourn_s: float  # S/(1 − ρ) on the busier side (inf at ρ >= 1)
    max_rate: float  # λ_link: requests/s the links carry (ρ = 1)
    discipline: str

    @property
    def rho(self) -> float:
        return max(self.rho_send, self.rho_recv)


@dataclass(frozen=True)
class DisaggResult:
    prefill: Phase
    decode: Phase
    transfer: Transfer
    input_len: float
    output_len: float
    rate: float  # requests/s the figures are at (the capacity when none was given)
    max_rate: float  # λ_max
    limit: str  # which of prefill, decode, kv-link sets λ_max
    first_itl_s: float  # t_d + transfer sojourn
    prefill_busy: float  # λ / (X_p / I): the share of the prefill pool's capacity used
    decode_busy: float  # λ / (X_d / (O − 1)), X_d at the capped batch
    decode_capacity_tok_s: float  # X_d at the capped batch (``decode`` is at the rate's batch when one is given)
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        out = asdict(self)
        for key in ("prefill", "decode"):
            ph = getattr(self, key)
            out[key].update(tok_s_per_node=ph.tok_s_per_node, tok_s_per_gpu=ph.tok_s_per_gpu)
        out["transfer"]["rho"] = self.transfer.rho
        return out


def prefill_phase(dep: Deployment, input_len: float, tokens_per_group: float | None = None,
                  notes: list | None = None) -> Phase:
    """The prefill pool's steps of k prompts (module docstring)."""
    g = dep.par.attention_groups
    budget = float(tokens_per_group or dep.runtime.token_budget)
    k = max(1, math.floor(budget * g / input_len))
    if input_len > budget * g and notes is not None:
        notes.append(f"prefill: a prompt of {input_len:g} tokens exceeds the step's {budget * g:g} tokens; priced "
                     f"as one step of one prompt (the engine would chunk it)")
    cost = C.price(dep, C.uniform(dep.model, prompts=k, new=input_len), "stream")
    t = float(cost.time)
    reps = dep.par.replicas
    return Phase("prefill", dep.label(), dep.num_gpus, dep.par.nodes, reps, float(k), t,
                 reps * k * input_len / t, str(cost.bound))


def decode_phase(dep: Deployment, input_len: float, output_len: float, context: float | None = None,
                 batch_per_group: float | None = None) -> Phase:
    """The decode pool's steps of D_b sequences at context c (module docstring)."""
    g = dep.par.attention_groups
    ctx = float(input_len + (output_len - 1) / 2 if context is None else context)
    if batch_per_group is None:
        caps, _, _ = steady_state.caps(dep, input_len, output_len, dep.runtime, decode_only=True)
        cap = min(caps, key=caps.get)
        batch = float(caps[cap])
        if batch < 1:
            raise ValueError(f"decode_layout {dep.label()}: no sequence of {input_len:g}+{output_len:g} tokens fits "
                             f"({cap} cap); allowed: a layout with more KV room per GPU")
    else:
        cap, batch = "given", float(batch_per_group) * g
    cost = C.price(dep, C.uniform(dep.model, decode=batch, context=ctx), "stream")
    t = float(cost.time)
    reps = dep.par.replicas
    return Phase("decode", dep.label(), dep.num_gpus, dep.par.nodes, reps, batch, t, reps * batch / t,
                 str(cost.bound), cap)


def transfer(pre: Deployment, dec: Deployment, input_len: float, rate: float) -> Transfer:
    """One prompt's KV transfer at ``rate`` requests/s (module docstring: ρ, fair share, S/(1 − ρ))."""
    m = pre.model
    kv = float(kv_bytes_for_context(m, input_len, pre.dtypes.kv_dtype))
    b_s, b_r = transfer_bytes(pre, input_len), transfer_bytes(dec, input_len)
    ls, lr = kv_link(pre), kv_link(dec)
    s_s, s_r = b_s / ls.effective_bw + ls.latency, b_r / lr.effective_bw + lr.latency
    lanes_s, lanes_r = transfer_lanes(pre), transfer_lanes(dec)
    rho_s, rho_r = rate * s_s / lanes_s, rate * s_r / lanes_r
    s_busy = s_s if rho_s >= rho_r else s_r
    rho = max(rho_s, rho_r)
    sojourn = s_busy / (1.0 - rho) if rho < 1 else math.inf
    per_req = max(s_s / lanes_s, s_r / lanes_r)  # ρ per request/s
    return Transfer(kv, b_s, b_r, lanes_s, lanes_r, lr.name if rho_r >= rho_s else ls.name, min(ls.effective_bw, lr.effective_bw),
                    max(s_s, s_r), rho_s, rho_r, sojourn, 1.0 / per_req if per_req > 0 else math.inf,
                    queue_discipline())


def _littles_batch(dec: Deployment, capped: Phase, rate: float, input_len, output_len, context) -> float:
    """Sequences per attention group that a decode replica holds at ``rate``: D = (λ/replicas)·(O − 1)·t_d(D)
    (Little's law: each request decodes O − 1 steps), the smallest root in (0, cap], by bisection (t_d grows
    with D; the rate is below the capacity, so the root lies below the cap)."""
    g, lam = dec.par.attention_groups, rate / dec.par.replicas

    def excess(batch: float) -> float:
        t = decode_phase(dec, input_len, output_len, context, batch / g).step_s
        return batch - lam * (output_len - 1) * t
    lo, hi = 0.0, capped.batch
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
    return hi / g


def disaggregated(dep: Deployment, prefill_layout=None, decode_layout=None, input_len: float = 2000,
                  output_len: float = 256, rate: float | None = None, prefill_tokens: float | None = None,
                  decode_batch: float | None = None, decode_context: float | None = None) -> DisaggResult:
    """Both pools' figures and the transfers between them (module docstring). ``prefill_layout`` /
    ``decode_layout``: deploy/pools.py layouts (None: ``dep``'s own); ``rate``: requests/s (None: the
    pair's capacity λ_max); ``prefill_tokens``: tokens per attention group per prefill step (default: the
    engine's token budget); ``decode_batch``: sequences per attention group (default: the caps)."""
    if output_len < 2:
        raise ValueError(f"output_len={output_len} must be >= 2: a decode pool needs a token after the first")
    pre = pool_deployment(dep, prefill_layout, "prefill_layout")
    dec = pool_deployment(dep, decode_layout, "decode_layout")
    notes: list[str] = []
    p = prefill_phase(pre, input_len, prefill_tokens, notes)
    d = decode_phase(dec, input_len, output_len, decode_context, decode_batch)
    link_cap = transfer(pre, dec, input_len, 1.0).max_rate
    limits = {"prefill": p.tok_s / input_len, "decode": d.tok_s / (output_len - 1), "kv-link": link_cap}
    limit = min(limits, key=limits.get)
    max_rate = limits[limit]
    at = max_rate if rate is None else float(rate)
    capped_tok_s = d.tok_s
    if rate is not None and decode_batch is None and at < limits["decode"]:
        d = decode_phase(dec, input_len, output_len, decode_context, _littles_batch(dec, d, at, input_len, output_len,
                                                                                    decode_context))
        d = Phase(*[getattr(d, f) for f in ("role", "layout", "gpus", "nodes", "replicas", "batch", "step_s", "tok_s",
                                            "bound")], cap="Little's law at the rate")
    tr = transfer(pre, dec, input_len, at)
    if rate is not None and rate > max_rate:
        notes.append(f"rate={rate:g} req/s exceeds the pair's capacity {max_rate:.3g} req/s ({limit}); the "
                     f"{limit} queue grows without bound")
    if tr.rho >= 1:
        notes.append(f"KV transfers load the {tr.link} links at rho={tr.rho:.2f} >= 1: they queue without bound")
    return DisaggResult(p, d, tr, float(input_len), float(output_len), at, max_rate, limit,
                        d.step_s + tr.sojourn_s, at / limits["prefill"], at / limits["decode"], capped_tok_s, notes)
