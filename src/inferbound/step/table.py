"""The step contract (step.py) tabulated for one deployment: a cache over the step's token count.

Of a step's operators (``operators.stage_ops``) only the attention kernels depend on more than the
step's new tokens T and sampled sequences S: everything else of stage i (``body_ops``: embedding,
projections, MLP/experts, norms, collectives) is a function of T alone and the LM head (``head_ops``)
of S alone. ``StepModel`` prices those two once over a grid of micro-batch sizes (one vectorized
``roofline.price_ops`` call per stage) and, per step, adds the attention operators built from the
step's load (``operators.attention_ops``) and the pipeline formula (``step.combine``):

    stage i of one micro-batch = body_i(T/m) + head(S/m) [last stage] + attention_i(load/m)

``grid_points=None`` tabulates every T = 0..max_tokens (exact at integer T: the simulator);
a number tabulates that many points (dense up to 64, geometric above) and interpolates linearly
(max-throughput sweeps; < 0.5 % from the exact step, see tests). :meth:`price` returns the full
:class:`~inferbound.pricing.roofline.StepCost` (split, bound); :meth:`uniform` prices arrays of steady-state
steps; the simulator's scalar path (``step``, ``decode_run``: the same tables and attention operator on
Python floats) is the mixin :class:`~inferbound.step.table_scalar.ScalarSteps`.
A step the engine replays from a CUDA graph is priced as step.price prices it (contract.graph_step: the body
at the padded T, graph_delta added to each stage); the tables reach the largest padded T.
"""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import numpy as np

from ..base.numeric import fast_ndim
from ..deploy.deployment import Deployment
from ..pricing.energy import power_w
from ..operators import _merged_groups, attention_ops, body_ops, head_ops, mixer_ops
from ..pricing.roofline import SPLIT_KEYS, Work, attention_dtype, price_ops
from .contract import (StepLoad, combine, graph_delta, graph_plan, graph_step, micro_batches, send_seconds,
                       stages_of, uniform)
from ..pricing import graphs as G
from ..pricing.collectives import comm_pricer_of
from .table_scalar import ScalarSteps

class _Table:
    """A piece of stage work tabulated over the grid: one row per split key, collective kind, FLOPs
    and bytes, so one lookup interpolates every field at once (as np.interp: linear, clamped)."""

    def __init__(self, w: Work, grid: np.ndarray):
        self.kinds = list(w.comm_kinds)
        rows = [w.split[k] for k in SPLIT_KEYS] + [w.comm_kinds[k] for k in self.kinds] + [w.flops, w.bytes]
        self.rows = np.stack([np.broadcast_to(np.asarray(r, dtype=float), grid.shape) for r in rows])
        self.grid = grid
        self.exact = bool(grid.size > 1 and grid[-1] == grid.size - 1)

    def at(self, x) -> Work:
        if self.exact and np.ndim(x) == 0 and float(x).is_integer():
            col = self.rows[:, int(x)]
        else:
            g = self.grid
            x = np.asarray(x, dtype=float)
            # np.clip, without its Python dispatch (the same values; NaN propagates alike)
            i = np.minimum(np.maximum(np.searchsorted(g, x, side="right") - 1, 0), g.size - 2)
            f = np.minimum(np.maximum((x - g[i]) / (g[i + 1] - g[i]), 0.0), 1.0)
            col = self.rows[:, i] * (1.0 - f) + self.rows[:, i + 1] * f
        n = len(SPLIT_KEYS)
        return Work({k: col[j] for j, k in enumerate(SPLIT_KEYS)},
                    {k: col[n + j] for j, k in enumerate(self.kinds)}, col[-2], col[-1])

    def field(self, key: str) -> np.ndarray:
        """One row by name: a split key, 'flops' or 'bytes'."""
        names = list(SPLIT_KEYS) + self.kinds + ["flops", "bytes"]
        return self.rows[names.index(key)]


class _Shaped:
    """An operator's kernel shape (and collective size) at another token count, as the pricers read it."""

    __slots__ = ("shape", "comm")

    def __init__(self, shape: dict | None, comm: dict | None = None):
        self.shape, self.comm = shape, comm


def _coef(x, top: float) -> float:
    """c of a quantity linear in T (c·T), from its value at the grid's last point T = top."""
    return float(np.asarray(x, dtype=float).reshape(-1)[-1]) / top if top > 0 else 0.0


_FINE_CACHE: OrderedDict = OrderedDict()  # curve op priced on a fine token grid, shared across step models


