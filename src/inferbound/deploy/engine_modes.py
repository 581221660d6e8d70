"""Two engine run modes a launch flag switches: multi-step scheduling and eager execution (no CUDA graphs).

``scheduler_steps`` N (vLLM V0 ``--num-scheduler-steps N``, engines.yaml ``scheduler_steps``: vLLM 0.6.x-0.7.x,
https://github.com/vllm-project/vllm/pull/7000; V1 has no such mode): one scheduler call runs N decode steps of
the same batch, no prompt is admitted in between, and the batch's tokens reach the client at the end of the N
steps (vLLM v0.6.0, the version the public rows ran; later V0 releases added ``multi_step_stream_outputs``,
default True, streaming each step: not modelled, said in a note). The simulator (sim/decode_run.py ``burst``) and the
analytic serving model (workloads/multistep.py) price it.

``cuda_graphs`` off (SGLang ``--disable-cuda-graph``, vLLM ``--enforce-eager``): every step runs eagerly, so
each kernel pays its own fixed cost (pricing/graphs.py: the graph plan of a capture cap 0 is eager) and no
graph memory is kept. ``on`` keeps the profile's graph mode and is refused for a profile that captures none.
"""
from __future__ import annotations

from typing import NamedTuple

MODES = ("scheduler_steps", "cuda_graphs")
GRAPH_CHOICES = ("on", "off")


class Modes(NamedTuple):
    steps: int  # decode steps per scheduler call (1: one step per call)
    graphs: bool  # False: eager, whatever the profile captures
    notes: tuple


def settings(p, given: dict) -> Modes:
    """The modes of profile ``p`` with the overrides in ``given`` (runtime.resolve's), one-line errors."""
    notes = []
    steps = int(p.scheduler_steps.value) if p.scheduler_steps is not None else 1
    n = given.get("scheduler_steps")
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, (int, float)) or int(n) != n or n < 1:
            raise ValueError(f"scheduler_steps={n!r} must be an integer >= 1")
        if p.scheduler_steps is None and n != 1:
            raise ValueError(f"scheduler_steps={n!r}: engine={p.key!r} has no multi-step scheduling (a vLLM V0 mode, "
                             f"removed in V1); allowed: scheduler_steps=1, or engine vllm@0.6.3 (vLLM 0.5-0.7)")
        steps = int(n)
        if steps > 1:
            notes.append(f"multi-step scheduling: {steps} decode steps per scheduler call, their tokens streamed at "
                         f"the end of the {steps} steps as vLLM v0.6.0 did (--multi-step-stream-outputs of later "
                         f"V0 releases not modelled)")
    g = given.get("cuda_graphs")
    graphs = True
    if g is not None:
        if g not in GRAPH_CHOICES:
            raise ValueError(f"cuda_graphs={g!r} unknown; allowed: {', '.join(GRAPH_CHOICES)}")
        captures = p.cuda_graphs is not None and p.cuda_graphs.mode.value != "none"
        if g == "on" and not captures:
            raise ValueError(f"cuda_graphs='on': engine={p.key!r} captures no CUDA graphs; allowed: off")
        graphs = g == "on"
        if not graphs and captures:
            notes.append("CUDA graphs off (--disable-cuda-graph / --enforce-eager): every kernel's launch cost "
                         "is paid eagerly")
    return Modes(steps, graphs, tuple(notes))
