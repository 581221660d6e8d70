"""Fixed costs of steps replayed from CUDA graphs (pricing/graphs.py, data/cuda_graphs.yaml), by hand.

Figures used below, as written in the data files:
  data/cuda_graphs.yaml  kernel_in_graph_s c = 2.5e-6 s, graph_launch_s L = 5.0e-6 s
  data/efficiency.yaml   kernel_overhead_s (every roofline op: norms, embedding) = 2.0e-6 s; host_factor 1.0
  data/kernels.yaml      h200_sxm sglang: gemm fp8 overhead_s 4.83561e-6, gemm bf16 2.55042e-6,
                         mla_decode fp8 1.67909e-5 (no sglang fp8 MoE curve: the fused MoE runs the fp8 GEMM
                         curve twice, o_moe = 0); h100_sxm vllm attention_decode bf16 1.08733e-5
  data/engines.yaml      pricing.host default: step_s 1.0e-3, seq_s 3.1e-6 (SGLang, vLLM: no fitted host work)
DeepSeek-V3 (61 layers: 3 dense, 58 MoE) on 8 x H200, TP 8 / EP 8, fp8, SGLang 0.5.23 (cap 512 on TP 8). Its
decode step's operators, per layer: attn_qkv and attn_out (one GEMM each), attention (one MLA decode
kernel), norms_residual (roofline), then mlp (gate+up and down GEMMs) in the dense layers or router (one
bf16 GEMM), experts (fused MoE: 3 kernels) and shared_experts (2 GEMMs) in the MoE layers; once: embedding
and final_norm (roofline), lm_head (one bf16 GEMM).
"""
import pytest

from inferbound import make_deployment
from inferbound.pricing import graphs as G
from inferbound.pricing.collectives import comm_pricer_of
from inferbound.step import contract as step
from inferbound.step.table import StepModel

C, L = 2.5e-6, 5.0e-6
ROOF = 2.0e-6
FP8, BF16, MLA = 4.83561e-6, 2.55042e-6, 1.67909e-5
HOST_STEP, HOST_SEQ = 1.0e-3, 3.1e-6


def _ds(engine="sglang"):
    return make_deployment(model="deepseek-v3", gpu="h200_sxm", num_gpus=8, tp=8, ep=8, weight_dtype="fp8",
                           act_dtype="fp8", engine=engine, calibration="none")


def test_costs_are_the_yaml_figures():
    assert G.costs() == (C, L)


def test_decode_step_under_a_graph_sums_fixed_costs_by_the_graph_rule():
    dep = _ds()
    assert dep.runtime.cuda_graph_max_batch == 512
    # every instance: min(o, k * c); one graph launch per step
    graph = (61 * min(FP8, C) * 2          # attn_qkv, attn_out
             + 61 * min(MLA, C)            # attention
             + 61 * min(ROOF, C)           # norms_residual: 2.0 us < c, kept
             + 3 * min(2 * FP8, 2 * C)     # mlp: 2 GEMMs
             + 58 * min(BF16, C)           # router
             + 58 * min(2 * FP8, 3 * C)    # experts: 3 kernels
             + 58 * min(2 * FP8, 2 * C)    # shared_experts
             + 2 * min(ROOF, C)            # embedding, final_norm
             + min(BF16, C)                # lm_head
             + L)
    assert graph == pytest.approx(1.476e-3, abs=1e-6)
    for batch in (8, 32, 64):  # captured sizes: no padding
        cost = step.decode(dep, batch, 2048)
        assert float(cost.split["overhead"]) == pytest.approx(graph + HOST_STEP + HOST_SEQ * batch, rel=1e-9)


def test_above_the_largest_capture_size_still_sums_per_kernel_costs():
    dep = _ds()
    eager = (61 * 2 * FP8 + 61 * MLA + 61 * ROOF + 3 * 2 * FP8 + 58 * BF16 + 58 * 2 * FP8 + 58 * 2 * FP8
             + 2 * ROOF + BF16)
    assert eager == pytest.approx(3.0415e-3, abs=1e-6)
    load = step.uniform(dep.model, decode=600, context=2048)  # 600 > 512
    assert step.graph_step(dep, load)[1] == G.EAGER
    cost = step.price(dep, load)
    assert float(cost.split["overhead"]) == pytest.approx(eager + HOST_STEP + HOST_SEQ * 600, rel=1e-9)


def _without_graphs(monkeypatch, dep):
    monkeypatch.setattr(step, "graph_plan", lambda d: G.Plan(G.EAGER, G.EAGER, (), 0, False))


def test_prefill_step_runs_eagerly_on_sglang(monkeypatch):
    dep = _ds()
    load = step.uniform(dep.model, prompts=2, new=100)  # 200 tokens: within 512, but SGLang prefills eagerly
    assert step.graph_step(dep, load) == (load, G.EAGER)
    with_rule = float(step.price(dep, load, "isolated").time)
    _without_graphs(monkeypatch, dep)
    assert float(step.price(dep, load, "isolated").time) == with_rule