@lru_cache(maxsize=64)
def fine_grid(top: float) -> np.ndarray:
    """Every token count up to 512, then steps of 0.5 % up to ``top``: the grid the curve-priced operators
    of a grid table are priced on (the curves are smooth at that scale: efficiency.gemm_spread = 5 %).
    Read-only: one array per ``top``, shared by the step models."""
    grid = _fine_grid(top)
    grid.flags.writeable = False
    return grid


def _fine_grid(top: float) -> np.ndarray:
    dense = np.arange(0.0, min(512.0, top) + 1.0)
    if top <= 512:
        return dense
    n = int(np.ceil(np.log(top / 512.0) / np.log(1.005))) + 1
    return np.unique(np.concatenate([dense, np.geomspace(512.0, top, n), [top]]))


class _Exact:
    """The curve-priced operators of a grid table (GEMMs, MoE, collectives), priced at the step's own
    token count: kernel times step with tile waves and padding, and an engine switches all-reduce kernels
    at a message size, which linear interpolation between the table's grid points would smooth away
    (about 1 % of a step). Their shapes and sizes scale linearly with T (m = c·T, bytes = c·T). GEMM and
    MoE times are priced once on ``fine_grid`` (every T to 512, 0.5 % steps above: within 0.1 % of the
    curve) and shared by every step model of the same GPU, engine and shape (a search's layouts);
    collectives are priced at T itself. FLOPs and bytes stay in the table (linear in T).

    On the fine grid the ops' times are summed once per split key (``_rows``): compute Σ_j n_j·c_j,
    overhead Σ_j n_j·o_j, and the memory time n_j·m_j shared out over weights, KV and activations in
    the proportion of the op's bytes of each kind (interpolated from the table's rows at the fine
    points). A step reads those five rows at its T (linear between fine points: at every T up to 512
    and at the fine points above, the per-op sum itself)."""

    KEYS = ("compute", "weights", "kv", "activations", "overhead")

    def __init__(self, ops: list, colls: list, grid: np.ndarray, kp, comm, compute_dtype: str, att_dtype: str):
        self.ops, self.colls, self.kp, self.comm, self.cdt, self.att = ops, colls, kp, comm, compute_dtype, att_dtype
        top = float(grid[-1])
        self.coef = [_coef(op.shape["moe"]["tokens"] if "moe" in op.shape else op.shape["m"], top) for op in ops]
        self.ccoef = [_coef(op.comm["bytes"], top) for op in colls]
        self.fine = fine_grid(top)
        self.rows = self._rows(grid) if ops else None

    def _rows(self, grid: np.ndarray) -> np.ndarray:
        """(5, fine points): the ops' summed compute, weights, KV, activations and overhead seconds."""
        split = dict.fromkeys(self.KEYS, 0.0)
        for op, c in zip(self.ops, self.coef):
            comp, mem, over = self._table(op, c)
            wb, kb, ab = (np.interp(self.fine, grid, np.broadcast_to(np.asarray(getattr(op, k), dtype=float), grid.shape))
                          for k in ("weight_bytes", "kv_bytes", "act_bytes"))
            share = mem * op.count / np.maximum(wb + kb + ab, 1e-30)
            split["compute"] = split["compute"] + comp * op.count
            split["weights"] = split["weights"] + share * wb
            split["kv"] = split["kv"] + share * kb
            split["activations"] = split["activations"] + share * ab
            split["overhead"] = split["overhead"] + over * op.count
        return np.stack([np.broadcast_to(np.asarray(split[k], dtype=float), self.fine.shape) for k in self.KEYS])

    def _table(self, op, c):
        """(compute s, memory s, overhead s) of one instance of ``op`` on the fine grid, memoized."""
        kp = self.kp
        sh = {k: v for k, v in op.shape.items() if k != "m"}
        if "moe" in sh:
            sh["moe"] = {k: v for k, v in sh["moe"].items() if k != "tokens"}
        key = (kp.gpu.id, tuple(sorted(kp.gpu.peak_flops.items())), kp.bw, kp.engine_key, tuple(sorted(kp.factors.items())),
               kp.spread, kp.skew, self.cdt, self.att, repr(sorted(sh.items())), c, float(self.fine[-1]))
        hit = _FINE_CACHE.get(key)
        if hit is None:
            (_, _, comp, mem, over), = kp.price([self._at(op, c, self.fine)], self.cdt, self.att).values()
            hit = tuple(np.broadcast_to(np.asarray(a, dtype=float), self.fine.shape).copy() for a in (comp, mem, over))
            _FINE_CACHE[key] = hit
            if len(_FINE_CACHE) > 4096:
                _FINE_CACHE.popitem(last=False)
        return hit

    @staticmethod
    def _at(op, c, x):
        sh = op.shape
        if "moe" in sh:
            return _Shaped({**sh, "moe": {**sh["moe"], "tokens": c * x}})
        return _Shaped({**sh, "m": c * x})

    def work(self, x) -> Work:
        x = np.asarray(x, dtype=float)
        split = dict.fromkeys(SPLIT_KEYS, 0.0)
        kinds: dict = {}
        if self.rows is not None:
            for key, row in zip(self.KEYS, self.rows):
                split[key] = np.interp(x, self.fine, row)
        for op, c in zip(self.colls, self.ccoef):
            t, _ = self.comm(_Shaped(None, {**op.comm, "bytes": c * x}))
            split["communication"] = split["communication"] + t * op.count
            kinds[op.comm["kind"]] = kinds.get(op.comm["kind"], 0.0) + t * op.count
        return Work(split, kinds, 0.0, 0.0)


