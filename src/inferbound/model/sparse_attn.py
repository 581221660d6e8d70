"""DeepSeek Sparse Attention (DSA, DeepSeek-V3.2): the lightning indexer, its key cache and its top-k.

Every MLA layer of DeepSeek-V3.2 carries an indexer (DeepSeek-V3.2-Exp report, sec. 2.1; reference
code deepseek-ai/DeepSeek-V3.2-Exp ``inference/model.py`` class ``Indexer``; transformers 5.24
``models/deepseek_v32/modeling_deepseek_v32.py`` ``DeepseekV32Indexer``). With H_i = ``index_n_heads``
indexer heads of width D_i = ``index_head_dim``, q_lora rank r_q and hidden d:

**Parameters** per layer: ``wq_b`` r_q×H_i·D_i (it reads the MLA query latent) + ``wk`` d×D_i +
``k_norm`` LayerNorm 2·D_i + ``weights_proj`` d×H_i, no biases.

**Cache** per token and layer: one indexer key of D_i values beside the MLA latent. The reference
implementation keeps it in fp8 with one fp32 scale per 128 values (data/sparse_attention.yaml), so
D_i·1 + (D_i/128)·4 bytes (132 at D_i = 128), at any KV dtype; transformers keeps it at the model dtype
(``DynamicIndexedLayer.indexer_keys``, D_i values per token).

**Work** per new token that sees t tokens: the indexer scores every one of them, I(t) = Σ_h w_h·ReLU(q_h·k)
(2·H_i·D_i FLOPs for the q·k products and 2·H_i for the weighted head sum, per query-key pair, at fp8),
reading t indexer keys; MLA then attends only to the top k = ``index_topk`` of them, so its pairs are
min(t, k) and it reads min(t, k) latents: attention FLOPs and KV reads stop growing past k tokens, the
indexer's do not (it is O(L) per token with a small constant). The top-k selection itself (a partial sort
over t scores) is O(t) comparisons and left out.
"""
# (no `from __future__ import annotations`: pydantic then reads these annotations as objects)

from pydantic import BaseModel, ConfigDict, Field

from ..base.datafiles import data_yaml
from .fields import sized
from .validate import Reader


class SparseIndexer(BaseModel):
    """The DSA lightning indexer of every attention layer: H_i heads of width D_i, top-k tokens kept."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    topk: int = Field(ge=1)


def indexer_params(ix: SparseIndexer, d: int, q_lora_rank: int) -> int:
    """One layer's indexer: wq_b r_q·H_i·D_i + wk d·D_i + k_norm 2·D_i + weights_proj d·H_i."""
    return q_lora_rank * ix.n_heads * ix.head_dim + d * ix.head_dim + 2 * ix.head_dim + d * ix.n_heads


def indexer_cache_bytes_per_token(ix: SparseIndexer) -> float:
    """Bytes of indexer key cache per token and layer: D_i fp8 values + one fp32 scale per 128 values
    (data/sparse_attention.yaml, from the reference implementation's k_cache / k_scale_cache)."""
    fmt = data_yaml("sparse_attention.yaml")["indexer_cache"]
    blocks = -(-ix.head_dim // int(fmt["scale_block"]))
    return float(ix.head_dim * fmt["value_bytes"] + blocks * fmt["scale_bytes"])


def indexer_score_dtype() -> str:
    """The dtype the indexer's q·k scores run at (fp8_index: data/sparse_attention.yaml)."""
    return str(data_yaml("sparse_attention.yaml")["indexer_score_dtype"])


def indexer_flops_per_pair(ix: SparseIndexer) -> int:
    """FLOPs per (query, visible key) pair: H_i q·k dot products (2·D_i each) and the weighted sum over
    heads (2 per head)."""
    return 2 * ix.n_heads * ix.head_dim + 2 * ix.n_heads


def indexer_spec(r: Reader, fam: str, defaults: dict, size_defaults: dict, q_lora_rank: int | None) -> SparseIndexer:
    """``index_n_heads``, ``index_head_dim``, ``index_topk`` of a DeepSeek-V3.2 config (class defaults
    64, 128, 2048 with a warning when absent). The indexer reads the query latent, so q_lora_rank is needed."""
    if q_lora_rank is None:
        raise r.error("q_lora_rank", None, "is null but the DSA indexer's wq_b reads the query latent",
                      "a positive integer (DeepSeek-V3.2: 1536)")
    return SparseIndexer(n_heads=sized(r, fam, defaults, size_defaults, "index_n_heads", kind="heads"),
                         head_dim=sized(r, fam, defaults, size_defaults, "index_head_dim"),
                         topk=sized(r, fam, defaults, size_defaults, "index_topk", kind="tokens"))
