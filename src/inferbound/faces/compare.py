"""Deployments side by side (``inferbound compare FILE.yaml``, ``POST /api/compare``).

A comparison file has a ``workload:`` mapping and a ``deployments:`` list; their keys are the option
names of the CLI (``input_len`` or ``input``, dashes or underscores), e.g.

    workload: {scenario: serving, concurrency: 16, input_len: 1024, output_len: 256}
    deployments:
      - {model: llama-3.1-70b, gpu: h100_sxm, tp: 4}
      - {model: llama-3.1-70b, gpu: h200_sxm, tp: 2, weight_dtype: fp8, label: "H200 fp8"}

Each deployment is priced by the scenario's own function (estimate.py for ``static``,
workloads/max_throughput.py, workloads/serving.py); a row holds TTFT, TPOT, tok/s per GPU and per user,
J per output token, $ per million output tokens, whether it fits, the decode bound, and each figure's
ratio to the first deployment's (value / first; None where either is missing). Keys are validated
against the declarations of options.py: an unknown key is refused naming it and the allowed ones.
An example file: docs/deployments.yaml.

A deployment that does not fit (no request fits its KV cache in a steady state; weights over memory)
is a row marked ``fits=False`` with the reason among its warnings, not an error that stops the others;
in the steady states its figures are None. So is a deployment that fits but cannot serve the workload's
``rate`` (bound ``overloaded``). Bad input (an unknown key, a layout the model cannot take)
still stops the comparison with the one-line error of that deployment.

Rows are labelled by everything that differs between the deployments (``labels``): the layout
(``Deployment.label()``: GPUs, TP/PP/EP/DP, attention DP, nodes), then, where the deployments differ,
the model, the storage and compute formats, the engine profile and any other option of the file
(``speculative=eagle``, ``block_size=32``); a ``label:`` key replaces it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .options import DEPLOYMENT, ENGINE, ESTIMATE, LENGTHS, STATIC, Opt, engine_options
from ..deploy.deployment import make_deployment
from ..deploy.operating_band import is_overload
from ..workloads.lengths import from_options
from ..workloads.serving import serving
from ..workloads.static import estimate
from ..workloads import max_throughput

METRICS = ("ttft_ms", "tpot_ms", "tok_s_per_gpu", "tok_s_per_user", "joules_per_token", "usd_per_mtok")
_DEPLOYMENT_OPTS = {o.name: o for o in DEPLOYMENT + ENGINE if o.api or o.name == "gpu_file"}
_WORKLOAD_OPTS = {o.name: o for o in STATIC + ESTIMATE + LENGTHS if o.name != "trace"}
MAX_DEPLOYMENTS = 32


@dataclass
class CompareRow:
    label: str
    deployment: str
    fits: bool
    bound: str
    metrics: dict
    ratio: dict = field(default_factory=dict)  # metric -> value / first deployment's
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _key(raw: str, opts: dict[str, Opt], where: str) -> str:
    """A file key (option name, CLI flag spelling or dashes) as the option's name."""
    k = str(raw).strip().lstrip("-").replace("-", "_")
    if k in opts:
        return k
    for name, o in opts.items():
        if any(f.lstrip("-").replace("-", "_") == k for f in o.cli_flags):
            return name
    raise ValueError(f"{where} key {raw!r} unknown; allowed: {', '.join(sorted(opts))}")


def _values(raw: dict, opts: dict[str, Opt], where: str) -> dict:
    out = {}
    for k, v in (raw or {}).items():
        name = _key(k, opts, where)
        o = opts[name]
        if o.kind == "list_int" and isinstance(v, str):
            v = tuple(int(x) for x in v.split(","))
        out[name] = o.check(v) if o.kind in ("int", "float") or o.choices else v
    return out


def load(path: str | Path) -> tuple[dict, list[dict]]:
    """(workload values, [deployment values]) of a comparison YAML file, keys checked."""
    import yaml
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"file={str(p)!r} does not exist; allowed: a YAML file with workload: and deployments:")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ValueError(f"file={str(p)!r} is not YAML: {str(e).splitlines()[0]}") from None
    return parse(doc, str(p))


