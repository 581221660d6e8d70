"""Load data/kernels.yaml into per-GPU kernel curves; derive prior curves for unmeasured GPUs.

``kernels.yaml`` holds, per measured GPU, fitted parameters per kernel class → engine → dtype (the
forms are in gemm.py, moe.py, attention.py, comm.py), and, per unmeasured catalog GPU, a *prior*:
a measured template GPU and the ratios that turn its curves into this GPU's (benchmarks/fit_kernels.py
computes them from datasheet SM counts, MAMF fractions and memory generations; sources in the YAML)::

    e_c  → min(1, e_c · compute_ratio[dtype family])     (GEMM, MoE, attention compute plateaus)
    e_m  → min(1, e_m · memory_ratio)                    (every memory fraction)
    busbw, busbw_b → · link_ratio  (without NVLS: the template's n = 2 curve's bandwidths for every n,
                                    since only in-switch reduction lifts busbw above the link rate)
    tm_min, tn_min, k_min → the prior's tile geometry when it gives one (systolic matrix engines)

A measured GPU may name a ``fallback`` prior the same way; it fills only the (class, engine, dtype)
curves its own tables lack. Every derived curve carries ``extrapolated: True``. Efficiencies are
fractions of the catalog's datasheet peaks (``inferbound.hardware.get_gpu(id).peak_flops[dtype]``,
``.hbm_bw``), which is also what the fit divided by.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import lru_cache

from inferbound.hardware import get_gpu
from inferbound.hardware.kernel_data import _measured, _meta, load_data, measured_gpus  # noqa: F401  (re-exported)

CLASSES = ("gemm", "moe", "attention_prefill", "attention_decode", "mla_prefill", "mla_decode")
#: dtype -> which compute_ratio entry scales its plateau (the catalog peak the kernel runs at)
_FAMILY = {"bf16": "bf16", "fp16": "bf16", "int8_wo": "bf16", "int4_wo": "bf16", "mxfp4_wo": "bf16",
           "fp8": "fp8", "fp8_block": "fp8", "mxfp4_fp8": "fp8", "int4_fp8": "fp8", "fp4": "fp4", "int8": "int8"}


@dataclass(frozen=True)
class KernelCurves:
    """Kernel curves of one GPU. ``classes[cls][engine][dtype]`` is a parameter dict; collectives are
    ``collectives[kind][algorithm][n]``. ``extrapolated`` is True for a prior (no measurement)."""

    gpu_id: str
    sm_count: int
    peak_flops: dict       # catalog dense peaks, FLOP/s by dtype (what the efficiencies are fractions of)
    hbm_bw: float          # catalog peak HBM bandwidth, bytes/s
    extrapolated: bool
    derived_from: str | None
    classes: dict
    collectives: dict
    dtypes: dict
    sources: dict = field(default_factory=dict)

    def engines(self, cls: str) -> list[str]:
        return sorted(self.classes.get(cls, {}))

    def curve(self, cls: str, dtype: str, engine: str = "trtllm") -> dict:
        """Parameters of one curve (dtype byte widths merged in). fp16 uses the bf16 curve (same tensor
        cores). A missing engine falls back to trtllm, then to any engine that has the dtype."""
        by_engine = self.classes.get(cls)
        if not by_engine:
            raise ValueError(f"kernel class {cls!r} has no curves for gpu={self.gpu_id!r}; "
                             f"available: {', '.join(sorted(self.classes)) or 'none'}")
        key = "bf16" if dtype == "fp16" else dtype
        for eng in (engine, "trtllm", *sorted(by_engine)):
            if key in by_engine.get(eng, {}):
                return {**self.dtypes.get(key, {}), **by_engine[eng][key], "engine": eng}
        have = sorted({d for e in by_engine.values() for d in e})
        raise ValueError(f"dtype={dtype!r} has no {cls} curve for gpu={self.gpu_id!r}; allowed: {', '.join(have)}")


def _scale_curve(c: dict, cls: str, dtype: str, rules: dict) -> dict:
    c = copy.deepcopy(c)
    fam = _FAMILY.get(dtype, "bf16")
    rc = rules.get("compute_ratio", {}).get(fam, 1.0)
    rm = rules.get("memory_ratio", 1.0)
    if "e_c" in c:
        c["e_c"] = min(1.0, c["e_c"] * rc)
    if "e_m" in c:
        c["e_m"] = min(1.0, c["e_m"] * rm)
    tiles = rules.get("tiles")
    if tiles and cls in ("gemm", "moe"):
        c["tm_min"], c["tn_min"], c["k_min"] = float(tiles[0]), float(tiles[1]), None
    c.pop("fit", None)
    c["extrapolated"] = True
    c["prior"] = f"from {rules['derived_from']}: e_c x {rc:.3g}, e_m x {rm:.3g}"
    return c


def derive(template: dict, rules: dict, dtypes_allowed=None) -> tuple[dict, dict]:
    """(classes, collectives) of a prior GPU from a measured template entry and the prior's rules."""
    classes = {}
    for cls in CLASSES:
        for eng, by_dt in (template.get(cls) or {}).items():
            for dt, c in by_dt.items():
                if dtypes_allowed is not None and dt not in dtypes_allowed:
                    continue
                classes.setdefault(cls, {}).setdefault(eng, {})[dt] = _scale_curve(c, cls, dt, rules)
    coll = {}
    lr = rules.get("link_ratio", 1.0)
    for kind, by_algo in (template.get("collectives") or {}).items():
        for algo, by_n in by_algo.items():
            counts = sorted(by_n, key=int)
            for n in counts:
                src = by_n[n] if rules.get("nvls", False) else by_n[counts[0]]
                c = dict(by_n[n])
                c["busbw"], c["busbw_b"] = src["busbw"] * lr, src["busbw_b"] * lr
                c.pop("fit", None)
                c["extrapolated"] = True
                coll.setdefault(kind, {}).setdefault(algo, {})[int(n)] = c
    return classes, coll


