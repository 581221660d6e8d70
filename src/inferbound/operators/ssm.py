"""State-space and linear-attention scans of a step (Mamba-1, Mamba-2, Gated DeltaNet layers).

The scan's FLOPs, the recurrent state it reads and writes, and the activations it streams come from
``model.ssm_cost.mixer_cost`` (formulas and sources there), summed over the step's sequence groups
(``StepLoad.seqgroups``: (count, new, past) per group of alike sequences): a decode updates the state
once per token, a prefill chunk scans its tokens and carries the state on. Per GPU the heads are split
over TP (vLLM shards the conv and recurrent state by head), and each attention-DP group scans its own
sequences. The state is a cache like the KV cache: its bytes are reported as ``kv_bytes``. Mamba-1's
selective scan runs on CUDA cores (fp32 arithmetic: the mamba_ssm kernel), Mamba-2's SSD and Gated
DeltaNet's chunked form on tensor cores at the compute dtype.
"""
from __future__ import annotations

from ..deploy.config import Dtypes, Parallelism
from ..model.spec import LayerGroup, ModelSpec
from ..model.ssm_cost import mixer_cost
from .op import Op, _act_bytes, _group_label


def mixer_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, layers: list[LayerGroup], seqgroups) -> list[Op]:
    """One scan operator per state-space layer group of ``layers`` for the step's ``seqgroups``."""
    groups = [g for g in layers if g.ssm_kind is not None]
    if not groups or m.ssm is None:
        return []
    per = par.attention_groups * par.tp
    flops = state = act = 0.0
    for count, new, past in seqgroups:
        c = mixer_cost(m.ssm, count, new, past, act_dtype=dt.act if dt.act != "fp4" else "fp8",
                       state_dtype=dt.high_precision)
        flops, state, act = flops + c.flops, state + c.state_bytes, act + c.act_bytes
    # Mamba-1's scan and Griffin's RG-LRU (elementwise, accumulated in float32: RecurrentGemmaRglru._rnn_scan)
    # run on CUDA cores
    scan_dtype = "fp32" if m.ssm.kind in ("mamba", "rglru") else None
    return [Op("ssm_scan", "scan", g.count, flops=flops / per, act_bytes=act / per, kv_bytes=state / per,
               group=_group_label(g), dtype=scan_dtype) for g in groups]
