"""Expert parallelism with redundant experts (EPLB): physical expert slots, and the MoE load imbalance.

SGLang's ``--ep-num-redundant-experts N`` (python/sglang/srt/server_args.py, ``ep_num_redundant_experts:
int = 0``; eplb/expert_location.py: ``num_physical_experts = num_logical_experts + ep_num_redundant_experts``,
``num_local_physical_experts = num_physical_experts // ep_size``) adds N copies of hot experts that
DeepSeek's EPLB (https://github.com/deepseek-ai/EPLB) places from the workload's expert statistics:

    slots          = E + N                  physical experts of one MoE layer
    experts/GPU    = (E + N) / ep           must be an integer (deploy/layout.py refuses it otherwise)
    routed weights = P_routed · (E + N)/E / group   per GPU (deploy/memory_terms.py)

so DeepSeek-V3's 256 routed experts with N = 32 make 288 = 72·4 slots: EP72 (LMSYS blog 2025-05-05).

The busiest GPU carries ``imbalance`` times the mean MoE token load: without redundant experts the GPU's
``efficiency.moe_imbalance`` (data/efficiency.yaml), with them data/disagg.yaml ``eplb.imbalance_with_eplb``
(1.18, from the blog's EP32 prefill profile), or the GPU's figure where that is smaller (EPLB never
places worse than the trivial placement).
"""
from __future__ import annotations

from ..base.datafiles import data_yaml


def eplb_data() -> dict:
    return data_yaml("disagg.yaml")["eplb"]


def expert_slots(num_experts: int, redundant: int) -> int:
    """Physical experts of one MoE layer: E + N."""
    return int(num_experts) + int(redundant)


def experts_per_gpu(num_experts: int, redundant: int, ep: int) -> float:
    """(E + N)/ep: the expert copies each GPU of the EP group holds (an integer when the layout is valid)."""
    return expert_slots(num_experts, redundant) / ep


def smallest_redundant(num_experts: int, ep: int) -> int:
    """The fewest redundant experts N >= 0 with (E + N) divisible by ep (for the error message)."""
    return (-num_experts) % ep


def moe_imbalance(par, gpu_imbalance: float) -> float:
    """Busiest-GPU MoE load over the mean: 1 without EP; with EP the GPU's figure, or EPLB's with
    redundant experts (module docstring)."""
    if par.ep <= 1:
        return 1.0
    if par.redundant_experts > 0:
        # EPLB never places worse than the trivial placement: the smaller of the two
        return min(float(gpu_imbalance), float(eplb_data()["imbalance_with_eplb"]["value"]))
    return float(gpu_imbalance)
