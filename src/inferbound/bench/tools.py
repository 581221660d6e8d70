"""Every load tool's command line to its Protocol: ``trtllm-bench`` (trtllm.py), ``guidellm benchmark``
(guidellm.py), and the serving clients of load.py (``vllm bench serve``, ``benchmark_serving.py``,
``sglang.bench_serving``, ``genai-perf profile``)."""
from __future__ import annotations

from . import load
from .argv import split
from .guidellm import parse_guidellm
from .load import Protocol
from .trtllm import parse_trtllm_bench

TRTLLM_TOOLS = ("trtllm-throughput", "trtllm-latency")


def parse_load(command: str | list[str]) -> Protocol:
    """The Protocol of a load tool's command line; one-line ValueErrors naming the tool, flag and value."""
    w = split(command)
    if w[:1] == ["trtllm-bench"]:
        return parse_trtllm_bench(w[1:])
    if w[:2] == ["guidellm", "benchmark"]:
        return parse_guidellm(w[2:])
    return load.parse_load(w)
