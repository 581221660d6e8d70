"""Small typed configs validated at the edge: dtypes and parallel layout."""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects, not as
# strings to compile and evaluate when each model class is defined, at every import)

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..base.dtypes import BITS, DTYPES, WEIGHT_ONLY


#: the weight components a quantized format applies to when nothing narrower is said: every linear layer
LINEAR_COMPONENTS = ("attention", "ssm", "dense_mlp", "routed_experts", "shared_experts")

#: all-reduce algorithms a layout may name (``Parallelism.collective_algo``; pricing/comm.py prices each; ``auto``:
#: the fastest the fabric supports). The one list: the CLI and API choices (faces/options.py) are this tuple.
COLLECTIVE_ALGOS: tuple[str, ...] = ("auto", "ring", "tree", "oneshot", "twoshot", "nvls")
#: the algorithms that need the TP group inside one NVLink island (NCCL/TensorRT-LLM one-shot, two-shot, NVLS)
NVLINK_ALGOS: tuple[str, ...] = ("oneshot", "twoshot", "nvls")
#: how the MoE dispatch/combine all-to-all crosses machines (pricing/comm.py all_to_all): ``pairwise``, every
#: expert copy of a token to its GPU; ``deepep``, DeepEP's normal (high-throughput) kernels, once per remote
#: node over RDMA and forwarded over NVLink there (SGLang --moe-a2a-backend deepep --deepep-mode normal)
EP_A2A: tuple[str, ...] = ("pairwise", "deepep")


