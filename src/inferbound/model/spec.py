"""Normalized decoder-only LLM architecture: every field the arithmetic needs, nothing framework-specific.

A HuggingFace ``config.json`` is turned into a :class:`ModelSpec` by ``loader.py`` (per-family rules in
``families.py``); the formulas (``params.py``, ``kv.py``, ``ssm.py``, ``operators.py``) read only this
object. Layers are kept as groups of identical layers (:class:`LayerGroup`) so a model with alternating
sliding-window layers, interleaved MoE layers or interleaved state-space layers is priced per group and
multiplied by the group's count.

Per layer there is a *sequence mixer* (``LayerGroup.mixer``) and an optional MLP:

- ``attention``: softmax attention over a KV cache (``attention`` says full / sliding window / chunked);
- ``mamba`` (Mamba-1 selective scan), ``mamba2`` (Mamba-2 SSD), ``gated_deltanet`` (Gated DeltaNet),
  ``kda`` (Kimi Delta Attention), ``lightning`` (MiniMax's decayed linear attention), ``rwkv`` (RWKV-4's time and channel mixing),
  ``shortconv`` (LFM2's gated short convolution), ``rglru`` (Griffin's recurrent block, RecurrentGemma):
  a recurrent state of fixed size per sequence, O(1) in context (``ModelSpec.ssm`` holds its shapes);
- ``attention+mamba2``: both side by side on the same input (Falcon-H1's parallel hybrid);
- ``none``: an MLP-only block (Nemotron-H's ``-`` and ``E`` blocks).
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects, not as
# strings to compile and evaluate when each model class is defined, at every import)

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .geometry import AttentionGeometry
from .per_layer_input import PerLayerInput
from .quant import Quantization
from .kv_sharing import Gemma3nSpec
from .moa import AttentionExperts
from .sparse_attn import SparseIndexer
from .ssm import SSMSpec
from .towers import Tower

AttentionKind = Literal["full", "window", "chunked"]
MixerKind = Literal["attention", "mamba", "mamba2", "gated_deltanet", "kda", "lightning", "rwkv",
                    "shortconv", "rglru", "attention+mamba2", "none"]
#: mixers with softmax attention (and so a KV cache)
ATTENTION_MIXERS = frozenset({"attention", "attention+mamba2"})
#: mixers with a recurrent state, and which state-space layer they run
SSM_OF_MIXER = {"mamba": "mamba", "mamba2": "mamba2", "gated_deltanet": "gated_deltanet", "lightning": "lightning",
                "kda": "kda", "rwkv": "rwkv", "shortconv": "shortconv", "rglru": "rglru", "attention+mamba2": "mamba2"}


class LayerGroup(BaseModel):
    """``count`` identical decoder layers.

    ``attention``: ``full`` (every past token), ``window`` (sliding window of ``window`` tokens: the KV
    cache stops growing past it), ``chunked`` (Llama 4: attention inside fixed chunks of ``window``
    tokens, the cache never holds more than one chunk); only meaningful when the mixer has attention.
    ``mixer``: the sequence mixer (module docstring). ``moe``: the MLP is a mixture of experts.
    ``mlp``: False for a block without an MLP (Mamba, Nemotron-H ``M`` and ``*`` blocks).
    ``attn``: the heads of these layers where they differ from the model's (``geometry.py``: Gemma 4,
    MiMo-V2-Flash); None in the common case. ``mlp_width``: these layers' dense MLP width where it is not
    ``ModelSpec.intermediate_size`` (Gemma 4 ``use_double_wide_mlp``: 2x in the KV-sharing layers).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int = Field(ge=1)
    attention: AttentionKind = "full"
    window: int | None = Field(default=None, ge=1)
    moe: bool = False
    mixer: MixerKind = "attention"
    mlp: bool = True
    attn: AttentionGeometry | None = None
    mlp_width: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> "LayerGroup":
        if self.attention != "full" and self.window is None:
            raise ValueError(f"attention={self.attention!r} needs a window size")
        if self.moe and not self.mlp:
            raise ValueError("moe=True needs mlp=True (the experts are the layer's MLP)")
        if self.mixer == "none" and not self.mlp:
            raise ValueError("a layer with mixer='none' and mlp=False does nothing")
        return self

    @property
    def has_attention(self) -> bool:
        """The layer runs softmax attention and keeps a KV cache."""
        return self.mixer in ATTENTION_MIXERS

    @property
    def ssm_kind(self) -> str | None:
        """The state-space / linear-attention layer this group runs, if any."""
        return SSM_OF_MIXER.get(self.mixer)


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
    """Routed experts (top-k of E) plus optional always-on shared experts.

    ``shared_expert_gate``: a d→1 sigmoid gate scales the shared expert (Qwen2-MoE, Qwen3-Next).
    ``latent_size``: experts run in a smaller latent space reached by d→latent and latent→d projections
    (Nemotron-H ``moe_latent_size``); ``None`` means the experts read the hidden state directly.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_experts: int = Field(ge=2)
    top_k: int = Field(ge=1)
    expert_intermediate_size: int = Field(ge=1)
    num_shared_experts: int = Field(default=0, ge=0)
    shared_intermediate_size: int = Field(default=0, ge=0, description="per shared expert")
    expert_bias: bool = False
    shared_expert_bias: bool | None = Field(default=None, description="biases of the shared experts; None: as expert_bias")
    router_bias: bool = False
    shared_expert_gate: bool = False
    latent_size: int | None = Field(default=None, ge=1)
    post_norm: bool = Field(default=False, description="a norm of width d after the MoE block, in MoE layers only "
                                                      "(AXK1 post_mlp_layernorm)")
    block_norms: int = Field(default=0, ge=0, description="more norms of width d in MoE layers only (Gemma 4: "
                             "post_feedforward_layernorm_1, _2 and pre_feedforward_layernorm_2)")
    router_scale: bool = Field(default=False, description="a stored d-vector scaling the router's input (Gemma 4 "
                               "router.scale)")
    zero_experts: int = Field(default=0, ge=0, description="identity (zero-computation) experts in the router's "
                              "pool beside the E real ones (LongCat-Flash zero_expert_num): routed to, no weights")

    @model_validator(mode="after")
    def _k_le_e(self) -> "MoE":
        if self.top_k > self.num_experts + self.zero_experts:
            raise ValueError(f"top_k={self.top_k} exceeds num_experts + zero_experts="
                             f"{self.num_experts + self.zero_experts}")
        return self

    @property
    def pool(self) -> int:
        """The router's choices: E real + Z identity experts (its logits, its correction bias)."""
        return self.num_experts + self.zero_experts

    @property
    def routed_k(self) -> float:
        """Real experts one token runs: k·E/(E + Z), k without identity experts. Routing balanced over the
        E + Z pool picks a real expert with probability E/(E + Z) at each of its k choices (LongCat-Flash,
        arXiv:2509.01322 sec. 2.1, whose expert bias keeps the pool balanced: 12 of 512 + 256 gives 8, and
        its reported 18.6-31.3 B active (0 to 12 real experts) averaging ~27 B is that 8: test_longcat.py)."""
        return self.top_k * self.num_experts / self.pool if self.zero_experts else float(self.top_k)


