"""Gemma 3n (``gemma3n_text``, and the ``gemma3n`` wrapper's text_config): per-layer KV sharing, AltUp,
LAuReL and per-layer embeddings, as transformers 5.24 builds them (``models/gemma3n/modeling_gemma3n.py``,
``configuration_gemma3n.py``).

**KV sharing** (``Gemma3nTextConfig.kv_sharing_modes``): the last ``num_kv_shared_layers`` layers
("reuse") attend over the KV cache of the last earlier layer of their own type (sliding / full), so
they cache nothing and build no ``k_proj``, ``v_proj`` or ``k_norm``: KV per token counts only the
other layers, and those layers' attention still reads the shared cache.

**Per layer** (hidden d, AltUp inputs n = ``altup_num_inputs``, LAuReL rank r = ``laurel_rank``,
per-layer input width p = ``hidden_size_per_layer_input``), beside attention (q/k RMSNorms over head_dim;
``v_norm`` has no weight), the gated MLP and four RMSNorms:

- AltUp: correct_output_scale d + correction_coefs n×n + prediction_coefs n×n² + modality_router d×n
  + router_norm d;
- LAuReL: linear_left d×r + linear_right r×d + post_laurel_norm d;
- per-layer input: per_layer_input_gate d×p + per_layer_projection p×d + post_per_layer_input_norm d.

**Per model** (L layers, per-layer vocabulary V_p = ``vocab_size_per_layer_input``):
``embed_tokens_per_layer`` V_p × L·p (a lookup table, like the token embedding: not in the active
count), ``per_layer_model_projection`` d × L·p, ``per_layer_projection_norm`` p, and (n − 1) AltUp
projections plus (n − 1) unembed projections, d×d each.

The config reading is ``gemma3n.py``; this module holds the shapes and formulas (imported by spec.py).
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects)

from pydantic import BaseModel, ConfigDict, Field



class Gemma3nSpec(BaseModel):
    """Gemma 3n's extra modules and which layers reuse another layer's KV cache."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    altup_inputs: int = Field(ge=1)
    laurel_rank: int = Field(ge=1)
    per_layer_width: int = Field(ge=1)
    per_layer_vocab: int = Field(ge=1)
    #: (attention kind, window, layers) of the KV-sharing ("reuse") layers
    kv_shared: tuple[tuple[str, int | None, int], ...] = ()

    @property
    def num_kv_shared(self) -> int:
        return sum(c for _, _, c in self.kv_shared)


def layer_extra_params(s: Gemma3nSpec, d: int) -> int:
    """AltUp + LAuReL + per-layer input of one layer (module docstring)."""
    n, r, p = s.altup_inputs, s.laurel_rank, s.per_layer_width
    return (d + n * n + n ** 3 + d * n + d) + (2 * d * r + d) + (2 * d * p + d)


def per_layer_embedding_params(s: Gemma3nSpec, layers: int) -> int:
    """``embed_tokens_per_layer``: V_p × L·p (lookup only)."""
    return s.per_layer_vocab * layers * s.per_layer_width


def model_extra_params(s: Gemma3nSpec, d: int, layers: int) -> int:
    """per_layer_model_projection d·L·p + its norm p + 2·(n − 1) AltUp projections d×d."""
    return d * layers * s.per_layer_width + s.per_layer_width + 2 * (s.altup_inputs - 1) * d * d


def shared_layer_saving(d: int, kv: int, head_dim: int, bias: bool) -> int:
    """What a KV-sharing layer does not build: k_proj and v_proj (d × n_kv·head_dim each, + bias) and k_norm."""
    return 2 * d * kv * head_dim + 2 * kv * head_dim * bias + head_dim
