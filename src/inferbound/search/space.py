"""The search space: GPU types x GPU counts x parallel layouts x dtype combinations, validated.

For each GPU type and each GPU count N = 1, 2, 4, ... <= ``max_gpus`` a *replica layout* is a
(tp, pp, ep, attention-dp) with

    N = tp · pp · dp_attention        (dp_attention > 1 only for MoE models, with ep = tp · dp_attention)
    nodes = ceil(N / machine)         machine = links.yaml max_gpus_per_node (8), or the scale-up
                                      domain for rack-scale GPUs (NVL72), as topology.check_nodes allows
    tp <= N / nodes                   (engines keep tensor parallelism inside a machine)

Plain data parallelism is not a separate axis: dp replicas are independent engines, so per-GPU,
per-user, per-joule and per-dollar figures of tp·pp·dp equal those of tp·pp; the search reports the
replicas a target request rate needs instead (``fleet_replicas``).

Each layout is tried with every dtype combination of data/search.yaml the GPU runs natively. Every
candidate goes through :func:`make_deployment` (the same layout checks as ``estimate``); a ValueError
skips it, and so do layouts whose weights leave no KV room for one request, or that the engine
guidance of search.yaml rules out (pipeline parallelism where TP fits one NVLink island, partial EP).
Every skip is counted under its reason, with an example: nothing is dropped silently.

Before a layout is evaluated, :func:`estimate_size` counts the configurations the evaluation will make
(from each layout's concurrency caps, as evaluate.py sweeps them) and estimates the search's peak memory
(data/search.yaml ``limits``); the CLI and the JSON API refuse a search over the memory budget.
"""
from __future__ import annotations

from dataclasses import dataclass, field


from ..base.datafiles import data_yaml
from ..deploy.calibration import resolve as resolve_calibration
from ..deploy.config import Parallelism
from ..deploy.deployment import Deployment, make_deployment
from ..hardware import GPU, apply_overrides, get_gpu, load_catalog
from ..hardware.prices import apply_prices, check_prices
from ..hardware.whatif import parse_scales, scale_gpu
from ..deploy.memory import weight_bytes_per_gpu
from ..deploy.runtime import runtime_reserve_bytes
from ..model import ModelSpec
from ..deploy.topology import island_size, link_defaults
from .evaluate import _CACHE_SIZE as TABLES_KEPT, Workload, concurrency_caps, pool_pairs, prefill_batches, prefill_k_max


def search_defaults() -> dict:
    return data_yaml("search.yaml")


@dataclass(frozen=True)
class DtypeCombo:
    name: str
    weight: str
    act: str
    kv: str
    needs: str | None = None


def dtype_combos(names: list[str] | None = None) -> list[DtypeCombo]:
    """The dtype combinations of data/search.yaml, optionally only those named."""
    combos = [DtypeCombo(**c) for c in search_defaults()["space"]["dtypes"]]
    if names is None:
        return combos
    known = {c.name: c for c in combos}
    if not names:
        raise ValueError(f"dtypes={names!r} is empty; allowed: {', '.join(known)}")
    for n in names:
        if n not in known:
            raise ValueError(f"dtypes={n!r} unknown; allowed: {', '.join(known)}")
    return [known[n] for n in dict.fromkeys(names)]