def test_padding_to_the_next_capture_size():
    dep = _ds()
    plan = step.graph_plan(dep)
    assert plan.sizes[:8] == (1, 2, 4, 8, 12, 16, 24, 32) and plan.padding
    load = step.uniform(dep.model, decode=5, context=2048)
    padded, kind = step.graph_step(dep, load)
    assert kind == G.FULL and padded.tokens == 8.0 and padded.sampled == 5.0
    ops = {p.op.name: p for p in step.price(dep, load).ops}
    assert float(ops["attn_qkv"].op.shape["m"]) == 8.0   # the GEMMs run the batch-8 graph
    assert float(ops["lm_head"].op.shape["m"]) == 5.0    # sampled rows (and the host work) stay 5


def test_vllm_v1_sizes_and_no_padding_in_trtllm():
    v1 = G.sizes_of(G.graph_data()["capture"]["vllm"], 512)
    assert v1 == tuple([1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16)))
    trt = G.Plan(G.FULL, G.EAGER, G.sizes_of(G.graph_data()["capture"]["trtllm"], 128), 128, False)
    assert trt.sizes == tuple(list(range(1, 32)) + [32, 64, 128])
    b, ok = G.padded(trt, 33.0)
    assert float(b) == 33.0 and not ok          # not a captured size, no padding: eager
    b, ok = G.padded(trt, 32.0)
    assert float(b) == 32.0 and ok


def test_piecewise_graphs_keep_attention_eager_and_launch_per_piece():
    """vLLM 0.8.5 (piecewise over the token count): attention runs between the pieces at its eager fixed
    cost; 32 attention layers make 33 pieces. Against a full graph: + 32 * (o_att - c) + 32 * L."""
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.8.5", calibration="none")
    att = 1.08733e-5
    full, piece = step.graph_deltas(dep, 0)
    assert piece - full == pytest.approx(32 * (att - C) + 32 * L, rel=1e-6)
    mixed = step.uniform(dep.model, decode=10, prompts=1, new=200)  # 210 tokens <= 512: piecewise too
    assert step.graph_step(dep, mixed)[1] == G.PIECEWISE
    big = step.uniform(dep.model, decode=10, prompts=1, new=2000)
    assert step.graph_step(dep, big)[1] == G.EAGER


def test_engine_without_graphs_is_unchanged():
    """TensorRT-LLM 0.17 (TensorRT engine path: cuda_graph_mode off): every step sums per-kernel costs, the
    step is the priced operators plus the per-step overhead."""
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="trtllm@0.17", calibration="none")
    assert step.graph_plan(dep).decode == G.EAGER
    load = step.uniform(dep.model, decode=8, context=1000)
    assert step.graph_step(dep, load) == (load, G.EAGER)
    (layers, first, last), = step.stages_of(dep)
    ops = step.stage_ops(dep.model, dep.dtypes, dep.par, load.tokens, load.sampled, load.attention, layers, first,
                         last, dep.gpu.efficiency.moe_imbalance)
    w = step.price_ops(ops, dep.gpu, dep.compute_dtype, dep.dtypes.kv_dtype, comm_pricer_of(dep))
    assert float(step.price(dep, load).time) == pytest.approx(float(w.time) + dep.gpu.efficiency.step_overhead_s,
                                                              rel=1e-12)


def test_table_prices_graph_steps_as_the_contract():
    dep = _ds()
    sm = StepModel(dep, 1024)
    for batch in (5, 8, 64, 600):
        load = step.uniform(dep.model, decode=batch, context=2048)
        assert float(sm.price(load).time) == pytest.approx(float(step.price(dep, load).time), rel=1e-9)


def test_simulator_step_pads_as_the_contract():
    """StepModel.step (the simulator's scalar path, graphs.padded_scalar) against step.price for decode-only
    steps on both sides of a capture size and above the cap, and a mixed step."""
    dep = _ds()
    plan = step.graph_plan(dep)
    for b in (0.0, 1.0, 5.0, 12.0, 13.0, 512.0, 513.0):
        pb, ok = G.padded(plan, b)
        assert G.padded_scalar(plan, b) == (float(pb), bool(ok))
    sm = StepModel(dep, 1024)
    for n in (5, 13, 600):
        ctx = [2048.0] * n
        t, _ = sm.step(ctx)
        assert t == pytest.approx(float(step.price(dep, step.of_sequences(dep.model, ctx)).time), rel=1e-9)
    t, _ = sm.step([2048.0] * 3, chunks=((0, 100),))
    assert t == pytest.approx(float(step.price(dep, step.of_sequences(dep.model, [2048.0] * 3, [0], [100])).time),
                              rel=1e-9)


def test_gpus_of_vendors_without_a_measured_in_graph_cost_stay_eager():
    """cuda_graphs.yaml kernel_in_graph_s.vendors: [NVIDIA]: vLLM on an MI300X (HIP graphs) keeps the eager sums."""
    dep = make_deployment(model="llama-3.1-8b", gpu="mi300x", engine="vllm", calibration="none")
    assert dep.gpu.vendor == "AMD" and dep.runtime.cuda_graph_max_batch > 0
    load = step.uniform(dep.model, decode=8, context=1000)
    assert step.graph_plan(dep).decode == G.EAGER and step.graph_step(dep, load) == (load, G.EAGER)
