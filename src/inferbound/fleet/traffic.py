"""A day of traffic: diurnal Poisson arrivals, multi-turn sessions, or a published trace.

Diurnal rate (requests/s):   λ(t) = mean · (1 + a · sin(2π t / period)),   a = peak_to_mean − 1
so the peak is mean·(1 + a) = mean · peak_to_mean and the mean over a whole period is ``mean``
(peak_to_mean in [1, 2] keeps λ >= 0). Arrivals are drawn by thinning (Lewis and Shedler, "Simulation of
nonhomogeneous Poisson processes by thinning", Naval Research Logistics Quarterly 26(3), 1979): a
homogeneous Poisson process at λ_max = mean·(1 + a), each point t kept with probability λ(t)/λ_max.
The generator is ``numpy.random.default_rng(seed)``: the same seed gives the same day.

Sessions (``sessions: {turns: N, think_time: Z}``): sessions start as the diurnal process at λ(t)/N, so the
request rate stays λ(t); each turn after the first has a think time Z', exponential of mean Z. This module
draws the plan, with turn k + 1 timed Z' after turn k's arrival; the fleet run (fleet/closed_loop.py) times
it Z' after turn k's last token instead (closed loop), keeping the plan's prompts and think times. Turn
k + 1's prompt is the whole previous context (its prompt and reply) plus a new user message of the drawn
input length: that previous context is the turn's shared prefix (prefix_id = the session, prefix_len =
the previous context), which the replica's prefix cache reuses when the turn lands where it was cached.

Pool prefixes (``with_pool_prefixes``): a pool's ``prefix_hit_rate``, ``shared_prefix_len`` and
``prefix_groups`` give every request that names no prefix of its own the one ``simulate`` gives it
(deploy/prefix.request_prefix of its index: the system prompt of ``shared_prefix_len`` tokens, one of
``prefix_groups`` drawn per request, or the leading ⌊h·I⌋ tokens), as sim/__init__.py ``_with_prefixes`` does,
before routing: a shared prefix is the traffic's (the same system prompts reach every pool), so the pools
stating one must state the same, and prefix-affinity routing sees it. Prefixes the traffic names (sessions,
a Mooncake trace) win, as in ``simulate``.

Lengths: a dataset profile's published means (and spread, normal, where published) or fixed
``input_len``/``output_len``; a trace's own lengths win, its missing output lengths (-1) are drawn.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..deploy.prefix import active as prefix_active, groups as prefix_groups, request_prefix
from ..workloads.lengths import dataset_profile
from ..workloads.requests import Request, draw_lengths_raised
from .spec import FleetSpec


@dataclass(frozen=True)
class Arrivals:
    """The fleet's requests in arrival order (``id`` = index), each one's session (-1: none), notes."""

    requests: tuple[Request, ...]
    session: np.ndarray  # int64 per request
    duration_s: float  # the traffic's window: the stated duration, or the last arrival of a trace
    notes: tuple[str, ...] = ()
    source: str = ""

    def __len__(self) -> int:
        return len(self.requests)


def rate_at(t, mean: float, peak_to_mean: float, period: float):
    """λ(t) of the module docstring (vectorised over t)."""
    return mean * (1.0 + (peak_to_mean - 1.0) * np.sin(2.0 * math.pi * np.asarray(t, dtype=float) / period))


def diurnal_times(mean: float, peak_to_mean: float, period: float, duration: float,
                  rng: np.random.Generator) -> np.ndarray:
    """Arrival times in [0, duration) of the diurnal Poisson process, by thinning (module docstring)."""
    lam_max = mean * peak_to_mean
    n = rng.poisson(lam_max * duration)  # points of the homogeneous process on [0, duration) ...
    t = np.sort(rng.uniform(0.0, duration, n))  # ... are uniform given their count
    keep = rng.uniform(0.0, 1.0, n) * lam_max < rate_at(t, mean, peak_to_mean, period)
    return t[keep]


def lengths_of(spec: FleetSpec) -> tuple[int, int, str | None, str | None, list[str]]:
    """(input_len, output_len, input_dist, output_dist, notes) the traffic's lengths are drawn from."""
    t = spec.traffic
    if t.dataset is not None:
        name, p = dataset_profile(t.dataset)
        if p.get("input_mean") is None or p.get("output_mean") is None:
            raise ValueError(f"traffic.dataset={t.dataset!r}: its mean lengths are not published; allowed: "
                             f"a dataset with published means, or input_len and output_len")
        i, o = int(round(p["input_mean"])), int(round(p["output_mean"]))
        if p.get("input_std") is None or p.get("output_std") is None:
            return i, o, None, None, [f"dataset {name}: no published spread, every request at its mean lengths "
                                      f"({i} in, {o} out)"]
        return (i, o, f"normal:{p['input_mean']}:{p['input_std']}", f"normal:{p['output_mean']}:{p['output_std']}",
                [f"dataset {name}: normal lengths from its published moments"])
    if t.input_len is None or t.output_len is None:
        raise ValueError("traffic: the lengths are missing; allowed: dataset: NAME, or input_len and output_len")
    return t.input_len, t.output_len, None, None, []


