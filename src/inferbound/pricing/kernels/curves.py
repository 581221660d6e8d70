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

Every prior of the template's vendor also gets the tensor-rate rule (``tensor_ratio``); it matters where
the tensor cores are throttled against the rest of the SMs: the H20 (148 dense bf16 TFLOP/s beside 44 FP32
TFLOP/s, against the H100's 989 beside 67: ρ = 0.228), the RTX 4090 (bf16 with FP32 accumulate at half
rate: 0.506), H100 / H200 NVL (0.943); A100 variants, H100 PCIe, GH200 and L4 are within 1 % of 1. With P the dense peak of the curve's dtype family and V the FP32
(vector) peak, both from the catalog,

    ρ = (P/V)_gpu / (P/V)_template                           (tensor rate per unit of SM rate)
    1/e_c → 1 + ρ·(1/e_c − 1)                                (compute plateaus, after compute_ratio)
    tile_r → ρ·tile_r                                        (GEMM / MoE operand-feed threshold)

The template's plateau e_c < 1 is time the SMs spend on work that is not tensor-core math at its
datasheet rate (softmax, address and index arithmetic, loads, the fused-MoE gather):
1/(P·e_c) = 1/P + x per FLOP, x set by the SMs' vector rate V. On the prior x scales by V_tpl/V_gpu
and the tensor term by P_tpl/P_gpu, which gives the line above (the tensor pipe itself taken at 1 of
its peak). The feed threshold r of gemm.py is the tile's needed FLOPs per operand row, the tensor
rate over the SMs' shared-memory feed rate (a vector-rate quantity), so it scales by ρ. ρ uses no SM
count or clock (both cancel in P/V). ρ = 1 leaves a curve as it was; the rule is skipped across vendors
(AMD, AWS, Google, Intel peaks of another architecture are not comparable this way) and where either
GPU lacks an FP32 peak. Check: Qwen3-30B-A3B on one H20 (vLLM, bf16), a 65,536-token prompt is
measured at 15.2 s (gahow/agentic-kvc exp_a_tier_latency; docs/features/prefix-caching.md); the
template's plateaus kept price it 23.1 s, this rule 16.5 s; DeepSeek-R1 prefill on 8x H20 (TP8, SGLang,
4,096-token prompts) is measured at 16.5k input tokens/s per node (lmsys.org/blog/2025-09-26-sglang-ant-group),
priced 5.6k before and 11.5k with it (benchmarks/h20_prefill_check.py).

A measured GPU may name a ``fallback`` prior the same way; it fills only the (class, engine, dtype)
curves its own tables lack (a template of its own generation: no tensor-rate rule). Every derived curve carries ``extrapolated: True``. Efficiencies are
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


#: classes whose compute side runs at the bf16 peak whatever their dtype key (kernels/__init__.py _peak(c, {}))
_BF16_PEAK_CLASSES = ("attention_decode", "mla_prefill", "mla_decode")


def tensor_ratio(gpu_id: str, template_id: str) -> dict:
    """ρ per dtype family, (P/V)_gpu / (P/V)_template (module docstring); {} across vendors or without
    both FP32 peaks. Families either GPU has no peak for are left out (ρ = 1)."""
    g, t = get_gpu(gpu_id), get_gpu(template_id)
    if g.vendor != t.vendor or not g.peak_flops.get("fp32") or not t.peak_flops.get("fp32"):
        return {}
    out = {}
    for fam in sorted(set(_FAMILY.values())):
        pg = g.peak_flops.get(fam) or (g.peak_flops.get("fp16") if fam == "bf16" else None)
        pt = t.peak_flops.get(fam) or (t.peak_flops.get("fp16") if fam == "bf16" else None)
        if pg and pt:
            out[fam] = (pg / g.peak_flops["fp32"]) / (pt / t.peak_flops["fp32"])
    return out


def _scale_curve(c: dict, cls: str, dtype: str, rules: dict) -> dict:
    c = copy.deepcopy(c)
    fam = _FAMILY.get(dtype, "bf16")
    rc = rules.get("compute_ratio", {}).get(fam, 1.0)
    rm = rules.get("memory_ratio", 1.0)
    rho = float(rules.get("tensor_ratio", {}).get("bf16" if cls in _BF16_PEAK_CLASSES else fam, 1.0))
    if "e_c" in c:
        c["e_c"] = min(1.0, c["e_c"] * rc)
        c["e_c"] = 1.0 / (1.0 + rho * (1.0 / c["e_c"] - 1.0))
    if "tile_r" in c:
        c["tile_r"] = c["tile_r"] * rho
    if "e_m" in c:
        c["e_m"] = min(1.0, c["e_m"] * rm)
    tiles = rules.get("tiles")
    if tiles and cls in ("gemm", "moe"):
        c["tm_min"], c["tn_min"], c["k_min"] = float(tiles[0]), float(tiles[1]), None
    c.pop("fit", None)
    c["extrapolated"] = True
    c["prior"] = f"from {rules['derived_from']}: e_c x {rc:.3g}, e_m x {rm:.3g}" + (
        f", tensor ratio {rho:.3g}" if rho != 1.0 else "")
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
        rules = {**r, "tensor_ratio": tensor_ratio(gpu_id, r["derived_from"])}
        classes, coll = derive(_measured(r["derived_from"]), rules, r.get("dtypes"))
        return KernelCurves(gpu_id, int(r["sm_count"]), *_catalog(gpu_id), True, r["derived_from"], classes,
                            coll, dtypes,
                            {"sm_count": r.get("sm_count_source", ""), "prior": r.get("sources", [])})
    return None


def available_gpus() -> dict[str, bool]:
    """{gpu id: extrapolated} for every GPU kernels.yaml covers."""
    return {**{g: False for g in measured_gpus()}, **{g: True for g in _meta().get("priors", {})}}
