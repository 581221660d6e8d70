"""What the simulator records: per-request state and timestamps, per-token gaps, per-step samples.

Per request (index = position in arrival order): arrival, prompt and output lengths, tokens generated
so far ``G``, tokens cached ``C`` while it is off the GPU (swapped out or in flight between replicas),
blocks parked in host memory, time of its last token, first admission (queue exit), first token,
finish, preemption count. Scalar state lives in Python lists (fast single-element access); the summary
turns them into numpy arrays.

Per-token gaps (ITL samples): every token after the first adds (its time − the previous token's time),
so percentiles over the gaps weight each generated token once.

Per step: (start s, duration s, decode tokens, prefill tokens, waiting, running, KV blocks used,
replica, watts per GPU).
"""
from __future__ import annotations

import math

import numpy as np

from .requests import Request

SAMPLE_FIELDS = ("t_s", "duration_s", "decode_tokens", "prefill_tokens", "waiting", "running", "kv_blocks_used",
                 "replica", "watts_per_gpu")


class Ledger:
    def __init__(self, requests: list[Request]):
        n = len(requests)
        self.ids = [r.id for r in requests]
        self.arrival = [r.arrival_s for r in requests]
        self.P = [r.input_len for r in requests]
        self.O = [r.output_len for r in requests]
        self.G = [0] * n
        self.C = [0] * n
        self.host = [0] * n
        self.last = [math.nan] * n
        self.admit = [math.nan] * n
        self.first = [math.nan] * n
        self.finish = [math.nan] * n
        self.preempts = [0] * n
        self.gap_arrays: list[np.ndarray] = []
        self.gap_scalars: list[float] = []
        self.samples: list[tuple] = []

    def __len__(self) -> int:
        return len(self.arrival)

    def gaps(self) -> np.ndarray:
        """All inter-token gaps (s), one per generated token after each request's first."""
        parts = [a for a in self.gap_arrays if a.size] + [np.asarray(self.gap_scalars, dtype=float)]
        return np.concatenate(parts) if parts else np.zeros(0)

    def sample_array(self) -> np.ndarray:
        """Per-step samples as an (n_steps, len(SAMPLE_FIELDS)) float array."""
        return np.asarray(self.samples, dtype=float).reshape(-1, len(SAMPLE_FIELDS))