def _draw(dist, base, n, rng, field, notes: list) -> np.ndarray:
    """``n`` lengths as workloads/requests.draw_lengths_raised draws them; the count of draws below 1 that
    were set to 1 goes into ``notes`` in the words simulate uses (requests.poisson_noted)."""
    drawn, k = draw_lengths_raised(dist, base, n, rng, field)
    if k:
        what = "prompt" if field == "input" else "output"
        notes.append(f"{k} of {n} {what} lengths drawn below 1 were set to 1 ({field}_dist={dist})")
    return drawn


def generate(spec: FleetSpec) -> Arrivals:
    """The arrivals of a fleet file with ``traffic.rate`` (module docstring)."""
    r, t = spec.traffic.rate, spec.traffic
    rng = np.random.default_rng(spec.seed)
    i_len, o_len, i_dist, o_dist, notes = lengths_of(spec)
    turns = spec.sessions.turns if spec.sessions is not None else 1
    starts = diurnal_times(r.mean / turns, r.peak_to_mean, r.period, t.duration, rng)
    if turns == 1:
        n = starts.size
        notes = list(notes)
        ins = _draw(i_dist, i_len, n, rng, "input", notes)
        outs = _draw(o_dist, o_len, n, rng, "output", notes)
        reqs = tuple(Request(k, float(a), int(i), int(o)) for k, (a, i, o) in enumerate(zip(starts, ins, outs)))
        return Arrivals(reqs, np.full(n, -1, dtype=np.int64), t.duration, tuple(notes), "diurnal Poisson")
    return _sessions(spec, starts, rng, (i_len, o_len, i_dist, o_dist), notes)


def _sessions(spec: FleetSpec, starts: np.ndarray, rng, lens, notes) -> Arrivals:
    i_len, o_len, i_dist, o_dist = lens
    turns, z = spec.sessions.turns, spec.sessions.think_time
    s = starts.size
    notes = list(notes)
    new_in = _draw(i_dist, i_len, s * turns, rng, "input", notes).reshape(s, turns)
    outs = _draw(o_dist, o_len, s * turns, rng, "output", notes).reshape(s, turns)
    gaps = rng.exponential(z, (s, turns)) if z > 0 else np.zeros((s, turns))
    gaps[:, 0] = 0.0
    when = starts[:, None] + np.cumsum(gaps, axis=1)
    rows = []  # (arrival, session, prompt, output, prefix_len)
    for j in range(s):
        context = 0
        for k in range(turns):
            if when[j, k] >= spec.traffic.duration:
                break
            prompt = context + int(new_in[j, k])
            rows.append((float(when[j, k]), j, prompt, int(outs[j, k]), context))
            context = prompt + int(outs[j, k])
    rows.sort(key=lambda x: (x[0], x[1]))
    reqs = tuple(Request(k, a, p, o, sess if plen > 0 else -1, plen) for k, (a, sess, p, o, plen) in enumerate(rows))
    session = np.fromiter((x[1] for x in rows), dtype=np.int64, count=len(rows))
    notes = [*notes, f"sessions: {turns} turns, think time exponential of mean {z:g} s, here after each turn's "
                     f"arrival (the plan; the fleet run times it after the reply); a turn's prompt carries the "
                     f"whole previous context as its shared prefix"]
    return Arrivals(reqs, session, spec.traffic.duration, tuple(notes), f"{s} diurnal sessions")


