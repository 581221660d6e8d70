"""Engine run modes a launch flag switches: multi-step scheduling, eager execution (no CUDA graphs), and the
stream interval.

``scheduler_steps`` N (vLLM V0 ``--num-scheduler-steps N``, engines.yaml ``scheduler_steps``: vLLM 0.6.x-0.7.x,
https://github.com/vllm-project/vllm/pull/7000; V1 has no such mode): one scheduler call runs N decode steps of
the same batch, no prompt is admitted in between, and the batch's tokens reach the client at the end of the N
steps (vLLM v0.6.0, the version the public rows ran; later V0 releases added ``multi_step_stream_outputs``,
default True, streaming each step: not modelled, said in a note). The simulator (sim/decode_run.py ``burst``) and the
analytic serving model (workloads/multistep.py) price it.

``cuda_graphs`` off (SGLang ``--disable-cuda-graph``, vLLM ``--enforce-eager``): every step runs eagerly, so
each kernel pays its own fixed cost (pricing/graphs.py: the graph plan of a capture cap 0 is eager) and no
graph memory is kept. ``on`` keeps the profile's graph mode and is refused for a profile that captures none.

``stream_interval`` k (SGLang ``--stream-interval k``, TensorRT-LLM ``stream_interval: k`` in the options YAML;
engines.yaml ``stream_interval``, default 1): the engine
hands a request's tokens to the client every k tokens, so a streaming benchmark records one inter-token gap
per chunk of k decode steps; the steps themselves are unchanged (workloads/streaming.py prices what the client
sees). Refused above 1 for a profile without the setting (not read from its sources) and beside multi-step
scheduling (no engine has both).
"""
from __future__ import annotations

from typing import NamedTuple

MODES = ("scheduler_steps", "cuda_graphs", "stream_interval", "recv_interval")
GRAPH_CHOICES = ("on", "off")


class Modes(NamedTuple):
    steps: int  # decode steps per scheduler call (1: one step per call)
    graphs: bool  # False: eager, whatever the profile captures
    notes: tuple
    stream: int = 1  # tokens per streamed chunk (SGLang --stream-interval)
    stream_first: str = "at_once"  # engines.yaml stream_interval.first: when the first chunk leaves
    recv: int = 1  # SGLang --scheduler-recv-interval k: new requests received every k decode steps (_recv)


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
    stream, first = _stream(p, given.get("stream_interval"), steps, notes)
    recv = _recv(p, given.get("recv_interval"), notes)
    return Modes(steps, graphs, tuple(notes), stream, first, recv)


def _count(name: str, k) -> int:
    """``k`` as an integer >= 1, else a one-line ValueError naming ``name``."""
    if isinstance(k, bool) or not isinstance(k, (int, float)) or int(k) != k or k < 1:
        raise ValueError(f"{name}={k!r} must be an integer >= 1")
    return int(k)


def _recv(p, k, notes: list) -> int:
    """SGLang ``--scheduler-recv-interval k`` (engines.yaml ``recv_interval``; SchedulerRecvSkipper): the scheduler
    takes in new requests only when a counter of the forward passes since it last did reaches k, a decode step
    counting 1 and any prefill (extend) step 1000, so a request that arrives during decode-only steps waits up to k
    of them; after a prefill step the next pass receives. Refused above 1 for a profile without the setting."""
    ri = p.recv_interval
    if k is None:
        return int(ri.value) if ri is not None else 1
    k = _count("recv_interval", k)
    if k > 1 and ri is None:
        raise ValueError(f"recv_interval={k}: engine={p.key!r} has no --scheduler-recv-interval read from its sources; "
                         f"allowed: recv_interval=1, or an SGLang 0.5 engine")
    if k > 1:
        notes.append(f"scheduler recv interval {k} (--scheduler-recv-interval {k}): a request arriving while the batch "
                     f"decodes waits for the scheduler's next receive, up to {k} decode steps (a prefill step resets it)")
    return k


def _stream(p, k, steps: int, notes: list) -> tuple[int, str]:
    """(k, first-chunk rule) of profile ``p`` with the override ``k`` (None: the profile's default)."""
    si = p.stream_interval
    first = si.first if si is not None else "at_once"
    if k is None:
        return (int(si.value) if si is not None else 1), first
    k = _count("stream_interval", k)
    if k > 1 and si is None:
        raise ValueError(f"stream_interval={k}: engine={p.key!r} has no stream interval read from its sources; "
                         f"allowed: stream_interval=1, or an SGLang (--stream-interval) or TensorRT-LLM 1.x "
                         f"(stream_interval in the options YAML) engine")
    if k > 1 and steps > 1:
        raise ValueError(f"stream_interval={k} with scheduler_steps={steps}: no engine has both; allowed: one of them")
    if k > 1:
        when = {"at_once": f"the first token at once, then every {k} tokens",
                "at_once_then_multiple": f"the first token at once, then at tokens {k}, {2 * k}, ...",
                }.get(first, f"the first chunk at token {k} (the first token waits {k - 1} decode steps), then "
                             f"every {k} tokens")
        notes.append(f"stream interval {k} ({si.flag} {k}): tokens reach the client in chunks, {when}; "
                     f"ITL is the gap between chunks (about {k} decode steps), TPOT (E2E − TTFT)/(O − 1)")
    return k, first
