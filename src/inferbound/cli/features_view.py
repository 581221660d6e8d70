"""Table rows for the engine features (docs/features/): speculative decoding, prefix caching, KV offload.

The figures come from the library (estimate.Estimate.features, MaxThroughput, the simulator's summary);
these functions only format them for the estimate and simulate tables.
"""
from __future__ import annotations


def _gb(x: float) -> str:
    return f"{x / 1e9:,.2f} GB"


def estimate_rows(e) -> list[tuple[str, str]]:
    """Rows of a static-batch estimate's features (estimate.Estimate.features)."""
    f = e.features
    out = []
    if "speculative" in f:
        s = f["speculative"]
        what = f"draft {s['draft']}" if s["method"] == "draft" else s["method"]
        cross = e.speculative_crossover_batch
        shown = s["describe"].split(" (tau")[0].removeprefix("speculative ") if s.get("describe") else \
            f"{what}, k={s['k']}, acceptance {s['acceptance']:g}"
        out += [("speculative decoding", f"{shown}: {s['tokens_per_step']:.3f} tokens per step of {s['step_ms']:.2f} ms"),
                ("  stops raising tok/s from batch", "never (<=4096)" if cross is None else f"{cross:,}")]
    if "prefix" in f:
        p = f["prefix"]
        out.append(("prefix cache", f"{p['cached_tokens']:,.0f} prompt tokens cached, {p['prefilled_tokens']:,.0f} "
                                    f"prefilled per sequence"))
    if "kv_offload" in f:
        k = f["kv_offload"]
        out.append(("KV offload", f"{k['tier']}; the batch's KV stays on the GPU (the tier serves prefix hits "
                                  f"evicted from it: --shared-prefix-len with --prefix-groups)"))
    return out


def max_throughput_rows(r) -> list[tuple[str, str]]:
    """Rows of a max-throughput operating point's features (workloads.max_throughput.MaxThroughput)."""
    out = []
    if r.tokens_per_step != 1.0:
        out.append(("tokens per step (speculative decoding)", f"{r.tokens_per_step:.3f}"))
    if r.kv_host_capacity_bytes_per_gpu:
        out += [("host KV tier per GPU", _gb(r.kv_host_capacity_bytes_per_gpu)),
                ("KV cap on requests in flight: device / with host tier",
                 f"{r.kv_limit_concurrency_device:,.1f} / {r.kv_limit_concurrency:,.1f}"),
                ("step time added by host reads", f"{r.host_read_ms_per_step:.2f} ms")]
    return out


def simulate_rows(s: dict) -> list[tuple[str, str]]:
    """Rows of a simulated run's features (sim.SimResult.summary)."""
    out = []
    if s.get("prefix_hit_rate") is not None and s["prefix_hit_rate"] > 0:
        out.append(("prompt tokens found in the prefix cache", f"{s['prefix_hit_rate']:.1%}"))
    if s.get("speculative"):
        tps = s.get("tokens_per_step")
        out.append((s["speculative"], "measured tokens per step: " + ("n/a" if tps is None else f"{tps:.3f}")))
    if s.get("kv_host_blocks"):
        out.append(("KV blocks: device / host tier", f"{s['kv_device_blocks']:,} / {s['kv_host_blocks']:,}"))
    return out
