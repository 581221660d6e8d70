"""Print the curves of docs/features/prefix-caching.md and docs/features/kv-offload.md against published points.

    .venv/bin/python benchmarks/prefix_offload_curves.py

1. Prefill throughput against the hit rate, Llama-3.1-8B on one H100 under vLLM, a stream of 512-token
   prompts (workloads/prefix_stream.stream_rate): hits on the GPU, hits in the host tier, and the ideal
   1/(1 − h). Published: vLLM blog "Inside vLLM's New Offloading Connector" (2025-12-29, figure 2: 10,000
   prefill requests of 512 tokens, GPU prefix caching off) "throughput increases by up to X9" with CPU hits.
2. TTFT of one prompt against its length: recomputed, a full hit in the host tier (its reload waited for,
   as vLLM does), a full hit on the GPU, and the reload alone. Published: the same blog, figure 1, "loading
   KV values from the CPU reduces TTFT by X2-X22, depending on the prompt size", X2 at 512 tokens.
3. Whole-request throughput against the hit rate (max-throughput operating point, 4096 in / 256 out), where
   decode steps do not shrink with hits.

No network, no GPU: every figure is the library's formula (step contract, host tier) on catalog data.
"""
from __future__ import annotations

from inferbound.deploy import offload, prefix
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.memory import kv_bytes_per_gpu
from inferbound.workloads.max_throughput import max_throughput
from inferbound.workloads.prefix_stream import single_ttft, stream_rate

MODEL, GPU = "llama-3.1-8b", "h100_sxm"


def throughput_curve() -> None:
    dep = make_deployment(model=MODEL, gpu=GPU, engine_options={"kv_offload": "host"})
    base = stream_rate(dep, 512)["rate"]
    print(f"1. prefill stream, {MODEL} on 1x {GPU}, vLLM, 512-token prompts: {base:,.1f} requests/s without hits")
    print(f"{'hit rate':>9} {'GPU hits x':>11} {'host hits x':>12} {'ideal 1/(1-h)':>14}")
    for h in (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 1.0):
        g = stream_rate(dep, 512, s_dev=h)["rate"] / base
        c = stream_rate(dep, 512, s_host=h)["rate"] / base
        ideal = f"{1 / (1 - h):.2f}" if h < 1 else "inf"
        print(f"{h:>9.2f} {g:>11.2f} {c:>12.2f} {ideal:>14}")
    print("   published (vLLM blog 2025-12-29, fig. 2): host hits up to ~9x at the highest CPU hit rate")


def ttft_curve() -> None:
    dep = make_deployment(model=MODEL, gpu=GPU, engine_options={"kv_offload": "host"})
    tier = offload.tier_of(dep)
    print(f"\n2. one prompt's TTFT, {MODEL} on 1x {GPU}, host link {tier.effective_bw / 1e9:.2f} GB/s effective")
    print(f"{'prompt':>7} {'recompute ms':>13} {'host hit ms':>12} {'GPU hit ms':>11} {'reload ms':>10} {'speed-up':>9}")
    for n in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 90000):
        miss, host, gpu = single_ttft(dep, n), single_ttft(dep, n, "host"), single_ttft(dep, n, "gpu")
        p = float(prefix.whole_blocks(n - 1, dep.runtime.block_size))
        reload = float(offload.load_seconds(tier, float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, p))))
        print(f"{n:>7,} {miss * 1e3:>13.1f} {host * 1e3:>12.1f} {gpu * 1e3:>11.1f} {reload * 1e3:>10.1f} "
              f"{miss / host:>8.1f}x")
    print("   published (vLLM blog 2025-12-29, fig. 1): CPU hits cut TTFT 2x (512 tokens) to 22x (longest prompts)")


def whole_request_curve() -> None:
    print(f"\n3. max-throughput operating point, {MODEL} on 1x {GPU}, 4096 in / 256 out, --prefix-hit-rate h")
    base = None
    print(f"{'hit rate':>9} {'output tok/s':>13} {'x':>6} {'ideal 1/(1-h)':>14}")
    for h in (0.0, 0.5, 0.8, 0.9):
        opts = {"prefix_hit_rate": h} if h else None
        r = max_throughput(make_deployment(model=MODEL, gpu=GPU, engine_options=opts), input_len=4096, output_len=256)
        base = base or r.output_tok_s
        print(f"{h:>9.2f} {r.output_tok_s:>13,.0f} {r.output_tok_s / base:>6.2f} {1 / (1 - h):>14.2f}")


if __name__ == "__main__":
    throughput_curve()
    ttft_curve()
    whole_request_curve()
