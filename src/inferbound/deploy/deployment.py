"""A deployment: model, GPU type, parallel layout, dtypes and serving engine, validated together at the edge.

The engine (runtime.py: a cited profile of data/engines.yaml plus the user's overrides) decides how the
KV cache is sized, the block size, the token budget, running-sequence caps, reservation and
preemption, and whether the model's sliding windows are honoured.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..base.caches import cache
from .config import Dtypes, Parallelism
from .calibration import content_key, resolve as resolve_calibration
from .checkpoint import resolve_dtypes
from ..hardware import GPU, apply_overrides, get_gpu, load_catalog, resolve_compute_dtype
from ..hardware.prices import apply_prices, check_prices, price_note
from ..hardware.whatif import note as whatif_note, parse_scales, scale_gpu
from ..model import ModelSpec, load_model
from .layout import check_layout
from .memory_terms import weight_bytes_per_gpu
from .engines import engine_note, load_engines, platform_notes
from .runtime import Runtime, kv_capacity_bytes, profile_of, resolve


#: validated layouts and formats by their exact input (each value with its type: 4 and 4.0 are two keys)
_VALIDATED = cache("validated layouts and formats", 1024)


def validated(cls, **fields):
    """Build a pydantic config; a validation error becomes one line: field=value: what is allowed. A frozen
    config built from the same input (values and their types) before is returned again, not re-validated."""
    try:
        key = (cls, tuple((k, type(v), v) for k, v in sorted(fields.items())))
        hash(key)
    except TypeError:  # an unhashable field value (a list): validated every time
        key = None
    hit = _VALIDATED.get(key) if key is not None else None
    if hit is not None:
        return hit
    try:
        out = cls(**fields)
        if key is not None:
            _VALIDATED.get_or(key, lambda: out)
        return out
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        raise ValueError(msg if not loc or repr(err.get("input")) in msg else f"{loc}={err.get('input')!r}: {msg}") from None


#: (weights per GPU, Runtime, KV bytes per GPU) of a deployment, keyed by its content (its equality: model, GPU,
#: layout, dtypes, compute dtype, calibration content, engine, engine options, notes) with the engine catalog they
#: were resolved against; all three are pure
#: functions of those fields, so an equal deployment built again (a name resolved anew) derives nothing
_DERIVED = cache("deployment runtime pieces", 4096)


@dataclass(frozen=True)
class Deployment:
    """A plain frozen value: what is deployed (model, GPU, layout, dtypes, engine and its overrides) and the
    few figures derived from it once at construction (``__post_init__``; ``dataclasses.replace`` derives
    them anew): the weights per GPU, the engine's :class:`Runtime` and the KV bytes it allocates.
    It carries no services and no caches (those live in base/caches.py, keyed by the deployment's content);
    equal deployments are equal and hash alike."""

    model: ModelSpec
    gpu: GPU
    par: Parallelism
    dtypes: Dtypes
    compute_dtype: str
    calibration: object = field(default=None, compare=False)  # the Calibration applied (None: catalog priors)
    engine: str | None = None  # engine profile (name@version); None: the default engine
    engine_options: tuple = ()  # (option, value) overrides of the engine's defaults (runtime.resolve)
    notes: tuple = ()  # guesses and choices the user should know (model warnings, formats from the checkpoint)
    # derived once from the fields above
    calibration_key: object = field(init=False, repr=False)  # the calibration's content (equality and hash)
    weight_bytes_per_gpu: float = field(init=False, repr=False, compare=False)  # memory.weight_bytes_per_gpu
    runtime: Runtime = field(init=False, repr=False, compare=False)  # the engine's settings (runtime.resolve)
    kv_capacity_bytes: float = field(init=False, repr=False, compare=False)  # runtime.kv_capacity_bytes
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        put = object.__setattr__
        put(self, "calibration_key", content_key(self.calibration))
        put(self, "_hash", hash((self.model, gpu_key(self.gpu), self.par, self.dtypes, self.compute_dtype,
                                 self.calibration_key, self.engine, self.engine_options, self.notes)))
        # an equal deployment's figures (keyed by this one's content), kept while the parsed engine catalog is the
        # same object (a reloaded catalog may say otherwise, as engines.resolve_version checks too)
        catalog = load_engines()
        hit = _DERIVED.get(self)
        derived = hit[1] if hit is not None and hit[0] is catalog else None
        if derived is None:
            put(self, "weight_bytes_per_gpu", float(weight_bytes_per_gpu(self.model, self.dtypes, self.par)))
            rt = resolve(self, self.engine, **dict(self.engine_options))  # one-line errors at the edge
            derived = (self.weight_bytes_per_gpu, rt, kv_capacity_bytes(self, rt))
            _DERIVED.pop(self, None)
            _DERIVED.get_or(self, lambda: (catalog, derived))
        put(self, "weight_bytes_per_gpu", derived[0])
        put(self, "runtime", derived[1])
        put(self, "kv_capacity_bytes", derived[2])

    def __hash__(self) -> int:
        return self._hash

    @property
    def warnings(self) -> list[str]:
        """Everything an output should print as a warning: the deployment's notes and the engine's."""
        return list(self.notes) + list(self.runtime.notes)

    @property
    def num_gpus(self) -> int:
        return self.par.num_gpus

    def label(self) -> str:
        """The whole layout, short: GPUs, then TP always and PP/EP/DP where > 1, DP written ``attention-DP``
        when the dp ranks are one replica's attention groups (attention_dp), and the node count where > 1:
        ``16x h200_sxm TP1 EP16 attention-DP16 over 2 nodes`` (EPLB's copies: ``EP72 +32 redundant experts``)."""
        p = self.par
        parts = [f"TP{p.tp}"] + [f"{k.upper()}{v}" for k, v in (("pp", p.pp), ("ep", p.ep)) if v > 1]
        if p.redundant_experts:  # EPLB's copies (deploy/eplb.py)
            parts.append(f"+{p.redundant_experts} redundant experts")
        if p.dp > 1:
            parts.append(f"{'attention-' if p.attention_dp else ''}DP{p.dp}")
        nodes = f" over {p.nodes} nodes" if p.nodes > 1 else ""
        return f"{self.num_gpus}x {self.gpu.id} {' '.join(parts)}{nodes}"


_GPU_KEYS = cache("gpu content key", 256)


def gpu_key(gpu: GPU) -> str:
    """The GPU's content (its JSON), kept per GPU object."""
    return _GPU_KEYS.per_object(gpu, GPU.model_dump_json)


def make_deployment(model: str | dict | ModelSpec = "llama-3.1-8b", gpu: str | GPU = "h100_sxm",
                    num_gpus: int | None = None, tp: int | None = None, pp: int = 1, ep: int = 1,
                    dp: int = 1, nodes: int = 1, attention_dp: bool = False,
                    weight_dtype: str | None = None, act_dtype: str | None = None, kv_dtype: str | None = None,
                    emulate: bool = False, model_overrides: dict | None = None, assume_family: str | None = None,
                    gpu_overrides: dict | None = None, gpu_files: list[Path] | None = None,
                    calibration=None, sliding_window: bool | None = None, engine: str | None = None,
                    engine_options: dict | None = None, gpu_scale: dict | str | None = None,
                    prices: dict[str, float] | None = None, **parallel_options) -> Deployment:
    """Build and validate a deployment; errors name the field, the value and what is allowed.

    ``tp`` defaults to num_gpus/(pp·dp) (or 1); ``num_gpus`` defaults to tp·pp·dp. Formats left None are
    the checkpoint's (checkpoint.py: its quantization_config, else its torch_dtype), noted in ``notes``.
    ``parallel_options``: further :class:`Parallelism` fields (sequence_parallel, pp_split,
    microbatches, collective_algo, comm_overlap). ``calibration``: a Calibration, a file, 'none' or
    None (= the default: $INFERBOUND_CALIBRATION or the packaged fit); it adjusts the GPU's efficiency
    factors before ``gpu_overrides`` (which win). ``engine``: a profile of data/engines.yaml (``vllm``,
    ``vllm@0.6.3``, ``sglang``, ``trtllm@0.17``; None: the default), ``engine_options`` its overrides
    (block_size, token_budget, max_num_seqs, memory_fraction, reservation, preemption, ...).
    ``sliding_window``: None follows the engine (TensorRT-LLM before 2026-03 ignored Mistral's window),
    False models full attention and cache on window layers, True honours them. ``gpu_scale``: a what-if
    GPU, the catalog GPU's figures scaled (hardware/whatif.py: hbm_bw, flops, hbm_gb, link_bw, ...),
    named in every output and noted as extrapolated. ``prices``: the user's USD per GPU-hour by catalog
    GPU id (--price GPU=USD; hardware/prices.py), replacing the cited figure and noted.
    """
    m = model if isinstance(model, ModelSpec) else load_model(model, model_overrides, assume_family=assume_family)
    profile = profile_of(engine)
    if sliding_window is None:
        sliding_window = profile.sliding_window is None or bool(profile.sliding_window.value)
    if not sliding_window:
        m = m.without_sliding_windows()
    cal = resolve_calibration(calibration)
    if isinstance(gpu, GPU):
        g = gpu
    else:
        g = get_gpu(gpu, None, extra_paths=gpu_files)
        if cal is not None:
            g = cal.apply(g)
        if gpu_overrides:
            g = apply_overrides(g, gpu_overrides)
    if prices:  # the user's $/GPU-hour: ids checked against the catalog; replaces the cited figure
        g = apply_prices([g], check_prices(prices, load_catalog(gpu_files)))[0]
    scales = parse_scales(gpu_scale)
    g = scale_gpu(g, scales)
    for name, v in (("num_gpus", num_gpus), ("tp", tp), ("pp", pp), ("ep", ep), ("dp", dp), ("nodes", nodes)):
        if v is not None and v < 1:
            raise ValueError(f"{name}={v} must be >= 1")
    if tp is None:
        tp = (num_gpus // (pp * dp)) if num_gpus and num_gpus % (pp * dp) == 0 else 1
    par = validated(Parallelism, tp=tp, pp=pp, ep=ep, dp=dp, nodes=nodes, attention_dp=attention_dp,
                    **parallel_options)
    if num_gpus is not None and num_gpus != par.num_gpus:
        raise ValueError(f"num_gpus={num_gpus} does not match tp*pp*dp={tp}*{pp}*{dp}={par.num_gpus}")
    check_layout(m, g, par)
    dtype_args, dtype_notes = resolve_dtypes(m, g, weight_dtype, act_dtype, kv_dtype, emulate)
    dt = validated(Dtypes, **dtype_args)
    options = tuple(sorted((k, v) for k, v in (engine_options or {}).items() if v is not None))
    dep = Deployment(m, g, par, dt, resolve_compute_dtype(g, dt.weight, dt.act, emulate), cal, profile.key, options,
                     tuple(m.warnings) + tuple(dtype_notes) + ((whatif_note(g),) if g.derived_from else ()) +
                     tuple(n for n in (price_note(g),) if n) +
                     tuple(n for n in (engine_note(engine),) if n) + tuple(platform_notes(profile, g.vendor)))
    return dep
