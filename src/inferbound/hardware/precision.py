"""Which tensor-core peak a (weight dtype, activation dtype) pair runs at on a given GPU.

Rules (``resolve_compute_dtype``):

1. The matmul runs at the *activation* dtype: weights narrower than the activations are dequantized
   on the fly inside the GEMM kernel (weight-only quantization: GPTQ/AWQ/Marlin int4, W8A16 int8,
   fp8/fp4 weight-only), so the compute peak is that of the activation dtype.
2. ``int4`` / ``int8`` weights are valid on every GPU (integer dequantization kernels exist everywhere).
3. ``fp8`` / ``fp4`` weights with 16-bit activations are weight-only GEMMs too, which engines run on GPUs
   without that tensor-core format: vLLM's FP8 Marlin kernels (W8A16 on Ampere; vLLM docs
   "Quantization: FP8 W8A8": "for GPUs without FP8 support, weight-only FP8 via Marlin"), and MXFP4
   experts on Hopper through Triton ``matmul_ogs`` / Marlin kernels (vLLM and TensorRT-LLM gpt-oss
   recipes: gpt-oss-120b on one H100). With fp8/fp4 *activations* the weights must be native.
4. Quantized activations (``fp8``, ``fp4``, ``int8`` = W8A8) need tensor cores for that format. With
   ``emulate=True`` an unsupported activation dtype falls back to bf16 (fp16 where bf16 is missing).
5. ``int4`` activations are rejected: int4 is a weight-only format here (no catalog GPU lists an
   int4 tensor peak).

``peak_flops(gpu, dtype)`` returns the dense datasheet peak in FLOP/s for ``dtype`` (SI, not TFLOP/s).
"""
from __future__ import annotations

from inferbound.base.dtypes import DTYPES, check
from inferbound.hardware.spec import GPU

#: weight formats served by integer-dequantizing GEMM kernels on any tensor-core GPU
INT_WEIGHT_ONLY: frozenset[str] = frozenset({"int4", "int8"})
#: float weight formats that need the GPU to handle the format natively (unless emulated)
NATIVE_FLOAT_WEIGHTS: frozenset[str] = frozenset({"fp8", "fp4"})
#: activation dtypes a GEMM can run at (int4 is weight-only)
ACT_DTYPES: tuple[str, ...] = tuple(d for d in DTYPES if d != "int4")


def _fallback(gpu: GPU) -> str:
    """16-bit dtype used for emulated (software-dequantized) GEMMs: bf16, else fp16."""
    for dtype in ("bf16", "fp16"):
        if gpu.supports(dtype):
            return dtype
    raise ValueError(f"gpu={gpu.id!r} has neither a bf16 nor an fp16 peak; cannot emulate; "
                     f"peaks given: {', '.join(sorted(gpu.peak_flops)) or 'none'}")


def native_weight_dtypes(gpu: GPU) -> list[str]:
    """Weight dtypes usable on ``gpu`` with quantized activations (native float formats + int4/int8)."""
    return [d for d in DTYPES if d in INT_WEIGHT_ONLY or gpu.supports(d)]


def native_act_dtypes(gpu: GPU) -> list[str]:
    """Activation dtypes with a tensor-core peak on ``gpu``."""
    return [d for d in ACT_DTYPES if gpu.supports(d)]


def quantized_act_dtype(gpu: GPU, weight_dtype: str) -> str | None:
    """The activation format fp8 / fp4 weights run at on ``gpu`` when nothing says otherwise: the weight format
    itself (W8A8 fp8, W4A4 NVFP4 GEMMs) where ``gpu`` has tensor cores for it, else None (weight-only, at
    16 bits). Engines choose so: vLLM's ``Fp8LinearMethod`` (vllm/model_executor/layers/quantization/fp8.py,
    ``use_marlin = not current_platform.has_device_capability(89)``) and docs/features/quantization/fp8.md
    ("Ada Lovelace, Hopper, and Blackwell GPUs are supported for W8A8. Turing/Ampere GPUs are supported for
    W8A16 (weight-only FP8) utilizing Marlin kernels"); compressed-tensors FP8-dynamic the same; SGLang's
    fp8 and TensorRT-LLM's FP8 run fp8 GEMMs on SM89+; NVFP4 runs FP4 GEMMs on Blackwell (SM100, ModelOpt
    NVFP4 / TensorRT-LLM), else vLLM's FP4 Marlin weight-only kernels (modelopt.py ``ModelOptNvFp4LinearMethod``).
    Which GPU has which tensor cores is the catalog's (data/hardware.yaml peaks, ``gpu.supports``)."""
    if weight_dtype in NATIVE_FLOAT_WEIGHTS and gpu.supports(weight_dtype):
        return weight_dtype
    return None


def resolve_compute_dtype(gpu: GPU, weight_dtype: str, act_dtype: str, emulate: bool = False) -> str:
    """Return the dtype whose peak the matmuls run at (see module docstring for the rules).

    Raises ValueError naming the field, the value and the allowed values when the pair cannot run
    natively on ``gpu`` and ``emulate`` is False.
    """
    check(weight_dtype, "weight_dtype")
    check(act_dtype, "act_dtype")
    if act_dtype not in ACT_DTYPES:
        raise ValueError(f"act_dtype={act_dtype!r} is not supported: int4 is a weight-only format; "
                         f"allowed: {', '.join(ACT_DTYPES)}")
    weight_only = act_dtype in ("bf16", "fp16", "fp32")
    if weight_dtype in NATIVE_FLOAT_WEIGHTS and not gpu.supports(weight_dtype) and not weight_only and not emulate:
        raise ValueError(
            f"weight_dtype={weight_dtype!r} with act_dtype={act_dtype!r} needs {weight_dtype} tensor cores, which "
            f"{gpu.id} lacks; allowed: 16-bit activations (weight-only {weight_dtype}), emulate=True, "
            f"or weights of: {', '.join(native_weight_dtypes(gpu))}")
    if gpu.supports(act_dtype):
        return act_dtype
    if emulate:
        return _fallback(gpu)
    raise ValueError(
        f"act_dtype={act_dtype!r} is not supported natively on {gpu.id} (no {act_dtype} tensor cores); "
        f"pass emulate=True to run the matmuls at {_fallback(gpu)}, "
        f"or use one of: {', '.join(native_act_dtypes(gpu))}")


def peak_flops(gpu: GPU, compute_dtype: str) -> float:
    """Dense datasheet peak of ``gpu`` in FLOP/s (or int ops/s for int8) for ``compute_dtype``."""
    check(compute_dtype, "compute_dtype")
    if not gpu.supports(compute_dtype):
        raise ValueError(f"compute_dtype={compute_dtype!r} has no peak on {gpu.id}; "
                         f"allowed: {', '.join(native_act_dtypes(gpu))}")
    return gpu.peak_flops[compute_dtype]
