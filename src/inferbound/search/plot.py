"""Frontier plots of a search: PNG (matplotlib, Agg) and interactive offline HTML (plotly, plotly.js
embedded, so the file opens without a network).

One panel per (x, y) pair: feasible configurations in grey (an evenly spaced sample of at most
data/search.yaml ``plot_background_points``), the Pareto frontier as a line coloured by layout (by GPU
type beyond MAX_LAYOUT_COLOURS layouts), the winner starred. In the HTML, hovering a frontier point
shows its configuration and figures.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .metrics import SENSE, UNITS
from .result import SearchResult
from .space import search_defaults
from ..workloads.lengths import describe

TITLES = {"tok_s_per_gpu": "output tok/s per GPU", "tok_s_per_user": "tok/s per user",
          "tokens_per_joule": "output tokens per joule", "usd_per_mtok": "$ per million output tokens",
          "gpus_for_rate": "GPUs for the rate",
          "ttft_ms": "TTFT (ms)", "tpot_ms": "TPOT (ms)", "e2e_ms": "end-to-end latency (ms)", "tok_s": "output tok/s",
          "requests_per_s": "requests/s", "gpus": "GPUs", "watts": "watts", "usd_per_hour": "$ per hour",
          "concurrency": "concurrency"}


def _axis(name: str) -> str:
    better = "higher" if SENSE[name] > 0 else "lower"
    return f"{TITLES.get(name, name)} ({better} is better)"


def _background(result: SearchResult) -> np.ndarray:
    idx = np.flatnonzero(result.feasible)
    k = int(search_defaults()["output"]["plot_background_points"])
    return idx if idx.size <= k else idx[np.unique(np.linspace(0, idx.size - 1, k).round().astype(int))]


def _check(path: Path, suffix: str, field: str) -> Path:
    path = Path(path)
    if path.suffix.lower() != suffix:
        raise ValueError(f"{field}={str(path)!r} must end in {suffix}")
    return path


def _title(result: SearchResult) -> str:
    w = result.workload
    mode = f", {' + '.join(result.modes)}" if result.modes != ("aggregated",) else ""
    slo = f", {', '.join(c.label for c in result.constraints)}" if result.constraints else ""
    return f"{result.model}: {describe(w.lengths)}{mode}{slo}"


#: frontier points are coloured by layout when it has at most this many, else by GPU type (legend size)
MAX_LAYOUT_COLOURS = 10


def _groups(result: SearchResult, idx: np.ndarray) -> list[str]:
    labels = [result.labels[int(result.points.layout[i])] for i in idx]
    return labels if len(set(labels)) <= MAX_LAYOUT_COLOURS else [lab.split(" ")[1] for lab in labels]


def plot_png(result: SearchResult, path: str | Path, pairs: list[tuple[str, str]] | None = None) -> Path:
    """Write the frontier panels to a PNG; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = _check(path, ".png", "plot")
    pairs = pairs or [result.default_frontier]
    fig, axes = plt.subplots(1, len(pairs), figsize=(7.5 * len(pairs), 5.6), constrained_layout=True, squeeze=False)
    bg = _background(result)
    win = result.table[0] if result.table else None
    for ax, (x, y) in zip(axes[0], pairs):
        p = result.points
        ax.scatter(p.metric(x, bg), p.metric(y, bg), s=4, c="0.8", label="feasible configurations", zorder=1)
        front = result.frontier_indices(x, y)
        fx, fy = p.metric(x, front), p.metric(y, front)
        ax.plot(fx, fy, "-", color="0.3", lw=1, zorder=2)
        groups = _groups(result, front)
        for gid in dict.fromkeys(groups):
            m = np.array([g == gid for g in groups])
            ax.scatter(fx[m], fy[m], s=22, zorder=3, label=f"frontier: {gid}")
        if win is not None and win.metrics.get(x) is not None and win.metrics.get(y) is not None:
            ax.scatter([win.metrics[x]], [win.metrics[y]], marker="*", s=260, c="red", edgecolors="black",
                       zorder=4, label=f"winner: {win.layout} @ {win.concurrency}")
        ax.set_xlabel(_axis(x))
        ax.set_ylabel(_axis(y))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(_title(result), fontsize=10)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _hover(result: SearchResult, i: int) -> str:
    d = result.point(int(i))
    unit = d["layout"]
    if d["prefill_replicas"]:
        unit = f"{d['prefill_replicas']}P+{d['decode_replicas']}D x ({unit})"
    lines = [f"<b>{unit}</b>", f"concurrency {d['concurrency']}"]
    for k in ("tok_s_per_gpu", "tok_s_per_user", "ttft_ms", "tpot_ms", "tokens_per_joule", "usd_per_mtok"):
        v = d.get(k)
        lines.append(f"{TITLES.get(k, k)}: {'n/a' if v is None else f'{v:,.3g}'} {UNITS.get(k, '')}")
    return "<br>".join(lines)


def plot_html(result: SearchResult, path: str | Path, pairs: list[tuple[str, str]] | None = None) -> Path:
    """Write the frontier panels as a self-contained interactive HTML page; returns the path."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    path = _check(path, ".html", "html")
    pairs = pairs or [result.default_frontier]
    fig = make_subplots(rows=1, cols=len(pairs), subplot_titles=[f"{TITLES.get(y, y)} vs {TITLES.get(x, x)}"
                                                                 for x, y in pairs])
    bg = _background(result)
    p = result.points
    for col, (x, y) in enumerate(pairs, start=1):
        fig.add_trace(go.Scattergl(x=p.metric(x, bg), y=p.metric(y, bg), mode="markers", name="feasible",
                                   marker={"size": 3, "color": "lightgrey"}, hoverinfo="skip",
                                   showlegend=col == 1), row=1, col=col)
        front = result.frontier_indices(x, y)
        gpus = np.array(_groups(result, front))
        fig.add_trace(go.Scatter(x=p.metric(x, front), y=p.metric(y, front), mode="lines",
                                 line={"color": "grey", "width": 1}, hoverinfo="skip", showlegend=False),
                      row=1, col=col)
        for gid in dict.fromkeys(gpus.tolist()):
            sel = front[gpus == gid]
            fig.add_trace(go.Scatter(x=p.metric(x, sel), y=p.metric(y, sel), mode="markers", name=gid,
                                     legendgroup=gid, showlegend=col == 1, marker={"size": 8},
                                     text=[_hover(result, i) for i in sel], hovertemplate="%{text}<extra></extra>"),
                          row=1, col=col)
        fig.update_xaxes(title_text=_axis(x), row=1, col=col)
        fig.update_yaxes(title_text=_axis(y), row=1, col=col)
    fig.update_layout(title=_title(result), template="plotly_white", height=600, width=700 * len(pairs))
    fig.write_html(str(path), include_plotlyjs=True, full_html=True)
    return path
