"""Turn fits into kernels.yaml entries; compute prior rules; score priors leave-one-GPU-out."""
from __future__ import annotations

import numpy as np

from inferbound.base.datafiles import data_yaml
from inferbound.hardware import load_catalog
from inferbound.pricing.kernels.curves import _FAMILY, derive

from .common import CurveFit
from .fitting import ape_stats
from .priors import SM_COUNTS, TEMPLATE, TILES, memory_generation

CLASS_KEY = {"gemm": "gemm", "moe": "moe", "prefill": "attention_prefill", "decode": "attention_decode",
             "mla_prefill": "mla_prefill", "mla_decode": "mla_decode"}
KEEP = {
    "gemm": ("tm_min", "k_min", "e_c", "e_m", "overhead_s", "mem_latency_s", "tile_r", "q", "k_fill", "quant_bytes"),
    "moe": ("tm_min", "k_min", "e_c", "e_m", "overhead_s", "mem_latency_s", "tile_r", "q", "k_fill", "quant_bytes",
            "o_moe", "c_slot"),
    "prefill": ("bq", "e_c", "s0", "e_m", "overhead_s", "q"),
    "decode": ("e_m", "e_c", "overhead_s", "mem_latency_s", "c_seq", "c_head", "n_sat", "q"),
    "collective": ("alpha_s", "busbw", "alpha_b_s", "busbw_b"),
}
KEEP["mla_prefill"], KEEP["mla_decode"] = KEEP["prefill"], KEEP["decode"]


def fit_record(cf: CurveFit) -> dict:
    s, h = cf.stats, cf.held
    rec = {"rows": s["n"], "mape": s["mape"], "median": s["median"], "p90": s["p90"], "held_rows": h.get("n", 0)}
    if h.get("n"):
        rec.update(held_mape=h["mape"], held_median=h["median"], held_p90=h["p90"])
    rec["table"] = cf.tables[0]
    src = [n for n in cf.notes if n.startswith("kernel_source ")]
    if src:
        rec["kernel_source"] = src[0].split(" ", 1)[1]
    return rec


def measured_entry(ctx, fits: list[CurveFit]) -> dict:
    g = ctx.gpu
    e = {"extrapolated": False, "source_system": ctx.system, "sm_count": ctx.sms,
         "sm_count_source": SM_COUNTS[ctx.gid][1],
         "peaks_at_fit": {k: float(v) for k, v in g.peak_flops.items() if v}, "hbm_bw_at_fit": float(g.hbm_bw),
         "tables": sorted({t for cf in fits for t in cf.tables})}
    for cf in fits:
        params = {k: cf.params[k] for k in KEEP[cf.cls] if k in cf.params}
        params["fit"] = fit_record(cf)
        if cf.cls == "collective":
            x = cf.extra
            e.setdefault("collectives", {}).setdefault(x["kind"], {}).setdefault(x["algorithm"], {})[x["n"]] = params
        else:
            e.setdefault(CLASS_KEY[cf.cls], {}).setdefault(cf.engine, {})[cf.dtype] = params
    return e


def mamf(gid: str, family: str) -> float | None:
    """GPU-specific best-shape matmul fraction from efficiency.yaml: ``compute_by_dtype[family]``, else
    ``compute`` (which efficiency.yaml applies to every other dtype); None when only the default applies."""
    g = (data_yaml("efficiency.yaml").get("gpus") or {}).get(gid) or {}
    by = g.get("compute_by_dtype") or {}
    if family in by:
        return float(by[family])
    return float(g["compute"]) if "compute" in g else None


def hbm_type(gid: str) -> str | None:
    for e in data_yaml("hardware.yaml")["accelerators"]:
        if e["id"] == gid:
            return e.get("hbm_type")
    return None


def generation_fractions(entries: dict, exclude: str | None = None) -> dict:
    """Median streaming fraction of the trtllm bf16 GEMM curve (M=1, N=K=8192) per memory generation."""
    from inferbound.pricing.kernels.gemm import gemm_time

    by_gen: dict[str, list[float]] = {}
    for gid, e in entries.items():
        c = ((e.get("gemm") or {}).get("trtllm") or {}).get("bf16")
        if gid == exclude or c is None:
            continue
        p = {**c, "a_bytes": 2.0, "w_bytes": 2.0, "out_bytes": 2.0}
        t = gemm_time(p, e["sm_count"], e["peaks_at_fit"]["bf16"], e["hbm_bw_at_fit"], 1.0, 8192.0, 8192.0)[0]
        by_gen.setdefault(memory_generation(hbm_type(gid)), []).append(8192 * 8192 * 2 / (e["hbm_bw_at_fit"] * t))
    return {g: float(np.median(v)) for g, v in by_gen.items()}


