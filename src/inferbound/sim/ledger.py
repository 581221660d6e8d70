"""What the simulator records: per-request state and timestamps, per-token gaps, per-step samples.

Per request (index = position in arrival order): arrival, prompt and output lengths, tokens generated
so far, tokens cached while it is off the GPU (swapped out or in flight between replicas), blocks
parked in host memory, time of its last token, first admission (queue exit), first token, finish,
preemption count, its shared prefix (id, length) and the prompt tokens its admissions found cached.
Speculative decoding: the verify passes run and the tokens they yielded (their ratio is the measured τ).
Scalar state lives in Python lists (fast single-element access); the summary turns them into numpy arrays.

Per-token gaps (ITL samples): every token after the first adds (its time − the previous token's time),
so percentiles over the gaps weight each generated token once. A sequence that also decoded in the
previous step of its replica waits exactly that step's duration, so a step records its duration once
with the count of such sequences, and the other gaps one by one: the gaps of a million-request run
take a few values per step, not one per token. ``gap_values`` expands them; ``gap_stats`` gives the
mean and percentiles of the expanded sample exactly (numpy's linear interpolation over order
statistics, found through the cumulative counts).

Per step: (start s, duration s, decode tokens, prefill tokens, waiting, running, KV blocks used,
replica, watts per GPU), appended to a flat float array.
"""
from __future__ import annotations

import math
from array import array

import numpy as np

from ..workloads.requests import Request

SAMPLE_FIELDS = ("t_s", "duration_s", "decode_tokens", "prefill_tokens", "waiting", "running", "kv_blocks_used",
                 "replica", "watts_per_gpu")


