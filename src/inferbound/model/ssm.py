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

**Lightning attention** (``MiniMaxLightningAttention``; Qin et al. 2024, Lightning Attention-2,
arXiv:2401.04658; MiniMax-01 report arXiv:2501.08313), H heads of width P, decay block B = ``block_size``::

    qkv_proj d×3HP · output_gate d×HP · RMSNorm HP · out_proj HP×d, no biases · persistent decay
    buffers transformers keeps in the state dict: slope_rate H, query_decay and key_decay H·B each,
    diagonal_decay H·B² (constants, not weights: ``lightning_buffer_values``)

**Kimi Delta Attention** (``KimiLinearDeltaAttention``; Kimi Linear report, arXiv:2510.26692: Gated
DeltaNet with a per-channel forget gate), H heads of width P, V = H·P::

    q_proj, k_proj, v_proj d×V each · conv1d 3V×K, no bias · forget gate f_a d×P, f_b P×V, dt_bias V,
    A_log H · b_proj d×H · output gate g_a d×P, g_b P×V · gated RMSNorm P · o_proj V×d

  (Bailing hybrid, ``BailingHybridKimiDeltaAttention`` in ``models/bailing_hybrid``: the same with
  full-rank gates, ``forget_gate.f_proj`` d×V and ``g_proj`` d×V: ``KDASpec.full_rank_gates``)

