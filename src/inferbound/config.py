"""Small typed configs validated at the edge: dtypes and parallel layout."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .dtypes import BITS, DTYPES


class Dtypes(BaseModel):
    """Storage and compute formats. ``kv=None`` means "as the activations" (engines' default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: str = "bf16"
    act: str = "bf16"
    kv: str | None = None
    emulate: bool = Field(default=False, description="allow formats the GPU lacks (weight-only emulation)")

    @field_validator("weight", "act", "kv")
    @classmethod
    def _known(cls, v: str | None, info):
        if v is not None and v not in BITS:
            raise ValueError(f"{info.field_name}_dtype={v!r} unknown; allowed: {', '.join(DTYPES)}")
        return v

    @field_validator("act")
    @classmethod
    def _act_compute(cls, v: str):
        if v == "int4":
            raise ValueError("act_dtype='int4' is not a compute format; allowed: fp32, bf16, fp16, fp8, int8, fp4")
        return v

    @property
    def kv_dtype(self) -> str:
        """KV-cache format: as given, else 16-bit when activations are 16/32-bit, else the act format."""
        if self.kv is not None:
            return self.kv
        return self.act if self.act in ("bf16", "fp16", "fp8") else "bf16"

    @property
    def high_precision(self) -> str:
        """Format of tensors kept unquantized (embeddings, LM head, norms): bf16 unless fp16/fp32 asked."""
        return self.act if self.act in ("fp16", "fp32") else "bf16"


class Parallelism(BaseModel):
    """Parallel layout of one deployment: tensor, pipeline, expert and data parallel sizes.

    GPUs used = tp·pp·dp (EP reuses the TP×DP GPUs of the MoE layers, DeepSeek/vLLM style, so
    ``ep`` must divide tp·dp). ``nodes`` spreads those GPUs over machines of ``gpus_per_node`` each.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    attention_dp: bool = Field(default=False, description="attention data-parallel beside EP (DeepSeek)")
    nodes: int = Field(default=1, ge=1)
    sequence_parallel: bool = False

    @model_validator(mode="after")
    def _ep_divides(self) -> "Parallelism":
        if (self.tp * self.dp) % self.ep:
            raise ValueError(f"ep={self.ep} must divide tp*dp={self.tp * self.dp} (experts reuse those GPUs)")
        if self.attention_dp and self.ep == 1:
            raise ValueError("attention_dp=True needs ep > 1")
        return self

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def replica_gpus(self) -> int:
        """GPUs of one model replica (the dp copies multiply throughput, not latency)."""
        return self.tp * self.pp * (self.dp if self.attention_dp else 1)
