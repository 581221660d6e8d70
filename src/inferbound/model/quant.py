"""A checkpoint's own quantization, read from ``quantization_config``: what is quantized, how many bits.

Bits per weight include the scales (and zero points) stored with the quantized values:

- MXFP4 (``quant_method: mxfp4``, openai/gpt-oss): E2M1 values with one E8M0 scale per 32-value block
  (OCP Microscaling Formats v1.0): 4 + 8/32 = 4.25 bits. transformers' Mxfp4 quantizer converts only
  the MoE experts; ``modules_to_not_convert`` names what stays 16-bit (attention, router, embeddings,
  LM head).
- FP8 block-scaled (``quant_method: fp8``, DeepSeek-V3/R1 ``weight_block_size: [128, 128]``): one fp32
  scale (``weight_scale_inv``) per 128x128 block: 8 + 32/16384 bits; without a block size, one scale
  per tensor (8 bits plus a negligible 32/numel).
- AWQ / GPTQ int-b with group size g (AutoAWQ ``gemm`` / AutoGPTQ packing): b bits, an fp16 scale and
  a b-bit packed zero point per group: b + (16 + b)/g (AWQ without zero point: b + 16/g). g = -1
  (per output channel) is taken as g = hidden_size.
- compressed-tensors (llm-compressor, ``config_groups.*.weights``; the first group's scheme, a warning
  when groups differ): ``num_bits`` b; strategy
  ``tensor`` b, ``channel`` b + 16/hidden_size, ``group``/``tensor_group`` b + s/g with s = 8 for 4-bit
  floats (NVFP4's FP8 E4M3 block scales) else 16, ``block`` b + 32/(bn·bk); asymmetric adds the zero
  point (b/g). ``ignore`` lists excluded modules; ``kv_cache_scheme`` the KV-cache format.
- ModelOpt (``quant_method: modelopt`` or hf_quant_config's ``quantization``): ``quant_algo`` FP8
  (8 bits, per-tensor), NVFP4 (4 + 8/16 = 4.5 bits: FP8 scale per 16 values, NVIDIA TensorRT Model
  Optimizer docs), W4A16_AWQ / W4A8_AWQ (int4 + 16/128); ``kv_cache_quant_algo`` FP8/NVFP4;
  ``exclude_modules``.
- bitsandbytes: 4-bit (nf4/fp4) with an fp32 absmax per 64 values: 4.5 bits, 4 + 8/64 + 32/16384 with
  double quantization; 8-bit with an fp32 row scale: 8 + 32/hidden_size.

Which components are quantized: the decoder layers' linear layers (attention, state-space projections,
dense MLP, routed and shared experts) unless excluded; the router, embeddings and norms stay at the
checkpoint's dtype; the LM head only where the method's format targets it (compressed-tensors without
``lm_head`` in ``ignore``, GPTQ ``lm_head: true``). Biases and norm weights inside a quantized component
are counted at its rate (< 0.1 % of any catalog model's component).
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects, not as
# strings to compile and evaluate when each model class is defined, at every import)

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..base.datafiles import data_yaml

#: components of ParamCount that hold linear layers inside the decoder layers
LINEAR = ("attention", "ssm", "dense_mlp", "routed_experts", "shared_experts")
METHODS = ("mxfp4", "fp8", "awq", "gptq", "compressed-tensors", "modelopt", "bitsandbytes")


class Quantization(BaseModel):
    """How a checkpoint stores its weights (module docstring for the bit counts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str = Field(description="quant_method of the config, or 'id' when implied by the repo id")
    weight_dtype: Literal["fp8", "int8", "int4", "fp4"]
    bits_per_weight: float = Field(gt=0, description="stored bits per quantized weight, scales included")
    components: tuple[str, ...] = Field(description="ParamCount components stored quantized")
    excluded: tuple[str, ...] = Field(default=(), description="module patterns the config keeps unquantized")
    group_size: int | None = None
    block_size: tuple[int, int] | None = None
    activation_dtype: str | None = Field(default=None, description="None: weight-only (matmul at 16 bits)")
    kv_cache_dtype: str | None = None
    source: Literal["config", "id"] = "config"
    note: str = ""


def _component_of(pattern: str) -> str | None:
    """Which ParamCount component a module pattern (``model.layers.*.self_attn``) names."""
    p = pattern.lower().removeprefix("re:")
    if "lm_head" in p or p.endswith("output_layer"):
        return "lm_head"
    if "embed" in p or "wte" in p:
        return "embedding"
    if "shared_expert" in p or "shared_mlp" in p:
        return "shared_experts"
    if "router" in p or re.search(r"(mlp|moe|feed_forward)\.gate\$?$", p) or p.endswith(".gate"):
        return "router"
    if "expert" in p:
        return "routed_experts"
    if "attn" in p or "attention" in p:
        return "attention"
    if "mamba" in p or "mixer" in p or "linear_attn" in p:
        return "ssm"
    if "mlp" in p or "feed_forward" in p:
        return "dense_mlp"
    return None


def _scope(r, candidates: tuple[str, ...], excluded: list[str]) -> tuple[str, ...]:
    """``candidates`` less every component an exclusion pattern covers as a whole. A pattern naming
    particular layers (``model.layers.0.mlp``) leaves the component quantized, with a warning."""
    gone = set()
    for p in excluded:
        if re.search(r"layers\.\d", p):
            r.warn(f"quantization exclusion {p!r} names particular layers; that component is sized as "
                   f"quantized in every layer")
        else:
            gone.add(_component_of(p))
    return tuple(c for c in candidates if c not in gone)


def _excluded_list(r, qc: dict, key: str) -> list[str]:
    items = qc.get(key)
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise r.error(f"quantization_config.{key}", items, "is not a list of module names", "a list of strings")
    return items


def _int_field(r, qc: dict, key: str, default, lo: int = -1):
    value = qc.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or value == 0:
        raise r.error(f"quantization_config.{key}", value, "is not allowed", "a positive integer (or -1)")
    return value


def parse_quantization(r, qc, hidden_size: int) -> Quantization | None:
    """Read a ``quantization_config`` (or hf_quant_config ``quantization``) dict through Reader ``r``."""
    if qc is None:
        return None
    if not isinstance(qc, dict):
        raise r.error("quantization_config", qc, "is not an object", "a JSON object with quant_method")
    method = qc.get("quant_method")
    if method is None and ("quant_algo" in qc or isinstance(qc.get("quantization"), dict)):
        method = "modelopt"  # hf_quant_config.json: {"producer": {"name": "modelopt"}, "quantization": {...}}
    if not isinstance(method, str):
        raise r.error("quantization_config.quant_method", method, "is not a string", ", ".join(METHODS))
    method = method.lower()
    if method == "mxfp4":
        ex = _excluded_list(r, qc, "modules_to_not_convert")
        return Quantization(method=method, weight_dtype="fp4", bits_per_weight=4 + 8 / 32, group_size=32,
                            components=_scope(r, ("routed_experts",), ex), excluded=tuple(ex),
                            note="MXFP4: E2M1 + E8M0 scale per 32 values (OCP MX v1.0), experts only")
    if method == "fp8":
        ex = _excluded_list(r, qc, "modules_to_not_convert")
        block = qc.get("weight_block_size")
        if block is not None:
            if (not isinstance(block, list) or len(block) != 2
                    or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
                raise r.error("quantization_config.weight_block_size", block, "is not two positive integers",
                              "[rows, columns], e.g. [128, 128]")
        bits = 8 + (32 / (block[0] * block[1]) if block else 0.0)
        act = "fp8" if qc.get("activation_scheme") in ("dynamic", "static") else None
        return Quantization(method=method, weight_dtype="fp8", bits_per_weight=bits,
                            block_size=tuple(block) if block else None, activation_dtype=act,
                            components=_scope(r, LINEAR, ex), excluded=tuple(ex),
                            note="FP8 E4M3, fp32 scale per block" if block else "FP8 E4M3, per-tensor scale")
    if method in ("awq", "gptq"):
        bits = _int_field(r, qc, "bits", 4, lo=2)
        if bits not in (2, 3, 4, 8):
            raise r.error("quantization_config.bits", bits, "is not supported", "2, 3, 4 or 8")
        g = _int_field(r, qc, "group_size", 128)
        g_eff = hidden_size if g == -1 else g
        zp = 0 if (method == "awq" and qc.get("zero_point") is False) else bits
        ex = _excluded_list(r, qc, "modules_to_not_convert")
        comps = _scope(r, LINEAR, ex) + (("lm_head",) if qc.get("lm_head") is True else ())
        return Quantization(method=method, weight_dtype="int4" if bits <= 4 else "int8",
                            bits_per_weight=bits + (16 + zp) / g_eff, group_size=g, components=comps,
                            excluded=tuple(ex), note=f"int{bits}, fp16 scale per {g_eff} weights")
    if method == "compressed-tensors":
        return _compressed_tensors(r, qc, hidden_size)
    if method == "modelopt":
        return _modelopt(r, qc)
    if method == "bitsandbytes":
        ex = _excluded_list(r, qc, "llm_int8_skip_modules")
        if qc.get("load_in_4bit"):
            bits = 4 + (8 / 64 + 32 / (64 * 256) if qc.get("bnb_4bit_use_double_quant") else 32 / 64)
            return Quantization(method=method, weight_dtype="int4", bits_per_weight=bits, group_size=64,
                                components=_scope(r, LINEAR, ex), excluded=tuple(ex), note="bitsandbytes 4-bit")
        return Quantization(method=method, weight_dtype="int8", bits_per_weight=8 + 32 / hidden_size,
                            components=_scope(r, LINEAR, ex), excluded=tuple(ex), note="bitsandbytes LLM.int8")
    r.warn(f"quantization_config.quant_method={method!r} is not modelled ({', '.join(METHODS)} are); "
           f"weights are sized at the chosen weight dtype")
    return None


def _compressed_tensors(r, qc: dict, hidden: int) -> Quantization | None:
    groups = qc.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise r.error("quantization_config.config_groups", groups, "is not a non-empty object",
                      "compressed-tensors config_groups with a 'weights' scheme")
    scheme = next(iter(groups.values()))
    w = scheme.get("weights") if isinstance(scheme, dict) else None
    others = {k: g.get("weights") for k, g in list(groups.items())[1:] if isinstance(g, dict) and g.get("weights") != w}
    if others:  # e.g. int4 experts beside fp8 attention: one scheme sizes every quantized component (a stated guess)
        first = next(iter(groups))
        r.warn(f"compressed-tensors config_groups has {len(others) + 1} weight schemes ({first}: {w}; "
               f"{', '.join(f'{k}: {v}' for k, v in others.items())}); every quantized component is sized at "
               f"{first}'s, the targets of each group are not matched to components")
    if not isinstance(w, dict):
        raise r.error("quantization_config.config_groups", "<no weights scheme>", "has no weights entry",
                      "a group with 'weights': {num_bits, type, strategy}")
    b = _int_field(r, w, "num_bits", 8, lo=2)
    is_float = w.get("type") == "float"
    strategy = w.get("strategy", "tensor")
    g = w.get("group_size")
    if strategy in ("group", "tensor_group"):
        if isinstance(g, bool) or not isinstance(g, int) or g < 1:
            raise r.error("quantization_config...weights.group_size", g, "is not a positive integer",
                          "the group size of a group strategy")
        scale_bits = 8 if (is_float and b == 4) else 16
        extra = (scale_bits + (0 if w.get("symmetric", True) else b)) / g
    elif strategy == "channel":
        extra = 16 / hidden
    elif strategy == "block":
        bs = w.get("block_structure") or [128, 128]
        extra = 32 / (bs[0] * bs[1])
    else:
        extra = 0.0
    if b == 4:
        dtype = "fp4" if is_float else "int4"
    else:
        dtype = "fp8" if is_float else "int8"
    act = scheme.get("input_activations")
    act_dtype = None
    if isinstance(act, dict) and act.get("num_bits"):
        act_dtype = {("float", 8): "fp8", ("int", 8): "int8", ("float", 4): "fp4"}.get(
            (act.get("type"), act.get("num_bits")))
    ex = _excluded_list(r, qc, "ignore")
    kv = qc.get("kv_cache_scheme")
    kv_dtype = None
    if isinstance(kv, dict) and kv.get("num_bits") == 8:
        kv_dtype = "fp8" if kv.get("type") == "float" else "int8"
    return Quantization(method="compressed-tensors", weight_dtype=dtype, bits_per_weight=b + extra,
                        group_size=g if isinstance(g, int) else None, components=_scope(r, LINEAR + ("lm_head",), ex),
                        excluded=tuple(ex), activation_dtype=act_dtype, kv_cache_dtype=kv_dtype,
                        note=f"compressed-tensors {w.get('type', 'int')}{b}, strategy {strategy}")


_MODELOPT = {"FP8": ("fp8", 8.0, "fp8"), "NVFP4": ("fp4", 4 + 8 / 16, "fp4"),
             "W4A16_AWQ": ("int4", 4 + 16 / 128, None), "W4A8_AWQ": ("int4", 4 + 16 / 128, "fp8"),
             "INT8_SQ": ("int8", 8 + 16 / 4096, "int8")}


def _modelopt(r, qc: dict) -> Quantization:
    inner = qc.get("quantization") if isinstance(qc.get("quantization"), dict) else qc
    algo = inner.get("quant_algo")
    if algo not in _MODELOPT:
        raise r.error("quantization_config.quant_algo", algo, "is not a known ModelOpt algorithm",
                      ", ".join(_MODELOPT))
    dtype, bits, act = _MODELOPT[algo]
    if algo == "NVFP4" and isinstance(inner.get("group_size"), int) and inner["group_size"] > 0:
        bits = 4 + 8 / inner["group_size"]
    ex = _excluded_list(r, inner, "exclude_modules")
    kv_algo = inner.get("kv_cache_quant_algo")
    kv = {"FP8": "fp8", "NVFP4": "fp4", "INT8": "int8"}.get(kv_algo) if isinstance(kv_algo, str) else None
    return Quantization(method="modelopt", weight_dtype=dtype, bits_per_weight=bits, activation_dtype=act,
                        components=_scope(r, LINEAR, ex), excluded=tuple(ex), kv_cache_dtype=kv,
                        group_size=inner.get("group_size") if algo == "NVFP4" else None,
                        note=f"ModelOpt {algo}")


#: activations of the float formats an id names: the fp8 ids data/model_variants.yaml knows are W8A8 (ModelOpt
#: FP8 quant_algo FP8 with input scales, llm-compressor FP8-dynamic / FP8-BLOCK with dynamic activations, AMD
#: Quark FP8-KV, Qwen's -FP8 with activation_scheme dynamic), the fp4 ids ModelOpt NVFP4, W4A4 (``_MODELOPT``);
#: integer ids (AWQ, GPTQ, bnb) are weight-only.
_ID_ACTIVATIONS = {"fp8": "fp8", "fp4": "fp4"}


def implied_by_id(dtype: str, note: str) -> Quantization:
    """A quantization a repo id's suffix implies (``-FP8``, ``-AWQ``) when its config is not at hand."""
    bits = {"fp8": 8.0, "int8": 8 + 16 / 4096, "int4": 4 + 20 / 128, "fp4": 4 + 8 / 16}[dtype]
    return Quantization(method="id", weight_dtype=dtype, bits_per_weight=bits, components=LINEAR,
                        source="id", note=note, group_size=128 if dtype == "int4" else None,
                        activation_dtype=_ID_ACTIVATIONS.get(dtype))


def published(r, typed: str, hidden_size: int) -> Quantization | None:
    """The quantization of the published checkpoint ``typed`` as data/checkpoints.yaml records it (an entry's
    ``quantization_config``, with its source), read as its own config would be; None when no entry has one."""
    for formats in (data_yaml("checkpoints.yaml") or {}).values():
        for entry in formats.values():
            if str(entry.get("id", "")).lower() == typed.lower() and entry.get("quantization_config"):
                q = parse_quantization(r, entry["quantization_config"], hidden_size)
                return q.model_copy(update={"note": f"{q.note}, layout of data/checkpoints.yaml: "
                                                    f"{entry.get('quantization_source', entry.get('source'))}"})
    return None
