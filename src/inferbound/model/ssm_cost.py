"""FLOPs and bytes of a state-space mixer's scan (prefill) and recurrent update (decode), per layer.

Only the sequence-mixing core is priced here; the mixer's projections (in_proj, x_proj, dt_proj,
out_proj, in_proj_qkvz, ...) are ordinary GEMMs of ``ssm_params`` and the caller prices them as such
(2·tokens·params FLOPs, weights read once per step). Symbols as in ``ssm.py``; T = tokens of one
sequence in the step, K the conv kernel.

**Causal depthwise conv** (all three mixers): 2·K FLOPs per channel and token over conv_dim channels.

**Mamba-1 selective scan** (Gu & Dao 2023, arXiv:2312.00752, Alg. 2): per token and (channel, state)
element, discretize exp(Δ·A) and Δ·B·x, update h = Ā·h + B̄·x, accumulate y = C·h: 9 FLOPs, plus the D
skip and the z gate per channel: 9·E·N + 2·E per token, the count of the Mamba authors' reference FLOP
estimate (state-spaces/mamba issue #110: ``9·B·L·D·N + B·D·L`` with D, ``+ B·D·L`` with z). The scan is
sequential in tokens, so prefill and decode cost the same per token.

**Mamba-2 SSD** (Dao & Gu 2024, arXiv:2405.21060, sec. 6, chunk length Q = ``chunk_size``, per head of
width P with state N, for a prefill chunk of q = min(Q, T) tokens):
intra-chunk C·Bᵀ (2·q²·N) and its product with X (2·q²·P), chunk state Bᵀ·X (2·q·N·P), state passing
between chunks (2·N·P), output from the carried state C·h (2·q·N·P); per token
2·q·(N + P) + 4·N·P + 2·N·P/q. Decode (recurrent form, one token): h = exp(Δ·A)·h + Δ·x⊗B (3·N·P) and
y = C·h (2·N·P): 5·N·P per head, plus the D skip (P).

**Gated DeltaNet** (Yang, Kautz & Hatamizadeh 2024, arXiv:2412.06464, eq. 10; per value head with a
Dk×Dv state S): decode S ← α·S (Dk·Dv), S·k (2·Dk·Dv), S += β(v − S·k)·kᵀ (2·Dk·Dv), o = S·q (2·Dk·Dv):
7·Dk·Dv. Prefill, chunkwise WY form with chunk C = 64 (flash-linear-attention
``chunk_gated_delta_rule``, the kernel vLLM and SGLang call): per token K·Kᵀ and Q·Kᵀ within the chunk
(4·C·Dk), W = T·K and U = T·V
(2·C·(Dk + Dv)), the intra-chunk output (2·C·Dv), the triangular solve (2·C²/3), and the state terms W·S,
Q·S and the state update (6·Dk·Dv): 2·C·(3·Dk + 2·Dv) + 2·C²/3 + 6·Dk·Dv. (Leading terms; gating
exponentials and normalisations are O(Dk + Dv) per token and left out.)

**Kimi Delta Attention** (Kimi Linear report, arXiv:2510.26692): the Gated DeltaNet recurrence with a
per-channel instead of per-head decay (diag(α)·S costs the same Dk·Dv), per head of width P with a P×P
state: the Gated DeltaNet counts above with Hv = H, Dk = Dv = P (chunk C = 64, the same
flash-linear-attention chunked kernel family).

**Lightning attention** (Qin et al. 2024, Lightning Attention-2, arXiv:2401.04658, Alg. 1; the form
``MiniMaxLightningAttention.forward`` runs, per head of width P with a P×P state S, decay block B):
decode S ← λ·S + kᵀv (3·P²), o = q·S (2·P²): 5·P². Prefill, per token of a block of q = min(B, T):
intra-block Q·Kᵀ and its product with V (4·q·P), inter-block (Q·decay)·S (2·P²) and the state update
(K·decay)ᵀ·V (2·P²): 4·q·P + 4·P² (the decay masks are O(q) per token and left out). No convolution.

**RWKV-4 WKV** (Peng et al. 2023, arXiv:2305.13048, eq. 16-17 in the log-space form of transformers'
``rwkv_linear_attention_cpu``), per channel of A and token: output (max, 2 exponentials, a/b: ~10
FLOPs) and state update (the same again): 20·A, plus the token shift's mixes x·μ + x₋₁·(1 − μ) of five
inputs (3 FLOPs each on d channels): 15·d. Sequential in tokens: prefill and decode cost alike.

**Short convolution** (LFM2 ``Lfm2ShortConv.slow_forward``): the depthwise conv's 2·K·d per token plus the
two gates B ⊙ x and C ⊙ y, d each: 2·d; it streams B, C, x in and y out (4·d values). No recurrence.

**Griffin RG-LRU** (``RecurrentGemmaRglru.forward`` and ``_rnn_scan``), per channel of W and token, one
FLOP per elementwise operation as the code runs them: the two gate sigmoids (2), −8·r·softplus(Λ) (2),
a = exp(·) (1), a² = exp(2·) (2), x·i (1), √(1 − a²) (2), ·√ (1), h = a·h + x (2), and the block's
output gate x·gelu(y) (1): 14·W (the gates' block-diagonal matmuls are in ``ssm_params``, GEMMs).
Sequential in tokens: prefill and decode cost alike. It streams x, both gates, y in and the output
(5·W values).

**Bytes** (per layer): the state is read at the start of a step when the sequence has history
(past > 0) and written at the end: (1 + [past > 0]) · (conv state + recurrent state) per sequence; the
scan kernel streams its per-token inputs and output through HBM once (Mamba-1: x, Δ, z, y of width E and
B, C of width N; Mamba-2: x, z, y of width E, B, C of width G·N, Δ per head; Gated DeltaNet: q, k of
width Kd, v, z, o of width Vd, α, β per value head).

Every function broadcasts over numpy arrays of batch / new / past.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.dtypes import bytes_per_element
from .ssm import conv_dim, conv_state_values, recurrent_state_values

#: Gated DeltaNet prefill chunk (flash-linear-attention chunk_gated_delta_rule, BT = 64)
GDN_CHUNK = 64


@dataclass
class MixerCost:
    """One layer's state-space core for a step: FLOPs, state bytes moved, activation bytes streamed."""

    flops: object
    state_bytes: object
    act_bytes: object

    @property
    def bytes(self):
        return self.state_bytes + self.act_bytes


