"""Published LLM-serving traces read as the fleet's arrivals: Azure, BurstGPT, Mooncake, and inferbound's own.

Formats (columns as each publisher documents them; data/fleet.yaml ``traces`` cites the files read):

- ``azure``: the Azure LLM inference traces (Azure/AzurePublicDataset, AzureLLMInferenceTrace_{code,conv}.csv
  of 2023 and the week-long ``*_1week.csv`` of 2024): CSV ``TIMESTAMP,ContextTokens,GeneratedTokens``;
  TIMESTAMP is a wall-clock time (``2023-11-16 18:15:46.6805900``, the 2024 files with a UTC offset
  ``+00:00``), converted to UTC seconds.
- ``burstgpt``: BurstGPT (HPMLL/BurstGPT, BurstGPT_*.csv): CSV ``Timestamp,Model,Request tokens,Response
  tokens,Total tokens,Log Type`` (Timestamp in seconds from 0:00 of the first day); BurstGPT_3 adds
  ``Session ID`` (a conversation; empty on API calls) and ``Elapsed time``. Its failed requests have
  ``Response tokens`` = 0 (its README): they are dropped, and the note says how many.
- ``mooncake``: Mooncake's FAST'25 traces (kvcache-ai/Mooncake FAST25-release/traces/*.jsonl): JSON lines
  ``{"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}``, one hash id per 512-token block
  of the prompt (equal ids = a reusable prefix block); an optional ``session_id`` is read too.
- ``inferbound``: the simulator's own trace (CSV or JSONL with ``arrival_s``/``timestamp``, ``input_len``,
  ``output_len``), read by workloads/requests.read_trace.

Every trace is returned as arrays with the first arrival at 0 s:  arrival_s[k] = t[k] − t[0]  (seconds),
stably sorted by arrival when the file is not (a note says so). Rows with 0 prompt tokens cannot be served
and are dropped with a note; an empty output cell is ``-1`` (not given: the fleet draws it). Anything else
that is not a count is a one-line error naming the file, line, column and value. ``fmt=None`` detects the
format from the first line (a JSON object or a CSV header).
"""
from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.datafiles import data_yaml
from ..workloads.requests import read_trace as read_inferbound_trace

FORMATS = ("azure", "burstgpt", "mooncake", "inferbound")
_AZURE = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_BURST = ("Timestamp", "Request tokens", "Response tokens")
_MOON = ("timestamp", "input_length", "output_length")
_ALLOWED = ("azure (CSV: TIMESTAMP, ContextTokens, GeneratedTokens), burstgpt (CSV: Timestamp, Model, Request "
            "tokens, Response tokens, Total tokens, Log Type), mooncake (JSONL: timestamp, input_length, "
            "output_length, hash_ids), inferbound (CSV or JSONL: arrival_s, input_len, output_len)")
_OFFSET = re.compile(r"(?:([+-])(\d\d):?(\d\d)|Z)$")


@dataclass(frozen=True, eq=False)
class Trace:
    """A trace's requests in arrival order, arrays of equal length (module docstring)."""

    arrival_s: np.ndarray  # float64, sorted, from 0
    input_len: np.ndarray  # int64 >= 1
    output_len: np.ndarray  # int64, -1 = not given
    prefix_hashes: tuple[tuple[int, ...], ...] | None  # per request, its blocks' hash ids (Mooncake)
    session_id: np.ndarray | None  # int64 per request, -1 = none (BurstGPT_3 Session ID, Mooncake session_id)
    fmt: str
    source: str  # the file's name
    block_tokens: int | None = None  # tokens per prefix hash block (Mooncake: 512)
    notes: tuple[str, ...] = ()  # what was dropped or reordered, printed by the caller

    def __len__(self) -> int:
        return int(self.arrival_s.size)


