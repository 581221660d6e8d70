"""The H20's prefill against two public measurements, with and without the tensor-rate rule (diagnostic, offline).

1. The tier-latency points as absolute TTFTs. benchmarks/feature_targets.py scores this microbench as
ratios (miss / GPU hit, miss / CPU hit); a ratio can be right with both times wrong, so this prints the
times themselves. Source (p50 TTFT over reps):
Qwen3-Coder-30B-A3B on one H20, vLLM 0.18.1 (V1, prefix caching, enforce-eager), gahow/agentic-kvc
https://gitea.gahow.org/gahow/agentic-kvc/src/commit/837df6bc9e05f5a5b4af27a36356efdd4cff2ecd/v2/exp_a_tier_latency/results
("GPU hit is ~flat (42->111 ms over 1k->64k tokens); CPU hit is transfer-bound (PCIe H2D ~54 GB/s,
57->272 ms); miss grows superlinearly (78 ms -> 15.2 s)"; gpu.json p50 at 1024: 0.0418 s; pcie.json:
6,442,450,944 KV bytes of 65,536 tokens pinned-copied in 0.1185 s). Run as Qwen/Qwen3-30B-A3B (the same
architecture; the feature points' assumption), the rig's enforce-eager as ``cuda_graphs=off``.

Columns: measured; predicted with the tensor-rate rule of pricing/kernels/curves.py (what ships); with the
template's (H100's) plateaus kept, as before the rule (``tensor_ratio`` forced to {}); the residual
measured − predicted. Times are prefix_stream.single_ttft: one isolated step of the prompt (miss), of
its last partial block after the cached whole blocks (GPU hit), plus the host-tier load waited for (CPU hit).

2. DeepSeek-R1 prefill on one 8x H20 node, TP8, SGLang: "each node achieves 16.5k input tokens per second
and 5.7k output tokens per second on 4096-token input sequences", with "single-node TP-8 for prefill"
(LMSYS / Ant Group, "Together with SGLang: Best Practices for Serving DeepSeek-R1 on H20-96G", 2025-09-26,
https://lmsys.org/blog/2025-09-26-sglang-ant-group). Priced as a prefill-only stream of 4,096-token prompts
filling SGLang's token budget (workloads/prefix_stream.stream_rate; the blog's chunk size, FP8 attention
(FlashMLA-FP8) and DeepGEMM swapAB kernels are not modelled: assumed the profile's defaults).

    .venv/bin/python benchmarks/h20_prefill_check.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from inferbound.base import caches  # noqa: E402
from inferbound.deploy.deployment import make_deployment  # noqa: E402
from inferbound.pricing.kernels import curves as CV  # noqa: E402
from inferbound.workloads.prefix_stream import single_ttft, stream_rate  # noqa: E402

#: (tier, prompt tokens) -> measured p50 TTFT in seconds (module docstring)
MEASURED = {("miss", 1024): 0.078, ("gpu", 1024): 0.0418, ("host", 1024): 0.057,
            ("miss", 65536): 15.2, ("gpu", 65536): 0.111, ("host", 65536): 0.272}


#: LMSYS / Ant Group DeepSeek-R1 on 8x H20 (module docstring): input tokens/s of one prefill node
DSR1_INPUT_TOK_S, DSR1_PROMPT = 16_500.0, 4096


def predicted(rule: bool) -> tuple[dict, float]:
    """({(tier, tokens): seconds}, DeepSeek-R1 input tok/s per node) with the tensor-rate rule on or off
    (off: the template's plateaus)."""
    keep = CV.tensor_ratio
    if not rule:
        CV.tensor_ratio = lambda gpu_id, template_id: {}
    CV.curves_for.cache_clear()
    caches.clear()
    try:
        dep = make_deployment(model="Qwen/Qwen3-30B-A3B", gpu="h20",
                              engine_options={"kv_offload": "host", "cuda_graphs": "off"})
        ttft = {k: single_ttft(dep, k[1], k[0]) for k in MEASURED}
        ds = make_deployment(model="deepseek-ai/DeepSeek-R1", gpu="h20", tp=8, engine="sglang")
        return ttft, stream_rate(ds, DSR1_PROMPT)["rate"] * DSR1_PROMPT
    finally:
        CV.tensor_ratio = keep
        CV.curves_for.cache_clear()
        caches.clear()


def main() -> int:
    (on, ds_on), (off, ds_off) = predicted(True), predicted(False)
    print("| tier | tokens | measured | predicted | error | template plateaus | error | measured − predicted |")
    print("|---|---|---|---|---|---|---|---|")
    for k, m in MEASURED.items():
        print(f"| {k[0]} | {k[1]:,} | {m * 1e3:,.1f} ms | {on[k] * 1e3:,.1f} ms | {on[k] / m - 1:+.0%} "
              f"| {off[k] * 1e3:,.1f} ms | {off[k] / m - 1:+.0%} | {(m - on[k]) * 1e3:+,.1f} ms |")
    for name, p in (("measured", MEASURED), ("predicted", on)):
        g = p[("gpu", 65536)] - p[("gpu", 1024)]
        h = [p[("host", n)] - p[("gpu", n)] for n in (1024, 65536)]
        print(f"{name}: GPU hit 1K -> 64K {g * 1e3:+.1f} ms; CPU hit − GPU hit {h[0] * 1e3:.1f} ms at 1K, "
              f"{h[1] * 1e3:.1f} ms at 64K")
    print("PCIe floor (pcie.json): 6,442,450,944 B / 54.4 GB/s = 118.5 ms at 64K, 1.9 ms at 1K")
    m = DSR1_INPUT_TOK_S
    print(f"\nDeepSeek-R1, 8x H20 TP8, SGLang, {DSR1_PROMPT}-token prompts: measured {m:,.0f} input tok/s per node; "
          f"predicted {ds_on:,.0f} ({ds_on / m - 1:+.0%}); template plateaus {ds_off:,.0f} ({ds_off / m - 1:+.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