class Dtypes(BaseModel):
    """Storage and compute formats. ``kv=None`` means "as the activations" (engines' default).

    ``weight_components``: the ParamCount components stored at ``weight`` (None: every linear layer;
    a checkpoint such as gpt-oss stores only its routed experts in MXFP4); the other weights stay at
    ``high_precision``. ``weight_bits``: stored bits per quantized weight with its scales, as the
    checkpoint's quantization_config gives them (None: dtypes.py's default scales). ``weight_source``:
    where the weight format came from (``explicit``, ``checkpoint`` or ``default``), so outputs can say.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: str = "bf16"
    act: str = "bf16"
    kv: str | None = None
    emulate: bool = Field(default=False, description="allow formats the GPU lacks (weight-only emulation)")
    weight_components: tuple[str, ...] | None = None
    weight_bits: float | None = Field(default=None, gt=0)
    weight_source: str = "explicit"

    @field_validator("weight", "act", "kv")
    @classmethod
    def _known(cls, v: str | None, info):
        if v is not None and v not in BITS:
            raise ValueError(f"{info.field_name}_dtype={v!r} unknown; allowed: {', '.join(DTYPES)}")
        return v

    @field_validator("act")
    @classmethod
    def _act_compute(cls, v: str):
        if v in WEIGHT_ONLY:
            raise ValueError(f"act_dtype={v!r} is not a compute format; allowed: "
                             f"{', '.join(d for d in DTYPES if d not in WEIGHT_ONLY)}")
        return v

    @property
    def kv_dtype(self) -> str:
        """KV-cache format: as given, else the activations' when they are bf16/fp16/fp8, FP8 with FP4
        activations (NVIDIA's NVFP4 ModelOpt checkpoints set kv_cache_quant_algo FP8, and TensorRT-LLM
        serves them with an FP8 cache: its NVFP4 perf-overview rows), else bf16."""
        if self.kv is not None:
            return self.kv
        if self.act == "fp4":
            return "fp8"
        return self.act if self.act in ("bf16", "fp16", "fp8") else "bf16"

    def stored_at(self, component: str) -> bool:
        """Whether weight ``component`` is stored at the ``weight`` format (else at high precision)."""
        return component in (self.weight_components or LINEAR_COMPONENTS)

    @property
    def high_precision(self) -> str:
        """Format of tensors kept unquantized (embeddings, LM head, norms): bf16 unless fp16/fp32 asked."""
        return self.act if self.act in ("fp16", "fp32") else "bf16"


class Parallelism(BaseModel):
    """Parallel layout of one deployment: tensor, pipeline, expert and data parallel sizes.

    GPUs used = tp·pp·dp. EP reuses the GPUs of a MoE layer rather than adding any: the tp GPUs of a
    replica, or all tp·dp GPUs when ``attention_dp`` makes the dp ranks one replica whose attention
    is data parallel and whose experts are spread over every rank (DeepSeek-style); ``ep`` must divide
    that group, and the rest splits each expert (expert TP). ``nodes`` spreads the GPUs over machines.
    ``redundant_experts`` N adds N expert copies per MoE layer (EPLB, deploy/eplb.py): ep must then divide
    E + N rather than E.

    ``attention_dp`` with ``ep`` 1 is SGLang's ``--enable-dp-attention`` beside TP-sharded MoE: each
    attention group runs its own sequences, then the MLP (dense or MoE) sees every group's tokens,
    all-gathered over the tp·dp ranks, and runs TP-sharded over all of them (``mlp_shard``); a
    reduce-scatter returns each group its tokens (sglang python/sglang/srt/layers/communicator.py
    ``LayerScatterModes._compute_mlp_mode`` / ``sparse_mlp_scatter_mode``: FULL without an all-to-all
    backend; dp_attention.py ``dp_gather_partial``, ``dp_reduce_scatter_tensor``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    redundant_experts: int = Field(default=0, ge=0, description="redundant expert copies per MoE layer (EPLB, "
                                   "SGLang --ep-num-redundant-experts): (experts + N)/ep per GPU")
    ep_a2a: str = Field(default="pairwise", description="MoE all-to-all across machines: " + ", ".join(EP_A2A))
    attention_dp: bool = Field(default=False, description="attention data-parallel beside EP or TP-sharded MoE (DeepSeek)")
    nodes: int = Field(default=1, ge=1)
    sequence_parallel: bool = Field(default=False, description="reduce-scatter + all-gather instead of all-reduce")
    pp_split: tuple[int, ...] | None = Field(default=None, description="layers per pipeline stage (uneven allowed)")
    microbatches: int | None = Field(default=None, ge=1, description="pipeline micro-batches (default min(batch, pp))")
    collective_algo: str = Field(default="auto", description="all-reduce algorithm: " + ", ".join(COLLECTIVE_ALGOS))
    comm_overlap: float = Field(default=0.0, ge=0, le=1, description="share of collective time hidden behind compute")

    @field_validator("collective_algo", "ep_a2a")
    @classmethod
    def _one_of(cls, v: str, info) -> str:
        allowed = {"collective_algo": COLLECTIVE_ALGOS, "ep_a2a": EP_A2A}[info.field_name]
        if v not in allowed:
            raise ValueError(f"{info.field_name}={v!r} unknown; allowed: {', '.join(allowed)}")
        return v

    @model_validator(mode="after")
    def _ep_divides(self) -> "Parallelism":
        if self.pp_split is not None:
            if len(self.pp_split) != self.pp or min(self.pp_split) < 1:
                raise ValueError(f"pp_split={list(self.pp_split)} must list {self.pp} positive layer counts (one per stage)")
        return self

    @property
    def attention_groups(self) -> int:
        """Independent attention groups in a replica: dp with attention data parallel, else 1."""
        return self.dp if self.attention_dp else 1

    @property
    def replicas(self) -> int:
        """Independent model replicas (dp copies, unless dp serves as attention data parallel)."""
        return 1 if self.attention_dp else self.dp

    @property
    def moe_group(self) -> int:
        """GPUs that share one MoE layer's experts: tp, or tp·dp with attention data parallel."""
        return self.tp * self.attention_groups

    @property
    def dp_gathered_mlp(self) -> bool:
        """Whether the MLP layers run on tokens all-gathered over the attention groups, TP-sharded over
        the tp·dp ranks (attention data parallel without EP: SGLang's DP attention with MoE TP)."""
        return self.attention_dp and self.ep == 1 and self.dp > 1

    @property
    def mlp_shard(self) -> int:
        """Ways a dense MLP or the shared experts are split: tp·dp when ``dp_gathered_mlp``, else tp."""
        return self.moe_group if self.dp_gathered_mlp else self.tp

    @property
    def head_shard(self) -> int:
        """Ways the LM head is split (vocab parallel): tp·dp when ``dp_gathered_mlp`` (sglang
        models/deepseek_v2.py ``ParallelLMHead(..., use_attn_tp_group=enable_dp_lm_head)``, off by default:
        the whole TP group), else tp."""
        return self.moe_group if self.dp_gathered_mlp else self.tp

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel split inside each expert: (GPUs sharing the MoE layer) / ep."""
        return self.moe_group // self.ep

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def replica_gpus(self) -> int:
        """GPUs of one model replica (the dp copies multiply throughput, not latency)."""
        return self.tp * self.pp * (self.dp if self.attention_dp else 1)