_OPS_CACHE: OrderedDict = OrderedDict()  # (model, dtypes, par, stage, grid) -> body and head ops
KEPT_WORKS = 1 << 16  # body/head Works kept per step model (StepModel._stage_works), the oldest dropped first


def _keep(memo: dict, key, value) -> None:
    """Keep ``value`` under ``key`` in a step model's Work memo, bounded by KEPT_WORKS entries."""
    if len(memo) >= KEPT_WORKS:
        del memo[next(iter(memo))]
    memo[key] = value


def _stage_ops(dep: Deployment, stage: int, grid: np.ndarray):
    """(body ops over the grid, head ops over the grid or None) of one stage; memoized, since GPUs,
    calibrations and overrides re-price the same work (a search prices each layout on every GPU)."""
    m, dt, par = dep.model, dep.dtypes, dep.par
    imb = dep.gpu.efficiency.moe_imbalance
    sampler = dep.runtime.sampler_bytes
    key = (m, dt, par, stage, grid.size, float(grid[-1]), imb, sampler)
    hit = _OPS_CACHE.get(key)
    if hit is None:
        layers, first, last = stages_of(dep)[stage]
        hit = (body_ops(m, dt, par, grid, layers, first, last, imb), head_ops(m, dt, par, grid, sampler) if last else None)
        _OPS_CACHE[key] = hit
        if len(_OPS_CACHE) > 1024:
            _OPS_CACHE.popitem(last=False)
    return hit


