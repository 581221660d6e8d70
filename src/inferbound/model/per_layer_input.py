"""Gemma 4's per-layer embeddings (PLE), as transformers 5.24.0 builds them
(``models/gemma4/modeling_gemma4.py``: ``Gemma4TextModel.__init__``, ``Gemma4TextDecoderLayer``).

With hidden d, L layers, per-layer width p = ``hidden_size_per_layer_input`` (> 0) and per-layer
vocabulary V_p = ``vocab_size_per_layer_input``:

- per model: ``embed_tokens_per_layer`` V_p × L·p (a lookup table, like the token embedding: not in the
  active count), ``per_layer_model_projection`` d × L·p (no bias), ``per_layer_projection_norm`` p;
- per layer: ``per_layer_input_gate`` d × p, ``per_layer_projection`` p × d (no biases) and
  ``post_per_layer_input_norm`` d: 2·d·p + d.

Gemma 3n has the same three per-layer parts beside AltUp and LAuReL (``kv_sharing.py``); Gemma 4 has
none of those. Imported by spec.py (no import of it here).
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects)

from pydantic import BaseModel, ConfigDict, Field


class PerLayerInput(BaseModel):
    """The per-layer embedding's width p and vocabulary V_p."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    width: int = Field(ge=1)
    vocab: int = Field(ge=1)


def table_params(s: PerLayerInput, layers: int) -> int:
    """``embed_tokens_per_layer``: V_p × L·p (lookup only)."""
    return s.vocab * layers * s.width


def model_projection_params(s: PerLayerInput, d: int, layers: int) -> int:
    """``per_layer_model_projection`` d·L·p + ``per_layer_projection_norm`` p."""
    return d * layers * s.width + s.width


def layer_params(s: PerLayerInput, d: int) -> int:
    """One layer's gate d·p + projection p·d + post norm d."""
    return 2 * d * s.width + d
