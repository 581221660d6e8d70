"""Request workloads for the simulator: a Poisson stream, length distributions, trace files.

- Poisson arrivals at rate λ, conditioned on their realized rate: n exponential gaps are drawn and
  scaled by (n/λ)/Σ gaps, so the n-th request arrives at exactly n/λ. Given its count in [0, T], a
  Poisson process has its arrivals spread as the order statistics of uniforms on [0, T], which is what
  the normalized gaps are; the run is thus one of a Poisson stream at exactly the nominal rate. Unscaled,
  500 gaps drawn with seed 0 sum to 548 mean gaps, and a run meant at λ ran at 91 % of it. Arrival k
  is the sum of k gaps (the first request arrives after one gap). ``rate=inf`` sends every request at
  t = 0 (an offline batch, the overload case).
- Lengths: ``fixed`` (every request the given length), ``uniform:LO:HI`` (integers LO..HI inclusive),
  ``normal:MEAN:STD`` (rounded, a draw below 1 set to 1 and counted: ``poisson_noted`` says "k of N
  prompt lengths drawn below 1 were set to 1"; the share is Φ((0.5 − MEAN)/STD), 13 % for ShareGPT-8k's
  2340±2088.8 prompts), ``exponential[:MEAN]`` (ceil of an exponential of that mean, default the given
  length; the heavy tail of chat workloads; >= 1 but for a draw of exactly 0, counted likewise).
- Trace files: CSV with a header naming ``arrival_s`` (or ``timestamp``), ``input_len``,
  ``output_len``; or JSONL, one object per line with the same keys. Arrival times are seconds.
  Optional ``prefix_id`` (an integer >= 0: requests with the same id share their first tokens, e.g. a
  system prompt or a conversation's history) and ``prefix_len`` (how many of the prompt's tokens are
  that shared prefix, 1..input_len) feed the prefix cache (sim/prefix.py); both or neither.

All draws come from ``numpy.random.default_rng(seed)`` in a fixed order (gaps, then input lengths,
then output lengths), so the same seed gives the same workload.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DISTS = "fixed, uniform:LO:HI, normal:MEAN:STD, exponential[:MEAN]"


@dataclass(frozen=True)
class Request:
    """One request: arrival time (s), prompt tokens, tokens to generate."""

    id: int
    arrival_s: float
    input_len: int
    output_len: int
    prefix_id: int = -1  # shared prefix (sim/prefix.py); -1: none
    prefix_len: int = 0  # tokens of the prompt that are the shared prefix


def _check_len(field: str, value, where: str = "") -> int:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}{field}={value!r} must be an integer >= 1") from None
    if not math.isfinite(v) or v != int(v) or v < 1:
        raise ValueError(f"{where}{field}={value!r} must be an integer >= 1")
    return int(v)


def draw_lengths(spec: str | None, base: int, n: int, rng: np.random.Generator, field: str) -> np.ndarray:
    """``n`` integer lengths >= 1 from a distribution spec (see module docstring); ``draw_lengths_raised``
    also counts the draws below 1 that were set to 1."""
    return draw_lengths_raised(spec, base, n, rng, field)[0]


def _at_least_one(drawn: np.ndarray) -> tuple[np.ndarray, int]:
    """The draws with those below 1 set to 1, and how many were."""
    low = drawn < 1
    return np.where(low, 1, drawn).astype(np.int64), int(low.sum())


def draw_lengths_raised(spec: str | None, base: int, n: int, rng: np.random.Generator,
                        field: str) -> tuple[np.ndarray, int]:
    """(``n`` integer lengths >= 1 from a distribution spec, how many draws fell below 1 and were set to 1)."""
    base = _check_len(field, base)
    if spec is None or spec == "fixed":
        return np.full(n, base, dtype=np.int64), 0
    name, *args = spec.split(":")
    try:
        vals = [float(a) for a in args]
    except ValueError:
        raise ValueError(f"{field}_dist={spec!r} has a non-numeric parameter; allowed: {DISTS}") from None
    if name == "uniform" and len(vals) == 2 and 1 <= vals[0] <= vals[1]:
        return rng.integers(int(vals[0]), int(vals[1]) + 1, size=n), 0
    if name == "normal" and len(vals) == 2 and vals[1] >= 0:
        return _at_least_one(np.rint(rng.normal(vals[0], vals[1], size=n)))
    if name == "exponential" and len(vals) <= 1 and (vals or [base])[0] > 0:
        mean = vals[0] if vals else base
        return _at_least_one(np.ceil(rng.exponential(mean, size=n)))
    raise ValueError(f"{field}_dist={spec!r} unknown or with bad parameters; allowed: {DISTS}")


def poisson(rate: float, n: int, input_len: int, output_len: int, seed: int = 0,
            input_dist: str | None = None, output_dist: str | None = None) -> list[Request]:
    """``n`` requests with Poisson arrivals at ``rate`` req/s (``inf``: all at t = 0); ``poisson_noted``
    also gives the notes on lengths drawn below 1 (a face that shows notes calls that)."""
    return poisson_noted(rate, n, input_len, output_len, seed, input_dist, output_dist)[0]


def poisson_noted(rate: float, n: int, input_len: int, output_len: int, seed: int = 0,
                  input_dist: str | None = None, output_dist: str | None = None) -> tuple[list[Request], list[str]]:
    """(:func:`poisson`'s requests, a note per length field with draws below 1 set to 1)."""
    rate = float(rate)
    if not rate > 0:
        raise ValueError(f"rate={rate!r} must be > 0 requests/s (or inf)")
    if int(n) != n or n < 1:
        raise ValueError(f"requests={n!r} must be an integer >= 1")
    n = int(n)
    rng = np.random.default_rng(seed)
    if math.isinf(rate):
        arrivals = np.zeros(n)
    else:
        gaps = rng.exponential(1.0 / rate, size=n)
        arrivals = np.cumsum(gaps * ((n / rate) / gaps.sum()))  # the realized rate is the nominal one
    ins, raised_in = draw_lengths_raised(input_dist, input_len, n, rng, "input")
    outs, raised_out = draw_lengths_raised(output_dist, output_len, n, rng, "output")
    notes = [f"{k} of {n} {what} lengths drawn below 1 were set to 1 ({field}_dist={spec})"
             for k, what, field, spec in ((raised_in, "prompt", "input", input_dist),
                                          (raised_out, "output", "output", output_dist)) if k]
    return [Request(i, float(a), int(p), int(o)) for i, (a, p, o) in enumerate(zip(arrivals, ins, outs))], notes


_ARRIVAL_KEYS = ("arrival_s", "timestamp")


def _prefix(rec: dict, where: str, input_len: int) -> tuple[int, int]:
    """(prefix_id, prefix_len) of a trace row: both given or neither; id >= 0, 1 <= len <= input_len."""
    has = [k for k in ("prefix_id", "prefix_len") if rec.get(k) not in (None, "")]
    if not has:
        return -1, 0
    if len(has) == 1:
        missing = ({"prefix_id", "prefix_len"} - set(has)).pop()
        raise ValueError(f"{where}{missing} is missing (prefix_id and prefix_len go together)")
    try:
        pid = float(rec["prefix_id"])
    except (TypeError, ValueError):
        pid = float("nan")
    if not math.isfinite(pid) or pid != int(pid) or pid < 0:
        raise ValueError(f"{where}prefix_id={rec['prefix_id']!r} must be an integer >= 0")
    plen = _check_len("prefix_len", rec["prefix_len"], where)
    if plen > input_len:
        raise ValueError(f"{where}prefix_len={plen} must be <= input_len={input_len}")
    return int(pid), plen


def _row(rec: dict, where: str) -> tuple:
    key = next((k for k in _ARRIVAL_KEYS if k in rec and rec[k] not in (None, "")), None)
    if key is None:
        raise ValueError(f"{where}arrival_s is missing (columns: arrival_s or timestamp, input_len, output_len)")
    try:
        t = float(rec[key])
    except (TypeError, ValueError):
        t = float("nan")
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"{where}{key}={rec[key]!r} must be a number of seconds >= 0")
    for k in ("input_len", "output_len"):
        if k not in rec or rec[k] in (None, ""):
            raise ValueError(f"{where}{k} is missing (columns: arrival_s or timestamp, input_len, output_len)")
    i = _check_len("input_len", rec["input_len"], where)
    return (t, i, _check_len("output_len", rec["output_len"], where), *_prefix(rec, where, i))


def read_trace(path: str | Path) -> list[Request]:
    """Requests from a CSV (header row) or JSONL trace, ids in file order (the event loop orders by arrival)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"trace={str(path)!r} is not a file")
    text = path.read_text()
    rows: list[tuple] = []
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson") or text.lstrip().startswith("{")
    if jsonl:
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"trace {path.name} line {i}: "
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise ValueError(f"{where}not a JSON object") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{where}not a JSON object")
            rows.append(_row(rec, where))
    else:
        reader = csv.DictReader(text.splitlines())
        fields = {f.strip() for f in reader.fieldnames or []}
        if not fields & set(_ARRIVAL_KEYS) or not {"input_len", "output_len"} <= fields:
            raise ValueError(f"trace {path.name} line 1: header={sorted(fields)} must name arrival_s "
                             f"(or timestamp), input_len, output_len")
        for i, rec in enumerate(reader, start=2):
            rows.append(_row({k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in rec.items() if k},
                             f"trace {path.name} line {i}: "))
    if not rows:
        raise ValueError(f"trace {path.name}: no requests")
    return [Request(i, *r) for i, r in enumerate(rows)]
