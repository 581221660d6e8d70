"""Shared pieces of the per-class fits: the GPU context, the result record, the kernel dtype table."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from inferbound.hardware import get_gpu

#: kernel dtype -> byte widths and the catalog peak it runs at. a: activation bytes per element read by
#: the GEMM main loop, w: weight bytes per element (scales included), out: output bytes (bf16),
#: quant_act: an on-the-fly activation quantization pass runs before the GEMM (it is inside the
#: measured latency: TRT-LLM's fp8 Linear runs dynamic quantization, collector/trtllm/collect_gemm.py);
#: its cost per activation element (quant_bytes) is fitted per curve.
#: Scale overheads: fp8_block = DeepSeek-V3 recipe, 1x128 activation / 128x128 weight fp32 scales
#: (DeepSeek-V3 technical report, arXiv 2412.19437, sec. 3.3); NVFP4 = one E4M3 scale per 16 values
#: (NVIDIA "Introducing NVFP4", developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-
#: low-precision-inference/); MXFP4 = one E8M0 scale per 32 values (OCP Microscaling spec v1.0);
#: int4/int8 weight-only = TRT-LLM WeightOnlyQuantMatmul, per-channel scales (negligible per element).
DTYPES: dict[str, dict] = {
    "bf16": {"peak": "bf16", "a_bytes": 2.0, "w_bytes": 2.0, "out_bytes": 2.0, "quant_act": False},
    "fp8": {"peak": "fp8", "a_bytes": 1.0, "w_bytes": 1.0, "out_bytes": 2.0, "quant_act": True},
    "fp8_block": {"peak": "fp8", "a_bytes": 1.0 + 4 / 128, "w_bytes": 1.0 + 4 / 16384, "out_bytes": 2.0,
                  "quant_act": True},
    "fp4": {"peak": "fp4", "a_bytes": 0.5 + 1 / 16, "w_bytes": 0.5 + 1 / 16, "out_bytes": 2.0, "quant_act": True},
    "int8": {"peak": "int8", "a_bytes": 1.0, "w_bytes": 1.0, "out_bytes": 2.0, "quant_act": True},
    "int8_wo": {"peak": "bf16", "a_bytes": 2.0, "w_bytes": 1.0, "out_bytes": 2.0, "quant_act": False},
    "int4_wo": {"peak": "bf16", "a_bytes": 2.0, "w_bytes": 0.5, "out_bytes": 2.0, "quant_act": False},
    "mxfp4_wo": {"peak": "bf16", "a_bytes": 2.0, "w_bytes": 0.5 + 1 / 32, "out_bytes": 2.0, "quant_act": False},
    "mxfp4_fp8": {"peak": "fp8", "a_bytes": 1.0 + 1 / 32, "w_bytes": 0.5 + 1 / 32, "out_bytes": 2.0,
                  "quant_act": True},
    "int4_fp8": {"peak": "fp8", "a_bytes": 1.0, "w_bytes": 0.5, "out_bytes": 2.0, "quant_act": True},
}

#: aiconfigurator dtype labels (gemm_dtype / moe_dtype columns) -> kernel dtype above
AIC_DTYPE = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "fp4", "sq": "int8",
             "int8_wo": "int8_wo", "int4_wo": "int4_wo", "w4a16_mxfp4": "mxfp4_wo",
             "w4a8_mxfp4_mxfp8": "mxfp4_fp8", "w4afp8": "int4_fp8"}


@dataclass
class GpuCtx:
    system: str          # aiconfigurator system name
    gid: str             # inferbound GPU id
    sms: int
    root: Path           # the wheel's systems directory

    @property
    def gpu(self):
        return get_gpu(self.gid)

    def peak(self, kdtype: str) -> float:
        key = DTYPES[kdtype]["peak"]
        v = self.gpu.peak_flops.get(key)
        if not v:
            raise KeyError(f"{self.gid} has no {key} peak in the catalog (needed by kernel dtype {kdtype})")
        return float(v)


@dataclass
class CurveFit:
    cls: str
    gpu: str
    dtype: str
    params: dict
    stats: dict                     # in-sample (final fit on every row)
    held: dict                      # out-of-sample (fit without the held-out shapes)
    tables: list[str]
    transfer: list[tuple[str, dict]] = field(default_factory=list)   # same curve on other tables
    notes: list[str] = field(default_factory=list)
    engine: str = "trtllm"          # backend whose table the curve was fitted to
    model: object = None            # model(params, x) -> seconds, bound to this GPU (not serialized)
    data: tuple = ()                # (x, y) rows it was fitted to (not serialized)
    extra: dict = field(default_factory=dict)
