"""Collective cost: alpha-beta model per algorithm, on the links a group's placement gives.

n ranks, S bytes, β = link bandwidth per direction × efficiency, α = latency per step
(Thakur, Rabenseifner & Gropp 2005; NCCL's algorithm set; TensorRT-LLM's custom all-reduce):

    all-reduce  ring        2(n−1)·α + 2(n−1)/n · S/β
                tree        2⌈log2 n⌉·α + 2·S/β           (NCCL double binary tree)
                one-shot    α + (n−1)·S/β                  (each rank reads every peer: switch fabric)
                two-shot    2α + 2(n−1)/n · S/β            (reduce-scatter + all-gather, one step each)
                NVLS        2α + S/β                       (NVLink SHARP: the switch reduces, multicasts)
    all-gather / reduce-scatter (S = full tensor)   (n−1)·α + (n−1)/n · S/β
    all-to-all  (S = bytes a rank holds for all)    (n−1)·α + (n−1)/n · S/β
    point-to-point                                   α + S/β

A group spanning islands or machines runs hierarchically: all-reduce = reduce-scatter inside
(n_local, S) + all-reduce across (n_spans, S/n_local, outer link) + all-gather inside;
all-gather / reduce-scatter likewise; all-to-all sends the remote share over the outer link while the
local share moves inside (the slower sets the time). The fastest algorithm the fabric supports wins
unless one is forced. Every function broadcasts over numpy arrays of S.
"""
from __future__ import annotations

import math

import numpy as np

from ..hardware import GPU
from ..deploy.config import COLLECTIVE_ALGOS
from ..deploy.topology import Link, Placement

ALGORITHMS = COLLECTIVE_ALGOS  # the one list (deploy/config.py)


def _ar_flat(algo: str, S, n: int, link: Link):
    """One algorithm's all-reduce time (module docstring) on a flat group of n ranks."""
    if n <= 1:
        return S * 0.0
    a, b = link.latency, link.effective_bw
    if algo == "ring":
        return 2 * (n - 1) * a + 2 * (n - 1) / n * S / b
    if algo == "tree":
        return 2 * math.ceil(math.log2(n)) * a + 2 * S / b
    if algo == "oneshot":
        return a + (n - 1) * S / b
    if algo == "twoshot":
        return 2 * a + 2 * (n - 1) / n * S / b
    if algo == "nvls":
        return 2 * a + S / b
    raise ValueError(f"collective_algo={algo!r} unknown; allowed: {', '.join(ALGORITHMS)}")


def _fastest(times: dict):
    """(elementwise minimum, the algorithm that wins most often) of {algorithm: time}."""
    names = list(times)
    if len(names) == 1:
        return times[names[0]], names[0]
    if all(np.ndim(t) == 0 for t in times.values()):
        name = min(names, key=lambda k: float(times[k]))
        return times[name], name
    stack = np.stack(np.broadcast_arrays(*[np.asarray(times[k], dtype=float) for k in names]))
    idx = np.argmin(stack, axis=0)
    return np.take_along_axis(stack, idx[None], axis=0)[0], names[int(np.bincount(idx.ravel()).argmax())]


def _gather_flat(S, n: int, link: Link):
    if n <= 1:
        return S * 0.0
    return (n - 1) * link.latency + (n - 1) / n * S / link.effective_bw


def allowed_algorithms(gpu: GPU, pl: Placement) -> list[str]:
    """All-reduce algorithms the fabric supports for this placement."""
    algos = ["ring", "tree"]
    single_island = pl.spans == 1 and pl.inner.name != "PCIe"
    if single_island and gpu.nvlink:
        algos += ["oneshot", "twoshot"]
        if gpu.nvls:
            algos.append("nvls")
    return algos