@dataclass
class Space:
    """Valid deployments (replica layouts) and the candidates skipped, by reason."""

    deployments: list[Deployment]
    combos: list[str]  # dtype combination name of each deployment
    skipped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)

    def skip(self, reason: str, example: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.examples.setdefault(reason, example)

    def skipped_summary(self) -> str:
        """'weights do not fit: 120 (e.g. 1x l4 TP1 bf16); ...' (empty when nothing was skipped)."""
        return "; ".join(f"{r}: {n} (e.g. {self.examples[r]})" for r, n in
                         sorted(self.skipped.items(), key=lambda kv: -kv[1]))


def resolve_gpus(gpus: list[str] | None, calibration=None, gpu_overrides: dict | None = None,
                 gpu_files: list | None = None, gpu_scale: dict | str | None = None,
                 prices: dict[str, float] | None = None) -> list[GPU]:
    """Catalog GPUs by id (all when None; user hardware files included), calibrated as make_deployment
    would calibrate them, then ``gpu_overrides`` (field: value, SI units) applied to each, then the user's
    ``prices`` ({GPU id: USD per GPU-hour}, --price; hardware/prices.py); with ``gpu_scale``
    (hardware/whatif.py) each GPU's what-if copy is searched beside it."""
    catalog = load_catalog(gpu_files)
    prices = check_prices(prices, catalog)  # an unknown id or a bad figure: one line, before the sweep
    ids = list(catalog) if gpus is None else list(dict.fromkeys(gpus))
    if not ids:
        raise ValueError("gpus=[] is empty; allowed: GPU ids from `inferbound gpus`, or none for all")
    cal = resolve_calibration(calibration)
    out = []
    for gid in ids:
        g = get_gpu(gid, extra_paths=gpu_files)  # ValueError: gpu='x' is not in the catalog; known: ...
        g = cal.apply(g) if cal is not None else g
        out.append(apply_overrides(g, gpu_overrides) if gpu_overrides else g)
    out = apply_prices(out, prices)
    scales = parse_scales(gpu_scale)
    return out + [scale_gpu(g, scales) for g in out] if scales else out


def gpu_counts(max_gpus: int) -> list[int]:
    if max_gpus < 1:
        raise ValueError(f"max_gpus={max_gpus} must be >= 1")
    counts, n = [], 1
    while n <= max_gpus:
        counts.append(n)
        n *= 2
    return counts


def _machine(gpu: GPU) -> int:
    """GPUs one machine holds (topology.check_nodes): 8, or the scale-up domain when rack-scale."""
    return max(int(link_defaults()["max_gpus_per_node"]), gpu.scaleup_domain)


def _powers(limit: int) -> list[int]:
    return [1 << i for i in range(limit.bit_length()) if 1 << i <= limit]


def candidate_layouts(m: ModelSpec, gpu: GPU, n: int, all_layouts: bool):
    """(tp, pp, ep, dp, attention_dp, nodes, rule) for n GPUs; ``rule`` names an engine-guidance skip."""
    nodes = max(1, -(-n // _machine(gpu)))
    per_node = n // nodes
    defaults = search_defaults()["space"]
    moe = m.moe is not None
    for tp in _powers(n):
        if tp > per_node:
            yield tp, n // tp, 1, 1, False, nodes, "tp spans machines (engines keep TP inside one)"
            continue
        rest = n // tp
        for dp_att in (_powers(rest) if moe else [1]):
            pp = rest // dp_att
            attention_dp = dp_att > 1
            if not moe:
                eps = [1]
            elif attention_dp:
                eps = [tp * dp_att]  # DeepSeek-style: experts over every GPU of the replica
            elif all_layouts or not defaults["ep_full_or_none"]:
                eps = _powers(tp)
            else:
                eps = [1] + ([tp] if tp > 1 else [])
            for ep in eps:
                rule = None
                if pp > 1 and not all_layouts and defaults["pp_only_where_tp_cannot"]:
                    par = Parallelism(tp=tp, pp=pp, dp=dp_att, ep=ep, nodes=nodes, attention_dp=attention_dp)
                    if m.num_heads % (tp * pp) == 0 and gpu.nvlink and tp * pp <= island_size(gpu, par):
                        rule = "pp where TP fits one NVLink island (engine guidance; all_layouts to include)"
                yield tp, pp, ep, dp_att, attention_dp, nodes, rule


def build_space(m: ModelSpec, gpus: list[GPU], max_gpus: int, dtypes: list[str] | None = None,
                all_layouts: bool = False, engine: str | None = None, engine_options: dict | None = None) -> Space:
    """Every valid deployment of ``m`` on ``gpus`` with up to ``max_gpus`` GPUs under ``engine`` (its
    profile and option overrides; see module docstring)."""
    combos = dtype_combos(dtypes)
    space = Space([], [])
    reserve = runtime_reserve_bytes()
    for gpu in gpus:
        for n in gpu_counts(max_gpus):
            for tp, pp, ep, dp, att, nodes, rule in candidate_layouts(m, gpu, n, all_layouts):
                label = f"{n}x {gpu.id} TP{tp}" + (f" PP{pp}" if pp > 1 else "") + \
                        (f" EP{ep}" if ep > 1 else "") + (f" DP{dp}" if dp > 1 else "")
                for c in combos:
                    where = f"{label} {c.name}"
                    if rule is not None:
                        space.skip(rule, where)
                        continue
                    if c.needs is not None and not gpu.supports(c.needs):
                        space.skip(f"{c.needs} not native on the GPU", where)
                        continue
                    try:
                        dep = make_deployment(model=m, gpu=gpu, tp=tp, pp=pp, ep=ep, dp=dp, nodes=nodes,
                                              attention_dp=att, weight_dtype=c.weight, act_dtype=c.act,
                                              kv_dtype=c.kv, engine=engine, engine_options=engine_options)
                    except ValueError as e:
                        field_name = str(e).split("=")[0].split(" ")[0]
                        space.skip(f"invalid {field_name} (layout checks)", f"{where}: {e}")
                        continue
                    if weight_bytes_per_gpu(m, dep.dtypes, dep.par) + reserve > gpu.hbm_bytes:
                        space.skip("weights do not fit", where)
                        continue
                    space.deployments.append(dep)
                    space.combos.append(c.name)
    return space


def search_limits() -> dict:
    """data/search.yaml ``limits``: the memory budget, when a size is printed, and the estimate's figures."""
    return search_defaults()["limits"]


def configurations(dep: Deployment, w: Workload, prefill: Deployment | None = None) -> int:
    """Configurations evaluate.evaluate_layout makes of ``dep`` under ``w``, from the caps alone: the decode
    batches 1..D_max, times the swept prefill batches of the prefill pool (``prefill``, else ``dep``) when
    disaggregated (evaluate.py); 0 when not one request fits."""
    caps, _, _ = concurrency_caps(dep, w, decode_only=w.disaggregated)
    d_max = int(min(caps.values()))
    if not w.disaggregated:
        return max(0, d_max)
    k_max = prefill_k_max(prefill or dep, w)
    return 0 if d_max < 1 or k_max < 1 else d_max * len(prefill_batches(k_max))


@dataclass(frozen=True)
class SearchSize:
    """A search's size before it runs (:func:`estimate_size`)."""

    layouts: int  # distinct layouts (deployments)
    modes: int  # serving modes each layout is evaluated in
    configurations: int  # layouts x concurrency (x prefill batch), every mode
    peak_bytes: float  # estimated peak memory of the search, every process together
    workers: int  # processes evaluating layouts
    pool_pairs: int = 0  # disaggregated decode layouts also evaluated with a prefill pool of another layout

    @property
    def over_budget(self) -> bool:
        """Whether the estimate exceeds data/search.yaml ``limits.memory_budget_gb``."""
        return self.peak_bytes > float(search_limits()["memory_budget_gb"]) * 1e9

    @property
    def worth_announcing(self) -> bool:
        """Whether the estimate exceeds ``limits.announce_above_gb`` (print it before the search starts)."""
        return self.peak_bytes > float(search_limits()["announce_above_gb"]) * 1e9

    def describe(self) -> str:
        """'4,646 layouts x 2 modes, 171,234,567 configurations, about 42.8 GB peak memory (2 processes)'."""
        modes = f" x {self.modes} modes" if self.modes > 1 else ""
        modes += f" + {self.pool_pairs:,} prefill-pool pairings" if self.pool_pairs else ""
        procs = f" ({self.workers} processes)" if self.workers > 1 else ""
        return (f"{self.layouts:,} layouts{modes}, {self.configurations:,} configurations, about "
                f"{self.peak_bytes / 1e9:,.1f} GB peak memory{procs}")


def estimate_size(deployments: list[Deployment], workloads: list[Workload], workers: int = 1) -> SearchSize:
    """The size of evaluating every deployment under every workload (one per serving mode) on ``workers``
    processes: configurations counted exactly (:func:`configurations`); peak memory from data/search.yaml
    ``limits``, bytes per configuration plus step tables per layout (at most evaluate.py's cache of them
    per process)."""
    lim = search_limits()
    count = sum(configurations(d, w) for w in workloads for d in deployments)
    # prefill pools of their own layout (evaluate.pool_pairs: prices each layout's prefill step once)
    pairs = [(deployments[j], pre, w) for w in workloads if w.disaggregated for j, pre in pool_pairs(deployments, w)]
    count += sum(configurations(d, w, pre) for d, pre, w in pairs)
    tables = min(len(deployments), TABLES_KEPT * max(1, workers)) * float(lim["bytes_per_layout"])
    return SearchSize(layouts=len(deployments), modes=len(workloads), configurations=int(count),
                      peak_bytes=tables + count * float(lim["bytes_per_configuration"]), workers=int(workers),
                      pool_pairs=len(pairs))
