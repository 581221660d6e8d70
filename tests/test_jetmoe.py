"""JetMoE (model/moa.py, model/jetmoe.py): the mixture of attention heads and its work, by hand.

A tiny config: d = 64, 2 KV heads of kv_channels 16 (an expert's q is 64 -> 32 wide), E = 4 experts,
top 2 (so 4 query heads), MLP experts of 32, vocab 128, 1 layer, tied embeddings.
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.model import count_params, kv_bytes_for_context, load_model
from inferbound.operators import decode_ops

TINY = dict(model_type="jetmoe", num_hidden_layers=1, hidden_size=64, num_key_value_heads=2, kv_channels=16,
            intermediate_size=32, num_local_experts=4, num_experts_per_tok=2, vocab_size=128,
            tie_word_embeddings=True)
PAIR = 64 * 32                      # one expert's q (64 -> 2·16) or o (32 -> 64)
ATTN = 64 * 2 * 32 + 4 * 2 * PAIR + 64 * 4 + 64     # kv_proj, 4 q/o pairs, router, output bias
MLP = 4 * (64 * 2 * 32 + 32 * 64) + 64 * 4 + 64     # 4 gated experts, router, output bias


def test_parameters_by_hand():
    assert ATTN == 20800 and MLP == 24896
    total = ATTN + MLP + 2 * 64 + 128 * 64 + 64       # 2 RMSNorms, tied table, final norm
    p = count_params(load_model(TINY))
    assert p.total == total == 54080
    # a token runs 2 of 4 MLP experts (2·6144 skipped) and 2 of 4 attention q/o pairs (2·2·2048 skipped)
    assert p.active == total - 2 * (64 * 2 * 32 + 32 * 64) - 2 * 2 * PAIR


def test_kv_is_the_shared_kv_heads():
    m = load_model(TINY)
    assert (m.num_heads, m.num_kv_heads, m.head_dim) == (4, 2, 16)   # k·kv query heads over kv heads
    assert kv_bytes_for_context(m, 10, "bf16") == 10 * 2 * 2 * 16 * 2


def test_attention_experts_priced_at_k_run_and_touched_read():
    ops = decode_ops(load_model(TINY), Dtypes(), Parallelism(), 10, 100)
    qkv = next(o for o in ops if o.name == "attn_qkv")
    out = next(o for o in ops if o.name == "attn_out")
    touched = 4 * (1 - (1 - 2 / 4) ** 10)            # attention experts 10 tokens hit
    run = 2 * PAIR + 64 * 2 * 32 + 64 * 4 + 64       # 2 experts' q, kv_proj, router, bias: 8512
    assert float(np.sum(qkv.flops)) == 2 * 10 * run
    assert float(np.sum(qkv.weight_bytes)) == pytest.approx((run + (touched - 2) * PAIR) * 2)
    assert float(np.sum(out.flops)) == 2 * 10 * 2 * PAIR
    assert float(np.sum(out.weight_bytes)) == pytest.approx(touched * PAIR * 2)
