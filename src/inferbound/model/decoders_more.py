"""Dense decoders read on top of ``families.decoder`` with one module of their own, as transformers 5.24.0
builds them.

- ``apertus`` (``models/apertus/modeling_apertus.py``): q/k/v/o with ``attention_bias``, q/k RMSNorms over
  head_dim, an up/down MLP without bias (ApertusMLP), 2 RMSNorms (attention_layernorm,
  feedforward_layernorm); with ``hidden_act`` "xielu" (the class default) the activation is the
  ``XIELUActivation`` module (``activations.py``), which stores 4 scalars per MLP: the parameters
  alpha_p and alpha_n and the persistent buffers beta and eps (``ModelSpec.mlp_act_params``), counted
  with the MLP; any other activation stores none.
"""
from __future__ import annotations

from .families import Traits, decoder
from .validate import Reader

#: scalars XIELUActivation keeps in the state dict (transformers 5.24.0 activations.py: alpha_p, alpha_n,
#: beta, eps)
XIELU_SCALARS = 4


def apertus(r: Reader, fam: str, defaults: dict, size_defaults: dict) -> dict:
    out = decoder(r, fam, defaults, size_defaults, Traits(gated=False, qk_norm="head"))
    act = r.raw.get("hidden_act", defaults["hidden_act"])
    r.raw.seen.add("hidden_act")
    if not isinstance(act, str):
        raise r.error("hidden_act", act, "is not an activation name", "a string such as 'xielu' or 'silu'")
    return {**out, "mlp_act_params": XIELU_SCALARS if act == "xielu" else 0}


DECODERS_MORE = {"apertus": apertus}
