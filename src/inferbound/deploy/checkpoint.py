"""Which formats a deployment runs at when the user does not say: the checkpoint's, as shipped.

A checkpoint's ``quantization_config`` (model/quant.py) says which weights it stores quantized, in which
format and with how many bits per weight (scales included): gpt-oss's MXFP4 routed experts (4.25 bits,
everything else bf16), DeepSeek-V3's block-scaled FP8 linear layers with dynamic FP8 activations,
ModelOpt NVFP4/FP8 checkpoints (with the KV-cache format they were calibrated for), AWQ/GPTQ int4.
Without one the weights are the checkpoint's ``torch_dtype`` (bf16 unless it says fp16). An explicit
``weight_dtype`` (``--weight-dtype``) overrides all of it and applies to every linear layer.

Compute (activation) format, when ``act_dtype`` is not given (an explicit ``--act-dtype`` always wins):

- fp8 / fp4 weights (the checkpoint's or ``--weight-dtype``) run at their own format, W8A8 fp8 / W4A4
  NVFP4 GEMMs, on a GPU with tensor cores for it (hardware/precision.py ``quantized_act_dtype``: vLLM's
  fp8 and compressed-tensors FP8-dynamic, SGLang's fp8, TensorRT-LLM's FP8 and NVFP4 all do), unless the
  checkpoint is weight-only (its quantization_config quantizes no activations: compressed-tensors
  ``input_activations: null``, fp8 without ``activation_scheme``, MXFP4 experts);
- on a GPU without those tensor cores they run weight-only at 16 bits (vLLM's FP8 Marlin W8A16 on
  Ampere, FP4 Marlin for NVFP4/MXFP4 off Blackwell);
- other weights: the checkpoint's activation format where it has one (W8A8 int8, W4A8), else 16 bits.

KV-cache format, when ``kv_dtype`` is not given: the checkpoint's ``kv_cache_quant_algo`` where it states
one (ModelOpt FP8 KV), else, when its quantization_config was read and states none, its 16-bit model
dtype (``KV_AUTO_SOURCE``: the engines' ``--kv-cache-dtype auto``; DeepSeek-R1's fp8 checkpoint keeps a
bf16 cache). A quantization known only from the repository id, or an explicit ``--weight-dtype``, leaves
it to config.Dtypes.kv_dtype (the activations' format).

Every choice made here is returned as a note the outputs print (one line saying the compute format and
why), on every face.
"""
from __future__ import annotations

from .config import Dtypes
from ..hardware.precision import quantized_act_dtype

#: a quantized checkpoint without kv_cache_quant_algo keeps a 16-bit KV cache (resolve_dtypes): each engine's
#: default KV dtype "auto" is the model's dtype (its torch_dtype), whatever the weights are stored in
KV_AUTO_SOURCE = ("vLLM v0.6.3.post1 vllm/engine/arg_utils.py --kv-cache-dtype: 'if \"auto\", will use model data "
                  "type'; SGLang v0.4.3.post4 server_args.py --kv-cache-dtype: '\"auto\" will use model data type'; "
                  "TensorRT-LLM KvCacheConfig dtype: str = 'auto', which follows the checkpoint's "
                  "kv_cache_quant_algo (https://nvidia.github.io/TensorRT-LLM/llm-api/reference/KvCacheConfig.html; "
                  "NVIDIA/TensorRT-LLM PR #16240)")
#: the engines' kernels behind each compute rule, as the notes cite them
_W8A8 = "as vLLM, SGLang and TensorRT-LLM run fp8 checkpoints (vLLM fp8.py: W8A8 from SM89)"
_W4A4 = "as TensorRT-LLM and vLLM run NVFP4 checkpoints on Blackwell (FP4 GEMMs)"
_WO = {"fp8": "vLLM's FP8 Marlin W8A16 kernels", "fp4": "vLLM's FP4 Marlin weight-only kernels"}


def _weight_only_checkpoint(q, weight: str) -> bool:
    """The checkpoint's own config stores ``weight`` with no activation quantization (weight-only)."""
    return q is not None and q.source == "config" and q.weight_dtype == weight and q.activation_dtype is None


