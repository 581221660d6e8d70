"""Fit shape-dependent kernel curves to aiconfigurator-core's measured kernel tables; print their error.

Run (offline, needs the ``fit`` extra: pyarrow + aiconfigurator-core; see docs/kernels.md)::

    /work/fitenv/bin/python benchmarks/fit_kernels.py            # fit and print the error tables
    /work/fitenv/bin/python benchmarks/fit_kernels.py --write    # ... and write src/inferbound/data/kernels.yaml
    options: --gpus h200_sxm,b200_hgx  --classes gemm,moe,attention,collectives  --quick  --systems DIR

Data: the aiconfigurator-core wheel (Apache-2.0; ``pip download --no-deps aiconfigurator-core``) ships
measured kernel latencies under ``aiconfigurator_core/systems/data/<system>/<op>/<framework>/<version>/``
(parquet, one row per measured shape, collected by github.com/ai-dynamo/aiconfigurator ``collector/``).
Every table has ``framework, version, device, op_name, kernel_source`` and ``latency`` in
**milliseconds** (mean over CUDA-graph replays after warm-up; GEMMs rotate enough weight copies to
defeat the L2 cache). Tables read here:

- ``gemm/*/gemm_perf.parquet``: ``gemm_dtype`` (bfloat16, fp8 = per-tensor scales, TRT-LLM's path
  includes dynamic activation quantization; fp8_block = 1x128/128x128 block scales; nvfp4; int8_wo,
  int4_wo = weight-only W8A16/W4A16; sq = SmoothQuant W8A8), ``m`` tokens, ``n`` output features,
  ``k`` input features. One Linear layer forward (cuBLAS / CUTLASS / DeepGEMM / FlashInfer / Triton as
  named by ``kernel_source``).
- ``moe/*/moe_perf.parquet``: ``moe_dtype`` (bfloat16, fp8, fp8_block, nvfp4, w4a16_mxfp4,
  w4a8_mxfp4_mxfp8, int4_wo, w4afp8), ``num_tokens`` (on this GPU), ``hidden_size``, ``inter_size``,
  ``topk``, ``num_experts``, ``moe_tp_size``, ``moe_ep_size``, ``distribution`` (balanced, power_law_<a>).
  One rank's fused MoE (routing, both expert GEMMs, activation, permutation), no communication.
- ``attention/*/context_attention_perf.parquet`` and ``generation_attention_perf.parquet``:
  ``batch_size``, ``isl`` (prompt tokens; 1 in generation), ``step`` (cached tokens per sequence in
  generation; 0 in context), ``num_heads`` / ``num_key_value_heads`` (per GPU), ``head_dim``,
  ``window_size`` (0 = full), ``attn_dtype``, ``kv_cache_dtype``. The attention module forward (RoPE,
  KV-cache write, FMHA / paged decode kernel).
- ``mla/*/context_mla_perf.parquet``, ``generation_mla_perf.parquet``: DeepSeek MLA (kv_lora_rank 512,
  rope 64, nope 128, v 128), ``num_heads`` per GPU, ``batch_size``, ``isl``, ``step``, ``tp_size``,
  ``mla_dtype``, ``kv_cache_dtype``.
- ``comm/nccl/<nccl version>/nccl_perf.parquet``: nccl-tests ``op_name`` (all_reduce, all_gather,
  reduce_scatter, alltoall), ``nccl_dtype`` (half, int8), ``num_gpus``, ``message_size`` in
  **elements** (bytes = elements x 2 for half), out-of-place time.
- ``comm/<framework>/*/custom_allreduce_perf.parquet``: the engines' own all-reduce (TRT-LLM strategy
  AUTO; vLLM / SGLang custom all-reduce, ``backend`` *_graph / *_eager), ``message_size`` in bf16 elements.

Backends and versions fitted (newest of each per GPU): TensorRT-LLM 1.3.0rc20 (1.0.0 on A100 and for
some L40S tables), vLLM 0.24.0 (0.14.0 on A100), SGLang 0.5.14 (0.5.10 on A100); newest NCCL per GPU.
Systems without an inferbound catalog entry (rtx_pro_6000_server, b60) are skipped; the GPU id map is
``kernel_fit/tables.py`` GPU_MAP. Fit method: ``kernel_fit/fitting.py`` (log-residual least squares,
soft-L1); forms: ``inferbound/pricing/kernels/*.py``. Printed per kernel class, GPU, engine and dtype: rows,
MAPE, median APE and p90 APE in-sample (final fit on every row) and held-out (fit without 25 % of
the shapes, scored on them), the same curve on other tables (transfer), priors scored
leave-one-GPU-out, and findings for the pricing engine.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_fit import report  # noqa: E402
from kernel_fit.attn_fit import fit_attention  # noqa: E402
from kernel_fit.build import add_fallbacks, build_priors, leave_one_out, measured_entry  # noqa: E402
from kernel_fit.comm_fit import fit_collectives  # noqa: E402
from kernel_fit.common import DTYPES, GpuCtx  # noqa: E402
from kernel_fit.gemm_fit import fit_gemm  # noqa: E402
from kernel_fit.moe_fit import fit_moe  # noqa: E402
from kernel_fit.priors import SM_COUNTS  # noqa: E402
from kernel_fit.tables import GPU_MAP, aic_version, systems_root  # noqa: E402
from kernel_fit.writer import dump  # noqa: E402

FITTERS = {"gemm": fit_gemm, "moe": fit_moe, "attention": fit_attention, "collectives": fit_collectives}
#: (target, template) pairs for the leave-one-GPU-out check of the prior rules
LOO_PAIRS = [("h200_sxm", "h100_sxm"), ("h100_sxm", "h200_sxm"), ("b300_hgx", "b200_hgx"),
             ("gb200_nvl72", "b200_hgx"), ("gb300_nvl72", "gb200_nvl72"), ("b200_hgx", "h200_sxm"),
             ("l40s", "a100_80gb_sxm")]
OUT = Path(__file__).resolve().parent.parent / "src" / "inferbound" / "data" / "kernels.yaml"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(OUT.parents[3])}")
    ap.add_argument("--gpus", default="", help="comma-separated inferbound ids or aiconfigurator systems")
    ap.add_argument("--classes", default=",".join(FITTERS), help="comma-separated: " + ", ".join(FITTERS))
    ap.add_argument("--quick", action="store_true", help="smaller structure grid (for a fast look)")
    ap.add_argument("--systems", default=None, help="aiconfigurator systems directory (default: the installed wheel)")
    ap.add_argument("--out", type=Path, default=OUT, help="where --write writes (a partial fit may only go elsewhere)")
    a = ap.parse_args(argv)
    classes = [c for c in a.classes.split(",") if c]
    bad = [c for c in classes if c not in FITTERS]
    if bad:
        ap.error(f"--classes {','.join(bad)} is not a kernel class; allowed: {', '.join(FITTERS)}")
    if a.write and a.out.resolve() == OUT and (a.gpus or a.quick or set(classes) != set(FITTERS)):
        ap.error("--write to the package data needs the full fit: drop --gpus, --classes and --quick (or give --out)")
    os.environ.pop("INFERBOUND_HARDWARE_PATH", None)   # fit against the bundled catalog only
    root = systems_root(a.systems)
    want = {g for g in a.gpus.split(",") if g}
    systems = [s for s, g in GPU_MAP.items() if g and (root / "data" / s).is_dir()
               and (not want or s in want or g in want)]
    fits, ctxs = {}, {}
    for s in systems:
        gid = GPU_MAP[s]
        ctx = GpuCtx(s, gid, SM_COUNTS[gid][0], root)
        ctxs[gid], fits[gid] = ctx, []
        for cls in classes:
            print(f"fitting {cls} on {gid} ({s}) ...", file=sys.stderr, flush=True)
            fits[gid] += FITTERS[cls](ctx, quick=a.quick)
    report.error_tables(fits)
    entries = {gid: measured_entry(ctxs[gid], fl) for gid, fl in fits.items()}
    priors, gen = build_priors(entries)
    add_fallbacks(entries)
    report.priors_table(priors, gen)
    report.loo_table(leave_one_out(entries, fits, LOO_PAIRS))
    report.findings(fits, ctxs, root)
    if a.write:
        write(entries, priors, a.out)


def write(entries: dict, priors: dict, out: Path) -> None:
    version = aic_version()
    today = datetime.date.today().isoformat()
    doc = {
        "schema_version": 1,
        "provenance": {
            "aiconfigurator_core": version,
            "source": "https://pypi.org/project/aiconfigurator-core/ (Apache-2.0), measured tables under "
                      "aiconfigurator_core/systems/data; collectors: https://github.com/ai-dynamo/aiconfigurator",
            "generated": today, "command": "python benchmarks/fit_kernels.py --write",
            "method": "per GPU x class x engine x dtype: structure (tile, split-K) by grid search, continuous "
                      "parameters by least squares on log(pred/meas) with soft-L1 loss (benchmarks/kernel_fit)",
            "efficiencies_relative_to": "catalog datasheet peaks: hardware.get_gpu(id).peak_flops[dtype] and .hbm_bw",
        },
        "units": {"time": "s", "bandwidth": "bytes/s", "bytes": "bytes per element", "k_fill": "K rows",
                  "s0": "key rows", "c_slot": "s per routed token-slot", "c_seq": "s per sequence",
                  "c_head": "s per sequence and query head", "n_sat": "split-KV work items"},
        "dtypes": DTYPES,
        "gpus": entries,
        "priors": priors,
    }
    header = [
        "Shape-dependent kernel curves: GEMM, grouped MoE GEMM, attention (prefill / decode / MLA), collectives.",
        f"GENERATED by benchmarks/fit_kernels.py --write on {today} from aiconfigurator-core {version}",
        "(Apache-2.0, https://pypi.org/project/aiconfigurator-core/): measured kernel latency tables.",
        "Do not edit by hand: rerun the fit. Forms and parameters: src/inferbound/pricing/kernels/*.py, docs/kernels.md.",
        "gpus.<id>: measured curves; each curve's `fit` gives rows, in-sample and held-out MAPE / median /",
        "p90 APE, the table it was fitted to (path under aiconfigurator_core/systems/data) and its kernel source.",
        "priors.<id>: GPUs without measurements: a measured template plus the ratios that scale its curves",
        "(MAMF fractions from efficiency.yaml, memory-generation streaming fractions, link bandwidths from",
        "hardware.yaml); their curves are extrapolated. sm_count_source gives each SM / CU / engine count's source.",
        "",
    ]
    comments = {g: f"measured: aiconfigurator system {e['source_system']}" for g, e in entries.items()}
    comments.update({g: f"prior (extrapolated) from {r['derived_from']}" for g, r in priors.items()})
    out.write_text(dump(doc, header, comments), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
