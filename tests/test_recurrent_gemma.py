"""RecurrentGemma (model/griffin.py, Griffin's RG-LRU in model/ssm.py): parameters, state and the scan by hand.

A tiny config: d = 64, 4 heads (head_dim 16) over 1 KV head, 3 layers (recurrent, recurrent, attention),
lru_width 64 (4 diagonal gate blocks of 16), conv1d_width 4, intermediate_size 128 (MLP 64 wide), vocab
128, a 16-token window, tied embeddings.
"""
from __future__ import annotations

import numpy as np

from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.model import count_params, kv_bytes_for_context, load_model, state_bytes_per_sequence
from inferbound.operators import decode_ops

TINY = dict(model_type="recurrent_gemma", num_hidden_layers=3, hidden_size=64, num_attention_heads=4,
            num_key_value_heads=1, lru_width=64, conv1d_width=4, intermediate_size=128, vocab_size=128,
            attention_window_size=16, block_types=["recurrent", "recurrent", "attention"])

# recurrent block: linear_y, linear_x 64·64 + 64 each, conv_1d 64·4 + 64, RG-LRU recurrent_param 64 and two
# block-diagonal gates 4·16·16 + 64 each, linear_out 64·64 + 64
MIXER = 2 * (64 * 64 + 64) + (64 * 4 + 64) + 64 + 2 * (4 * 16 * 16 + 64) + (64 * 64 + 64)
MLP = 3 * (64 * 64 + 64)            # gate, up (64 -> 128 // 2), down, all with biases
ATTN = 64 * 64 + 2 * 64 * 16 + 64 * 64 + 64   # q, k, v (1 KV head of 16), o with its bias
NORMS = 2 * 64


def test_parameters_by_hand():
    total = 2 * (MIXER + MLP + NORMS) + (ATTN + MLP + NORMS) + 128 * 64 + 64   # tied table, final norm
    assert MIXER == 15040 and total == 86464
    assert count_params(load_model(TINY)).total == total


def test_state_and_kv_per_sequence():
    m = load_model(TINY)
    # per recurrent layer: 3 conv columns of 64 channels (bf16) + the 64-value recurrence (fp32)
    assert state_bytes_per_sequence(m, "bf16") == 2 * (3 * 64 * 2 + 64 * 4)
    # the attention layer keeps its 16-token window: 16 tokens x (k + v) x 1 head x 16 x 2 bytes
    assert kv_bytes_for_context(m, 100, "bf16") == 16 * 2 * 16 * 2
    assert m.attention_type == "MQA (1/1 local) + 2 rglru"


def test_the_scan_is_priced_per_step():
    m = load_model(TINY)
    ops = [o for o in decode_ops(m, Dtypes(), Parallelism(), 10, 100) if o.name == "ssm_scan"]
    assert sum(o.count for o in ops) == 2
    flops = sum(float(np.sum(o.flops)) * o.count for o in ops)
    state = sum(float(np.sum(o.kv_bytes)) * o.count for o in ops)
    act = sum(float(np.sum(o.act_bytes)) * o.count for o in ops)
    # 10 tokens x (conv 2·4·64 + RG-LRU 14·64) per layer
    assert flops == 2 * 10 * (2 * 4 * 64 + 14 * 64)
    # each sequence's state read and written: 2 x (3·64·2 + 64·4) bytes per layer
    assert state == 2 * 10 * 2 * (3 * 64 * 2 + 64 * 4)
    # x, two gates, y in and the output: 5·64 bf16 values per token
    assert act == 2 * 10 * 5 * 64 * 2