def read_trace(path, fmt: str | None = None) -> Trace:
    """The trace at ``path`` in format ``fmt`` (one of FORMATS; None: detected from the first line)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"traffic.trace={str(path)!r} is not a file; allowed: a trace file ({_ALLOWED})")
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"traffic.format={fmt!r} unknown; allowed: {', '.join(FORMATS)}")
    text = path.read_text(encoding="utf-8-sig")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if not first:
        raise ValueError(f"trace {path.name}: no requests (the file is empty)")
    found = _detect(first, path.name)
    if fmt is None:
        fmt = found
    elif found != fmt:
        raise ValueError(f"trace {path.name} line 1: {first[:80]!r} is not the {fmt} format ({_need(fmt)}); "
                         f"it reads as {found}")
    if fmt == "inferbound":
        return _inferbound(path)
    if fmt == "mooncake":
        return _mooncake(text, path.name)
    return _csv(text, path.name, fmt)


def _need(fmt: str) -> str:
    return next(p for p in _ALLOWED.split("), ") if p.startswith(fmt)).rstrip(")") + ")"


def _detect(first: str, name: str) -> str:
    """The format a trace's first line declares (a JSON object's keys, or a CSV header)."""
    if first.lstrip().startswith("{"):
        try:
            keys = set(json.loads(first))
        except (json.JSONDecodeError, TypeError):
            raise ValueError(f"trace {name} line 1: not a JSON object; allowed: {_ALLOWED}") from None
        if set(_MOON) <= keys:
            return "mooncake"
        if {"input_len", "output_len"} <= keys and keys & {"arrival_s", "timestamp"}:
            return "inferbound"
        raise ValueError(f"trace {name} line 1: keys={sorted(keys)} are not a known trace format; allowed: {_ALLOWED}")
    cols = {c.strip() for c in next(csv.reader([first]))}
    if set(_AZURE) <= cols:
        return "azure"
    if set(_BURST) <= cols:
        return "burstgpt"
    if {"input_len", "output_len"} <= cols and cols & {"arrival_s", "timestamp"}:
        return "inferbound"
    raise ValueError(f"trace {name} line 1: header={sorted(cols)} is not a known trace format; allowed: {_ALLOWED}")


def _count(value: str, name: str, line: int, col: str, empty: int | None = None) -> int:
    """An integer token count >= 0 of one cell; ``empty``: the value of an empty cell (None: an error)."""
    v = value.strip() if isinstance(value, str) else value
    if v in ("", None) and empty is not None:
        return empty
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = float("nan")
    if not math.isfinite(f) or f != int(f) or f < 0:
        raise ValueError(f"trace {name} line {line}: {col}={value!r} must be an integer token count >= 0")
    return int(f)


def _counts(values, name: str, lines: list[int], col: str, empty: int | None = None) -> np.ndarray:
    """A column of token counts as int64, vectorised (:func:`_count` names the first bad cell)."""
    vals = [v.strip() for v in values]
    blank = np.array([not v for v in vals]) if empty is not None else None
    try:
        f = np.asarray([v or "0" for v in vals] if empty is not None else vals, dtype=np.float64)
        ok = bool(np.all(np.isfinite(f) & (f == np.floor(f)) & (f >= 0)))
    except ValueError:
        ok = False
    if not ok:
        return np.asarray([_count(v, name, lines[k], col, empty) for k, v in enumerate(values)], dtype=np.int64)
    out = f.astype(np.int64)
    if blank is not None:
        out[blank] = empty
    return out


def _csv(text: str, name: str, fmt: str) -> Trace:
    reader = csv.reader(text.splitlines())
    header = [c.strip() for c in next(reader)]
    tcol, icol, ocol = _AZURE if fmt == "azure" else _BURST
    ti, ii, oi = (header.index(c) for c in (tcol, icol, ocol))
    cfg = data_yaml("fleet.yaml")["traces"]["burstgpt"]
    si = header.index(cfg["session_column"]) if fmt == "burstgpt" and cfg["session_column"] in header else None
    rows, lines = [], []
    for line, row in enumerate(reader, start=2):
        if not row:  # a blank line
            continue
        if len(row) < len(header):
            raise ValueError(f"trace {name} line {line}: {len(row)} columns, the header has {len(header)} ({header})")
        rows.append(row)
        lines.append(line)
    if not rows:
        raise ValueError(f"trace {name}: no requests (a header and no rows)")
    cols = list(zip(*rows))
    stamps = [v.strip() for v in cols[ti]]
    t = _azure_seconds(stamps, name) if fmt == "azure" else _seconds(stamps, name, tcol)
    i = _counts(cols[ii], name, lines, icol)
    o = _counts(cols[oi], name, lines, ocol, empty=-1)
    sess = [v.strip() for v in cols[si]] if si is not None else []
    notes = []
    keep = i >= 1
    if fmt == "burstgpt":
        failed = o == 0
        if failed.any():
            notes.append(f"{int(failed.sum())} failed requests dropped ({ocol} = 0: BurstGPT's failures)")
        keep &= ~failed
    if not keep.all():
        zero = int((i < 1).sum())
        if zero:
            notes.append(f"{zero} requests with {icol} = 0 dropped (nothing to prefill)")
    sid = _codes(sess) if si is not None else None
    return _finish(t, i, o, None, sid, keep, fmt, name, None, notes)


def _seconds(values: list[str], name: str, col: str) -> np.ndarray:
    try:
        t = np.asarray(values, dtype=np.float64)
    except ValueError:
        t = None
    if t is None or not np.isfinite(t).all():
        bad = next(k for k, v in enumerate(values) if not _is_number(v))
        raise ValueError(f"trace {name} line {bad + 2}: {col}={values[bad]!r} must be a number of seconds")
    return t


def _is_number(v: str) -> bool:
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False


def _azure_seconds(values: list[str], name: str) -> np.ndarray:
    """UTC seconds of Azure TIMESTAMPs (naive = UTC; a trailing +HH:MM / Z offset is subtracted)."""
    offs = np.zeros(len(values))
    bare = values
    tails = {v[-6:] for v in values}
    if len(tails) == 1 and _OFFSET.fullmatch(next(iter(tails))):  # one offset for the whole file (+00:00)
        m = _OFFSET.fullmatch(next(iter(tails)))
        offs[:] = (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 3600 + int(m.group(3)) * 60)
        bare = [v[:-6] for v in values]
    elif any(_OFFSET.search(v) for v in values):
        bare = []
        for k, v in enumerate(values):
            m = _OFFSET.search(v)
            if m and m.group(1):
                offs[k] = (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 3600 + int(m.group(3)) * 60)
            bare.append(v[:m.start()] if m else v)
    try:
        ns = np.asarray(bare, dtype="datetime64[ns]").astype(np.int64)
    except ValueError:
        bad = next(k for k, v in enumerate(bare) if not _is_time(v))
        raise ValueError(f"trace {name} line {bad + 2}: TIMESTAMP={values[bad]!r} must be a date and time "
                         f"(e.g. 2023-11-16 18:15:46.6805900)") from None
    return (ns - ns.min()) / 1e9 - offs  # relative first: float64 keeps the nanoseconds


def _is_time(v: str) -> bool:
    try:
        np.datetime64(v, "ns")
        return True
    except ValueError:
        return False


def _codes(labels: list[str]) -> np.ndarray:
    """Session labels as integers in order of first appearance; an empty label is -1 (no session)."""
    ids: dict[str, int] = {}
    return np.fromiter((-1 if not s else ids.setdefault(s, len(ids)) for s in labels), dtype=np.int64,
                       count=len(labels))


def _mooncake(text: str, name: str) -> Trace:
    cfg = data_yaml("fleet.yaml")["traces"]["mooncake"]
    stamps, ins, outs, hashes, sess = [], [], [], [], []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError:
            rec = None
        if not isinstance(rec, dict):
            raise ValueError(f"trace {name} line {line}: not a JSON object")
        for k in _MOON:
            if k not in rec:
                raise ValueError(f"trace {name} line {line}: {k} is missing (keys: {', '.join(cfg['keys'])})")
        t = rec["timestamp"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise ValueError(f"trace {name} line {line}: timestamp={t!r} must be milliseconds >= 0")
        stamps.append(float(t))
        ins.append(_count(rec["input_length"], name, line, "input_length"))
        outs.append(_count(rec["output_length"], name, line, "output_length", empty=-1))
        h = rec.get("hash_ids", [])
        if not isinstance(h, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in h):
            raise ValueError(f"trace {name} line {line}: hash_ids={str(h)[:60]} must be a list of integers")
        hashes.append(tuple(h))
        sess.append(str(rec["session_id"]) if rec.get("session_id") not in (None, "") else "")
    if not stamps:
        raise ValueError(f"trace {name}: no requests")
    i = np.asarray(ins, dtype=np.int64)
    block = int(cfg["block_tokens"])
    notes = []
    off = sum(1 for n, h in zip(ins, hashes) if h and len(h) != -(-n // block))
    if off:
        notes.append(f"{off} requests whose hash_ids are not one per {block}-token block of the prompt "
                     f"(read as given)")
    zero = int((i < 1).sum())
    if zero:
        notes.append(f"{zero} requests with input_length = 0 dropped (nothing to prefill)")
    sid = _codes(sess) if any(sess) else None
    t = np.asarray(stamps) * float(cfg["timestamp_unit_s"])
    return _finish(t, i, np.asarray(outs, dtype=np.int64), tuple(hashes), sid, i >= 1, "mooncake", name, block,
                   notes)


def _inferbound(path: Path) -> Trace:
    reqs = read_inferbound_trace(path)  # its own one-line errors
    t = np.fromiter((r.arrival_s for r in reqs), dtype=np.float64, count=len(reqs))
    i = np.fromiter((r.input_len for r in reqs), dtype=np.int64, count=len(reqs))
    o = np.fromiter((r.output_len for r in reqs), dtype=np.int64, count=len(reqs))
    notes = []
    if any(r.prefix_id >= 0 for r in reqs):
        notes.append("prefix_id/prefix_len of the trace are not carried into the fleet (no block hashes); "
                     "use sessions: or a Mooncake trace for prefix reuse")
    return _finish(t, i, o, None, None, np.ones(len(reqs), dtype=bool), "inferbound", path.name, None, notes)


def _finish(t, i, o, hashes, sid, keep, fmt, name, block, notes) -> Trace:
    """Keep the servable rows, sort by arrival (stable), shift the first arrival to 0."""
    if not keep.all():
        idx = np.flatnonzero(keep)
        t, i, o = t[idx], i[idx], o[idx]
        sid = sid[idx] if sid is not None else None
        hashes = tuple(hashes[k] for k in idx) if hashes is not None else None
    if t.size == 0:
        raise ValueError(f"trace {name}: no servable requests (every row was dropped: {'; '.join(notes)})")
    if np.any(np.diff(t) < 0):
        order = np.argsort(t, kind="stable")
        notes = [*notes, f"rows not in arrival order: sorted by arrival ({int(np.sum(np.diff(t) < 0))} "
                         f"descents in the file)"]
        t, i, o = t[order], i[order], o[order]
        sid = sid[order] if sid is not None else None
        hashes = tuple(hashes[k] for k in order) if hashes is not None else None
    t = np.asarray(t - t[0], dtype=np.float64)
    return Trace(t, i, o, hashes, sid, fmt, name, block, tuple(notes))


__all__ = ["FORMATS", "Trace", "read_trace"]
