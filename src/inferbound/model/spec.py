"""Normalized transformer architecture: every field the arithmetic needs, nothing framework-specific.

A HuggingFace ``config.json`` is turned into a :class:`ModelSpec` by ``loader.py``; the formulas
(``params.py``, ``kv.py``, ``operators.py``) read only this object. Layers are kept as groups of
identical layers (:class:`LayerGroup`) so a model with alternating sliding-window layers or
interleaved MoE layers is priced per group and multiplied by the group's count.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

AttentionKind = Literal["full", "window", "chunked"]


class LayerGroup(BaseModel):
    """``count`` identical decoder layers.

    ``attention``: ``full`` (every past token), ``window`` (sliding window of ``window`` tokens: the KV
    cache stops growing past it), ``chunked`` (Llama 4: attention inside fixed chunks of ``window``
    tokens, the cache never holds more than one chunk). ``moe``: the MLP is a mixture of experts.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int = Field(ge=1)
    attention: AttentionKind = "full"
    window: int | None = Field(default=None, ge=1)
    moe: bool = False

    @model_validator(mode="after")
    def _window_given(self) -> "LayerGroup":
        if self.attention != "full" and self.window is None:
            raise ValueError(f"attention={self.attention!r} needs a window size")
        return self


class MLA(BaseModel):
    """Multi-head latent attention (DeepSeek-V2/V3): the cache holds one compressed latent per token.

    Cached per token and layer: ``kv_lora_rank + qk_rope_head_dim`` values (DeepSeek-V2 paper, sec. 2.1).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    q_lora_rank: int | None = Field(default=None, ge=1)
    kv_lora_rank: int = Field(ge=1)
    qk_nope_head_dim: int = Field(ge=1)
    qk_rope_head_dim: int = Field(ge=0)
    v_head_dim: int = Field(ge=1)


class MoE(BaseModel):
    """Routed experts (top-k of E) plus optional always-on shared experts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_experts: int = Field(ge=2)
    top_k: int = Field(ge=1)
    expert_intermediate_size: int = Field(ge=1)
    num_shared_experts: int = Field(default=0, ge=0)
    shared_intermediate_size: int = Field(default=0, ge=0, description="per shared expert")
    expert_bias: bool = False
    router_bias: bool = False

    @model_validator(mode="after")
    def _k_le_e(self) -> "MoE":
        if self.top_k > self.num_experts:
            raise ValueError(f"top_k={self.top_k} exceeds num_experts={self.num_experts}")
        return self


class ModelSpec(BaseModel):
    """Architecture of a decoder-only transformer LLM."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    family: str = Field(description="HF model_type, e.g. llama, mixtral, deepseek_v3")
    hidden_size: int = Field(ge=1)
    num_heads: int = Field(ge=1)
    num_kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    vocab_size: int = Field(ge=1)
    intermediate_size: int = Field(ge=0, description="dense MLP width (dense layers, 0 if none)")
    gated_mlp: bool = Field(description="SwiGLU/GeGLU: gate, up, down (3 matrices) vs up, down (2)")
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    layernorm_bias: bool = Field(default=False, description="LayerNorm with bias (2 params/elt) vs RMSNorm")
    norms_per_layer: int = Field(default=2, ge=0)
    learned_positions: int = Field(default=0, ge=0, description="rows of a learned position embedding")
    tie_embeddings: bool = False
    lm_head_bias: bool = Field(default=False, description="the LM head has a bias (GPT-J)")
    parallel_attention: bool = False
    layers: tuple[LayerGroup, ...]
    moe: MoE | None = None
    mla: MLA | None = None
    mtp_layers: int = Field(default=0, ge=0, description="multi-token-prediction layers, counted apart")
    max_position_embeddings: int | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "ModelSpec":
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}")
        if any(g.moe for g in self.layers) and self.moe is None:
            raise ValueError("layers marked moe but no moe section (num_experts, top_k, ...)")
        if self.intermediate_size == 0 and any(not g.moe for g in self.layers):
            raise ValueError("intermediate_size=0 but the model has dense MLP layers")
        return self

    def without_sliding_windows(self) -> "ModelSpec":
        """The same model as an engine that ignores sliding windows runs it: window layers attend to
        (and cache) every token. Chunked attention is kept."""
        layers = tuple(g.model_copy(update={"attention": "full", "window": None}) if g.attention == "window" else g
                       for g in self.layers)
        return self.model_copy(update={"layers": layers})

    @property
    def num_layers(self) -> int:
        return sum(g.count for g in self.layers)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def attention_type(self) -> str:
        """MHA, GQA, MQA or MLA, plus the windowed-layer share when there is one."""
        if self.mla is not None:
            kind = "MLA"
        elif self.num_kv_heads == self.num_heads:
            kind = "MHA"
        elif self.num_kv_heads == 1:
            kind = "MQA"
        else:
            kind = f"GQA-{self.num_heads // self.num_kv_heads}"
        local = sum(g.count for g in self.layers if g.attention != "full")
        if local:
            kind += f" ({local}/{self.num_layers} local)"
        return kind