def default_act(gpu, weight: str, q, base: str) -> tuple[str, str | None]:
    """(activation format, note) for ``weight`` on ``gpu`` when act_dtype is not given (module docstring):
    16-bit ``base`` for weights other than fp8/fp4 (weight-only int4/int8 kernels), no note."""
    if weight not in ("fp8", "fp4"):
        return base, None
    if _weight_only_checkpoint(q, weight):
        return base, (f"compute {base}: the checkpoint's {weight} weights are weight-only (its quantization_config "
                      f"quantizes no activations); --act-dtype {weight} to price {weight} GEMMs")
    act = quantized_act_dtype(gpu, weight)
    if act is not None:
        how = _W8A8 if weight == "fp8" else _W4A4
        return act, (f"compute {act} x {act} ({'W8A8' if weight == 'fp8' else 'W4A4'} GEMMs): {gpu.id} has {act} "
                     f"tensor cores, {how}; --act-dtype {base} prices weight-only {weight}")
    return base, (f"compute {base}: {gpu.id} has no {weight} tensor cores, so the {weight} weights run weight-only "
                  f"at {base} ({_WO[weight]}), not {weight} x {weight}")


def _with_kv(note: str, act: str, kv: str | None) -> str:
    """The compute note, saying where a blank KV format follows quantized activations (config.Dtypes.kv_dtype)."""
    if kv is None and act in ("fp8", "fp4"):
        return f"{note}; KV cache fp8 with them (--kv-dtype bf16 keeps it 16-bit)"
    return note


def resolve_dtypes(m, gpu, weight: str | None, act: str | None, kv: str | None, emulate: bool = False):
    """(Dtypes keyword arguments, notes) for model ``m`` on ``gpu`` (module docstring)."""
    notes: list[str] = []
    q = m.quantization
    base = m.checkpoint_dtype if m.checkpoint_dtype in ("bf16", "fp16", "fp32") else "bf16"
    if weight is not None:
        if act is None:
            act, note = default_act(gpu, weight, q, "bf16")
            notes += [_with_kv(note, act, kv)] if note else []
        return dict(weight=weight, act=act, kv=kv, emulate=emulate, weight_source="explicit"), notes
    if q is None:
        if m.checkpoint_dtype and m.checkpoint_dtype not in ("bf16", "fp16", "fp32"):
            notes.append(f"checkpoint_dtype={m.checkpoint_dtype!r} is not a compute format: weights sized as {base}")
        return dict(weight=base, act=act or base, kv=kv, emulate=emulate, weight_source="default"), notes
    act_q = q.activation_dtype
    compute_note = None
    if act is None:
        if q.weight_dtype in ("fp8", "fp4") and act_q in (None, q.weight_dtype):
            act, compute_note = default_act(gpu, q.weight_dtype, q, base)
        elif act_q is not None and gpu.supports(act_q):
            act = act_q
        else:
            act = base
            if act_q is not None:
                compute_note = (f"{gpu.id} has no {act_q} tensor cores: the checkpoint's {q.weight_dtype} weights "
                                f"run weight-only at {base} (the engines' weight-only kernels), not {act_q} x {act_q}")
    scope = "" if set(q.components) >= {"attention", "dense_mlp"} else f" ({', '.join(q.components)} only)"
    notes.append(f"weights {q.weight_dtype} at {q.bits_per_weight:g} bits{scope}, as the checkpoint ships them "
                 f"({q.method}{': ' + q.note if q.note else ''}); --weight-dtype overrides")
    if kv is None and q.kv_cache_dtype is not None:
        kv = q.kv_cache_dtype
        notes.append(f"KV cache {kv}, as the checkpoint was calibrated for (kv_cache_quant_algo)")
    elif kv is None and q.source == "config":  # KV_AUTO: --kv-cache-dtype auto is the model's dtype
        kv = base
        notes.append(f"KV cache {base}: the checkpoint states no kv_cache_quant_algo and the engines' "
                     f"--kv-cache-dtype auto keeps the model's dtype; --kv-dtype fp8 for an fp8 cache")
    notes += [_with_kv(compute_note, act, kv)] if compute_note else []
    return dict(weight=q.weight_dtype, act=act, kv=kv, emulate=emulate, weight_components=tuple(q.components),
                weight_bits=q.bits_per_weight, weight_source="checkpoint"), notes


__all__ = ["Dtypes", "default_act", "resolve_dtypes"]