**RWKV-4** (``RwkvSelfAttention`` + ``RwkvFeedForward``; Peng et al. 2023, arXiv:2305.13048), hidden d,
attention width A = ``attention_hidden_size``, channel-mix width F = ``intermediate_size``::

    time mixing: time_decay, time_first 2A · time_mix_key/value/receptance 3d · key, value, receptance
    d×A each · output A×d; channel mixing: time_mix_key/receptance 2d · key d×F · receptance d×d ·
    value F×d; no biases (the block's two LayerNorms and the first block's pre_ln are the model's norms)

**Short convolution** (``Lfm2ShortConv``; LFM2, Liquid AI 2025, transformers ``models/lfm2/modeling_lfm2.py``),
hidden d, kernel K = ``conv_L_cache``, biases b = ``conv_bias``: a gated depthwise causal conv, no scan::

    in_proj d×3d (+3d) -> B, C, x · y = C ⊙ conv1d(B ⊙ x), conv1d d×K (+d) · out_proj d×d (+d)

**Griffin recurrent block** (``RecurrentGemmaRecurrentBlock`` + ``RecurrentGemmaRglru``; De et al. 2024,
arXiv:2402.19427, sec. 2.4; transformers ``models/recurrent_gemma/modeling_recurrent_gemma.py``), hidden d,
recurrence width W = ``lru_width``, H = ``num_attention_heads`` diagonal blocks of width W/H, conv kernel K::

    linear_y, linear_x d×W (+W each) · conv_1d W×K (+W), depthwise · RG-LRU: recurrent_param W, input and
    recurrent gates block-diagonal H·(W/H)² (+W) each · linear_out W×d (+d)

**State per sequence and layer** (fixed, O(1) in context; what vLLM's ``MambaStateShapeCalculator``
allocates, vllm/model_executor/layers/mamba/mamba_utils.py):

- convolution: the last K−1 inputs of the causal conv, (K−1)·conv_dim values (conv_dim: E, C or
  2Kd+Vd). transformers' cache keeps K columns instead (``LinearAttentionLayer.conv_states``): pass
  ``full_conv_window=True`` to count that way;
- recurrent: Mamba-1 E·N, Mamba-2 H·P·N, Gated DeltaNet Hv·Dk·Dv, Kimi Delta Attention H·P·P (conv over
  3V channels), lightning attention H·P·P values (the
  decayed Σ kᵀv, ``MiniMaxCache.linear_cache``); lightning attention has no convolution;
- RWKV-4: the token shift keeps the previous token's input of time mixing and of channel mixing (2·d,
  counted as its "conv" state: a width-2 shift), and the WKV recurrence its numerator, denominator and
  running maximum (3·A values, float32 in transformers' ``RwkvModel``: ``state_dtype`` fp32);
- short convolution: only the conv columns, (K−1)·d values (K in transformers' ``conv_states``), no
  recurrent state;
- Griffin's RG-LRU: the conv's last K−1 inputs, (K−1)·W (transformers' ``conv1d_state`` keeps K−1 too,
  so ``full_conv_window`` changes nothing), and the recurrence h, W values (float32 in transformers:
  ``recurrent_states`` "always computed in full precision": ``state_dtype`` fp32).

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


class LightningSpec(BaseModel):
    """Lightning (decayed linear) attention mixer (MiniMax-Text-01)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["lightning"] = "lightning"
    num_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    block_size: int = Field(ge=1, description="decay block B of the prefill's blockwise form")
    state_dtype: str | None = None


class KDASpec(BaseModel):
    """Kimi Delta Attention mixer (Kimi-Linear)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["kda"] = "kda"
    num_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    d_conv: int = Field(ge=1)
    state_dtype: str | None = None
    #: Bailing hybrid (Ling): the forget gate's f_proj and the output gate's g_proj are one d×V matrix
    #: each, not Kimi's low-rank d×P + P×V pairs
    full_rank_gates: bool = False


class RWKVSpec(BaseModel):
    """RWKV-4 time mixing (WKV) + channel mixing, the whole block but its norms."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["rwkv"] = "rwkv"
    hidden_size: int = Field(ge=1)
    attention_size: int = Field(ge=1)
    ffn_size: int = Field(ge=1)
    state_dtype: str | None = None


class ShortConvSpec(BaseModel):
    """LFM2's gated short convolution (module docstring): in_proj, depthwise conv of kernel d_conv, out_proj."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["shortconv"] = "shortconv"
    hidden_size: int = Field(ge=1)
    d_conv: int = Field(ge=1)
    bias: bool = False
    state_dtype: str | None = None


class RGLRUSpec(BaseModel):
    """Griffin's recurrent block (RecurrentGemma): two d→W branches, a depthwise conv, the RG-LRU, W→d."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["rglru"] = "rglru"
    lru_width: int = Field(ge=1)
    num_blocks: int = Field(ge=1, description="diagonal blocks of the input and recurrent gates (num_attention_heads)")
    d_conv: int = Field(ge=1)
    state_dtype: str | None = "fp32"


SSMSpec = Annotated[Union[MambaSpec, Mamba2Spec, DeltaNetSpec, KDASpec, LightningSpec, RWKVSpec, ShortConvSpec,
                          RGLRUSpec],
                    Field(discriminator="kind")]


def lightning_buffer_values(s) -> int:
    """Values of a lightning layer's persistent decay buffers: H + 2·H·B + H·B² (0 for other mixers)."""
    if s.kind != "lightning":
        return 0
    h, b = s.num_heads, s.block_size
    return h + 2 * h * b + h * b * b


def conv_dim(s) -> int:
    """Channels of the causal depthwise convolution (0: lightning attention has none)."""
    if s.kind in ("lightning", "rwkv"):
        return 0
    if s.kind == "mamba":
        return s.d_inner
    if s.kind == "shortconv":
        return s.hidden_size
    if s.kind == "rglru":
        return s.lru_width
    if s.kind == "mamba2":
        return s.d_inner + 2 * s.n_groups * s.d_state
    if s.kind == "kda":
        return 3 * s.num_heads * s.head_dim
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
    if s.kind == "kda":
        p, h = s.head_dim, s.num_heads
        v = h * p
        gate = d * v if s.full_rank_gates else d * p + p * v  # f and g: full d×V (Bailing) or low rank (Kimi)
        return (3 * d * v + 3 * v * s.d_conv + (gate + v + h) + d * h + gate + p + v * d)
    if s.kind == "shortconv":  # in_proj 3d² (+3d), conv d·K (+d), out_proj d² (+d)
        return 3 * d * d + d * s.d_conv + d * d + 5 * d * s.bias
    if s.kind == "rglru":  # linear_y, linear_x, conv_1d, RG-LRU (a, 2 block-diagonal gates), linear_out
        w = s.lru_width
        return 2 * (d * w + w) + w * s.d_conv + w + w + 2 * (w * w // s.num_blocks + w) + w * d + d
    if s.kind == "rwkv":
        a, f = s.attention_size, s.ffn_size
        return 2 * a + 3 * d + 3 * d * a + a * d + 2 * d + d * f + d * d + f * d
    if s.kind == "lightning":
        hp = s.num_heads * s.head_dim
        return d * 3 * hp + d * hp + hp + hp * d + lightning_buffer_values(s)
    kd, vd, hv = s.num_k_heads * s.head_k_dim, s.num_v_heads * s.head_v_dim, s.num_v_heads
    return d * (2 * kd + 2 * vd) + d * 2 * hv + conv_dim(s) * s.d_conv + 2 * hv + s.head_v_dim + vd * d


def conv_state_values(s, full_conv_window: bool = False) -> int:
    """Values of one layer's conv state: (K−1)·conv_dim (engines), K·conv_dim (transformers)."""
    if s.kind == "lightning":
        return 0
    if s.kind == "rwkv":  # the two token-shift states
        return 2 * s.hidden_size
    if s.kind == "rglru":  # K−1 columns in transformers too (RecurrentGemmaRecurrentBlock.conv1d_state)
        return (s.d_conv - 1) * s.lru_width
    return (s.d_conv if full_conv_window else s.d_conv - 1) * conv_dim(s)


def recurrent_state_values(s) -> int:
    """Values of one layer's recurrent state: E·N, H·P·N, Hv·Dk·Dv or H·P·P."""
    if s.kind == "lightning":
        return s.num_heads * s.head_dim * s.head_dim
    if s.kind == "shortconv":  # no recurrence: the conv columns are its whole state
        return 0
    if s.kind == "rglru":  # the diagonal recurrence h, one value per channel
        return s.lru_width
    if s.kind == "rwkv":
        return 3 * s.attention_size
    if s.kind == "kda":
        return s.num_heads * s.head_dim * s.head_dim
    if s.kind == "mamba":
        return s.d_inner * s.d_state
    if s.kind == "mamba2":
        return s.n_heads * s.head_dim * s.d_state
    return s.num_v_heads * s.head_k_dim * s.head_v_dim
