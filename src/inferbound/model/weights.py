"""Weight bytes by component, as a checkpoint stores them: quantized parts at their format's bits
(scales included, ``quant.py``), everything else at the 16-bit (or given) dtype.

    bytes(component) = params(component) · bits/8,  bits = Quantization.bits_per_weight if the component
                       is in Quantization.components, else the bits of ``default_dtype``

gpt-oss-120b (MXFP4 experts, quant_method mxfp4): 114.7B routed-expert parameters at 4.25 bits
(60.9 GB) plus 2.1B others at bf16 (4.2 GB): 65.2 GB, the size of the published checkpoint (~65 GB).
DeepSeek-V3 (FP8 with 128x128 fp32 block scales): every decoder linear layer at 8.002 bits, the
embeddings, norms and router at bf16: 673 GB, plus 11.6 GB for the MTP module. The MTP module
(``mtp``, DeepSeek-V3/GLM-4.5) is listed apart; engines load it only for MTP speculative decoding.
"""
from __future__ import annotations

from ..base.dtypes import BITS, check
from .params import count_params
from .quant import Quantization
from .spec import ModelSpec

COMPONENTS = ("embedding", "lm_head", "attention", "ssm", "dense_mlp", "routed_experts", "shared_experts",
              "router", "norms", "embed_projection", "per_layer_embedding", "layer_extras")


def weight_bytes_by_component(m: ModelSpec, default_dtype: str = "bf16",
                              quantization: Quantization | None | str = "checkpoint") -> dict[str, float]:
    """Bytes per ParamCount component (and ``total``, ``mtp``).

    ``quantization``: ``"checkpoint"`` (default) uses ``m.quantization``; ``None`` sizes every weight at
    ``default_dtype`` (what an explicit --weight-dtype override means for the unquantized path); a
    :class:`Quantization` uses that one.
    """
    q = m.quantization if quantization == "checkpoint" else quantization
    base = BITS[check(default_dtype, "default_dtype")]
    p = count_params(m)
    quantized = set(q.components) if q is not None else set()
    out = {}
    for c in COMPONENTS:
        bits = q.bits_per_weight if c in quantized else base
        out[c] = getattr(p, c) * bits / 8
    out["total"] = sum(out[c] for c in COMPONENTS)
    mtp_bits = q.bits_per_weight if q is not None and {"attention", "routed_experts"} <= quantized else base
    out["mtp"] = p.mtp * mtp_bits / 8
    return out