class Ledger:
    keeps_samples = True  # record_step_values keeps them (a ledger that drops them says False: it is not sent any)

    def __init__(self, requests: list[Request]):
        n = len(requests)
        self.ids = [r.id for r in requests]
        self.arrival = [r.arrival_s for r in requests]
        self.prompt = [r.input_len for r in requests]
        self.output = [r.output_len for r in requests]
        self.generated = [0] * n
        self.cached = [0] * n
        self.host_blocks = [0] * n
        self.last_s = [math.nan] * n
        self.admit_s = [math.nan] * n
        self.first_s = [math.nan] * n
        self.finish_s = [math.nan] * n
        self.preempts = [0] * n
        self.prefix_id = [r.prefix_id for r in requests]
        self.prefix_len = [r.prefix_len for r in requests]
        self.hit_tokens = [0] * n  # prompt tokens found in the prefix cache (all admissions)
        self.computed_tokens = [0] * n  # prompt (and recomputed) tokens prefilled
        self.verify_passes = 0  # speculative decoding: sequences verified ...
        self.verify_tokens = 0  # ... and the tokens they yielded
        self._gap_step = array("d")    # a step's duration ...
        self._gap_count = array("d")   # ... and how many sequences waited exactly that long
        self._gap_other: list[np.ndarray] = []
        self._gap_scalar = array("d")
        self._samples = array("d")

    def __len__(self) -> int:
        return len(self.arrival)

    def extend(self, requests: list[Request]) -> None:
        """Append requests (arriving no earlier than those held) in place, as ``__init__`` records them: the
        hook of a replica that receives its requests window by window (fleet/replica.py). Lists are
        extended, never rebound, so every reference the scheduler holds stays valid."""
        n = len(requests)
        self.ids.extend(r.id for r in requests)
        self.arrival.extend(r.arrival_s for r in requests)
        self.prompt.extend(r.input_len for r in requests)
        self.output.extend(r.output_len for r in requests)
        for name, fill in (("generated", 0), ("cached", 0), ("host_blocks", 0), ("last_s", math.nan),
                           ("admit_s", math.nan), ("first_s", math.nan), ("finish_s", math.nan), ("preempts", 0),
                           ("hit_tokens", 0), ("computed_tokens", 0)):
            getattr(self, name).extend([fill] * n)
        self.prefix_id.extend(r.prefix_id for r in requests)
        self.prefix_len.extend(r.prefix_len for r in requests)

    # -- recording ---------------------------------------------------------------------------------
    def record_gaps(self, end: float, last: np.ndarray, start: float) -> None:
        """Gaps end − last of the decoding sequences of a step that ran from ``start`` to ``end``."""
        same = last == start
        k = int(np.count_nonzero(same))
        if k:
            self._gap_step.append(end - start)
            self._gap_count.append(k)
        if k < last.size:
            self._gap_other.append(end - last[~same])

    def record_equal_gaps(self, gap: float, count: int) -> None:
        """``count`` gaps of ``gap`` s: what record_gaps records when every ``last`` equals ``start``
        (gap = end − start)."""
        self._gap_step.append(gap)
        self._gap_count.append(count)

    def record_equal_gap_run(self, gaps, count: int) -> None:
        """``count`` gaps of each value of ``gaps``: record_equal_gaps for every step of a run of decode-only
        steps (sim/decode_run.py) in one call."""
        if isinstance(gaps, np.ndarray):  # a float64 array: its bytes at once
            self._gap_step.frombytes(gaps.astype(float, copy=False).tobytes())
            self._gap_count.frombytes(np.full(gaps.size, float(count)).tobytes())
            return
        self._gap_step.extend(gaps)
        self._gap_count.extend([float(count)] * len(gaps))

    def record_same_time(self, count: int) -> None:
        """``count`` tokens that arrive in the same step as the one before them (accepted drafts): gaps 0."""
        if count:
            self._gap_step.append(0.0)
            self._gap_count.append(count)

    def record_gap(self, gap: float) -> None:
        self._gap_scalar.append(gap)

    def record_step(self, *fields) -> None:
        self._samples.extend(fields)

    def record_step_values(self, values) -> None:
        """Samples of several steps at once: their fields in order, step after step (as record_step each); a
        list of floats or a flat float64 array."""
        if isinstance(values, np.ndarray):
            self._samples.frombytes(values.astype(float, copy=False).tobytes())
            return
        self._samples.extend(values)

    # -- reading -----------------------------------------------------------------------------------
    def _weighted_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        others = [a for a in self._gap_other if a.size] + [np.array(self._gap_scalar, dtype=float)]
        other = np.concatenate(others) if others else np.zeros(0)
        values = np.concatenate([np.array(self._gap_step, dtype=float), other])
        counts = np.concatenate([np.array(self._gap_count, dtype=float), np.ones(other.size)])
        return values, counts

    def gap_values(self) -> np.ndarray:
        """All inter-token gaps (s), one per generated token after each request's first (unordered)."""
        v, c = self._weighted_gaps()
        return np.repeat(v, c.astype(np.int64))

    def gap_stats(self, percents) -> tuple[float | None, list[float | None]]:
        """(mean, [percentiles]) of the gaps, as np.mean / np.percentile of gap_values() would give."""
        v, c = self._weighted_gaps()
        n = c.sum()
        if n == 0:
            return None, [None for _ in percents]
        order = np.argsort(v, kind="stable")
        v, cum = v[order], np.cumsum(c[order])

        def nth(k: float) -> float:  # k-th order statistic (0-based) of the expanded sample
            return float(v[np.searchsorted(cum, k + 1)])
        out = []
        for p in percents:
            h = (n - 1) * p / 100
            lo = math.floor(h)
            a, b = nth(lo), nth(min(lo + 1, n - 1))
            out.append(a + (h - lo) * (b - a))
        return float((v * c[order]).sum() / n), out

    def sample_array(self) -> np.ndarray:
        """Per-step samples as an (n_steps, len(SAMPLE_FIELDS)) float array."""
        return np.array(self._samples, dtype=float).reshape(-1, len(SAMPLE_FIELDS))