def _link(g) -> float:
    return float(g.scaleup_bw if g.nvlink and g.scaleup_bw else g.pcie_bw or g.scaleup_bw)


def prior_rules(gid: str, template: str, entries: dict, gen: dict) -> dict:
    cat = load_catalog()
    g, t = cat[gid], cat[template]
    ratios, notes = {}, []
    for fam in ("bf16", "fp8", "fp4", "int8"):
        if not g.supports(fam):
            continue
        a, b = mamf(gid, fam), mamf(template, fam)
        if a is not None and b is not None:
            ratios[fam] = round(a / b, 4)
        else:
            ratios[fam] = 1.0
            notes.append(f"{fam}: no MAMF for both GPUs, template plateau kept")
    ga, gb = memory_generation(hbm_type(gid)), memory_generation(hbm_type(template))
    if ga in gen and gb in gen:
        mr = round(gen[ga] / gen[gb], 4)
    else:
        mr = 1.0
        notes.append(f"memory: no measured {ga if ga not in gen else gb} GPU, template fraction kept")
    lg, lt = _link(g), _link(t)
    allowed = sorted({dt for cls in CLASS_KEY.values() for by in (entries[template].get(cls) or {}).values()
                      for dt in by if g.supports(_FAMILY.get(dt, "bf16"))})
    r = {"derived_from": template, "sm_count": SM_COUNTS[gid][0], "sm_count_source": SM_COUNTS[gid][1],
         "compute_ratio": ratios, "memory_ratio": mr, "link_ratio": round(lg / lt, 4) if lt else 1.0,
         "nvls": bool(g.nvls), "tiles": list(TILES[gid]) if gid in TILES else None, "dtypes": allowed,
         "sources": [f"MAMF fractions: data/efficiency.yaml ({gid} vs {template})",
                     f"memory generation {ga} vs {gb}: streaming fraction of measured bf16 GEMM curves",
                     f"link: catalog scale-up/PCIe bandwidth {lg / 1e9:.0f} vs {lt / 1e9:.0f} GB/s"] + notes}
    return r


def build_priors(entries: dict) -> dict:
    gen = generation_fractions(entries)
    out = {}
    for gid in sorted(load_catalog()):
        if gid in entries:
            continue
        tpl = TEMPLATE.get(gid)
        if tpl is None or tpl not in entries or gid not in SM_COUNTS:
            continue
        out[gid] = prior_rules(gid, tpl, entries, gen)
    return out, gen


def add_fallbacks(entries: dict) -> None:
    """Measured GPUs whose template is measured name it as a fallback for classes their tables lack."""
    gen = generation_fractions(entries)
    for gid, e in entries.items():
        tpl = TEMPLATE.get(gid)
        if tpl in entries:
            e["fallback"] = prior_rules(gid, tpl, entries, gen)


def leave_one_out(entries: dict, fits: dict, pairs) -> list[tuple]:
    """Score a prior built for a measured GPU (from another measured GPU) on the GPU's own tables."""
    rows = []
    for target, tpl in pairs:
        if target not in entries or tpl not in entries:
            continue
        gen = generation_fractions(entries, exclude=target)
        rules = prior_rules(target, tpl, entries, gen)
        classes, _ = derive(entries[tpl], rules, rules["dtypes"])
        for cf in fits[target]:
            if cf.cls == "collective":
                continue
            c = (classes.get(CLASS_KEY[cf.cls]) or {}).get(cf.engine, {}).get(cf.dtype)
            if c is None:
                continue
            p = {**cf.params, **{k: v for k, v in c.items() if k in KEEP[cf.cls]}}
            x, y = cf.data
            rows.append((target, tpl, cf.cls, cf.engine, cf.dtype, ape_stats(cf.model(p, x), y)))
    return rows
