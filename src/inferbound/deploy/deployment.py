"""A deployment: model, GPU type, parallel layout, dtypes and serving engine, validated together at the edge.

The engine (runtime.py: a cited profile of data/engines.yaml plus the user's overrides) decides how the
KV cache is sized, the block size, the token budget, running-sequence caps, reservation and
preemption, and whether the model's sliding windows are honoured.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from .config import Dtypes, Parallelism
from .calibration import resolve as resolve_calibration
from .checkpoint import resolve_dtypes
from ..hardware import GPU, apply_overrides, get_gpu, resolve_compute_dtype
from ..hardware.prices import apply_prices, check_prices, price_note
from ..hardware.whatif import note as whatif_note, parse_scales, scale_gpu
from ..model import ModelSpec, load_model


def validated(cls, **fields):
    """Build a pydantic config; a validation error becomes one line: field=value: what is allowed."""
    try:
        return cls(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        raise ValueError(msg if not loc or repr(err.get("input")) in msg else f"{loc}={err.get('input')!r}: {msg}") from None


@dataclass(frozen=True)
class Deployment:
    model: ModelSpec
    gpu: GPU
    par: Parallelism
    dtypes: Dtypes
    compute_dtype: str
    calibration: object = None  # the Calibration applied (None: catalog priors); gives error bands
    engine: str | None = None  # engine profile (name@version); None: the default engine
    engine_options: tuple = ()  # (option, value) overrides of the engine's defaults (runtime.resolve)
    notes: tuple = ()  # guesses and choices the user should know (model warnings, formats from the checkpoint)

    @property
    def warnings(self) -> list[str]:
        """Everything an output should print as a warning: the deployment's notes and the engine's."""
        return list(self.notes) + list(self.runtime.notes)

    @cached_property
    def runtime(self):
        """The serving engine's settings for this deployment (runtime.Runtime), resolved once."""
        from .runtime import resolve
        return resolve(self, self.engine, **dict(self.engine_options))

    def offline_runtime(self):
        """The engine's settings when it runs an offline benchmark (its offline token budget, and for
        TensorRT-LLM the limits trtllm-bench derives), overrides kept."""
        if "_offline_runtime" not in self.__dict__:
            from .runtime import resolve
            self.__dict__["_offline_runtime"] = resolve(self, self.engine, offline=True, **dict(self.engine_options))
        return self.__dict__["_offline_runtime"]

    @property
    def num_gpus(self) -> int:
        return self.par.num_gpus

    @cached_property
    def comm_pricer(self):
        """Prices this deployment's collectives on its topology (collectives.comm_pricer), built once."""
        from ..pricing.collectives import comm_pricer
        return comm_pricer(self.gpu, self.par, self.engine, self.calibration)

    @cached_property
    def weight_bytes_per_gpu(self) -> float:
        """The target's weight bytes on the most loaded GPU (memory.weight_bytes_per_gpu), computed once."""
        from .memory import weight_bytes_per_gpu
        return float(weight_bytes_per_gpu(self.model, self.dtypes, self.par))

    @cached_property
    def kv_capacity_bytes(self) -> float:
        """KV-cache bytes per GPU the deployment's engine allocates (runtime.kv_capacity_bytes), once."""
        from .runtime import kv_capacity_bytes
        return kv_capacity_bytes(self, self.runtime)

    def label(self) -> str:
        p = self.par
        parts = [f"TP{p.tp}"] + [f"{k.upper()}{v}" for k, v in (("pp", p.pp), ("ep", p.ep), ("dp", p.dp)) if v > 1]
        return f"{self.num_gpus}x {self.gpu.id} {' '.join(parts)}"


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
    from .runtime import profile_of  # engine profiles: cited data
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
        from ..hardware import load_catalog
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
    from .layout import check_layout  # parallelism rules live with the parallelism model
    check_layout(m, g, par)
    dtype_args, dtype_notes = resolve_dtypes(m, g, weight_dtype, act_dtype, kv_dtype, emulate)
    dt = validated(Dtypes, **dtype_args)
    options = tuple(sorted((k, v) for k, v in (engine_options or {}).items() if v is not None))
    dep = Deployment(m, g, par, dt, resolve_compute_dtype(g, dt.weight, dt.act, emulate), cal, profile.key, options,
                     tuple(m.warnings) + tuple(dtype_notes) + ((whatif_note(g),) if g.derived_from else ()) +
                     tuple(n for n in (price_note(g),) if n))
    dep.runtime  # noqa: B018  (validate the engine options now: one-line errors at the edge)
    return dep