def conv_flops_per_token(s) -> float:
    if s.kind in ("lightning", "rwkv"):  # no causal convolution (RWKV's token shift: scan_flops_per_token)
        return 0.0
    return 2.0 * s.d_conv * conv_dim(s)


def scan_flops_per_token(s, new=1) -> object:
    """FLOPs per token of the recurrence, prefill of ``new`` tokens (chunked forms) or decode (new = 1)."""
    new = np.asarray(new, dtype=float)
    if s.kind == "mamba":
        return np.full(new.shape, 9.0 * s.d_inner * s.d_state + 2.0 * s.d_inner)
    if s.kind == "mamba2":
        n, p, h = s.d_state, s.head_dim, s.n_heads
        q = np.minimum(float(s.chunk_size), np.maximum(new, 1.0))
        prefill = 2 * q * (n + p) + 4 * n * p + 2 * n * p / q
        decode = 5.0 * n * p
        return h * (np.where(new > 1, prefill, decode) + p)
    if s.kind == "rwkv":
        return np.full(new.shape, 20.0 * s.attention_size + 15.0 * s.hidden_size)
    if s.kind == "shortconv":  # LFM2: the two gates B ⊙ x before the conv and C ⊙ y after it, d each
        return np.full(new.shape, 2.0 * s.hidden_size)
    if s.kind == "rglru":  # Griffin: 14 elementwise FLOPs per channel (module docstring)
        return np.full(new.shape, 14.0 * s.lru_width)
    if s.kind == "lightning":
        p = float(s.head_dim)
        q = np.minimum(float(s.block_size), np.maximum(new, 1.0))
        return s.num_heads * np.where(new > 1, 4 * q * p + 4 * p * p, 5.0 * p * p)
    if s.kind == "kda":
        dk = dv = s.head_dim
        hv, c = s.num_heads, GDN_CHUNK
    else:
        dk, dv, hv, c = s.head_k_dim, s.head_v_dim, s.num_v_heads, GDN_CHUNK
    q = np.minimum(float(c), np.maximum(new, 1.0))
    prefill = 2 * q * (3 * dk + 2 * dv) + 2 * q * q / 3 + 6 * dk * dv
    return hv * np.where(new > 1, prefill, 7.0 * dk * dv)


def stream_values_per_token(s) -> int:
    """Values the scan kernel reads and writes per token (module docstring)."""
    if s.kind == "mamba":
        return 4 * s.d_inner + 2 * s.d_state
    if s.kind == "mamba2":
        return 3 * s.d_inner + 2 * s.n_groups * s.d_state + s.n_heads
    if s.kind == "lightning":  # q, k, v in, o out
        return 4 * s.num_heads * s.head_dim
    if s.kind == "rwkv":  # k, v, r in, wkv out
        return 4 * s.attention_size
    if s.kind == "shortconv":  # B, C, x in, y out
        return 4 * s.hidden_size
    if s.kind == "rglru":  # x, input gate, recurrent gate, y in, output out
        return 5 * s.lru_width
    if s.kind == "kda":  # q, k, v, the per-channel decay and the output gate of width V, o, β per head
        return 6 * s.num_heads * s.head_dim + s.num_heads
    kd, vd = s.num_k_heads * s.head_k_dim, s.num_v_heads * s.head_v_dim
    return 2 * kd + 3 * vd + 2 * s.num_v_heads


def mixer_cost(s, batch, new, past=0, act_dtype: str = "bf16", state_dtype: str = "bf16",
               ssm_dtype: str | None = None) -> MixerCost:
    """One layer's conv + scan for ``batch`` sequences adding ``new`` tokens after ``past`` (arrays ok)."""
    batch, new, past = (np.asarray(x, dtype=float) for x in (batch, new, past))
    tokens = batch * new
    flops = tokens * (conv_flops_per_token(s) + scan_flops_per_token(s, new))
    state = (conv_state_values(s) * bytes_per_element(state_dtype)
             + recurrent_state_values(s) * bytes_per_element(ssm_dtype or s.state_dtype or state_dtype))
    state_bytes = batch * state * (1.0 + (past > 0))
    act = tokens * stream_values_per_token(s) * bytes_per_element(act_dtype)
    return MixerCost(flops=flops, state_bytes=state_bytes, act_bytes=act)
