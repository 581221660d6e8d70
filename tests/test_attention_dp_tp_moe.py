"""SGLang's DP attention beside TP-sharded MoE (``--enable-dp-attention``, ep 1): memory and collectives.

SGLang (python/sglang/srt/layers/communicator.py ``LayerScatterModes._compute_mlp_mode`` and
``sparse_mlp_scatter_mode``: without an all-to-all backend the MLP, dense or MoE, runs in FULL mode;
dp_attention.py ``dp_gather_partial`` / ``dp_reduce_scatter_tensor``): each DP rank runs attention over
its own sequences with the full MLA weights (tp 8, dp 8: one GPU per attention group), then the
hidden states of all 8 ranks are all-gathered, the MLP runs TP-sharded over the 8 GPUs, and a
reduce-scatter returns each rank its tokens. In inferbound terms: Parallelism(tp=1, dp=8, ep=1,
attention_dp=True).

DeepSeek-V3 (config.json): d = 7168, 61 layers (3 dense, 58 MoE), heads 128, q_lora 1536, kv_lora 512,
qk_nope 128, qk_rope 64, v_head 128, dense ff 18432, 256 routed experts + 1 shared of ff 2048, top-8,
vocab 129280. Hand counts of parameters per layer:

    attention A = 7168·1536 (q_a) + 1536 (q_a norm) + 1536·128·192 (q_b) + 7168·576 (kv_a)
                  + 512 (kv_a norm) + 512·128·256 (kv_b) + 128·128·7168 (o)     = 187,107,328
    dense MLP   = 3·7168·18432                                                   = 396,361,728
    one expert  = 3·7168·2048                                                    =  44,040,192
    router      = 7168·256 + 256 (e_score_correction_bias)                       =   1,835,264
    norms       = 2·7168 per layer; embedding = LM head = 129280·7168            = 926,679,040
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.deploy.layout import check_layout
from inferbound.deploy.memory_terms import kv_bytes_per_gpu, weight_bytes_per_gpu
from inferbound.hardware import load_catalog
from inferbound.model import load_model
from inferbound.operators import decode_ops
from inferbound.validation.dataset import read_csv
from inferbound.validation.predict import predict_rows

D = 7168
A = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
DENSE = 3 * 7168 * 18432
EXPERT = 3 * 7168 * 2048
ROUTER = 7168 * 256 + 256
EMBED = 129280 * 7168
SGLANG_DP8 = Parallelism(tp=1, dp=8, ep=1, attention_dp=True)   # --tp 8 --dp 8 --enable-dp-attention
FP8 = Dtypes(weight="fp8", act="bf16", weight_bits=8.0)         # 1 B per quantized weight, 2 B otherwise


@pytest.fixture(scope="module")
def v3():
    return load_model("deepseek-v3")


def test_hand_counts_hold():
    assert A == 187_107_328 and DENSE == 396_361_728 and EXPERT == 44_040_192 and EMBED == 926_679_040


def test_the_layout_is_allowed_for_moe_and_refused_for_dense(v3):
    gpu = load_catalog()["h200_sxm"]
    assert SGLANG_DP8.moe_group == 8 and SGLANG_DP8.expert_tp == 8 and SGLANG_DP8.mlp_shard == 8
    assert SGLANG_DP8.dp_gathered_mlp and SGLANG_DP8.replicas == 1 and SGLANG_DP8.attention_groups == 8
    # with EP the old rule holds: dense MLP and shared experts over the attention tp only
    assert not Parallelism(tp=1, dp=8, ep=8, attention_dp=True).dp_gathered_mlp
    assert Parallelism(tp=1, dp=8, ep=8, attention_dp=True).mlp_shard == 1
    check_layout(v3, gpu, SGLANG_DP8)
    with pytest.raises(ValueError, match="attention_dp needs a mixture-of-experts model"):
        check_layout(load_model("llama-3.1-8b"), gpu, Parallelism(tp=1, dp=8, attention_dp=True))


def test_weights_per_gpu_by_hand(v3):
    """Attention, router, norms and embedding whole on each GPU (attention tp 1); the 3 dense MLPs, the
    58 layers' 256 routed experts, their shared expert and the LM head (SGLang's ParallelLMHead over
    the whole TP group without --enable-dp-lm-head) split 8 ways."""
    expected = (61 * A * 1                      # attention, fp8, replicated on every DP rank
                + 3 * DENSE * 1 / 8             # dense MLP, TP over the 8 ranks
                + 58 * 256 * EXPERT * 1 / 8     # routed experts, TP-sharded over 8
                + 58 * EXPERT * 1 / 8           # shared expert, TP-sharded over 8
                + 58 * ROUTER * 2               # router, bf16, replicated
                + 61 * 2 * D * 2 + D * 2        # layer norms and the final norm, bf16
                + EMBED * 2 + EMBED * 2 / 8)    # embedding (attention tp 1) and LM head (/8), bf16
    assert weight_bytes_per_gpu(v3, FP8, SGLANG_DP8) == pytest.approx(expected, rel=1e-12)
    # 11.41 + 0.15 + 81.74 + 0.32 + 0.21 + 0.00 + 1.85 + 0.23 ≈ 95.92 GB (1e9 bytes) of weights per GPU
    assert expected / 1e9 == pytest.approx(95.92, abs=0.01)


def test_kv_per_gpu_holds_only_its_own_sequences(v3):
    """Batch 64 over 8 DP ranks: 8 sequences per GPU, each 2048 tokens of the MLA latent (512 + 64)
    in bf16 over 61 layers (the latent is not split: one GPU per attention group)."""
    per_seq = (512 + 64) * 2 * 61 * 2048
    assert float(kv_bytes_per_gpu(v3, FP8, SGLANG_DP8, 64, 2048)) == pytest.approx(64 / 8 * per_seq, rel=1e-12)


@pytest.mark.parametrize("b", [1, 32])
def test_decode_collectives_by_hand(v3, b):
    """A decode step with b sequences on each of the 8 ranks (the replica's batch 8b): before
    each MLP an all-gather whose output is 8·b·d·2 bytes (bf16 hidden states) on every rank, after it
    a reduce-scatter of the same 8·b·d·2-byte tensor; 3 dense + 58 MoE layers; for the LM head an
    all-gather of the 8·b rows' hidden states (8·b·d·2 bytes) and of their fp32 logits (8·b·129280·4
    bytes); nothing else (no TP all-reduce with attention tp 1, no all-to-all without EP)."""
    ops = decode_ops(v3, FP8, SGLANG_DP8, 8 * b, 1000)
    comm = {o.name: o for o in ops if o.kind == "collective"}
    size = 8 * b * D * 2
    assert set(comm) == {"mlp_dp_all_gather", "mlp_dp_reduce_scatter", "moe_dp_all_gather", "moe_dp_reduce_scatter",
                         "logits_dp_all_gather", "logits_all_gather"}
    assert float(comm["logits_dp_all_gather"].comm["bytes"]) == size and comm["logits_dp_all_gather"].count == 1
    assert float(comm["logits_all_gather"].comm["bytes"]) == 8 * b * 129280 * 4
    assert comm["logits_all_gather"].comm["size"] == 8
    for name, kind, count in [("mlp_dp_all_gather", "all_gather", 3), ("mlp_dp_reduce_scatter", "reduce_scatter", 3),
                              ("moe_dp_all_gather", "all_gather", 58), ("moe_dp_reduce_scatter", "reduce_scatter", 58)]:
        o = comm[name]
        assert o.count == count and o.comm["kind"] == kind and o.comm["size"] == 8
        assert float(o.comm["bytes"]) == size
    # bytes moved per step per GPU, by the ring convention (n-1)/n·S for each: 61 layers x 2 collectives
    moved = sum(o.count * (8 - 1) / 8 * float(o.comm["bytes"]) for o in comm.values()
                if not o.name.startswith("logits"))
    assert moved == pytest.approx(61 * 2 * 7 / 8 * 8 * b * 7168 * 2)


def test_gathered_mlp_work_by_hand(v3):
    """The MLPs run on every rank's tokens (8·b), sharded 8 ways; attention projections on b tokens."""
    b = 4
    ops = {o.name: o for o in decode_ops(v3, FP8, SGLANG_DP8, 8 * b, 1000)}
    assert float(ops["mlp"].flops) == pytest.approx(2 * 8 * b * DENSE / 8)
    assert float(ops["shared_experts"].flops) == pytest.approx(2 * 8 * b * EXPERT / 8)
    assert float(ops["router"].flops) == pytest.approx(2 * 8 * b * ROUTER)
    assert float(ops["experts"].flops) == pytest.approx(2 * 8 * b * 8 * EXPERT / 8)
    o_params = 128 * 128 * 7168
    assert float(ops["attn_out"].flops) == pytest.approx(2 * b * o_params)
    assert float(ops["lm_head"].flops) == pytest.approx(2 * 8 * b * D * 129280 / 8)
    assert float(ops["lm_head"].weight_bytes) == pytest.approx(D * 129280 / 8 * 2)


def test_public_rows_with_dp_attention_and_no_ep_are_predicted():
    """One DeepSeek-V3 8xH200 SGLang row of the public CSV with attention_dp on and ep blank (of the 76
    such rows, refused before as 'attention_dp=True needs ep > 1') now gets a prediction."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "measured_public.csv"
    with path.open() as f:
        raw = [r for r in csv.DictReader(f) if r["attention_dp"] == "on" and not r["ep"]]
    assert len(raw) == 76
    rows = [r for r in read_csv(path)[0] if r.attention_dp and r.ep is None and r.model == "deepseek-ai/DeepSeek-V3"
            and r.metric == "tpot_ms_p50"][:1]
    (p,) = predict_rows(rows)
    assert p.covered, p.reason
    assert p.predicted > 0
