"""PNG of a simulated run (matplotlib, Agg backend): queue length, running batch and KV-block use over
time (per-step samples, summed over replicas as step-function snapshots per replica), and the TTFT
histogram.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import SimResult


def plot_run(result: SimResult, path: str | Path) -> Path:
    """Write a 3-panel PNG to ``path``; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"plot={str(path)!r} must end in .png")
    tl = result.timeline()
    req = result.requests()
    s = result.summary
    fig, (ax_q, ax_kv, ax_h) = plt.subplots(3, 1, figsize=(9, 9), constrained_layout=True)
    for rep in np.unique(tl["replica"]):
        m = tl["replica"] == rep
        label = f" (replica {int(rep)})" if s["replicas"] > 1 else ""
        ax_q.step(tl["t_s"][m], tl["waiting"][m], where="post", label="waiting" + label)
        ax_q.step(tl["t_s"][m], tl["running"][m], where="post", label="running" + label, alpha=0.7)
        ax_kv.step(tl["t_s"][m], tl["kv_blocks_used"][m] / s["kv_blocks_per_replica"] * 100, where="post",
                   label=f"replica {int(rep)}")
    ax_q.set(xlabel="time (s)", ylabel="requests", title="Queue length and running batch at each step")
    ax_q.legend(loc="upper right", fontsize="small")
    ax_kv.set(xlabel="time (s)", ylabel="KV blocks used (%)", ylim=(0, 105),
              title=f"KV cache use ({s['kv_blocks_per_replica']:,} blocks of {s['block_size']} tokens per replica)")
    ttft = req["ttft_s"][np.isfinite(req["ttft_s"])] * 1e3
    ax_h.hist(ttft, bins=min(60, max(5, ttft.size // 10)))
    for p in (50, 99):
        v = s[f"ttft_ms_p{p}"]
        if v is not None:
            ax_h.axvline(v, color="k", ls="--", lw=1)
            ax_h.text(v, ax_h.get_ylim()[1] * 0.9, f" p{p}", fontsize="small")
    ax_h.set(xlabel="TTFT (ms)", ylabel="requests", title="TTFT distribution")
    fig.suptitle(f"{result.deployment.model.name} on {result.deployment.label()}: {s['completed']} requests, "
                 f"{s['output_tok_s']:,.0f} output tok/s")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
