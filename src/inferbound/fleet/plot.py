"""PNG of a simulated day of a fleet (matplotlib, Agg backend), drawn from the fleet's ``--json`` dict.

Four panels over the same minutes (minute m covers [m, m + 1) min): arrivals in each minute (bars); requests
queued and replicas routable at each minute's end (drawn at m + 1; replicas stacked by pool when
``series.replicas`` is a mapping pool -> counts, else the fleet's total); SLO attainment (the share of the
requests finishing in that minute that met every SLO, in %, drawn at m + 0.5; a minute where none finished
is a gap, not 0).
The title carries the whole fleet's requests, attainment, GPU-hours and cost where the dict has them.

Keys read (fleet/result.py writes them): ``series.t_min``, ``series.arrivals``, ``series.queue``,
``series.replicas``, ``series.attainment``; optional ``pools[].name``, ``requests``, ``slo_attainment``,
``gpu_hours``, ``cost_usd``. A missing series or one of another length than ``t_min`` is a one-line error.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

SERIES = ("t_min", "arrivals", "queue", "replicas", "attainment")


def _series(result: dict) -> dict:
    s = result.get("series") if isinstance(result, dict) else None
    if not isinstance(s, dict):
        raise ValueError("plot: the result has no 'series' mapping; allowed: the fleet's --json dict "
                         f"(series: {', '.join(SERIES)})")
    missing = [k for k in SERIES if k not in s]
    if missing:
        raise ValueError(f"plot: series.{missing[0]} is missing; allowed: series with {', '.join(SERIES)}")
    n = len(s["t_min"])
    if n == 0:
        raise ValueError("plot: series.t_min is empty (no minute to draw)")
    reps = s["replicas"]
    lines = {str(k): v for k, v in reps.items()} if isinstance(reps, dict) else {"replicas": reps}
    for name, v in [("arrivals", s["arrivals"]), ("queue", s["queue"]), ("attainment", s["attainment"]),
                    *((f"replicas.{k}" if isinstance(reps, dict) else "replicas", v) for k, v in lines.items())]:
        if len(v) != n:
            raise ValueError(f"plot: series.{name} has {len(v)} values, series.t_min has {n}; allowed: one per minute")
    return {"t": _floats(s["t_min"]), "arrivals": _floats(s["arrivals"]), "queue": _floats(s["queue"]),
            "replicas": {k: _floats(v) for k, v in lines.items()}, "attainment": _floats(s["attainment"])}


def _floats(v) -> np.ndarray:
    """Values as floats, None as NaN (a gap in the line)."""
    return np.array([np.nan if x is None else float(x) for x in v], dtype=float)


def _title(result: dict) -> str:
    parts = []
    if result.get("requests") is not None:
        parts.append(f"{int(result['requests']):,} requests")
    if result.get("slo_attainment") is not None:
        parts.append(f"SLO attainment {float(result['slo_attainment']) * 100:.1f} %")
    if result.get("gpu_hours") is not None:
        parts.append(f"{float(result['gpu_hours']):,.1f} GPU-hours")
    if result.get("cost_usd") is not None:
        parts.append(f"${float(result['cost_usd']):,.2f}")
    pools = [p.get("name") for p in result.get("pools") or [] if isinstance(p, dict) and p.get("name")]
    head = f"fleet of {len(pools)} pool{'s' if len(pools) != 1 else ''} ({', '.join(pools)})" if pools else "fleet"
    return head + (": " + ", ".join(parts) if parts else "")


def plot_day(result: dict, path) -> None:
    """Write the 4-panel PNG of ``result`` (the fleet's --json dict) to ``path`` (must end in .png)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"plot={str(path)!r} must end in .png")
    s = _series(result)
    t = s["t"]
    fig, axes = plt.subplots(4, 1, figsize=(10, 10), sharex=True, constrained_layout=True)
    ax_a, ax_q, ax_r, ax_s = axes
    end, mid = t + 1.0, t + 0.5  # queue and replicas are counted at each minute's end; attainment over it
    ax_a.bar(t, s["arrivals"], width=1.0, align="edge", color="tab:blue")
    ax_a.set(ylabel="arrivals / min", title="Arrivals per minute")
    ax_q.plot(end, s["queue"], marker=".", color="tab:orange")
    ax_q.set(ylabel="requests", ylim=(0, max(1.0, float(np.nanmax(s["queue"])) * 1.1)),
             title="Requests queued (arrived, not yet admitted) at each minute's end")
    names = list(s["replicas"])
    xs = np.concatenate([t[:1], end])  # step "pre": the count at minute m's end spans (m, m + 1]
    ax_r.stackplot(xs, *[np.concatenate([v[:1], v]) for v in (s["replicas"][k] for k in names)], labels=names,
                   step="pre", alpha=0.8)
    ax_r.set(ylabel="replicas", title="Routable replicas at each minute's end" + (", stacked by pool" if len(names) > 1 else ""))
    if len(names) > 1:
        ax_r.legend(loc="upper left", fontsize="small")
    ax_s.plot(mid, s["attainment"] * 100, marker=".", color="tab:green")
    ax_s.set(xlabel="time (min)", ylabel="attainment (%)", ylim=(0, 105),
             title="SLO attainment of the requests finishing in each minute")
    fig.suptitle(_title(result))
    fig.savefig(path, dpi=100)
    plt.close(fig)


__all__ = ["plot_day"]
