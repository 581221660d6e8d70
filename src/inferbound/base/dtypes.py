"""Numeric formats: bytes per element and which tensor-core peak a format runs on.

Storage cost of quantized weights includes their scales (``scale_overhead_bits``): e.g. int4 with one
fp16 scale per group of 128 weights costs 4 + 16/128 = 4.125 bits; MXFP4 (OCP microscaling) stores one
8-bit shared exponent per 32 values: 4 + 8/32 = 4.25 bits. Sources: GPTQ/AWQ default group size 128
(AutoGPTQ, AutoAWQ docs); OCP Microscaling Formats (MX) v1.0 spec, block size 32; DeepSeek-V3 fp8
weights use one fp32 scale per 128x128 block (its config.json ``weight_block_size``): 32/16384 bits.
"""
from __future__ import annotations

from typing import Literal

DType = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")

#: bits of one stored element, scales excluded
BITS: dict[str, float] = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "fp4": 4}

#: extra bits per weight element for quantization scales (see module docstring for sources)
SCALE_OVERHEAD_BITS: dict[str, float] = {
    "fp32": 0.0, "bf16": 0.0, "fp16": 0.0,
    "fp8": 32 / (128 * 128),     # per-block fp32 scale, 128x128 blocks (DeepSeek-V3 style); per-tensor is ~0
    "int8": 16 / 4096,           # per-output-channel fp16 scale over a 4096-wide row (SmoothQuant/LLM.int8 style)
    "int4": 16 / 128,            # fp16 scale per group of 128 (GPTQ/AWQ default)
    "fp4": 8 / 32,               # MXFP4: one E8M0 scale per 32 elements (OCP MX spec); NVFP4 is 8/16
}

#: formats that only store weights: the matmul runs at the activation dtype (weight-only quantization)
WEIGHT_ONLY: frozenset[str] = frozenset({"int4"})


def bytes_per_element(dtype: str) -> float:
    """Storage bytes of one element of ``dtype``, scales excluded."""
    return BITS[check(dtype, "dtype")] / 8


def weight_bytes_per_element(dtype: str) -> float:
    """Storage bytes of one weight of ``dtype`` including its share of quantization scales."""
    check(dtype, "weight_dtype")
    return (BITS[dtype] + SCALE_OVERHEAD_BITS[dtype]) / 8


def component_weight_bytes(dt, component: str) -> float:
    """Bytes per weight of one ParamCount component under ``dt`` (a config.Dtypes): the weight format
    (with the checkpoint's own bits per weight when it gives them) where that component is quantized,
    else the high-precision format."""
    if not dt.stored_at(component):
        return bytes_per_element(dt.high_precision)
    return dt.weight_bits / 8 if dt.weight_bits is not None else weight_bytes_per_element(dt.weight)


def check(dtype: str, field: str) -> str:
    """Return ``dtype`` if known, else raise ValueError naming the field, value and allowed values."""
    if dtype not in BITS:
        raise ValueError(f"{field}={dtype!r} is not a known dtype; allowed: {', '.join(DTYPES)}")
    return dtype