def parse(doc, where: str = "compare") -> tuple[dict, list[dict]]:
    """(workload values, [deployment values]) of a comparison document (module docstring)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("deployments"), list) or not doc["deployments"]:
        raise ValueError(f"{where}: deployments must be a non-empty list of mappings (and workload a mapping)")
    unknown = set(doc) - {"workload", "deployments"}
    if unknown:
        raise ValueError(f"{where} key {sorted(unknown)[0]!r} unknown; allowed: workload, deployments")
    if len(doc["deployments"]) > MAX_DEPLOYMENTS:
        raise ValueError(f"deployments has {len(doc['deployments'])} entries; allowed: at most {MAX_DEPLOYMENTS}")
    workload = _values(doc.get("workload") or {}, _WORKLOAD_OPTS, "workload")
    deps = []
    for i, d in enumerate(doc["deployments"]):
        if not isinstance(d, dict):
            raise ValueError(f"deployments[{i}] must be a mapping of option names to values")
        d = dict(d)
        label = d.pop("label", None)
        vals = _values(d, _DEPLOYMENT_OPTS, f"deployments[{i}]")
        vals["label"] = str(label) if label is not None else None
        deps.append(vals)
    return workload, deps


def _deployment(v: dict):
    kw = {k: val for k, val in v.items() if k in _DEPLOYMENT_OPTS and k not in [o.name for o in ENGINE]}
    if "gpu_file" in kw:
        kw["gpu_files"] = [Path(x) for x in (kw.pop("gpu_file") or [])]
    return make_deployment(**kw, engine=v.get("engine"), engine_options=engine_options(v))


def _figures(dep, w: dict) -> tuple[dict, bool, str, list]:
    scenario = w.get("scenario", "static")
    i, o = w.get("input_len", 1024), w.get("output_len", 256)
    lengths = from_options({**w, "input_len": i, "output_len": o})
    if scenario == "static":
        if lengths is not None:
            raise ValueError("workload input_dist/output_dist/dataset apply to max-throughput and serving, not static")
        e = estimate(dep, batch=w.get("batch", 8), input_len=i, output_len=o, images=w.get("images", 0))
        en = e.energy
        return ({"ttft_ms": e.ttft_s * 1e3, "tpot_ms": e.tpot_s * 1e3, "tok_s_per_gpu": e.output_tok_s_per_gpu,
                 "tok_s_per_user": e.tok_s_per_user, "joules_per_token": en["joules_per_output_token"],
                 "usd_per_mtok": en.get("usd_per_million_output_tokens")}, e.fits, e.decode.bound, list(e.warnings))
    if scenario == "max-throughput":
        r = max_throughput(dep, input_len=i, output_len=o, num_requests=w.get("requests", 10_000), lengths=lengths,
                           concurrency=w.get("concurrency"), images=w.get("images", 0))
        return ({"ttft_ms": None, "tpot_ms": r.step_time_s * 1e3, "tok_s_per_gpu": r.output_tok_s_per_gpu,
                 "tok_s_per_user": r.tok_s_per_user, "joules_per_token": r.joules_per_output_token,
                 "usd_per_mtok": r.usd_per_million_output_tokens}, True, r.bound, list(dep.warnings) + r.notes)
    s = serving(dep, rate=w.get("rate"), concurrency=w.get("concurrency"), think_time=w.get("think_time", 0.0),
                input_len=i, output_len=o, lengths=lengths, images=w.get("images", 0))
    return ({"ttft_ms": s.ttft_s["mean"] * 1e3, "tpot_ms": s.tpot_s * 1e3, "tok_s_per_gpu": s.output_tok_s_per_gpu,
             "tok_s_per_user": s.tok_s_per_user, "joules_per_token": s.joules_per_output_token,
             "usd_per_mtok": s.usd_per_million_output_tokens}, True, s.bound, list(s.notes))


def _ratio(v, first):
    if v is None or first is None or not first or not math.isfinite(v) or not math.isfinite(first):
        return None
    return v / first


#: file keys the layout label (Deployment.label) or an aspect of ``_aspects`` already names
_NAMED = {"label", "model", "gpu", "num_gpus", "tp", "pp", "ep", "dp", "nodes", "attention_dp",
          "weight_dtype", "act_dtype", "kv_dtype", "engine"}


def _aspects(dep, values: dict) -> dict:
    """What a row's label may name beside its layout: model, formats, engine, the file's other options."""
    w, c, kv = dep.dtypes.weight, dep.compute_dtype, dep.dtypes.kv_dtype
    formats = w if w == c == kv else f"{w} weights, {c} compute, KV {kv}"
    out = {"model": dep.model.name, "formats": formats, "engine": dep.engine or "default engine"}
    for k in sorted(set(values) - _NAMED):
        out[k] = values[k]
    return out


def _show(name: str, v) -> str:
    if name in ("model", "engine", "formats"):
        return str(v)
    if v is None:
        return f"{name} default"
    if isinstance(v, bool):
        return name if v else f"no {name}"
    if isinstance(v, (tuple, list)):
        v = ",".join(str(x) for x in v)
    return f"{name}={v}"


def labels(deps: list, values: list[dict]) -> list[str]:
    """Each row's label: its ``label:`` if given, else its layout, then every aspect (``_aspects``) whose
    value is not the same for all rows, in a fixed order; unlabelled rows still alike get their position (#i)."""
    aspects = [_aspects(d, v) for d, v in zip(deps, values)]
    names = list(dict.fromkeys(k for a in aspects for k in a))
    differ = [k for k in names if len({repr(a.get(k)) for a in aspects}) > 1]
    out = [v.get("label") or ", ".join([d.label()] + [_show(k, a.get(k)) for k in differ])
           for d, v, a in zip(deps, values, aspects)]
    return [f"{t} #{i + 1}" if out.count(t) > 1 and not v.get("label") else t
            for i, (t, v) in enumerate(zip(out, values))]


def _fits_one(dep, w: dict) -> bool:
    """Whether one request's weights and KV fit the deployment (the static estimate at batch 1)."""
    return estimate(dep, batch=1, input_len=w.get("input_len", 1024), output_len=w.get("output_len", 256)).fits


def _not_fitting(dep, w: dict, err: ValueError) -> tuple[dict, bool, str, list]:
    """A steady state that refused the deployment because nothing fits: a marked row, or the error again
    when the deployment fits one request (then the refusal is about the input, and stands)."""
    msg = str(err)
    if is_overload(err):  # serving.py: fits, but cannot keep up with the rate
        return {m: None for m in METRICS}, True, "overloaded", [f"{msg}; no figures"] + list(dep.warnings)
    if not msg.startswith("no request") and _fits_one(dep, w):
        raise err
    return ({m: None for m in METRICS}, False, "does not fit",
            [f"does not fit: {msg}; no figures"] + list(dep.warnings))


def compare(workload: dict, deployments: list[dict]) -> list[CompareRow]:
    """One row per deployment (module docstring); the first is the reference of the ratios. A deployment
    that does not fit is a marked row (``fits=False``), not an error."""
    given, built, figures = [], [], []
    for i, d in enumerate(deployments):  # may be a generator that paces the work (web/routes_compare.py)
        given.append(d)
        try:
            dep = _deployment(d)
            try:
                got = _figures(dep, workload)
            except ValueError as e:
                if workload.get("scenario", "static") == "static":
                    raise
                got = _not_fitting(dep, workload, e)
        except ValueError as e:
            raise ValueError(f"deployments[{i}]: {e}") from None
        built.append(dep)
        figures.append(got)
    names = labels(built, given)
    rows = [CompareRow(label=name, deployment=dep.label(), fits=fits, bound=bound,
                       metrics=metrics, warnings=warnings)
            for dep, name, (metrics, fits, bound, warnings) in zip(built, names, figures)]
    first = rows[0].metrics
    for r in rows:
        r.ratio = {k: _ratio(r.metrics.get(k), first.get(k)) for k in METRICS}
    return rows


def to_csv(rows: list[CompareRow]) -> str:
    import csv
    import io
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["label", "deployment", "fits", "bound", *METRICS, *(f"{m}_ratio" for m in METRICS)])
    for r in rows:
        w.writerow([r.label, r.deployment, r.fits, r.bound, *(r.metrics.get(m) for m in METRICS),
                    *(r.ratio.get(m) for m in METRICS)])
    return buf.getvalue()


def plot(rows: list[CompareRow], path: str | Path) -> Path:
    """A PNG of bar charts, one panel per figure, deployments in file order (matplotlib, Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [m for m in METRICS if any(r.metrics.get(m) is not None for r in rows)]
    fig, axes = plt.subplots(1, len(shown), figsize=(3.2 * len(shown), 3.6), squeeze=False)
    labels = [r.label for r in rows]
    for ax, m in zip(axes[0], shown):
        vals = [r.metrics.get(m) or 0.0 for r in rows]
        ax.bar(range(len(rows)), vals, color=["#4c72b0" if r.fits else "#c44e52" for r in rows])
        ax.set_title(m, fontsize=9)
        ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=7)
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return p
