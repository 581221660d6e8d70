"""State-space and linear-attention mixers: shapes, parameters and the per-sequence state.

Three mixers, as transformers 5 builds them (module names from its modeling files):

**Mamba-1** (``MambaMixer``; Gu & Dao 2023, arXiv:2312.00752), inner width E = ``d_inner``, state N,
conv kernel K, Δ rank R, hidden d::

    in_proj d×2E (+2E bias) · conv1d E×K (+E) · x_proj E×(R+2N) · dt_proj R×E + E · A_log E×N · D E
    · out_proj E×d (+d bias) · Jamba only: RMSNorms on Δ, B, C (R + 2N)

**Mamba-2** (``Mamba2Mixer``, ``NemotronHMamba2Mixer``, ``FalconH1Mixer``, ``GraniteMoeHybridMambaLayer``;
Dao & Gu 2024, arXiv:2405.21060), heads H of width P, groups G, conv width C = E + 2GN::

    in_proj d×(2E + 2GN + H) (+bias) · conv1d C×K (+C) · dt_bias, A_log, D: 3H · gated RMSNorm E
    (absent in Falcon-H1 unless mamba_rms_norm) · out_proj E×d (+d)

**Gated DeltaNet** (``Qwen3NextGatedDeltaNet``; Yang, Kautz & Hatamizadeh 2024, arXiv:2412.06464),
Hk key heads of width Dk, Hv value heads of width Dv, key width Kd = Hk·Dk, value width Vd = Hv·Dv::

    in_proj_qkvz d×(2Kd + 2Vd) · in_proj_ba d×2Hv · conv1d (2Kd+Vd)×K, no bias · dt_bias, A_log: 2Hv
    · gated RMSNorm Dv · out_proj Vd×d

**State per sequence and layer** (fixed, O(1) in context; what vLLM's ``MambaStateShapeCalculator``
allocates, vllm/model_executor/layers/mamba/mamba_utils.py):

- convolution: the last K−1 inputs of the causal conv, (K−1)·conv_dim values (conv_dim: E, C or
  2Kd+Vd). transformers' cache keeps K columns instead (``LinearAttentionLayer.conv_states``): pass
  ``full_conv_window=True`` to count that way;
- recurrent: Mamba-1 E·N, Mamba-2 H·P·N, Gated DeltaNet Hv·Dk·Dv values.

The recurrent state may be kept at a wider dtype than the conv state (vLLM ``mamba_ssm_cache_dtype``;
Nemotron-H configs ask for float32): ``ssm_dtype``.
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects, not as
# strings to compile and evaluate when each model class is defined, at every import)

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class MambaSpec(BaseModel):
    """Mamba-1 selective-scan mixer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["mamba"] = "mamba"
    d_inner: int = Field(ge=1)
    d_state: int = Field(ge=1)
    d_conv: int = Field(ge=1)
    dt_rank: int = Field(ge=1)
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = Field(default=False, description="RMSNorm weights on Δ, B, C (Jamba)")
    state_dtype: str | None = None


class Mamba2Spec(BaseModel):
    """Mamba-2 (SSD) mixer; ``d_inner`` = n_heads · head_dim."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["mamba2"] = "mamba2"
    d_inner: int = Field(ge=1)
    d_state: int = Field(ge=1)
    n_groups: int = Field(ge=1)
    n_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    d_conv: int = Field(ge=1)
    conv_bias: bool = True
    in_proj_bias: bool = False
    out_proj_bias: bool = False
    gated_norm: bool = True
    chunk_size: int = Field(default=256, ge=1, description="SSD chunk length of the prefill scan")
    state_dtype: str | None = None


class DeltaNetSpec(BaseModel):
    """Gated DeltaNet linear-attention mixer (Qwen3-Next)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["gated_deltanet"] = "gated_deltanet"
    num_k_heads: int = Field(ge=1)
    num_v_heads: int = Field(ge=1)
    head_k_dim: int = Field(ge=1)
    head_v_dim: int = Field(ge=1)
    d_conv: int = Field(ge=1)
    state_dtype: str | None = None


SSMSpec = Annotated[Union[MambaSpec, Mamba2Spec, DeltaNetSpec], Field(discriminator="kind")]


def conv_dim(s) -> int:
    """Channels of the causal depthwise convolution."""
    if s.kind == "mamba":
        return s.d_inner
    if s.kind == "mamba2":
        return s.d_inner + 2 * s.n_groups * s.d_state
    return 2 * s.num_k_heads * s.head_k_dim + s.num_v_heads * s.head_v_dim


def ssm_params(s, d: int) -> int:
    """Parameters of one mixer on a hidden size ``d`` (module docstring)."""
    if s.kind == "mamba":
        e, n, r = s.d_inner, s.d_state, s.dt_rank
        return (d * 2 * e + 2 * e * s.proj_bias + e * s.d_conv + e * s.conv_bias + e * (r + 2 * n)
                + r * e + e + e * n + e + e * d + d * s.proj_bias + (r + 2 * n) * s.inner_norms)
    if s.kind == "mamba2":
        e, c, h = s.d_inner, conv_dim(s), s.n_heads
        proj = 2 * e + 2 * s.n_groups * s.d_state + h
        return (d * proj + proj * s.in_proj_bias + c * s.d_conv + c * s.conv_bias + 3 * h
                + e * s.gated_norm + e * d + d * s.out_proj_bias)
    kd, vd, hv = s.num_k_heads * s.head_k_dim, s.num_v_heads * s.head_v_dim, s.num_v_heads
    return d * (2 * kd + 2 * vd) + d * 2 * hv + conv_dim(s) * s.d_conv + 2 * hv + s.head_v_dim + vd * d


def conv_state_values(s, full_conv_window: bool = False) -> int:
    """Values of one layer's conv state: (K−1)·conv_dim (engines), K·conv_dim (transformers)."""
    return (s.d_conv if full_conv_window else s.d_conv - 1) * conv_dim(s)


def recurrent_state_values(s) -> int:
    """Values of one layer's recurrent state: E·N, H·P·N or Hv·Dk·Dv."""
    if s.kind == "mamba":
        return s.d_inner * s.d_state
    if s.kind == "mamba2":
        return s.n_heads * s.head_dim * s.d_state
    return s.num_v_heads * s.head_k_dim * s.head_v_dim