def from_trace(spec: FleetSpec, read_trace) -> Arrivals:
    """The arrivals of a fleet file with ``traffic.trace``: ``read_trace(path, fmt)`` (fleet/traces.py) gives
    the published columns; output lengths the trace lacks (-1) are drawn from the traffic's lengths. A
    trace's prefix hash ids (Mooncake: one id per ``block_tokens`` = 512-token block of the prompt) name its
    first block's hash as the shared prefix, of the tokens of the leading blocks it shares with earlier
    requests of that first block."""
    tr = read_trace(spec.traffic.trace, spec.traffic.format)
    n = int(tr.arrival_s.size)
    outs = np.asarray(tr.output_len, dtype=np.int64).copy()
    notes = [f"trace {tr.source} ({tr.fmt}): {n} requests", *tr.notes]
    missing = outs < 1
    if missing.any():
        _, o_len, _, o_dist, more = lengths_of(spec)
        notes += [f"{int(missing.sum())} output lengths not in the trace: drawn from the traffic's lengths", *more]
        outs[missing] = _draw(o_dist, o_len, int(missing.sum()), np.random.default_rng(spec.seed), "output", notes)
    horizon = spec.traffic.duration
    pids, plens = _trace_prefixes(tr, n)
    reqs, sess = [], []
    for k in range(n):
        a = float(tr.arrival_s[k])
        if horizon is not None and a >= horizon:
            break
        reqs.append(Request(len(reqs), a, int(tr.input_len[k]), int(outs[k]), pids[k], plens[k]))
        sess.append(int(tr.session_id[k]) if tr.session_id is not None else -1)
    if horizon is not None and len(reqs) < n:
        notes.append(f"traffic.duration {horizon:g} s keeps the first {len(reqs)} of the trace's {n} requests")
    dur = horizon if horizon is not None else (reqs[-1].arrival_s if reqs else 0.0)
    return Arrivals(tuple(reqs), np.asarray(sess, dtype=np.int64), dur, tuple(notes), str(tr.source))


def _trace_prefixes(tr, n: int) -> tuple[list[int], list[int]]:
    """(prefix_id, prefix_len) per request from the trace's hash ids: the leading blocks a request shares with
    any earlier request of the same first block are its prefix (id: that first block's hash)."""
    if tr.prefix_hashes is None:
        return [-1] * n, [0] * n
    seen: dict[int, tuple] = {}  # first hash -> longest hash chain seen under it
    pids, plens = [], []
    for k in range(n):
        h = tuple(tr.prefix_hashes[k])
        if not h:
            pids.append(-1)
            plens.append(0)
            continue
        prev = seen.get(h[0], ())
        common = next((j for j, (a, b) in enumerate(zip(h, prev)) if a != b), min(len(h), len(prev)))
        plen = min(common * int(tr.block_tokens), int(tr.input_len[k]))
        pids.append(int(h[0]) if plen > 0 else -1)
        plens.append(plen)
        if len(h) > len(prev):
            seen[h[0]] = h
    return pids, plens


def with_pool_prefixes(arrivals: Arrivals, runtimes: list, names: list[str]) -> Arrivals:
    """The arrivals with the shared prefix the pools' runtimes state (module docstring, "Pool prefixes")."""
    stated = [(n, rt) for n, rt in zip(names, runtimes) if prefix_active(rt)]
    if not stated:
        return arrivals
    key = [(rt.prefix_hit_rate, rt.shared_prefix_len, prefix_groups(rt)) for _, rt in stated]
    for (n, _), k in zip(stated[1:], key[1:]):
        if k != key[0]:
            raise ValueError(f"pools[{n}]: prefix_hit_rate, shared_prefix_len, prefix_groups = {k} differ from "
                             f"pools[{stated[0][0]}]'s {key[0]}; allowed: the same in every pool that states them "
                             f"(a shared prefix is the traffic's)")
    if any(r.prefix_id >= 0 for r in arrivals.requests):
        return replace(arrivals, notes=(*arrivals.notes, "the traffic names its own shared prefixes (sessions or a "
                                                         "trace): the pools' prefix options add none (as simulate)"))
    rt = stated[0][1]
    reqs = []
    for r in arrivals.requests:
        pid, plen = request_prefix(rt, r.input_len, r.id)
        reqs.append(replace(r, prefix_id=pid, prefix_len=plen) if plen > 0 else r)
    off = [n for n, rt in zip(names, runtimes) if not rt.prefix_caching]
    h, s, g = key[0]
    what = f"{s} shared tokens in {g} group(s)" if s else f"the leading {h:g} of each prompt"
    notes = [f"shared prefixes from pools[{stated[0][0]}]: {what} (deploy/prefix.py, as simulate)"]
    if off:
        notes.append(f"pools {', '.join(off)} run without prefix caching: no hits there")
    return replace(arrivals, requests=tuple(reqs), notes=(*arrivals.notes, *notes))