def _int_keys(coll: dict) -> dict:
    return {k: {a: {int(n): c for n, c in by_n.items()} for a, by_n in by_a.items()} for k, by_a in coll.items()}


def _catalog(gpu_id: str):

    g = get_gpu(gpu_id)
    return {k: float(v) for k, v in g.peak_flops.items() if v}, float(g.hbm_bw)


@lru_cache(maxsize=None)
def curves_for(gpu_id: str) -> KernelCurves | None:
    """Kernel curves of a catalog GPU id (measured, or derived from its prior), or None if kernels.yaml
    has neither for it. Peaks and bandwidth are read from the hardware catalog (get_gpu)."""
    data = _meta()
    priors, dtypes = data.get("priors", {}), data.get("dtypes", {})
    e = _measured(gpu_id)
    if e is not None:
        classes = {c: copy.deepcopy(e[c]) for c in CLASSES if c in e}
        coll = _int_keys(copy.deepcopy(e.get("collectives", {})))
        fb = e.get("fallback")
        if fb and _measured(fb["derived_from"]) is not None:
            extra, extra_coll = derive(_measured(fb["derived_from"]), fb, fb.get("dtypes"))
            for cls, by_eng in extra.items():
                for eng, by_dt in by_eng.items():
                    for dt, c in by_dt.items():
                        classes.setdefault(cls, {}).setdefault(eng, {}).setdefault(dt, c)
            for kind, by_a in extra_coll.items():
                for algo, by_n in by_a.items():
                    coll.setdefault(kind, {}).setdefault(algo, by_n)
        return KernelCurves(gpu_id, int(e["sm_count"]), *_catalog(gpu_id), False, None, classes, coll, dtypes,
                            {"sm_count": e.get("sm_count_source", ""), "tables": e.get("tables", [])})
    if gpu_id in priors:
        r = priors[gpu_id]
        classes, coll = derive(_measured(r["derived_from"]), r, r.get("dtypes"))
        return KernelCurves(gpu_id, int(r["sm_count"]), *_catalog(gpu_id), True, r["derived_from"], classes,
                            coll, dtypes,
                            {"sm_count": r.get("sm_count_source", ""), "prior": r.get("sources", [])})
    return None


def available_gpus() -> dict[str, bool]:
    """{gpu id: extrapolated} for every GPU kernels.yaml covers."""
    return {**{g: False for g in measured_gpus()}, **{g: True for g in _meta().get("priors", {})}}
