"""The hardware entry of the measured machine: gpu id ``local``, in the user-file schema of catalog.py.

The fields that hold datasheet peaks in data/hardware.yaml hold the probe's *measured, achieved*
rates here (vendor units: TFLOP/s, TB/s, decimal GB)::

    fp32_tflops       = best fp32 matmul FLOP/s / 1e12
    bf16_dense_tflops = best bf16 matmul FLOP/s / 1e12
    hbm_tbps          = copy bandwidth (2·buffer bytes / best time) / 1e12
    hbm_gb            = system RAM (CPU) or device memory (CUDA) / 1e9

so the efficiency fractions are 1.0 (the measured rates are already achieved rates; a fraction
below 1 would count the shortfall twice). Fixed overheads come from the tiny decoder's decode step
at two layer counts n_lo < n_hi (``model_run.step_overheads``), split over the operators the
predictor charges (``operators.forward_ops``: 5 per dense layer, 3 outside the layers)::

    per_layer         = (t(n_hi) − t(n_lo)) / (n_hi − n_lo)
    kernel_overhead_s = per_layer / (predictor operators per layer)
    step_overhead_s   = max(0, t(n_lo) − n_lo·per_layer − (operators outside the layers)·kernel_overhead_s)

Eager PyTorch runs ~30 small ops per layer (norms, RoPE, cache writes, ...), so one "predictor
operator" stands for several dispatches; the split above charges them where the predictor looks.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from ..deploy.config import Dtypes, Parallelism
from ..model import load_model
from ..operators import forward_ops
from .device import DeviceInfo
from .model_run import TINY_CONFIG

GPU_ID = "local"


def predictor_op_counts(dtype: str) -> tuple[int, int]:
    """(operators per dense layer, operators outside the layers) that the predictor charges an overhead
    for, counted from ``operators.forward_ops`` on 1- and 2-layer Llama configs (collectives and the
    engine's host work excluded)."""
    def total(n: int) -> int:
        m = load_model({**TINY_CONFIG, "num_hidden_layers": n})
        ops = forward_ops(m, Dtypes(weight=dtype, act=dtype, kv=dtype), Parallelism(), 1, 1, 16)
        return sum(op.count for op in ops if op.kind not in ("collective", "host"))  # host work: no kernel
    per_layer = total(2) - total(1)
    return per_layer, total(1) - per_layer


def overheads(raw: dict, dtype: str) -> dict:
    """kernel_overhead_s and step_overhead_s from the tiny decoder's step times (module docstring)."""
    (n_lo, n_hi), (t_lo, t_hi) = raw["layers"], raw["step_s"]
    per_op, outer = predictor_op_counts(dtype)
    per_layer = max(0.0, (t_hi - t_lo) / (n_hi - n_lo))
    kernel = per_layer / per_op
    step = max(0.0, t_lo - n_lo * per_layer - outer * kernel)
    return {"per_layer_s": per_layer, "predictor_ops_per_layer": per_op, "predictor_ops_outside_layers": outer,
            "kernel_overhead_s": kernel, "step_overhead_s": step}


def _num(x: float) -> str:
    """A YAML float that YAML 1.1 reads as a float (mantissa with a dot, signed exponent)."""
    s = f"{x:.6g}"
    if "e" in s:
        mant, exp = s.split("e")
        s = f"{mant if '.' in mant else mant + '.0'}e{exp}"
    elif "." not in s and "inf" not in s and "nan" not in s:
        s += ".0"
    return s


def entry_text(dev: DeviceInfo, peaks: dict[str, float], copy_bw: dict, read_bw: dict, tiny_op_s: float,
               over: dict, best_shapes: dict[str, str], gemv: dict[str, float | None]) -> str:
    """The YAML text of the ``local`` entry, every figure commented with where it comes from."""
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    kind = "CPU" if dev.kind == "cpu" else "GPU"
    threads = f"{dev.threads} thread{'s' if dev.threads != 1 else ''}"
    name = f"{dev.name} ({kind}, {threads})" if dev.kind == "cpu" else dev.name
    mem_note = "system RAM (sysconf)" if dev.kind == "cpu" else "device memory (torch.cuda)"
    lines = [
        f"# Hardware entry written by `inferbound probe` on {when}; PyTorch {dev.torch_version},",
        f"# {threads} on the CPU, model dtype {dev.dtype}. Peaks and bandwidth are MEASURED achieved rates on",
        "# this machine (not datasheet figures); see docs/probe.md. Use it with --gpu local --gpu-file <this file>.",
        f"id: {GPU_ID}",
        f"name: {json.dumps(name)}",
        f"vendor: {json.dumps(dev.vendor)}",
        f"arch: {json.dumps(f'{dev.kind} (measured by inferbound probe)')}",
        f"fp32_tflops: {_num(peaks['fp32'] / 1e12)}        # measured: best fp32 torch.matmul ({best_shapes['fp32']})",
        f"bf16_dense_tflops: {_num(peaks['bf16'] / 1e12)}  # measured: best bf16 torch.matmul ({best_shapes['bf16']})",
        f"hbm_gb: {_num(dev.memory_bytes / 1e9)}             # {mem_note}, decimal GB",
        f"hbm_type: {json.dumps('system RAM' if dev.kind == 'cpu' else 'device memory')}",
        f"hbm_tbps: {_num(copy_bw['bytes_per_s'] / 1e12)}   # measured: copy, {copy_bw['bytes_moved']:.0f} B read+written"
        f" in {copy_bw['seconds']:.6g} s (best of runs)",
        "scaleup_tech: none          # one device: no scale-up fabric",
        "scaleup_domain: 1",
        "pcie_gen: null",
        f"tdp_w: {_num(dev.tdp_w)}   # {dev.tdp_source}; the power model needs a TDP > 0",
        "measured:",
        f"  fp32_matmul_tflops: {_num(peaks['fp32'] / 1e12)}",
        f"  bf16_matmul_tflops: {_num(peaks['bf16'] / 1e12)}",
        f"  copy_bandwidth_gbps: {_num(copy_bw['bytes_per_s'] / 1e9)}   # GB/s, read + write",
        f"  read_bandwidth_gbps: {_num(read_bw['bytes_per_s'] / 1e9)}   # GB/s, sum() of a buffer: reads only",
        *(f"  decode_gemv_{layout}_gbps: {_num(bw / 1e9)}   # GB/s of {dev.dtype} weights, M=1 matmul, {layout} layout"
          for layout, bw in gemv.items() if bw is not None),
        f"  tiny_op_us: {_num(tiny_op_s * 1e6)}   # eager x.add_(1) on 8 elements, per call",
        f"  source: {json.dumps(f'inferbound probe, {when}')}",
        "efficiency:",
        "  # The figures above are measured achieved rates, so the achievable fractions are 1.0.",
        "  compute: 1.0",
        "  memory: 1.0",
        "  kv_memory: 1.0            # the probe's KV cache is one contiguous tensor per layer (no paging)",
        f"  kernel_overhead_s: {_num(over['kernel_overhead_s'])}   # measured: tiny decoder, per-layer step time "
        f"{over['per_layer_s']:.4g} s / {over['predictor_ops_per_layer']} predictor operators",
        f"  step_overhead_s: {_num(over['step_overhead_s'])}     # measured: tiny decoder step less its layers and "
        f"{over['predictor_ops_outside_layers']} outer operators",
        "sources:",
        "  - measured on this machine by inferbound probe (see measured:)",
    ]
    return "\n".join(lines) + "\n"


def write_entry(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