class ModelSpec(BaseModel):
    """Architecture of a decoder-only LLM (transformer, state-space or hybrid).

    Extra fields beyond the usual shapes, each needed for an exact parameter count:
    ``qk_norm`` (``head``: a norm over head_dim on q and on k, Qwen3/Gemma-3; ``full``: over all q heads
    and all k heads, OLMo-2/OLMoE/Cohere; ``per_head``: a bias-free norm of its own per q and k head,
    StableLM), ``attention_sinks`` (gpt-oss: one learned logit per head), ``sub_norms`` (BitNet: an RMSNorm
    of width d before o_proj and one of the MLP width before down_proj, in every layer),
    ``attention_gate`` (Qwen3-Next: q_proj also emits a per-channel output gate, doubling its width),
    ``final_norm``/``embedding_norm`` (OPT-350m has no final norm, BLOOM normalizes its embeddings),
    ``word_embed_proj_dim`` (OPT-350m: 512-wide embeddings projected in and out of the 1024-wide model),
    ``cross_attention`` (GPT-2 ``add_cross_attention``: each block also holds a cross-attention over encoder
    states and its LayerNorm; stored weights, run only when encoder states are passed, so not in a
    decoder-only step's compute or KV cache).
    ``warnings``: every guess the loader made that the user should see (printed by the CLI, carried in
    JSON). ``quantization``: the checkpoint's own quantization (``quant.py``); ``checkpoint_dtype``: the
    dtype its other weights are stored in (``torch_dtype``); ``base_model``: the catalog
    entry a variant id (an Instruct, chat or vendor-quantized repo) resolved to.
    """

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
    final_norm: bool = True
    embedding_norm: bool = False
    qk_norm: Literal["none", "head", "full", "per_head"] = "none"
    attention_sinks: bool = False
    attention_gate: bool = False
    attention_head_gate: bool = Field(default=False, description="per-head output gating (Laguna, Bailing's MLA): a "
                                      "bias-free d -> h projection scaling each head's output (d·h per layer)")
    attention_gate_bias: bool = Field(default=False, description="Beam: one learned bias per head added to the "
                                      "output gate (h per layer; the gate projection itself has none)")
    learned_positions: int = Field(default=0, ge=0, description="rows of a learned position embedding")
    word_embed_proj_dim: int | None = Field(default=None, ge=1)
    tie_embeddings: bool = False
    lm_head_bias: bool = Field(default=False, description="the LM head has a bias (GPT-J, Phi)")
    parallel_attention: bool = False
    cross_attention: bool = False
    sub_norms: bool = Field(default=False, description="BitNet: attn_sub_norm (d) and ffn_sub_norm (MLP width)")
    mlp_act_params: int = Field(default=0, ge=0, description="stored scalars of each dense MLP's activation "
                                "(Apertus xIELU: alpha_p, alpha_n, beta, eps = 4)")
    extra_params: int = Field(default=0, ge=0, description="stored parameters no per-layer formula holds, counted "
                              "once in layer_extras (decoders_own.py: GPT-NeoX-Japanese's last-layer dense_bias, "
                              "ModernBERT-decoder's prediction-head dense)")
    layers: tuple[LayerGroup, ...]
    moe: MoE | None = None
    mla: MLA | None = None
    attention_experts: AttentionExperts | None = Field(default=None, description="JetMoE's mixture of attention "
                                                       "heads: E q/o expert pairs, k per token (moa.py)")
    ssm: SSMSpec | None = None
    indexer: SparseIndexer | None = Field(default=None, description="DeepSeek-V3.2 DSA indexer (sparse_attn.py)")
    gemma3n: Gemma3nSpec | None = Field(default=None, description="Gemma 3n KV sharing and extras (kv_sharing.py)")
    per_layer_input: PerLayerInput | None = Field(default=None, description="Gemma 4 per-layer embeddings and "
                                                  "each layer's gate and projection (per_layer_input.py)")
    layer_scalars: bool = Field(default=False, description="Gemma 4: one stored scalar per layer (layer_scalar)")
    mtp_layers: int = Field(default=0, ge=0, description="multi-token-prediction layers, counted apart")
    max_position_embeddings: int | None = None
    quantization: Quantization | None = None
    checkpoint_dtype: str | None = Field(default=None, description="torch_dtype of the unquantized weights")
    towers: tuple[Tower, ...] = Field(default=(), description="a multimodal checkpoint's counted towers (towers.py)")
    base_model: str | None = None
    warnings: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> "ModelSpec":
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}")
        for g in self.layers:
            if g.attn is not None and g.attn.kv_heads is not None and self.num_heads % g.attn.kv_heads:
                raise ValueError(f"layers.attn.kv_heads={g.attn.kv_heads} must divide num_heads={self.num_heads}")
        if any(g.attn is not None for g in self.layers) and (self.mla or self.indexer or self.gemma3n):
            raise ValueError("layers.attn (heads per layer group) is priced for MHA/GQA layers only, not with "
                             "mla, indexer or gemma3n")
        if self.attention_experts is not None and (self.mla or any(g.attn is not None for g in self.layers)
                                                   or self.attention_gate or self.qkv_bias or self.out_bias):
            raise ValueError("attention_experts (JetMoE MoA) is priced for plain bias-free q/k/v/o layers only")
        if any(g.moe for g in self.layers) and self.moe is None:
            raise ValueError("layers marked moe but no moe section (num_experts, top_k, ...)")
        if self.intermediate_size == 0 and any(g.mlp and not g.moe for g in self.layers):
            raise ValueError("intermediate_size=0 but the model has dense MLP layers")
        kinds = {g.ssm_kind for g in self.layers} - {None}
        if kinds and (self.ssm is None or kinds != {self.ssm.kind}):
            raise ValueError(f"layers run {sorted(kinds)} but the ssm section is "
                             f"{None if self.ssm is None else self.ssm.kind!r}")
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
    def num_attention_layers(self) -> int:
        """Layers with softmax attention (the ones with a KV cache)."""
        return sum(g.count for g in self.layers if g.has_attention)

    @property
    def num_ssm_layers(self) -> int:
        """Layers with a recurrent state (Mamba, Mamba-2, Gated DeltaNet)."""
        return sum(g.count for g in self.layers if g.ssm_kind is not None)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def attention_type(self) -> str:
        """MHA, GQA-n, MQA or MLA, plus the windowed-layer share and any state-space layers.

        ``GQA-n`` follows the usual convention: n is the number of KV heads (Llama-3.1-70B, 64 query
        heads sharing 8 KV heads, is GQA-8), not the group size (64/8 = 8 query heads per KV head, which
        coincides here but not in general: Llama-4-Scout's 40 query heads over 8 KV heads are GQA-8, not
        GQA-5). MQA is one KV head, MHA as many KV heads as query heads. ``(12/48 local)``: 12 of 48
        attention layers attend within a sliding window or chunk; ``+ 30 mamba2`` etc.: layers that run
        a state-space mixer instead of (or beside) attention.
        """
        if self.mla is not None:
            kind = "MLA" if self.indexer is None else f"MLA, sparse top-{self.indexer.topk}"
        elif self.num_kv_heads == self.num_heads:
            kind = "MHA"
        elif self.num_kv_heads == 1:
            kind = "MQA"
        else:
            kind = f"GQA-{self.num_kv_heads}"
        n_attn = self.num_attention_layers
        if n_attn == 0:
            kind = "none"
        local = sum(g.count for g in self.layers if g.has_attention and g.attention != "full")
        if local:
            kind += f" ({local}/{n_attn} local)"
        ssm: dict[str, int] = {}
        for g in self.layers:
            if g.ssm_kind is not None:
                ssm[g.ssm_kind] = ssm.get(g.ssm_kind, 0) + g.count
        for k, n in ssm.items():
            kind += f" + {n} {k}"
        return kind
