"""Expert parallelism with redundant experts (EPLB, deploy/eplb.py): the layout rule (E + N)/ep, the memory of
the redundant copies, the MoE load imbalance with and without EPLB, and the CLI's one-line errors.

Hand figures from the models' config.json files (src/inferbound/data/models/):
- DeepSeek-V3: n_routed_experts 256. SGLang runs it at EP72 with --ep-num-redundant-experts 32 (LMSYS blog
  2025-05-05): 256 + 32 = 288 = 72 x 4 experts per GPU; 256/72 = 3.56 cannot be laid out.
- Mixtral-8x7B: num_local_experts 8, hidden_size 4096, intermediate_size 14336, 32 layers, bf16 (2 bytes):
  one expert of one layer is 3 x 4096 x 14336 = 176,160,768 parameters (w1, w2, w3).
"""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound import make_deployment
from inferbound.cli import app
from inferbound.deploy.config import Parallelism
from inferbound.deploy.eplb import experts_per_gpu, moe_imbalance, smallest_redundant
from inferbound.operators import body_ops

DSV3 = dict(model="deepseek-v3", gpu="h100_sxm", tp=1, attention_dp=True)


def test_experts_per_gpu_by_hand():
    assert experts_per_gpu(256, 32, 72) == 4.0  # 288 / 72
    assert experts_per_gpu(256, 0, 32) == 8.0  # 256 / 32
    assert experts_per_gpu(8, 4, 6) == 2.0  # 12 / 6
    assert smallest_redundant(256, 72) == 32  # 256 + 32 = 288 = 4 * 72 (256 + 31 = 287 is not)
    assert smallest_redundant(256, 48) == 32  # 288 = 6 * 48
    assert smallest_redundant(256, 64) == 0


def test_ep72_needs_redundant_experts_and_says_how_many():
    with pytest.raises(ValueError) as e:
        make_deployment(dp=72, ep=72, nodes=9, **DSV3)
    msg = str(e.value)
    assert "\n" not in msg
    for word in ("ep=72", "256+0=256", "redundant_experts=32"):
        assert word in msg, msg
    with pytest.raises(ValueError, match=r"256\+31=287"):
        make_deployment(dp=72, ep=72, nodes=9, redundant_experts=31, **DSV3)
    dep = make_deployment(dp=72, ep=72, nodes=9, redundant_experts=32, **DSV3)
    assert dep.par.redundant_experts == 32 and "+32 redundant experts" in dep.label()


def test_redundant_experts_need_ep_and_a_moe_model():
    with pytest.raises(ValueError, match="needs expert parallelism"):
        make_deployment(model="mixtral-8x7b-v0.1", tp=2, redundant_experts=2)
    with pytest.raises(ValueError, match="dense"):
        make_deployment(model="llama-3.1-8b", redundant_experts=2)
    with pytest.raises(ValueError):
        Parallelism(redundant_experts=-1)


def test_memory_counts_the_redundant_copies():
    """Mixtral over 4 GPUs (attention DP, EP4): 8/4 = 2 experts per GPU; with 4 redundant copies 12/4 = 3.
    One more expert per layer on every GPU: 32 layers x 176,160,768 parameters x 2 bytes = 11,274,289,152 B."""
    kw = dict(model="mixtral-8x7b-v0.1", gpu="h200_sxm", tp=1, dp=4, ep=4, attention_dp=True, weight_dtype="bf16",
              act_dtype="bf16")
    plain = make_deployment(**kw)
    eplb = make_deployment(redundant_experts=4, **kw)
    extra = 32 * (3 * 4096 * 14336) * 2
    assert extra == 11_274_289_152
    assert eplb.weight_bytes_per_gpu - plain.weight_bytes_per_gpu == pytest.approx(extra, rel=1e-12)
    # the KV room shrinks by the same bytes (the engine's fraction of HBM less the weights)
    assert plain.kv_capacity_bytes - eplb.kv_capacity_bytes == pytest.approx(extra, rel=1e-6)


def test_imbalance_with_and_without_eplb():
    """1 without EP; the GPU's moe_imbalance (data/efficiency.yaml, 1.2) without redundant experts; EPLB's
    residual 1.18 (data/disagg.yaml: LMSYS blog, 59,337 / 50,302 tok/s per node at EP32) with them."""
    assert moe_imbalance(Parallelism(tp=8), 1.2) == 1.0
    assert moe_imbalance(Parallelism(tp=1, dp=8, ep=8, attention_dp=True), 1.2) == 1.2
    assert moe_imbalance(Parallelism(tp=1, dp=8, ep=8, attention_dp=True, redundant_experts=8), 1.2) == 1.18
    assert 59337 / 50302 == pytest.approx(1.18, abs=0.001)
    # EPLB never places worse than the trivial placement: a GPU fitted at 1.05 keeps 1.05
    assert moe_imbalance(Parallelism(tp=1, dp=8, ep=8, attention_dp=True, redundant_experts=8), 1.05) == 1.05


def test_expert_gemm_flops_carry_the_imbalance():
    """The busiest GPU's expert FLOPs: 2·T_moe·k·P_e/group·imbalance. Mixtral EP4 attention-DP4, 256 new tokens
    in the replica's step (64 per attention group): the MoE layer sees T_moe = 256, k = 2, P_e = 176,160,768, group 4: 2·256·2·176,160,768/4 = 45,097,156,608 FLOPs
    per layer at balance; x 1.2 (the GPU's figure) without EPLB, x 1.18 with 4 redundant experts."""
    kw = dict(model="mixtral-8x7b-v0.1", gpu="h200_sxm", tp=1, dp=4, ep=4, attention_dp=True, weight_dtype="bf16",
              act_dtype="bf16")
    balanced = 2 * 256 * 2 * (3 * 4096 * 14336) / 4
    assert balanced == 45_097_156_608
    for n, imb in ((0, 1.2), (4, 1.18)):
        dep = make_deployment(redundant_experts=n, **kw)
        assert dep.gpu.efficiency.moe_imbalance == 1.2
        ops = body_ops(dep.model, dep.dtypes, dep.par, 256.0, list(dep.model.layers), True, True,
                       dep.gpu.efficiency.moe_imbalance)
        experts = next(o for o in ops if o.name == "experts")
        assert experts.flops == pytest.approx(balanced * imb, rel=1e-12)
        assert experts.shape["moe"]["experts"] == 8 + n  # the pricer's slots: E + N physical experts


def test_cli_refuses_ep72_without_redundant_experts():
    r = CliRunner().invoke(app, ["memory", "deepseek-v3", "--tp", "1", "--dp", "72", "--ep", "72", "--attention-dp",
                                 "--nodes", "9"])
    assert_one_line_error(r, "ep=72", "redundant_experts=32")
    r = CliRunner().invoke(app, ["memory", "deepseek-v3", "--tp", "1", "--dp", "72", "--ep", "72", "--attention-dp",
                                 "--nodes", "9", "--redundant-experts", "32", "--json"])
    assert r.exit_code == 0, r.output