class StepModel(ScalarSteps):
    """Tabulated step prices of one deployment (module docstring); its scalar path: ScalarSteps."""

    def __init__(self, dep: Deployment, max_tokens: int, grid_points: int | None = None):
        self.dep = dep
        g, dt = dep.gpu, dep.dtypes
        self.max_tokens = int(max_tokens)
        plan = self._plan = graph_plan(dep)
        # a graph step's body is priced at its padded T, up to the largest captured size on every rank
        top = self.max_tokens if plan.decode == G.EAGER and plan.mixed == G.EAGER else \
            max(self.max_tokens, int(plan.cap) * dep.par.attention_groups)
        if grid_points is None or grid_points >= top + 1:
            t = np.arange(top + 1, dtype=float)
        else:
            t = np.unique(np.concatenate([np.arange(0, min(64, top) + 1),
                                          np.round(np.geomspace(64, max(top, 64), grid_points)),
                                          [top]])).astype(float)
        self.grid, self.exact = t, t.size == top + 1
        self.stages = stages_of(dep)
        pricer = comm_pricer_of(dep)
        kp = self._kernels = pricer.kernels
        att = attention_dtype(g, dep.compute_dtype, dt.kv_dtype)
        on_grid = not self.exact and kp is not None and kp.curves is not None

        def priced(ops):
            """(table, exact part): on a grid the curve-priced GEMM/MoE ops are priced at the step's T."""
            if not on_grid:
                return _Table(price_ops(ops, g, dep.compute_dtype, dt.kv_dtype, pricer), t), None
            cov = kp.covers(ops, dep.compute_dtype)
            colls = [op for op in ops if op.kind == "collective"]
            rest = [op for j, op in enumerate(ops) if j not in cov and op.kind != "collective"]
            curve = [ops[j] for j in sorted(cov)]
            w = price_ops(rest, g, dep.compute_dtype, dt.kv_dtype, pricer)
            w = w + Work(dict.fromkeys(SPLIT_KEYS, 0.0), {}, sum(np.asarray(op.flops, dtype=float) * op.count for op in curve),
                         sum(np.asarray(op.bytes, dtype=float) * op.count for op in curve))
            ex = _Exact(curve, colls, t, kp, pricer, dep.compute_dtype, att) if curve or colls else None
            return _Table(w, t), ex
        self.body, self.head, self._exact_body, self._exact_head = [], None, [], None
        for i in range(len(self.stages)):
            body, head = _stage_ops(dep, i, t)
            tab, ex = priced(body)
            self.body.append(tab)
            self._exact_body.append(ex)
            if head is not None:
                self.head, self._exact_head = priced(head)
        self.pp = dep.par.pp
        self._scalar = None
        self._works: dict = {}  # (stage, T, graph kind) -> body Work; ("head", S) -> head Works (_stage_works)

    # -- the contract, tabulated -------------------------------------------------------------------
    def _stage_works(self, mb: StepLoad, kind=G.EAGER) -> list[Work]:
        dep = self.dep
        out = []
        # plain-number T and S (a simulator step): the body and head Work of each are kept per step model,
        # the same Work objects added in the same order, so the same floats (tests/test_sim_spec_parity.py)
        memo = self._works if fast_ndim(mb.tokens) == 0 and fast_ndim(mb.sampled) == 0 and fast_ndim(kind) == 0 \
            else None
        for i, ((layers, first, last), body, ex) in enumerate(zip(self.stages, self.body, self._exact_body)):
            key = None if memo is None else (i, float(mb.tokens), kind)
            w = None if key is None else memo.get(key)
            if w is None:
                w = body.at(mb.tokens)
                d = graph_delta(dep, i, kind)
                if not (np.ndim(d) == 0 and d == 0.0):
                    split = dict(w.split)
                    split["overhead"] = split["overhead"] + d
                    w = Work(split, w.comm_kinds, w.flops, w.bytes)
                if ex is not None:
                    w = w + ex.work(mb.tokens)
                if key is not None:
                    _keep(memo, key, w)
            if last:
                hkey = None if memo is None else ("head", float(mb.sampled))
                h = None if hkey is None else memo.get(hkey)
                if h is None:
                    h = (self.head.at(mb.sampled),
                         None if self._exact_head is None else self._exact_head.work(mb.sampled))
                    if hkey is not None:
                        _keep(memo, hkey, h)
                w = w + h[0]
                if h[1] is not None:
                    w = w + h[1]
            groups = layers if layers is not None else self._all_layers
            att = attention_ops(dep.model, dep.dtypes, dep.par, groups, mb.attention, mb.tokens, mb.sampled)
            scans = mixer_ops(dep.model, dep.dtypes, dep.par, groups, mb.seqgroups)
            w = w + price_ops(att + scans, dep.gpu, dep.compute_dtype, dep.dtypes.kv_dtype, kernels=self._kernels)
            out.append(w.with_overlap(dep.par.comm_overlap))
        return out

    @property
    def _all_layers(self):
        groups = self.__dict__.get("_groups_kept")
        if groups is None:  # the model's merged layer groups, read once per step model
            groups = self._groups_kept = _merged_groups(self.dep.model)
        return groups

    def _check(self, tokens) -> None:
        if np.any(np.asarray(tokens) > self.max_tokens + 1e-9):
            raise ValueError(f"steps of up to {float(np.max(tokens)):.0f} tokens exceed the tabulated "
                             f"max_tokens={self.max_tokens}")

    def price(self, load: StepLoad, mode: str = "stream"):
        """The :class:`StepCost` of ``load`` (arrays allowed), as step.price with tabulated stage work."""
        par = self.dep.par
        m = micro_batches(par, load.sequences)
        mb = load if par.pp == 1 else load.scaled(1.0 / m)
        self._check(mb.tokens)
        mb, kind = graph_step(self.dep, mb)
        send = send_seconds(self.dep, mb.tokens) if par.pp > 1 else 0.0
        return combine(self.dep, self._stage_works(mb, kind), send, m, mode)

    def uniform(self, dec_seqs, dec_ctx, pre_seqs, pre_new, pre_past=0.0, mode: str = "stream"):
        """(seconds, watts per GPU) of steps with ``dec_seqs`` sequences decoding at ``dec_ctx`` and
        ``pre_seqs`` prompts adding ``pre_new`` tokens after ``pre_past`` (fractional averages and arrays
        allowed: a steady-state sweep)."""
        cost = self.price(uniform(self.dep.model, dec_seqs, dec_ctx, pre_seqs, pre_new, pre_past), mode)
        return cost.time, power_w(self.dep.gpu, self.dep.compute_dtype, cost.flops, cost.bytes, cost.time)
