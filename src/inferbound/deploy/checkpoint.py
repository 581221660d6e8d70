"""Which formats a deployment runs at when the user does not say: the checkpoint's, as shipped.

A checkpoint's ``quantization_config`` (model/quant.py) says which weights it stores quantized, in which
format and with how many bits per weight (scales included): gpt-oss's MXFP4 routed experts (4.25 bits,
everything else bf16), DeepSeek-V3's block-scaled FP8 linear layers with dynamic FP8 activations,
ModelOpt NVFP4/FP8 checkpoints (with the KV-cache format they were calibrated for), AWQ/GPTQ int4.
Without one the weights are the checkpoint's ``torch_dtype`` (bf16 unless it says fp16). An explicit
``weight_dtype`` (``--weight-dtype``) overrides all of it and applies to every linear layer.

Activations follow the checkpoint's activation format where the GPU has tensor cores for it; where it
does not, engines run the quantized weights through weight-only kernels at 16 bits (vLLM's FP8 Marlin
on Ampere; MXFP4/NVFP4 Marlin and Triton kernels on Hopper), and so does the model, with a note saying
so. Every choice made here is returned as a note the outputs print.
"""
from __future__ import annotations

from .config import Dtypes


def resolve_dtypes(m, gpu, weight: str | None, act: str | None, kv: str | None, emulate: bool = False):
    """(Dtypes keyword arguments, notes) for model ``m`` on ``gpu`` (module docstring)."""
    notes: list[str] = []
    q = m.quantization
    if weight is not None:
        return dict(weight=weight, act=act or "bf16", kv=kv, emulate=emulate, weight_source="explicit"), notes
    base = m.checkpoint_dtype if m.checkpoint_dtype in ("bf16", "fp16", "fp32") else "bf16"
    if q is None:
        if m.checkpoint_dtype and m.checkpoint_dtype not in ("bf16", "fp16", "fp32"):
            notes.append(f"checkpoint_dtype={m.checkpoint_dtype!r} is not a compute format: weights sized as {base}")
        return dict(weight=base, act=act or base, kv=kv, emulate=emulate, weight_source="default"), notes
    act_q = q.activation_dtype
    if act is None:
        if act_q is not None and gpu.supports(act_q):
            act = act_q
        else:
            act = base
            if act_q is not None:
                notes.append(f"{gpu.id} has no {act_q} tensor cores: the checkpoint's {q.weight_dtype} weights run "
                             f"weight-only at {base} (the engines' weight-only kernels), not {act_q} x {act_q}")
    scope = "" if set(q.components) >= {"attention", "dense_mlp"} else f" ({', '.join(q.components)} only)"
    notes.append(f"weights {q.weight_dtype} at {q.bits_per_weight:g} bits{scope}, as the checkpoint ships them "
                 f"({q.method}{': ' + q.note if q.note else ''}); --weight-dtype overrides")
    if kv is None and q.kv_cache_dtype is not None:
        kv = q.kv_cache_dtype
        notes.append(f"KV cache {kv}, as the checkpoint was calibrated for (kv_cache_quant_algo)")
    return dict(weight=q.weight_dtype, act=act, kv=kv, emulate=emulate, weight_components=tuple(q.components),
                weight_bits=q.bits_per_weight, weight_source="checkpoint"), notes


__all__ = ["Dtypes", "resolve_dtypes"]
