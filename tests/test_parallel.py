"""Parallel layouts: TP sharding and collectives, PP stages and bubble, EP all-to-all and imbalance,
attention DP, DP replicas, topology effects, layout errors and the CLI options.

Expected values are hand computations written out in the tests, with catalog numbers as literals.
Collectives inside one NVLink island or PCIe machine of a GPU with measured curves follow the curve
formula of kernels/comm.py, worked out in each test from the literal parameters of data/kernels.yaml:
with s = S·f, f = 2(n-1)/n (all-reduce) or (n-1)/n (all-gather, all-to-all),

    t = min((√(k·alpha) + √(s/busbw))²,  k·alpha_b + s/busbw_b)

k = log2(n)/log2(n0) when the curve was measured on n0 ≠ n GPUs (1 otherwise). Groups across machines
and GPUs with the curves switched off follow the alpha-beta formulas of comm.py (a per step, b = link
bandwidth x efficiency): ring all-reduce 2(n-1)a + 2(n-1)/n S/b, tree 2·ceil(log2 n)·a + 2S/b, one-shot
a + (n-1)S/b, two-shot 2a + 2(n-1)/n S/b, NVLS 2a + S/b; all-gather (n-1)a + (n-1)/n S/b.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from inferbound.step import contract as step
from inferbound.step import contract as pipeline
from inferbound.cli import app
from inferbound.pricing.collectives import comm_pricer
from inferbound.deploy.config import Dtypes, Parallelism
from inferbound.deploy.deployment import make_deployment
from inferbound.workloads.static import estimate
from inferbound.deploy.memory import kv_bytes_per_gpu, memory_report, weight_bytes_per_gpu
from inferbound.model import load_model
from inferbound.model.params import count_params
from inferbound.operators import decode_ops, forward_ops
from inferbound.pricing.roofline import price_step
from inferbound.validation.dataset import Row
from inferbound.validation.predict import deployment_for, predict_static

# ----------------------------------------------------------------- catalog numbers used below
# h100_sxm NVLink 4: 450 GB/s per direction x collective efficiency 0.65 (efficiency.yaml), 5 us/step:
#   b = 292.5e9 B/s
# l40s PCIe Gen4 x16: 32 GB/s per direction x links.yaml pcie efficiency 0.7, 10 us/step: b = 22.4e9 B/s
# network (links.yaml): 400 Gb/s NIC = 50e9 B/s x 0.85 = 42.5e9 B/s, 8 us/step

# Llama-3.1-70B: hidden 8192, 80 layers, 64 heads, 8 KV heads, head_dim 128, MLP 28672, vocab 128256
L70_ATTN = 8192 * 8192 + 2 * 8192 * 1024 + 8192 * 8192   # q, k+v (8 kv heads x 128), o = 150,994,944
L70_MLP = 3 * 8192 * 28672                                 # gate, up, down = 704,643,072
L70_EMB = 128256 * 8192                                    # embedding; LM head the same size (untied)
L70_NORMS = (2 * 80 + 1) * 8192                            # 2 RMSNorms per layer + final
L70_TOTAL = 80 * (L70_ATTN + L70_MLP) + 2 * L70_EMB + L70_NORMS


def priced(cost, name):
    found = [p for p in cost.ops if p.op.name == name]
    assert found, f"no operator {name}"
    return found


# ================================================================= tensor parallel


def test_tp_step_costs_more_communication_on_pcie_l40s_than_nvlink_h100():
    """Decode of llama-3.1-70b, batch 32, TP4, fp8 weights and activations on both GPUs.

    Per step: 80 layers x 2 all-reduces + the embedding all-reduce = 161 all-reduces of
    32 tokens x 8192 x 2 B (collectives move 16-bit values) = 524,288 B, and one all-gather of the
    fp32 logits, 32 x 128256 x 4 B = 16,416,768 B. The default engine (vLLM) runs its custom all-reduce
    below 8 MiB on NVLink (h100: the vllm curve, n = 4), NCCL otherwise. On PCIe (l40s) a group of n > 2
    runs at the measured pair's bus bandwidth with alpha x log2(4) (collectives.py: the measured 8-GPU box's
    n = 4 and 8 collapse is its host-bridge topology, not the link's).
    """
    # S = 32 x 8192 x 2 = 524,288 B per all-reduce, 32 x 128256 x 4 = 16,416,768 B for the logits all-gather
    comm = {}
    for g in ("h100_sxm", "l40s"):
        e = estimate(model="llama-3.1-70b", gpu=g, tp=4, weight_dtype="fp8", act_dtype="fp8",
                     batch=32, input_len=1024, output_len=128)
        assert e.compute_dtype == "fp8"
        comm[g] = e.decode.split["communication"]
    # h100_sxm vllm all-reduce, n = 4 (alpha 3.88673e-6 s, busbw 400.992e9, alpha_b 2.19098e-5 s, busbw_b 191.596e9);
    # s = 524,288·2·3/4 = 786,432 B:
    #   (√3.88673e-6 + √(786,432/400.992e9))² = 11.3698 us  <  21.9098e-6 + 786,432/191.596e9 = 26.0144 us
    ar_h100 = 1.136980014003e-05
    # h100_sxm nccl all-gather, n = 4 (alpha 6.77032e-6, busbw 390.533e9, alpha_b 4.29998e-5, busbw_b 170.631e9);
    # s = 16,416,768·3/4 = 12,312,576 B:
    #   (√6.77032e-6 + √(12,312,576/390.533e9))² = 67.5179 us  <  42.9998e-6 + 12,312,576/170.631e9 = 115.1589 us
    ag_h100 = 6.751793829319e-05
    # l40s nccl curves measured on n0 = 2, so alpha x log2(4)/log2(2) = 2 alpha;
    # all-reduce (alpha 4.59347e-6, busbw 22.9319e9, alpha_b 2.17318e-5, busbw_b 12.4177e9), s = 786,432 B:
    #   (√(2·4.59347e-6) + √(786,432/22.9319e9))² = 78.9810 us  <  2·21.7318e-6 + 786,432/12.4177e9 = 106.7951 us
    ar_l40s = 7.898098442786e-05
    # all-gather (alpha 4.67986e-6, busbw 22.8255e9, alpha_b 2.5148e-5, busbw_b 11.9801e9), s = 12,312,576 B:
    #   (√(2·4.67986e-6) + √(12,312,576/22.8255e9))² = 690.8920 us  <  2·25.148e-6 + 12,312,576/11.9801e9 = 1078.0484 us
    ag_l40s = 6.908920412087e-04
    h100 = 161 * ar_h100 + ag_h100         # = 1.898056 ms
    l40s = 161 * ar_l40s + ag_l40s         # = 13.406831 ms
    assert comm["h100_sxm"] == pytest.approx(h100, rel=1e-9)
    assert comm["l40s"] == pytest.approx(l40s, rel=1e-9)
    assert comm["l40s"] > 5 * comm["h100_sxm"]


def test_tp_alpha_beta_model_without_curves_picks_the_fabric_algorithms():
    """The same decode with the kernel curves off: the alpha-beta model of comm.py on the catalog links.
    h100: one NVLink island with NVSwitch -> every algorithm; 1-shot wins at 512 KB (5 us + 3 S/b);
    l40s: PCIe only -> ring or tree; tree wins (40 us + 46.8 us < 60 us + 35.1 us)."""
    # S = 524,288 B per all-reduce, 16,416,768 B for the all-gather (as above)
    off = {"efficiency.kernel_curves": False}
    comm = {g: estimate(model="llama-3.1-70b", gpu=g, tp=4, weight_dtype="fp8", act_dtype="fp8", gpu_overrides=off,
                        batch=32, input_len=1024, output_len=128).decode.split["communication"]
            for g in ("h100_sxm", "l40s")}
    # h100, n = 4, S = 524,288 B, a = 5 us, b = 292.5e9 B/s:
    #   one-shot 5e-6 + 3·524,288/292.5e9 = 5 + 5.37731 = 10.37731 us   (the fastest)
    #   NVLS 10e-6 + 524,288/292.5e9 = 11.79244 us; two-shot 10e-6 + 1.5·524,288/292.5e9 = 12.68866 us;
    #   tree 20e-6 + 2·524,288/292.5e9 = 23.58487 us; ring 30e-6 + 1.5·524,288/292.5e9 = 32.68866 us
    ar_h100 = 1.037731282051e-05
    # all-gather of 16,416,768 B: 3·5e-6 + 3/4·16,416,768/292.5e9 = 15 + 42.09428 = 57.09428 us
    ag_h100 = 5.709427692308e-05
    # l40s, n = 4, a = 10 us, b = 22.4e9 B/s: tree 4·1e-5 + 2·524,288/22.4e9 = 40 + 46.81143 = 86.81143 us
    #   < ring 6·1e-5 + 1.5·524,288/22.4e9 = 60 + 35.10857 = 95.10857 us
    ar_l40s = 8.681142857143e-05
    # all-gather: 3·1e-5 + 3/4·16,416,768/22.4e9 = 30 + 549.66857 = 579.66857 us
    ag_l40s = 5.796685714286e-04
    h100 = 161 * ar_h100 + ag_h100         # = 1.727842 ms
    l40s = 161 * ar_l40s + ag_l40s         # = 14.556309 ms
    assert comm["h100_sxm"] == pytest.approx(h100, rel=1e-9)
    assert comm["l40s"] == pytest.approx(l40s, rel=1e-9)


def test_weights_per_gpu_fall_as_one_over_tp():
    m = load_model("llama-3.1-70b")
    p = count_params(m)
    assert p.total == L70_TOTAL == 70_553_706_496
    assert p.norms == L70_NORMS
    for tp in (1, 2, 4, 8):
        expect = (L70_TOTAL - L70_NORMS) * 2 / tp + L70_NORMS * 2   # bf16; norms replicated
        assert weight_bytes_per_gpu(m, Dtypes(), Parallelism(tp=tp)) == pytest.approx(expect, rel=1e-12)
        e = estimate(model="llama-3.1-70b", gpu="h100_sxm", tp=tp, batch=1, input_len=128, output_len=2)
        assert e.memory.weights == pytest.approx(expect, rel=1e-12)


def test_kv_per_gpu_sharded_then_replicated_beyond_kv_heads():
    """llama-3.1-8b: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 131,072 B per token."""
    per_token = 32 * 2 * 8 * 128 * 2
    batch, ctx = 4, 2048
    kv = {tp: estimate(model="llama-3.1-8b", gpu="h100_sxm", tp=tp, batch=batch, input_len=2000,
                       output_len=48).memory.kv_cache for tp in (1, 2, 8)}
    for tp in (1, 2, 8):
        assert kv[tp] == pytest.approx(batch * ctx * per_token / tp, rel=1e-12)
    # 4 KV heads: TP8 splits them 4 ways and replicates each on 2 GPUs -> same KV per GPU as TP4
    four = {"num_key_value_heads": 4}
    per_token4 = 32 * 2 * 4 * 128 * 2
    kv4 = {tp: estimate(model="llama-3.1-8b", gpu="h100_sxm", tp=tp, model_overrides=four, batch=batch,
                        input_len=2000, output_len=48).memory.kv_cache for tp in (4, 8)}
    assert kv4[4] == pytest.approx(batch * ctx * per_token4 / 4, rel=1e-12)
    assert kv4[8] == pytest.approx(kv4[4], rel=1e-12)
    # the decode attention reads the same replicated shard: kv bytes per GPU equal at TP4 and TP8
    m4 = load_model("llama-3.1-8b", four)
    reads = {tp: sum(float(o.kv_bytes) * o.count for o in decode_ops(m4, Dtypes(), Parallelism(tp=tp), 4, 1000)
                     if o.name == "attention") for tp in (4, 8)}
    assert reads[4] == pytest.approx(32 * 4 * 1001 * (2 * 1 * 128) * 2, rel=1e-12)  # 1 KV head per GPU
    assert reads[8] == pytest.approx(reads[4], rel=1e-12)


def test_tp_decode_has_two_all_reduces_per_layer():
    m = load_model("llama-3.1-8b")
    ops = decode_ops(m, Dtypes(), Parallelism(tp=2), 8, 1000)
    coll = [o for o in ops if o.kind == "collective"]
    ar_layers = sum(o.count for o in coll if o.comm["kind"] == "all_reduce" and o.name != "embedding_all_reduce")
    assert ar_layers == 2 * 32
    assert {o.name: o.count for o in coll} == {"embedding_all_reduce": 1, "attn_all_reduce": 32,
                                               "mlp_all_reduce": 32, "logits_all_gather": 1}
    for o in coll:
        if o.comm["kind"] == "all_reduce":
            assert float(o.comm["bytes"]) == 8 * 4096 * 2   # 8 tokens x hidden x bf16
            assert (o.comm["group"], o.comm["size"]) == ("tp", 2)
    ag = next(o for o in coll if o.name == "logits_all_gather")
    assert float(ag.comm["bytes"]) == 8 * 128256 * 4       # fp32 logits of 8 sequences
    # no collectives without TP
    assert not [o for o in decode_ops(m, Dtypes(), Parallelism(), 8, 1000) if o.kind == "collective"]


def test_sequence_parallel_replaces_all_reduce_by_rs_ag():
    m = load_model("llama-3.1-8b")
    ops = decode_ops(m, Dtypes(), Parallelism(tp=2, sequence_parallel=True), 8, 1000)
    counts = {}
    for o in ops:
        if o.kind == "collective":
            counts[o.comm["kind"]] = counts.get(o.comm["kind"], 0) + o.count
    # per layer: (RS + AG) after attention and after the MLP; plus embedding AR and logits AG
    assert counts == {"all_reduce": 1, "reduce_scatter": 2 * 32, "all_gather": 2 * 32 + 1}


def test_tp_all_reduce_priced_by_hand_inside_a_step():
    """TP8 decode, batch 64, h100: attention all-reduce of 64 x 8192 x 2 B over one NVSwitch island."""
    d = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=8)
    c = step.decode(d, 64, 1000)
    # S = 64 x 8192 x 2 = 1,048,576 B: 1 MiB < vLLM's 8 MiB custom all-reduce cap, so its curve at n = 8
    p = priced(c, "attn_all_reduce")[0]
    # vllm curve, h100_sxm n = 8 (alpha 4.38447e-6, busbw 501.037e9, alpha_b 7.7152e-5, busbw_b 257.63e9);
    # s = 1,048,576·2·7/8 = 1,835,008 B:
    #   (√4.38447e-6 + √(1,835,008/501.037e9))² = 16.0613 us  <  77.152e-6 + 1,835,008/257.63e9 = 84.2746 us
    assert float(p.time) == pytest.approx(1.606131993544e-05, rel=1e-9)
    assert "NVLink" in p.detail and "tp=8" in p.detail
    # TensorRT-LLM (AUTO): the faster of its custom kernel and NCCL at that size
    t = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=8, engine="trtllm")
    p = priced(step.decode(t, 64, 1000), "attn_all_reduce")[0]
    # trtllm curve, n = 8 (alpha 3.0174e-6, busbw 403.758e9, alpha_b 2.41906e-5, busbw_b 117.209e9):
    #   (√3.0174e-6 + √(1,835,008/403.758e9))² = 14.9686 us  <  24.1906e-6 + 1,835,008/117.209e9 = 39.8465 us
    # nccl curve, n = 8 (alpha 1.46591e-5, busbw 575.48e9, alpha_b 7.84896e-5, busbw_b 243.326e9):
    #   (√1.46591e-5 + √(1,835,008/575.48e9))² = 31.5215 us  <  78.4896e-6 + 1,835,008/243.326e9 = 86.0310 us
    # the faster: trtllm's 14.9686 us
    assert float(p.time) == pytest.approx(1.496858193996e-05, rel=1e-9)


def test_tp8_across_two_nodes_is_slower_than_one_node():
    kw = dict(model="llama-3.1-70b", gpu="h100_sxm", tp=8, batch=32, input_len=1024, output_len=64)
    one, two = estimate(**kw), estimate(nodes=2, **kw)
    assert two.tpot_s > one.tpot_s
    assert two.ttft_s > one.ttft_s
    # hand: 2 nodes of 4: RS/AG inside over NVLink, AR of S/4 across 2 nodes over the NIC (ring)
    # S = 32 x 8192 x 2 = 524,288 B per all-reduce, 32 x 128256 x 4 = 16,416,768 B for the all-gather
    # all-reduce: reduce-scatter inside 3·5e-6 + 3/4·524,288/292.5e9 = 15 + 1.34433 = 16.34433 us, twice (+ AG),
    #   ring of 2 across on 524,288/4 = 131,072 B: 2·8e-6 + 2·(1/2)·131,072/42.5e9 = 16 + 3.08405 = 19.08405 us;
    #   2·16.34433 + 19.08405 = 51.77270 us
    ar = 5.177270346908e-05
    # all-gather: inside 3·5e-6 + 3/4·16,416,768/292.5e9 = 15 + 42.09428 = 57.09428 us,
    #   across 8e-6 + 1/2·4,104,192/42.5e9 = 8 + 48.28461 = 56.28461 us; sum 113.37889 us
    ag = 1.133788886878e-04
    assert two.decode.split["communication"] == pytest.approx(161 * ar + ag, rel=1e-9)   # = 8.448784 ms
    # one node: the measured curves, h100_sxm n = 8
    # vllm all-reduce (alpha 4.38447e-6, busbw 501.037e9, alpha_b 7.7152e-5, busbw_b 257.63e9), s = 524,288·7/4 = 917,504 B:
    #   (√4.38447e-6 + √(917,504/501.037e9))² = 11.8827 us  <  77.152e-6 + 917,504/257.63e9 = 80.7133 us
    ar_flat = 1.188273772557e-05
    # nccl all-gather (alpha 9.80904e-6, busbw 459.019e9, alpha_b 7.02814e-5, busbw_b 177.246e9),
    # s = 16,416,768·7/8 = 14,364,672 B:
    #   (√9.80904e-6 + √(14,364,672/459.019e9))² = 76.1443 us  <  70.2814e-6 + 14,364,672/177.246e9 = 151.3251 us
    ag_flat = 7.614426840498e-05
    assert one.decode.split["communication"] == pytest.approx(161 * ar_flat + ag_flat, rel=1e-9)   # = 1.989265 ms


# ================================================================= pipeline parallel


def test_stage_layers_and_embedding_head_placement():
    m = load_model("llama-3.1-70b")
    stages = pipeline.stage_layers(m, Parallelism(tp=4, pp=2))
    assert [sum(g.count for g in s) for s in stages] == [40, 40]
    d = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2)
    c = step.decode(d, 8, 1000)
    names = [p.op.name for p in c.ops]
    assert names.count("embedding") == 1 and names.count("lm_head") == 1
    qkv = [i for i, n in enumerate(names) if n == "attn_qkv"]
    assert len(qkv) == 2                                   # one layer group per stage
    assert names.index("embedding") < qkv[0]               # stage 0 holds the embedding
    assert names.index("lm_head") > qkv[1]                 # the last stage holds the LM head
    stage0 = names[:qkv[1]]
    assert "lm_head" not in stage0 and "final_norm" not in stage0
    assert "embedding" not in names[qkv[1]:]


def test_uneven_pp_split():
    m = load_model("llama-3.1-70b")
    stages = pipeline.stage_layers(m, Parallelism(pp=2, pp_split=(30, 50)))
    assert [sum(g.count for g in s) for s in stages] == [30, 50]
    d = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2, pp_split=(30, 50))
    c = step.decode(d, 8, 1000)
    assert [p.op.count for p in c.ops if p.op.name == "attn_qkv"] == [30, 50]
    # 3 stages of 80 layers, no split given: 27, 27, 26 (earlier stages take the remainder)
    assert [sum(g.count for g in s) for s in pipeline.stage_layers(m, Parallelism(pp=3))] == [27, 27, 26]


def test_pp_split_errors():
    with pytest.raises(ValueError, match="pp_split"):
        make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2, pp_split=(30, 40))
    with pytest.raises(ValueError, match="pp_split"):
        pipeline.stage_layers(load_model("llama-3.1-70b"), Parallelism(pp=2, pp_split=(30, 40)))
    with pytest.raises(ValueError, match="pp_split"):
        make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2, pp_split=(80,))


# efficiency.yaml defaults.step_overhead_s: once per step, not per stage. The engine's host work (1 ms,
# engines.yaml pricing.host default) is an operator of the last stage, inside its time t_i.
STEP_OVERHEAD = 0.0


def _stage_times(d, b, new, past):
    """Each stage's own priced time for one micro-batch of b sequences, without the per-step overhead
    (the parts; the formula is ours), its fixed costs changed by the CUDA-graph rule where the engine
    replays the micro-batch from a graph (step.graph_delta; tests/test_graph_costs.py checks it by hand;
    the sizes used here are captured sizes, so no padding)."""
    stages = pipeline.stage_layers(d.model, d.par)
    pr = comm_pricer(d.gpu, d.par)
    load = step.uniform(d.model, decode=b, context=past) if new == 1 else step.uniform(d.model, prompts=b, new=new,
                                                                                         past=past)
    padded, kind = step.graph_step(d, load)
    assert float(padded.tokens) == float(load.tokens)
    return [float(price_step(forward_ops(d.model, d.dtypes, d.par, b, new, past, layers=s, first=i == 0,
                                         last=i == len(stages) - 1, moe_imbalance=d.gpu.efficiency.moe_imbalance),
                             d.gpu, d.compute_dtype, d.dtypes.kv_dtype, pr, d.par.comm_overlap,
                             step_overhead=False).time) + float(step.graph_delta(d, i, kind))
            for i, s in enumerate(stages)]


@pytest.mark.parametrize("split,micro", [(None, None), ((30, 50), 4)])
def test_pp_prefill_fill_and_drain(split, micro):
    """T = sum t_i + (m - 1) max t_i + (pp - 1) s + o; s = activation send b x new x 8192 x 2 B over
    NVLink, o the per-step overhead."""
    d = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2, pp_split=split, microbatches=micro)
    batch, new = 4, 512
    m = 2 if micro is None else 4          # default min(batch, pp)
    b = batch / m
    t = _stage_times(d, b, new, 0)
    s = 5e-6 + b * new * 8192 * 2 / (450e9 * 0.65)   # stage neighbours 4 ranks apart, same NVLink island
    expect = sum(t) + (m - 1) * max(t) + (2 - 1) * s + STEP_OVERHEAD
    got = float(step.prefill(d, batch, new).time)
    assert got == pytest.approx(expect, rel=1e-9)
    if split is not None:
        assert t[1] > t[0]                 # 50 layers take longer than 30


def test_pp_decode_busy_with_enough_microbatches_bubble_at_batch_1():
    d = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, pp=2)
    ctx = 1000
    # batch 32: m = 2 micro-batches of 16 in flight -> T = max(2 max t, t0 + t1 + s) + o
    t = _stage_times(d, 16, 1, ctx)
    s = 5e-6 + 16 * 8192 * 2 / (450e9 * 0.65)
    c = step.decode(d, 32, ctx)
    assert float(c.time) == pytest.approx(max(2 * max(t), sum(t) + s) + STEP_OVERHEAD, rel=1e-9)
    # stages of 40/40 layers: the bubble is the last stage's extra work (LM head, the engine's host work)
    # beyond the first's, less the send: 2 max t - (t0 + t1) - s (m = pp = 2: the split holds t0 + t1 + s + o)
    assert float(c.split["bubble"]) == pytest.approx(2 * max(t) - sum(t) - s, rel=1e-9)
    assert float(c.split["bubble"]) < 0.15 * float(c.time)
    # batch 1: one micro-batch, every other stage idles: T = t0 + t1 + s + o, bubble = (pp - 1)/pp of sum t
    t1 = _stage_times(d, 1, 1, ctx)
    s1 = 5e-6 + 1 * 8192 * 2 / (450e9 * 0.65)
    c1 = step.decode(d, 1, ctx)
    assert float(c1.time) == pytest.approx(sum(t1) + s1 + STEP_OVERHEAD, rel=1e-9)
    assert float(c1.split["bubble"]) == pytest.approx(sum(t1) / 2, rel=1e-9)
    assert float(c1.split["bubble"]) > 0.4 * float(c1.time)
    assert float(c1.split["communication"]) >= s1


def test_uneven_pp_weights_per_gpu_are_the_heaviest_stage():
    m = load_model("llama-3.1-70b")
    par = Parallelism(pp=2, pp_split=(20, 60))
    # last stage: 60 layers (attention, MLP, 2 norms each) + final norm + LM head, bf16
    last = (60 * (L70_ATTN + L70_MLP + 2 * 8192) + 8192 + L70_EMB) * 2
    assert weight_bytes_per_gpu(m, Dtypes(), par) >= last


def test_uneven_pp_kv_per_gpu_is_the_heaviest_stage():
    m = load_model("llama-3.1-70b")
    per_token_layer = 2 * 8 * 128 * 2           # K and V, 8 KV heads x 128, bf16
    heavy = 4 * 1000 * 60 * per_token_layer     # 4 sequences x 1000 tokens on the 60-layer stage
    assert kv_bytes_per_gpu(m, Dtypes(), Parallelism(pp=2, pp_split=(20, 60)), 4, 1000) >= heavy


# ================================================================= expert parallel


def test_ep_all_to_all_dispatch_and_combine():
    """Mixtral-8x7B (8 experts, top-2, hidden 4096, 32 layers) on 2 h100 with TP2 EP2; the all-to-alls
    follow the measured NCCL all-to-all curve at n = 2."""
    d = make_deployment(model="mixtral-8x7b-v0.1", gpu="h100_sxm", tp=2, ep=2)
    assert d.par.expert_tp == 1
    # nccl all-to-all curve, h100_sxm n = 2 (alpha 6.82145e-6, busbw 374.539e9, alpha_b 1.29729e-4,
    # busbw_b 142.912e9), f = 1/2; S = (T/ep) x k x d x 2 B:
    #   T = 8:    S = 4·2·4096·2 = 65,536 B, s = 32,768 B:
    #     (√6.82145e-6 + √(32,768/374.539e9))² = 8.4540 us  <  129.729e-6 + 32,768/142.912e9 = 129.9583 us
    #   T = 1024: S = 512·2·4096·2 = 8,388,608 B, s = 4,194,304 B:
    #     (√6.82145e-6 + √(4,194,304/374.539e9))² = 35.5004 us  <  129.729e-6 + 4,194,304/142.912e9 = 159.0779 us
    for batch, new, past, expect in ((8, 1, 1000, 8.453996896521e-06), (2, 512, 0, 3.550036339245e-05)):
        T = batch * new
        S = T / 2 * 2 * 4096 * 2               # (T/ep) x k x d x 2 B
        c = step.price(d, step.uniform(d.model, decode=batch, context=past) if new == 1 else
                       step.uniform(d.model, prompts=batch, new=new, past=past), "stream" if new == 1 else "isolated")
        for name in ("moe_dispatch_all_to_all", "moe_combine_all_to_all"):
            (p,) = priced(c, name)
            assert p.op.count == 32
            assert p.op.comm["kind"] == "all_to_all" and (p.op.comm["group"], p.op.comm["size"]) == ("ep", 2)
            assert float(p.op.comm["bytes"]) == S
            assert float(p.time) == pytest.approx(expect, rel=1e-9)
        names = [p.op.name for p in c.ops]
        assert "moe_all_reduce" not in names and "expert_all_reduce" not in names
        assert names.index("moe_dispatch_all_to_all") < names.index("experts") < names.index("moe_combine_all_to_all")


def test_moe_imbalance_applies_only_under_ep():
    m = load_model("mixtral-8x7b-v0.1")
    per_expert = 3 * 4096 * 14336                # gated expert MLP = 176,160,768
    T, k = 8, 2

    def experts_flops(par, imb):
        (o,) = [o for o in decode_ops(m, Dtypes(), par, T, 1000, moe_imbalance=imb) if o.name == "experts"]
        return float(o.flops)

    # efficiency.yaml defaults.moe_imbalance = 1.2; step_cost passes the GPU's figure
    assert make_deployment(model="mixtral-8x7b-v0.1", gpu="h100_sxm", tp=2, ep=2).gpu.efficiency.moe_imbalance == 1.2
    assert experts_flops(Parallelism(tp=2, ep=2), 1.2) == pytest.approx(2 * T * k * per_expert / 2 * 1.2)
    assert experts_flops(Parallelism(tp=2), 1.2) == pytest.approx(2 * T * k * per_expert / 2)
    d = make_deployment(model="mixtral-8x7b-v0.1", gpu="h100_sxm", tp=2, ep=2)
    c = step.decode(d, T, 1000)
    (p,) = priced(c, "experts")
    assert float(p.op.flops) == pytest.approx(2 * T * k * per_expert / 2 * 1.2)


def test_attention_dp_each_group_sees_its_share_of_the_batch():
    """DeepSeek-V3 (MLA latent 512 + 64 per token-layer, 61 layers), fp8 KV, batch 16."""
    kw = dict(model="deepseek-v3", gpu="h100_sxm", weight_dtype="fp8", act_dtype="fp8", batch=16,
              input_len=1024, output_len=128)
    one = estimate(tp=8, ep=8, **kw)
    adp = estimate(tp=8, dp=2, ep=16, attention_dp=True, nodes=2, **kw)
    per_seq = (512 + 64) * 61 * 1 * (1024 + 128)          # latent replicated over TP: no /tp
    assert one.memory.kv_cache == pytest.approx(16 * per_seq, rel=1e-12)
    assert adp.memory.kv_cache == pytest.approx(16 / 2 * per_seq, rel=1e-12)
    # the MoE layer still sees every token of the replica: dispatch of 16 tokens / ep 16 x top-8 x 7168 x 2 B
    m = load_model("deepseek-v3")
    par = Parallelism(tp=8, dp=2, ep=16, attention_dp=True)
    ops = decode_ops(m, Dtypes(weight="fp8", act="fp8"), par, 16, 1000)
    a2a = [o for o in ops if o.name == "moe_dispatch_all_to_all"]
    assert float(a2a[0].comm["bytes"]) == 16 / 16 * 8 * 7168 * 2
    att = sum(float(o.kv_bytes) * o.count for o in ops if o.name == "attention")
    assert att == pytest.approx(8 * 1001 * 576 * 61, rel=1e-12)   # 8 sequences per group
    # attention DP makes one replica of 16 GPUs, so experts spread over tp*dp = 16
    assert par.replicas == 1 and par.moe_group == 16 and par.expert_tp == 1


# ================================================================= data parallel replicas


def _row(num_gpus, metric="output_tok_s"):
    return Row(case="t", source="test", model="meta-llama/Llama-3.1-8B", gpu="h100_sxm", num_gpus=num_gpus,
               tp=2, pp=1, ep=None, weight_dtype=None, act_dtype=None, kv_dtype=None, framework="TensorRT-LLM",
               scenario="static_batch", batch_size=8, request_rate=None, num_requests=None, input_len=512,
               output_len=128, metric=metric, value=1.0)


def test_dp_replicas_scale_throughput_not_latency():
    one, two = (predict_static(deployment_for(_row(n)), _row(n)) for n in (2, 4))
    assert two["ttft_ms"] == pytest.approx(one["ttft_ms"], rel=1e-12)
    assert two["itl_ms"] == pytest.approx(one["itl_ms"], rel=1e-12)
    assert two["output_tok_s"] == pytest.approx(2 * one["output_tok_s"], rel=1e-12)
    assert two["requests_per_s"] == pytest.approx(2 * one["requests_per_s"], rel=1e-12)
    # each replica: 8 x 128 tokens in TTFT + 127 x ITL
    e2e = (one["ttft_ms"] + 127 * one["itl_ms"]) / 1e3
    assert one["output_tok_s"] == pytest.approx(8 * 128 / e2e, rel=1e-12)


def test_dp_per_gpu_throughput_is_total_over_all_gpus():
    one = predict_static(deployment_for(_row(2)), _row(2))
    two = predict_static(deployment_for(_row(4)), _row(4))
    assert two["output_tok_s_per_gpu"] == pytest.approx(two["output_tok_s"] / 4, rel=1e-12)
    assert two["output_tok_s_per_gpu"] == pytest.approx(one["output_tok_s_per_gpu"], rel=1e-12)


def test_estimate_dp_replicas_scale_total_not_per_gpu_or_latency():
    kw = dict(model="llama-3.1-8b", gpu="h100_sxm", tp=2, batch=8, input_len=512, output_len=128)
    one, two = estimate(**kw), estimate(dp=2, **kw)
    assert two.num_gpus == 4 and two.parallelism.replicas == 2
    assert two.tpot_s == one.tpot_s and two.ttft_s == one.ttft_s
    assert one.output_tok_s == pytest.approx(8 * 128 / one.e2e_s, rel=1e-12)
    assert two.output_tok_s == pytest.approx(2 * 8 * 128 / two.e2e_s, rel=1e-12)
    assert two.output_tok_s_per_gpu == pytest.approx(one.output_tok_s_per_gpu, rel=1e-12)
    assert two.tok_s_per_user == pytest.approx(one.tok_s_per_user, rel=1e-12)


# ================================================================= overlap, bound, explanation


@pytest.mark.parametrize("overlap", [0.5, 1.0])
def test_comm_overlap_hides_collective_time(overlap):
    base = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=8)
    over = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=8, comm_overlap=overlap)
    c0 = step.decode(base, 32, 1000)
    c1 = step.decode(over, 32, 1000)
    comm0 = float(c0.split["communication"])
    work0 = sum(float(c0.split[k]) for k in ("compute", "weights", "kv", "activations"))
    hidden = min(overlap * comm0, work0)
    assert comm0 > 0
    assert float(c1.split["communication"]) == pytest.approx(comm0 - hidden, rel=1e-9, abs=1e-15)
    assert float(c1.time) == pytest.approx(float(c0.time) - hidden, rel=1e-9)


def test_communication_bound_prefill_on_pcie():
    """llama-3.1-70b prefill, 8 x 1024 tokens, TP8 on l40s (bf16).

    communication: 161 all-reduces of 8192 tokens x 8192 x 2 B = 134,217,728 B at the measured PCIe
    pair's NCCL bus bandwidth (alpha x log2(8): collectives.py), plus the logits all-gather
    (8 x 128256 x 4 B); compute: 2 x 70.55e9 x 8192 / 8 FLOP at a few hundred TFLOP/s, well
    under a second: communication binds (with the curves off, the alpha-beta ring over PCIe binds too).
    """
    e = estimate(model="llama-3.1-70b", gpu="l40s", tp=8, batch=8, input_len=1024, output_len=64)
    # S = 8192 x 8192 x 2 = 134,217,728 B per all-reduce
    # l40s nccl curves measured on n0 = 2: alpha x log2(8)/log2(2) = 3 alpha
    # all-reduce (alpha 4.59347e-6, busbw 22.9319e9, alpha_b 2.17318e-5, busbw_b 12.4177e9),
    # s = 134,217,728·2·7/8 = 234,881,024 B:
    #   (√(3·4.59347e-6) + √(234,881,024/22.9319e9))² = 11007.715 us  <  3·21.7318e-6 + 234,881,024/12.4177e9 = 18980.214 us
    ar = 1.100771499414e-02
    # all-gather of 8·128,256·4 = 4,104,192 B (alpha 4.67986e-6, busbw 22.8255e9, alpha_b 2.5148e-5, busbw_b 11.9801e9),
    # s = 4,104,192·7/8 = 3,591,168 B:
    #   (√(3·4.67986e-6) + √(3,591,168/22.8255e9))² = 265.3682 us  <  3·25.148e-6 + 3,591,168/11.9801e9 = 375.2051 us
    ag = 2.653681527782e-04
    assert e.prefill.split["communication"] == pytest.approx(161 * ar + ag, rel=1e-9)   # = 1.772507 s
    assert e.prefill.split["communication"] > e.prefill.split["compute"] > 0
    assert e.prefill.bound == "communication"
    assert "communication-bound" in e.prefill.explanation
    off = estimate(model="llama-3.1-70b", gpu="l40s", tp=8, batch=8, input_len=1024, output_len=64,
                   gpu_overrides={"efficiency.kernel_curves": False})
    # alpha-beta over PCIe (a = 10 us, b = 22.4e9 B/s), n = 8: ring 14·1e-5 + 1.75·134,217,728/22.4e9
    # = 140 + 10485.76 = 10625.76 us  <  tree 6·1e-5 + 2·134,217,728/22.4e9 = 60 + 11983.726 = 12043.726 us
    ring = 1.062576e-02
    # ring all-gather of 4,104,192 B: 7·1e-5 + 7/8·4,104,192/22.4e9 = 70 + 160.32 = 230.32 us
    gather = 2.3032e-04
    assert off.prefill.split["communication"] == pytest.approx(161 * ring + gather, rel=1e-9)   # = 1.710978 s
    assert off.prefill.bound == "communication"


def test_explanation_names_all_reduce_with_percentages():
    e = estimate(model="llama-3.1-70b", gpu="h100_sxm", tp=8, batch=64, input_len=1024, output_len=64)
    x = e.decode.explanation
    assert x.startswith("decode at batch 64")
    assert "8x h100_sxm TP8" in x and "HBM-bound" in x
    m = re.search(r"all-reduce (\d+)%", x)
    assert m, x
    share = e.decode.comm_kinds["all_reduce"] / e.decode.time_s
    assert int(m.group(1)) == round(share * 100)
    assert re.search(r"weights \d+%", x)


# ================================================================= layout errors


@pytest.mark.parametrize("kwargs,field", [
    (dict(model="llama-3.1-8b", num_gpus=8, tp=2), "num_gpus"),
    (dict(model="llama-3.1-8b", tp=2, ep=2), "ep"),
    (dict(model="mixtral-8x7b-v0.1", tp=2, ep=4), "ep"),
    (dict(model="llama-3.1-8b", tp=64, nodes=8), "tp"),
    (dict(model="llama-3.1-8b", tp=3), "tp"),
    (dict(model="llama-3.1-8b", gpu="l40s", tp=2, collective_algo="nvls"), "collective_algo"),
    (dict(model="llama-3.1-8b", gpu="l40s", tp=2, collective_algo="oneshot"), "collective_algo"),
    (dict(model="llama-3.1-8b", gpu="a100_80gb_sxm", tp=8, collective_algo="nvls"), "collective_algo"),
    (dict(model="llama-3.1-8b", tp=8, nodes=2, collective_algo="nvls"), "collective_algo"),
    (dict(model="llama-3.1-8b", tp=8, collective_algo="fastest"), "collective_algo"),
    (dict(model="llama-3.1-8b", tp=8, nodes=3), "nodes"),
    (dict(model="llama-3.1-8b", tp=16, nodes=1), "nodes"),
    (dict(model="llama-3.1-8b", tp=2, pp=2, pp_split=(10, 10)), "pp_split"),
    (dict(model="llama-3.1-8b", tp=2, attention_dp=True), "attention_dp"),
])
def test_invalid_layouts_name_the_field(kwargs, field):
    kwargs.setdefault("gpu", "h100_sxm")
    with pytest.raises(ValueError) as exc:
        make_deployment(**kwargs)
    assert field in str(exc.value)


def test_pcie_only_card_cannot_span_nodes_without_a_nic():
    with pytest.raises(ValueError, match="scaleout_bw"):
        estimate(model="llama-3.1-8b", gpu="l40s", tp=4, nodes=2, batch=1, input_len=16, output_len=2)


# ================================================================= CLI


def test_cli_estimate_with_pipeline():
    res = CliRunner().invoke(app, ["estimate", "llama-3.1-70b", "--num-gpus", "8", "--pp", "2", "--tp", "4", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["parallelism"]["pp"] == 2 and out["parallelism"]["tp"] == 4 and out["num_gpus"] == 8
    split = out["decode"]["split_s"]
    assert "bubble" in split or "communication" in split
    assert split["communication"] > 0
    assert "p2p" in out["decode"]["communication_s"]


def test_cli_roofline_lists_collectives():
    res = CliRunner().invoke(app, ["roofline", "llama-3.1-70b", "--num-gpus", "4", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["phases"]["decode"]
    coll = [r for r in rows if r["kind"] == "collective"]
    assert {r["name"] for r in coll} == {"embedding_all_reduce", "attn_all_reduce", "mlp_all_reduce",
                                         "logits_all_gather"}
    for r in coll:
        assert "algorithm" in r and "NVLink" in r["algorithm"] and "tp=4" in r["algorithm"]
        assert r["bound"] == "communication" and r["time_s"] > 0


def test_cli_rejects_nvls_on_pcie_card():
    res = CliRunner().invoke(app, ["estimate", "--gpu", "l40s", "--num-gpus", "2", "--collective-algo", "nvls"])
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    assert "collective_algo" in res.output and "l40s" in res.output


# ================================================================= published figure


def test_kipply_fastertransformer_13b_on_2_a100_40gb():
    """kipply's "Transformer inference arithmetic": FasterTransformer 13B on 2x A100-40GB TP2, batch 1,
    13.5 ms per token. Llama-2-13B, fp16, 512 in / 256 out: TPOT within 20 %."""
    e = estimate(model="meta-llama/Llama-2-13b-hf", gpu="a100_40gb_sxm", num_gpus=2, tp=2, weight_dtype="fp16",
                 act_dtype="fp16", batch=1, input_len=512, output_len=256)
    assert e.num_gpus == 2 and e.parallelism.tp == 2
    assert abs(e.tpot_s - 13.5e-3) / 13.5e-3 <= 0.20, e.tpot_s
