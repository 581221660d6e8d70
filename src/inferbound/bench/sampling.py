"""Request lengths and send times with each load tool's own semantics (data/bench.yaml ``range_ratio``,
``arrivals``: each rule's source).

Lengths (L, O: the requested input and output lengths, r: ``--random-range-ratio``, n requests):

- ``symmetric`` (``vllm bench serve``, vllm/benchmarks/datasets.py RandomDataset.get_sampling_params):
  input uniform integers in [floor(L(1−r)), ceil(L(1+r))], output in [max(floor(O(1−r)), 1),
  max(ceil(O(1+r)), 1)], 0 <= r < 1, drawn with ``numpy.random.default_rng(seed).integers`` (inputs
  first), as the tool does. The tool subtracts the tokenizer's special tokens from L before sampling and
  the server adds them back; inferbound has no tokenizer and samples L itself.
- ``lower_fraction`` (older ``benchmark_serving.py``, SGLang ``bench_serving``): uniform integers in
  [int(L r), L] (SGLang: [max(int(L r), 1), L] for inputs) and [int(O r), O], drawn with the legacy
  ``numpy.random`` generator seeded with ``seed`` (``np.random.seed``; inputs first), as the tools do.
  An output of 0 tokens (possible when int(O r) = 0) is counted as 1: a request yields at least one token.
- ``gaussian`` (genai-perf): input max(0, int(gauss(mean, std))), output int(max(1, gauss(mean, std)))
  (synthetic_prompt_generator.py, base_converter.py), Python's ``random.Random(seed)``; inputs first.

Send times (s after the benchmark starts; rate λ, burstiness b):

- ``gamma_normalized`` (vllm bench serve): gaps g_i ~ Gamma(shape b, scale 1/(λ b)), times the running sums
  scaled so the last one is n/λ; the first request waits its own gap (b = inf: every gap 1/λ).
  Generator: ``np.random`` seeded with ``seed`` (main_async seeds it; the random dataset keeps its own
  default_rng), so the same draws.
- ``gamma_trailing`` / ``exponential_trailing`` (older vLLM, SGLang): the first request at 0, then one gap
  (gamma as above / exponential of mean 1/λ) before each next request, unscaled; the sender sleeps one
  more gap after the last, so the run lasts at least until then.
- ``constant`` (perf_analyzer's default distribution): request k at k/λ, k = 1..n.
With λ = inf every request is sent at 0.
"""
from __future__ import annotations

import math
import random

import numpy as np


def symmetric(L: int, O: int, r: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if not 0.0 <= r < 1.0:
        raise ValueError(f"--random-range-ratio={r!r}; allowed: 0 <= r < 1 (vllm bench serve samples "
                         f"[len*(1-r), len*(1+r)])")
    lo_i, hi_i = math.floor(L * (1 - r)), math.ceil(L * (1 + r))
    lo_o, hi_o = max(math.floor(O * (1 - r)), 1), max(math.ceil(O * (1 + r)), 1)
    if lo_i < 1:
        raise ValueError(f"--random-input-len={L} with --random-range-ratio={r}: the shortest prompt would be "
                         f"{lo_i} tokens; allowed: floor(len*(1-r)) >= 1")
    rng = np.random.default_rng(seed)
    return rng.integers(lo_i, hi_i + 1, size=n), rng.integers(lo_o, hi_o + 1, size=n)


def lower_fraction(L: int, O: int, r: float, n: int, seed: int, input_floor: int = 0):
    """(inputs, outputs, the generator after the draws, outputs of 0 counted as 1)."""
    if not 0.0 <= r <= 1.0:
        raise ValueError(f"--random-range-ratio={r!r}; allowed: 0 <= r <= 1 (this tool samples [int(len*r), len])")
    lo_i = max(int(L * r), input_floor)
    if lo_i < 1 and L < 1:
        raise ValueError(f"--random-input-len={L}; allowed: an integer >= 1")
    rs = np.random.RandomState(seed)
    ins = rs.randint(lo_i, L + 1, size=n)
    outs = rs.randint(int(O * r), O + 1, size=n)
    zeros = int(np.count_nonzero(outs == 0)) + int(np.count_nonzero(ins == 0))
    return np.maximum(ins, 1), np.maximum(outs, 1), rs, zeros


def gaussian(in_mean: int, in_std: float, out_mean: int, out_std: float, n: int, seed: int):
    """(inputs, outputs, prompts of 0 tokens counted as 1)."""
    rng = random.Random(seed)
    ins = [max(0, int(rng.gauss(in_mean, in_std))) for _ in range(n)]
    outs = [int(max(1, rng.gauss(out_mean, out_std))) for _ in range(n)]
    zeros = sum(1 for x in ins if x == 0)
    return np.maximum(np.array(ins, dtype=np.int64), 1), np.array(outs, dtype=np.int64), zeros


def send_times(kind: str, rate: float, n: int, seed: int, burstiness: float = 1.0,
               rs: np.random.RandomState | None = None) -> tuple[np.ndarray, float]:
    """(send time of each request, when the sender is done) under ``kind`` (module docstring)."""
    if not rate > 0:
        raise ValueError(f"--request-rate={rate!r}; allowed: a number of requests/s > 0, or inf")
    if not burstiness > 0:
        raise ValueError(f"--burstiness={burstiness!r}; allowed: a number > 0")
    if math.isinf(rate):
        return np.zeros(n), 0.0
    if kind == "constant":
        t = np.arange(1, n + 1) / rate
        return t, float(t[-1])
    if kind == "gamma_normalized":
        if math.isinf(burstiness):  # get_request: "the delay time becomes constant", 1/rate
            t = np.arange(1, n + 1) / rate
            return t, float(t[-1])
        g = np.random.RandomState(seed).gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)
        t = np.cumsum(g)
        t = t * ((n / rate) / t[-1])
        return t, float(t[-1])
    rs = rs if rs is not None else np.random.RandomState(seed)
    if kind == "gamma_trailing":
        gaps = rs.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=n)
    elif kind == "exponential_trailing":
        gaps = rs.exponential(1.0 / rate, size=n)
    else:
        raise ValueError(f"arrivals={kind!r} unknown; allowed: gamma_normalized, gamma_trailing, "
                         f"exponential_trailing, constant")
    t = np.concatenate([[0.0], np.cumsum(gaps[:-1])])
    return t, float(t[-1] + gaps[-1])
