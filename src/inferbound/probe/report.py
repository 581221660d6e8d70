"""``probe()``: measure this machine, write its hardware entry and measured rows, score the predictions.

Steps: microbenchmarks (``microbench.py``) -> hardware entry ``local_gpu.yaml`` (``hwentry.py``) ->
a random-weight decoder of the model (``model_run.py``) timed at the batch sizes and contexts of
the :data:`PLANS` entry -> ``measured_local.csv`` (KV cache on) and ``measured_local_nocache.csv``
(off), in the validation schema (``rows.py``) -> predictions for them from the measured entry and
the memory-bound and slope checks (``checks.py``). Files land in ``out_dir``.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..model import count_params
from . import checks, hwentry, microbench, model_run
from .device import available_cores, detect
from .rows import Measurement, csv_rows, row_model, write_csv

DEFAULT_MODEL = "smollm2-135m"
#: 1-minute load average per core above which the probe warns that other processes share the cores
#: [rule of thumb] half the cores busy already disturbs multi-threaded timings (OpenMP barriers wait for
#: descheduled threads; on the 2-core machine of docs/probe.md a 2-thread decode step ran 4x slower at load 4)
BUSY_LOAD = 0.5
HARDWARE_FILE, ROWS_FILE, NO_CACHE_FILE = "local_gpu.yaml", "measured_local.csv", "measured_local_nocache.csv"


@dataclass(frozen=True)
class Plan:
    """What the model run measures. ``prefill``: (batch, prompt) timed prefills, each followed by
    ``decode_steps`` decode steps on the cache it filled; ``decode``: (batch, context) decode steps on
    a random-filled cache; ``no_cache``: (batch, context) steps recomputing the prefix (each should
    match a prefill or decode setup, so cache on and off are compared at the same point)."""

    prefill: tuple[tuple[int, int], ...]
    decode: tuple[tuple[int, int], ...]
    no_cache: tuple[tuple[int, int], ...]
    decode_steps: int
    no_cache_steps: int
    prefill_repeats: int

    def __post_init__(self) -> None:
        for name in ("prefill", "decode", "no_cache"):
            for pair in getattr(self, name):
                if len(pair) != 2 or min(pair) < 1:
                    raise ValueError(f"plan.{name}={pair!r} is invalid; allowed: (batch >= 1, tokens >= 1) pairs")
        for name in ("decode_steps", "no_cache_steps", "prefill_repeats"):
            if getattr(self, name) < 1:
                raise ValueError(f"plan.{name}={getattr(self, name)!r} is invalid; allowed: integers >= 1")


#: quick (CI) and default plans, sized for a 2-core CPU running SmolLM2-135M in fp32 (~35 ms a decode
#: step, ~0.45 s a 128-token prefill): default ~45 s in all, quick < 20 s. Contexts up to 4096 make
#: the KV reads a visible share of the step (SmolLM2 fp32: 46 kB per token; 4 x 4096 tokens = 0.75 GB).
PLANS: dict[bool, Plan] = {
    False: Plan(prefill=((1, 128), (1, 512), (4, 128)), decode=((1, 1024), (1, 4096), (4, 1024), (4, 4096)),
                no_cache=((1, 128), (1, 512)), decode_steps=8, no_cache_steps=3, prefill_repeats=3),
    True: Plan(prefill=((1, 64), (2, 64)), decode=((1, 512), (2, 512)), no_cache=((1, 64),),
               decode_steps=4, no_cache_steps=2, prefill_repeats=2),
}


@dataclass
class ProbeResult:
    """Everything the probe measured and concluded (SI units: seconds, FLOP/s, bytes/s)."""

    device: dict
    model: dict
    matmul: list[dict]
    peak_flop_s: dict
    bandwidth: dict          # copy: buffer_bytes, bytes_moved (2·buffer), seconds, bytes_per_s
    read_bandwidth: dict
    gemv_bytes_per_s: dict   # decode GEMV (M=1) weight bandwidth of the model dtype, by layout
    tiny_op_s: float
    overheads: dict
    measurements: list[dict]
    rows: list[dict]
    summary: list[dict]
    overall: dict
    no_cache: list[dict]
    memory_bound: dict
    slope: list[dict]
    files: dict
    warnings: list[str] = field(default_factory=list)
    phase_s: dict = field(default_factory=dict)   # wall seconds per phase of the probe
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _best_shapes(results: list[microbench.MatmulResult]) -> dict[str, str]:
    best: dict[str, microbench.MatmulResult] = {}
    for r in results:
        if r.dtype not in best or r.flop_s > best[r.dtype].flop_s:
            best[r.dtype] = r
    return {dt: f"{r.m}x{r.k}x{r.n}, {r.layout}" for dt, r in best.items()}


def _run_model(dec: model_run.TorchDecoder, plan: Plan) -> tuple[list[Measurement], list[Measurement]]:
    cached = []
    for b, s in plan.prefill:
        pre, dec_s = model_run.prefill(dec, b, s, plan.prefill_repeats, 1, plan.decode_steps)
        cached.append(Measurement(b, s, plan.decode_steps, dec_s, pre, True, "prefill"))
    for b, ctx in plan.decode:
        cached.append(Measurement(b, ctx, plan.decode_steps, model_run.decode(dec, b, ctx, plan.decode_steps),
                                  [], True, "random"))
    off = [Measurement(b, ctx, plan.no_cache_steps, model_run.decode_no_cache(dec, b, ctx, plan.no_cache_steps),
                       [], False, "none") for b, ctx in plan.no_cache]
    return cached, off


def probe(model: str | dict = DEFAULT_MODEL, quick: bool = False, out_dir: str | Path = "probe-out",
          overrides: dict | None = None, dtype: str | None = None, threads: int | None = None,
          plan: Plan | None = None) -> ProbeResult:
    """Measure this machine and score the predictor on it (module docstring); files go to ``out_dir``.

    ``model``: catalog alias, HF id, config path or config dict (dense Llama-style); ``overrides``:
    config keys (e.g. ``{"num_hidden_layers": 2}``); ``dtype``: fp32 or bf16 (default fp32 on CPU,
    bf16 on CUDA); ``threads``: CPU threads (default all available cores); ``plan``: replaces
    ``PLANS[quick]``.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    dev = detect(dtype, threads)
    model_cell, spec = row_model(model, overrides, out)
    model_run.check_supported(spec)
    plan = plan or PLANS[quick]
    warnings = []
    cores = available_cores()
    if dev.load_average and dev.load_average[0] > BUSY_LOAD * cores:
        warnings.append(f"machine busy: load average {dev.load_average[0]:.2f} on {cores} cores before the probe; "
                        f"timings include contention with other processes")
    previous = torch.get_num_threads()
    torch.set_num_threads(dev.threads)
    phases: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        phases[name], clock = now - clock, now
    try:
        mm = microbench.matmuls(dev.kind, quick)
        lap("matmul")
        copy_bw = microbench.copy_bandwidth(dev.kind)
        read_bw = microbench.read_bandwidth(dev.kind)
        lap("bandwidth")
        tiny = microbench.tiny_op_seconds(dev.kind)
        raw_over = model_run.step_overheads(dev.kind, dev.dtype)
        lap("overheads")
        dec = model_run.TorchDecoder(spec, dev.dtype, dev.kind)
        built_params = dec.num_params
        lap("model_build")
        cached, off = _run_model(dec, plan)
        lap("model_run")
        del dec
    finally:
        torch.set_num_threads(previous)
    peaks = microbench.peak_flop_s(mm)
    over = {**hwentry.overheads(raw_over, dev.dtype), "raw": raw_over}
    gemv = {layout: microbench.gemv_bandwidth(mm, dev.dtype, layout) for layout in microbench.LAYOUTS}
    hw_path = hwentry.write_entry(out / HARDWARE_FILE, hwentry.entry_text(
        dev, peaks, copy_bw.to_dict(), read_bw.to_dict(), tiny, over, _best_shapes(mm), gemv))
    note = f"local measurement: inferbound probe on {dev.name} ({dev.threads} threads)"
    rows_path = write_csv(out / ROWS_FILE, csv_rows(cached, model_cell, hwentry.GPU_ID, dev.dtype, note))
    n_rows = sum(2 if m.prefill_s else 1 for m in cached)
    nc_path = write_csv(out / NO_CACHE_FILE, csv_rows(off, model_cell, hwentry.GPU_ID, dev.dtype, note, n_rows + 1))
    scored, summary, overall, unreadable = checks.score_rows(rows_path, hw_path)
    warnings += [f"unreadable row: {r}" for r in unreadable]
    mb = checks.memory_bound(cached, model_cell, dev.dtype, hw_path)
    if not mb["all_memory_bound"]:
        warnings.append("decode is not predicted memory-bound at every measured setup")
    slope = checks.slopes(cached, model_cell, dev.dtype, hw_path)
    lap("files_and_scoring")
    return ProbeResult(
        device=dev.to_dict(),
        model={"source": model if isinstance(model, str) else "config dict", "overrides": dict(overrides or {}),
               "row_model": model_cell, "name": spec.name, "layers": spec.num_layers, "hidden_size": spec.hidden_size,
               "params": count_params(spec).total, "params_built": built_params, "dtype": dev.dtype},
        matmul=[r.to_dict() for r in mm], peak_flop_s=peaks, bandwidth=copy_bw.to_dict(),
        read_bandwidth=read_bw.to_dict(), gemv_bytes_per_s=gemv, tiny_op_s=tiny, overheads=over,
        measurements=[m.to_dict() for m in cached + off], rows=scored, summary=summary, overall=overall,
        no_cache=checks.no_cache(off, cached, model_cell, dev.dtype, hw_path), memory_bound=mb, slope=slope,
        files={"hardware": str(hw_path), "rows": str(rows_path), "no_cache_rows": str(nc_path)},
        warnings=warnings, phase_s=phases, elapsed_s=time.perf_counter() - t0)