def all_reduce(S, pl: Placement, gpu: GPU, algo: str = "auto"):
    """(time, algorithm) of an all-reduce of S bytes per rank."""
    allowed = allowed_algorithms(gpu, pl)
    if algo != "auto" and algo not in allowed:
        raise ValueError(f"collective_algo={algo!r} is not available for a {pl.size}-GPU group over "
                         f"{pl.inner.name}{' + ' + pl.outer.name if pl.outer else ''} on {gpu.id}; "
                         f"allowed: {', '.join(allowed)}")
    candidates = allowed if algo == "auto" else [algo]
    if pl.spans > 1:  # hierarchical: RS inside, AR across (ring or tree, per size), AG inside
        inner = 2 * _gather_flat(S, pl.local, pl.inner)
        across_algos = ("ring", "tree") if algo == "auto" else (algo,)
        across, label = _fastest({a: _ar_flat(a, S / max(pl.local, 1), pl.spans, pl.outer) for a in across_algos})
        return inner + across, f"hierarchical-{label}"
    return _fastest({a: _ar_flat(a, S, pl.size, pl.inner) for a in candidates})


def all_gather(S, pl: Placement, gpu: GPU):
    """(time, algorithm) of an all-gather whose output is S bytes per rank (reduce-scatter: same cost)."""
    S = np.asarray(S, dtype=float)
    if pl.spans > 1:
        return _gather_flat(S, pl.local, pl.inner) + _gather_flat(S / max(pl.local, 1), pl.spans, pl.outer), \
            "hierarchical-ring"
    return _gather_flat(S, pl.size, pl.inner), "ring"


def remote_node_share(experts: float, topk: float, nodes: int) -> float:
    """Share of a token's k expert copies that crosses the network when it is sent once per remote node
    (DeepEP normal kernels): a token's k experts, drawn uniformly among E spread evenly over N nodes, miss a
    node with probability P = Π_{i<k} (E − E/N − i)/(E − i), so it reaches (N − 1)(1 − P) remote nodes on
    average, (N − 1)(1 − P)/k of its k copies' bytes."""
    per = experts / nodes
    miss = 1.0
    for i in range(int(topk)):
        miss *= max(experts - per - i, 0.0) / (experts - i)
    return (nodes - 1) * (1.0 - miss) / topk


def all_to_all(S, pl: Placement, gpu: GPU, node_dedup: tuple | None = None):
    """(time, algorithm) of an all-to-all in which each rank holds S bytes spread over all ranks.

    ``node_dedup`` = (E, k): the MoE dispatch/combine of DeepEP's normal kernels (github.com/deepseek-ai/DeepEP
    README, "normal kernels": NVLink-to-RDMA forwarding; SGLang --deepep-mode normal): a token's data crosses
    the network once per remote node, S·remote_node_share(E, k, nodes) bytes, and is forwarded inside the
    node over NVLink, (local − 1)/local of S; the slower leg sets the time."""
    S = np.asarray(S, dtype=float)
    n = pl.size
    if n <= 1:
        return np.zeros_like(S), "none"
    if pl.spans == 1:
        return _gather_flat(S, n, pl.inner), "pairwise"
    if node_dedup is not None:
        share = remote_node_share(node_dedup[0], node_dedup[1], pl.spans)
        local = (pl.local - 1) / pl.local * S / pl.inner.effective_bw + (pl.local - 1) * pl.inner.latency
        remote = share * S / pl.outer.effective_bw + (pl.spans - 1) * pl.outer.latency
        return np.maximum(local, remote), "deepep node-dedup"
    local = (pl.local - 1) / n * S / pl.inner.effective_bw + (pl.local - 1) * pl.inner.latency
    remote = (n - pl.local) / n * S / pl.outer.effective_bw + (pl.spans - 1) * pl.outer.latency
    return np.maximum(local, remote), "hierarchical-pairwise"


def p2p(S, link: Link):
    """Point-to-point send of S bytes: α + S/β."""
    return link.latency + np.asarray(S, dtype=float) / link.effective_bw, "p2p"


def collective_time(kind: str, S, pl: Placement, gpu: GPU, algo: str = "auto", node_dedup: tuple | None = None):
    """Dispatch by collective kind; returns (seconds, algorithm label). ``node_dedup``: all_to_all's."""
    if kind == "all_reduce":
        return all_reduce(S, pl, gpu, algo)
    if kind in ("all_gather", "reduce_scatter"):
        return all_gather(S, pl, gpu)
    if kind == "all_to_all":
        return all_to_all(S, pl, gpu, node_dedup)
    if kind == "p2p":
        return p2p(S, pl.outer or pl.inner)
    raise ValueError(f"collective kind={kind!r} unknown; allowed: all_reduce, all_gather, reduce_scatter, all_to_all, p2p")
