"""Offline max throughput (workloads/max_throughput.py): steady state of in-flight batching with chunked
prefill, KV-cache capacity, the argmax over feasible decode batches, limits, CLI.

Expected values are written out by hand from Llama-3.1-8B's config.json and the catalog:
- Llama-3.1-8B (data/models/meta-llama--Llama-3.1-8B.json): hidden 4096, 32 layers, 32 heads, 8 KV
  heads of 128, MLP 14336 (gated), vocab 128256, untied LM head;
- h100_sxm (data/hardware.yaml, data/device_memory.yaml): 80 GB HBM, 85,045,477,376 B as CUDA reports it, 989 / 1979 TFLOP/s dense bf16 / fp8, TDP 700 W,
  2.5 $/GPU-hour;
- data/runtime.yaml: runtime_reserve_bytes 1e9;
- the engine, named explicitly: TensorRT-LLM 0.17 (engines.yaml): KV = 0.9 of the memory free after
  weights, activations and the reserve (kv_cache_free_gpu_memory_fraction), reservation max
  (GUARANTEED_NO_EVICT), max_batch_size 2048; the token budget (8192) and block (16) are set here, which
  also turns off trtllm-bench's own limits (workloads.max_throughput.bench_limits).
The step time t(D) is taken from ``StepModel.uniform`` (the step-time primitive); what is checked here is
the composition around it: the steady-state token counts, the feasible set and the argmax.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.runtime import kv_capacity_bytes
from inferbound.step.table import StepModel
from inferbound.workloads import max_throughput
from inferbound.workloads.max_throughput import MAX_THROUGHPUT_GRID

# --- Llama-3.1-8B by hand -------------------------------------------------------------------------
D, L, H, KVH, HD, FF, V = 4096, 32, 32, 8, 128, 14336, 128256
ATTN = D * (H * HD + 2 * KVH * HD) + H * HD * D       # q, k, v, o = 41,943,040
MLP = 3 * D * FF                                      # gate, up, down = 176,160,768
MATRICES = L * (ATTN + MLP)                           # quantizable matrices
NORMS = L * 2 * D + D                                 # 2 RMSNorms per layer + final, kept 16-bit
TABLES = 2 * V * D                                    # embedding + LM head, kept 16-bit
WEIGHTS_BF16 = 2 * (MATRICES + NORMS + TABLES)
# fp8 matrices: 1 byte + one fp32 scale per 128x128 block (dtypes.py) = 1 + 4/16384 bytes
WEIGHTS_FP8 = MATRICES * (1 + 4 / 16384) + 2 * (NORMS + TABLES)
# activations of a step of T tokens: T * (4d + 2ff + (h + 2 kv) hd) * bytes (memory.activation_bytes)
ACT_WIDTH = 4 * D + 2 * FF + (H + 2 * KVH) * HD        # 51,200
KV_PER_TOKEN = {"bf16": 2 * 2 * L * KVH * HD,         # K and V, 2 bytes, 32 layers, 8 heads x 128 = 131,072
                "fp8": 2 * 1 * L * KVH * HD}          # 65,536
ACT_BYTES = {"bf16": 2, "fp8": 1}
WEIGHTS = {"bf16": WEIGHTS_BF16, "fp8": WEIGHTS_FP8}

HBM = 85_045_477_376  # h100_sxm device total (data/device_memory.yaml: CUDA deviceQuery, 79.20 GiB)
RESERVE = 1.0e9       # runtime.yaml runtime_reserve_bytes
KV_FRACTION = 0.9     # engines.yaml trtllm@0.17 kv_cache_free_gpu_memory_fraction
BUDGET = 8192         # set below (engine_options token_budget)
BLOCK = 16            # set below (engine_options block_size)
SEQS = 2048           # engines.yaml trtllm@0.17 max_batch_size: the logits rows of the profiled step
PRICE = 3.90  # data/prices.yaml h100_sxm (Crusoe on-demand, 2026-09-20)
ENGINE = "trtllm@0.17"
OPTIONS = {"token_budget": BUDGET, "block_size": BLOCK}


def capacity_by_hand(dtype: str, budget: int = BUDGET) -> float:
    # activations of the profiled step: T tokens of width ACT_WIDTH, plus fp32 logits of min(SEQS, T) rows
    act = budget * ACT_WIDTH * ACT_BYTES[dtype] + min(SEQS, budget) * V * 4
    return KV_FRACTION * (HBM - WEIGHTS[dtype] - act - RESERVE)


def dep8b(dtype: str = "bf16", **options):
    kw = {"weight_dtype": "fp8", "act_dtype": "fp8"} if dtype == "fp8" else {}
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm", calibration="none", engine=ENGINE,
                           engine_options={**OPTIONS, **options}, **kw)


@pytest.fixture(scope="module")
def deps():
    # module scope is set up before conftest's function-scoped INFERBOUND_CALIBRATION=none: say it here
    return {"bf16": dep8b("bf16"), "fp8": dep8b("fp8")}


def test_hand_constants():
    assert WEIGHTS_BF16 == 16_060_522_496                  # 8.03 B parameters x 2 bytes
    assert KV_PER_TOKEN["bf16"] == 131_072
    assert ACT_WIDTH == 51_200


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_kv_capacity_by_hand(deps, dtype):
    dep = deps[dtype]
    expected = capacity_by_hand(dtype)
    # bf16: 0.9 * (85,045,477,376 - 16,060,522,496 - (8192*51200*2 + 2048*128256*4) - 1e9) = 59,485,878,835.2
    assert kv_capacity_bytes(dep, dep.runtime) == pytest.approx(expected, rel=1e-12)
    r = max_throughput(dep, input_len=1000, output_len=201)
    assert r.kv_capacity_bytes_per_gpu == pytest.approx(expected, rel=1e-12)
    assert r.token_budget == BUDGET and r.kv_reservation == "max"
    if dtype == "bf16":
        assert expected == pytest.approx(59_485_878_835.2, rel=1e-12)


def test_smaller_token_budget_leaves_more_kv_capacity():
    r = max_throughput(dep8b(token_budget=2048), input_len=1000, output_len=201)
    assert r.kv_capacity_bytes_per_gpu == pytest.approx(capacity_by_hand("bf16", 2048), rel=1e-12)
    assert r.token_budget == 2048


def feasible_d_max(dtype: str, I: int, O: int, held_tokens: float, budget: int = BUDGET, requests: int = 10_000):
    """(C_kv, D_kv, D_budget, D_max) by hand for one replica of one GPU."""
    c_kv = capacity_by_hand(dtype, budget) / (held_tokens * KV_PER_TOKEN[dtype])
    d_kv = math.floor(c_kv / (1 + 1 / (O - 1)))          # C = D + P/I = D (1 + 1/(O-1))
    d_budget = math.floor(budget / (1 + I / (O - 1)))    # T = D + D I/(O-1) <= budget
    return c_kv, d_kv, d_budget, min(d_kv, d_budget, requests)


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_steady_state_and_kv_limit_by_hand(deps, dtype):
    I, O = 1000, 201                                     # I + O = 1201 -> 76 blocks of 16 = 1216 tokens
    held = math.ceil((I + O) / BLOCK) * BLOCK
    assert held == 1216
    c_kv, d_kv, d_budget, d_max = feasible_d_max(dtype, I, O, held)
    r = max_throughput(deps[dtype], input_len=I, output_len=O)
    assert r.kv_limit_concurrency == pytest.approx(c_kv, rel=1e-12)
    Dd = r.decode_batch
    assert 1 <= Dd <= d_max
    # prefill tokens per step P = D I/(O-1); concurrency C = D + P/I = D (1 + 1/(O-1))
    assert r.prefill_tokens_per_step == pytest.approx(Dd * I / (O - 1), rel=1e-12)
    assert r.concurrency == pytest.approx(Dd * (1 + 1 / (O - 1)), rel=1e-12)
    assert r.concurrency <= c_kv                         # every sequence in flight holds its KV
    # bf16: C_kv = 59,485,878,835.2 / (1216 * 131072) = 373.22 -> D_kv = floor(373.22 * 200/201) = 371
    if dtype == "bf16":
        assert d_kv == 371 and d_budget == 1365
    # 8B decode stays memory-bound: the argmax sits at or just below the KV limit (GEMM tile waves)
    assert r.limited_by in ("kv-cache", "throughput peak") and d_kv - 8 <= Dd <= d_kv


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_chosen_decode_batch_is_the_argmax_over_all_feasible_batches(deps, dtype):
    I, O = 1000, 201
    dep = deps[dtype]
    _, _, _, d_max = feasible_d_max(dtype, I, O, 1216)
    r = max_throughput(dep, input_len=I, output_len=O)
    sm = StepModel(dep, BUDGET + 1, grid_points=MAX_THROUGHPUT_GRID)
    dec = np.arange(1, d_max + 1, dtype=float)
    ctx = I + (O - 2) / 2                                # mean context of the O-1 decode steps
    # λ = D/(O − 1) prompts arrive per step, in lumps: a share f = min(1, max(λ, λI/(B − D))) of the steps
    # carries them (one chunk each here: I <= B − D), λ/f prompts of I tokens per prefill-carrying step
    lam = dec / (O - 1)
    f = np.minimum(1.0, np.maximum(lam, lam * I / (BUDGET - dec)))
    t0, w0 = sm.uniform(dec, ctx, 0.0, 0.0)
    t1, w1 = sm.uniform(dec, ctx, lam / f, I)
    t = (1 - f) * t0 + f * t1
    tput = dec * (1 + 1 / (O - 1)) / t                  # decodes and the first tokens of new prompts
    best = int(np.argmax(tput))
    assert r.decode_batch == best + 1
    assert r.output_tok_s == pytest.approx(tput[best], rel=1e-9)
    assert r.output_tok_s >= tput.max() * (1 - 1e-12)    # nothing feasible does better
    assert r.step_time_s == pytest.approx(t[best], rel=1e-9)
    assert r.tok_s_per_user == pytest.approx(1 / t[best], rel=1e-9)
    # power from the mean FLOPs and bytes per step: at the chosen D every step carries prompts (f = 1)
    assert f[best] == 1.0 and r.power_per_gpu_w == pytest.approx(w1[best], rel=1e-9)
    # a batch past the KV limit is never chosen
    assert r.decode_batch <= d_max


def test_interpolated_table_is_close_to_the_exact_step_model(deps):
    """The sweep interpolates a 192-point table; at the chosen batch the exact table agrees to < 0.5 %."""
    I, O = 1000, 201
    dep = deps["bf16"]
    r = max_throughput(dep, input_len=I, output_len=O)
    exact = StepModel(dep, BUDGET + 1)                   # every T tabulated
    Dd = float(r.decode_batch)
    t, _ = exact.uniform(Dd, I + (O - 2) / 2, Dd / (O - 1), I)
    assert r.step_time_s == pytest.approx(float(t), rel=5e-3)


def test_derived_rates(deps):
    I, O = 1000, 201
    r = max_throughput(deps["bf16"], input_len=I, output_len=O)
    assert r.tok_s_per_user == pytest.approx(1 / r.step_time_s, rel=1e-12)
    # one replica; every step yields D decode tokens and D/(O − 1) first tokens of new prompts
    assert r.output_tok_s == pytest.approx(r.decode_batch * (1 + 1 / (O - 1)) / r.step_time_s, rel=1e-12)
    assert r.requests_per_s == pytest.approx(r.output_tok_s / O, rel=1e-12)
    assert r.total_tok_s == pytest.approx(r.output_tok_s * (I + O) / O, rel=1e-12)
    assert r.output_tok_s_per_gpu == pytest.approx(r.output_tok_s, rel=1e-12)           # one GPU


def test_data_parallel_replicas_multiply_throughput_not_per_gpu(deps):
    I, O = 1000, 201
    one = max_throughput(deps["bf16"], input_len=I, output_len=O)
    two = max_throughput(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", num_gpus=2, tp=1, dp=2,
                                         engine=ENGINE, engine_options=OPTIONS), input_len=I, output_len=O)
    assert two.num_gpus == 2
    assert two.output_tok_s == pytest.approx(2 * one.output_tok_s, rel=1e-12)
    assert two.output_tok_s_per_gpu == pytest.approx(one.output_tok_s, rel=1e-12)
    assert two.tok_s_per_user == pytest.approx(one.tok_s_per_user, rel=1e-12)
    assert two.concurrency == pytest.approx(one.concurrency, rel=1e-12)   # per replica


def test_current_reservation_allows_more_concurrency(deps):
    I, O = 1000, 201
    r_max = max_throughput(deps["bf16"], input_len=I, output_len=O)
    r_avg = max_throughput(dep8b(reservation="current"), input_len=I, output_len=O)
    held_avg = math.ceil((I + O / 2) / BLOCK) * BLOCK    # 1100.5 -> 69 blocks = 1104 tokens
    assert held_avg == 1104
    c_avg, d_avg, _, _ = feasible_d_max("bf16", I, O, held_avg)
    assert r_avg.kv_reservation == "current"
    assert r_avg.kv_limit_concurrency == pytest.approx(c_avg, rel=1e-12)
    # the KV limit rises to D = 409; the chosen batch is the throughput argmax below it (the argmax test
    # above), which the measured GEMM tile waves may put a few sequences short of the limit
    assert r_max.decode_batch < r_avg.decode_batch <= d_avg == 409
    assert r_avg.limited_by in ("kv-cache", "throughput peak")
    assert r_avg.concurrency > r_max.concurrency
    assert r_avg.kv_limit_concurrency / r_max.kv_limit_concurrency == pytest.approx(1216 / 1104, rel=1e-12)


def test_block_size_rounds_what_a_sequence_holds(deps):
    I, O = 1000, 201
    r1 = max_throughput(dep8b(block_size=1), input_len=I, output_len=O)     # 1201 tokens exactly
    r64 = max_throughput(dep8b(block_size=64), input_len=I, output_len=O)   # 19 blocks = 1216
    cap = capacity_by_hand("bf16")
    assert r1.kv_limit_concurrency == pytest.approx(cap / (1201 * 131072), rel=1e-12)
    assert r64.kv_limit_concurrency == pytest.approx(cap / (1216 * 131072), rel=1e-12)


def test_token_budget_limit_for_long_prompts_short_outputs(deps):
    I, O = 4096, 16                                      # P = 4096/15 = 273 prompt tokens per decode token
    r = max_throughput(deps["fp8"], input_len=I, output_len=O)
    d_budget = math.floor(8192 / (1 + 4096 / 15))         # = 29
    assert d_budget == 29
    _, d_kv, _, _ = feasible_d_max("fp8", I, O, math.ceil((I + O) / BLOCK) * BLOCK)
    assert d_kv > d_budget
    assert r.limited_by == "token budget" and r.decode_batch == 29
    assert r.decode_batch + r.prefill_tokens_per_step <= 8192


def test_num_requests_caps_concurrency(deps):
    I, O = 1000, 201
    r = max_throughput(deps["bf16"], input_len=I, output_len=O, num_requests=10)
    assert r.decode_batch == 10 and r.limited_by == "requests"
    assert r.concurrency == pytest.approx(10 * (1 + 1 / 200), rel=1e-12)


def test_max_num_seqs_caps_the_decode_batch():
    # 64 running sequences hold D + D/(O - 1) of them: D = 64 / (1 + 1/200) = 12800/201 = 63.68 on average
    # (all 64 slots busy, each prefilling one step in 201), not the whole grid's floor 63
    r = max_throughput(dep8b(max_num_seqs=64), input_len=1000, output_len=201)
    assert r.decode_batch == pytest.approx(12800 / 201, rel=1e-12) and r.limited_by == "max_num_seqs"
    assert r.concurrency == pytest.approx(64.0, rel=1e-12)


def test_model_that_does_not_fit_names_the_kv_capacity():
    with pytest.raises(ValueError, match="KV capacity"):
        max_throughput(model="llama-3.1-70b", gpu="h100_sxm")             # 141 GB of weights on 80 GB


def test_sequence_longer_than_the_kv_cache_is_an_error(deps):
    # one sequence of 500,016 tokens holds 500016 * 131072 B = 65.5 GB > 59.49 GB of KV capacity
    with pytest.raises(ValueError, match=r"KV capacity 59\.49 GB"):
        max_throughput(deps["bf16"], input_len=500_000, output_len=2)


@pytest.mark.parametrize("kw, word", [({"output_len": 1}, "output_len"), ({"input_len": 0}, "input_len"),
                                      ({"num_requests": 0}, "num_requests")])
def test_bad_arguments_are_named(deps, kw, word):
    args = {"input_len": 1000, "output_len": 201, **kw}
    with pytest.raises(ValueError, match=word):
        max_throughput(deps["bf16"], **args)


@pytest.mark.parametrize("kw, word", [({"block_size": 0}, "block_size"), ({"token_budget": 0}, "token_budget"),
                                      ({"block_size": -16}, "block_size"), ({"token_budget": -1}, "token_budget"),
                                      ({"reservation": "greedy"}, "kv_reservation")])
def test_bad_engine_options_are_named(kw, word):
    with pytest.raises(ValueError, match=word):
        dep8b(**kw)


def test_energy_fields_of_the_operating_point(deps):
    r = max_throughput(deps["bf16"], input_len=1000, output_len=201)
    assert 0.15 * 700 <= r.power_per_gpu_w <= 700        # idle (0.15 TDP) .. TDP
    assert r.joules_per_output_token == pytest.approx(r.power_per_gpu_w * 1 / r.output_tok_s, rel=1e-12)
    assert r.output_tokens_per_joule == pytest.approx(1 / r.joules_per_output_token, rel=1e-12)
    assert r.usd_per_million_output_tokens == pytest.approx(PRICE * 1 / 3600 / r.output_tok_s * 1e6, rel=1e-12)


# --- CLI ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_cli_max_throughput_json(runner, deps):
    res = runner.invoke(app, ["estimate", "--scenario", "max-throughput", "--input", "1000", "--output", "201",
                              "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    ref = max_throughput(make_deployment(model="llama-3.1-8b", gpu="h100_sxm"), input_len=1000, output_len=201)
    assert d["concurrency"] == pytest.approx(d["decode_batch"] * (1 + 1 / 200), rel=1e-12)
    assert d["decode_batch"] == ref.decode_batch
    assert d["output_tok_s"] == pytest.approx(ref.output_tok_s, rel=1e-12)
    for key in ("output_tok_s_per_gpu", "tok_s_per_user", "limited_by", "joules_per_output_token",
                "usd_per_million_output_tokens"):
        assert key in d


def test_cli_requests_cap_concurrency(runner):
    res = runner.invoke(app, ["estimate", "--scenario", "max-throughput", "--input", "1000", "--output", "201",
                              "--requests", "10", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["decode_batch"] == 10 and d["concurrency"] == pytest.approx(10 * 201 / 200, rel=1e-12)
    assert d["limited_by"] == "requests"


def test_cli_max_throughput_table(runner):
    res = runner.invoke(app, ["estimate", "--scenario", "max-throughput", "--input", "1000", "--output", "201"])
    assert res.exit_code == 0, res.output
    assert "concurrency" in res.output and "limited by" in res.output and "kv-cache" in res.output


def test_cli_unknown_scenario_is_one_line(runner):
    res = runner.invoke(app, ["estimate", "--scenario", "offline"])
    assert res.exit_code == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "scenario" in lines[0] and "max-throughput" in lines[0]


# --- a memory-bound toy where every step time is (bytes moved) / bandwidth -------------------------------
# Tiny Llama-style config (2 layers, hidden 256, 4 heads of 64, 4 KV heads, MLP 512 gated, vocab 1000, untied)
# on a synthetic GPU: 1e18 FLOP/s, 100 GB HBM at 1e11 B/s, all efficiencies 1, no overheads (no kernel, step
# or engine host time: host_factor 0). Bytes of one
# step with T tokens, S sequences sampled and K cached tokens read (bf16; see test_validate_calibrate.py
# for the per-operator breakdown): 2·(1,310,720 + 13,824·T + 1,024·K) + 2,560·T + 512,000 + 4,512·S.

TOY_GPU = """\
id: toy_gpu
name: Toy memory-bound GPU
bf16_dense_tflops: 1000000
hbm_gb: 100
hbm_tbps: 0.1
scaleup_domain: 1
tdp_w: 100
efficiency: {compute: 1.0, memory: 1.0, kv_memory: 1.0, kernel_overhead_s: 0.0, step_overhead_s: 0.0, host_factor: 0.0}
"""
TOY_CONFIG = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
              "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "tie_word_embeddings": False}
TOY_BW = 1e11
TOY_WEIGHTS = 2 * (2 * (655_360 + 512) + 2 * 256 * 1000 + 256)   # matrices + norms per layer, tables, final norm
TOY_ACT_WIDTH = 4 * 256 + 2 * 512 + (4 + 2 * 4) * 64             # 2,816
TOY_KV_PER_TOKEN = 2 * 2 * 2 * 4 * 64                             # K,V x 2 B x 2 layers x 4 heads x 64 = 2,048


def toy_bytes(T, S, K):
    return 2 * (1_310_720 + 13_824 * T + 1_024 * K) + 2_560 * T + 512_000 + 4_512 * S


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    d = tmp_path_factory.mktemp("toy")
    (d / "gpu.yaml").write_text(TOY_GPU)
    (d / "config.json").write_text(json.dumps(TOY_CONFIG))
    return make_deployment(model=str(d / "config.json"), gpu="toy_gpu", gpu_files=[d / "gpu.yaml"], calibration="none",
                           engine=ENGINE, engine_options=OPTIONS)


def test_toy_limits_by_hand(toy):
    I, O = 1000, 201
    r = max_throughput(toy, input_len=I, output_len=O)
    cap = 0.9 * (100e9 - TOY_WEIGHTS - (BUDGET * TOY_ACT_WIDTH * 2 + SEQS * 1000 * 4) - 1e9)
    assert r.kv_capacity_bytes_per_gpu == pytest.approx(cap, rel=1e-12)
    assert r.kv_limit_concurrency == pytest.approx(cap / (1216 * TOY_KV_PER_TOKEN), rel=1e-12)   # ~35,760
    # KV allows ~35,600 decoding sequences, the token budget floor(8192 / (1 + 1000/200)) = 1365
    assert r.limited_by == "token budget" and r.decode_batch == 1365
    assert r.prefill_tokens_per_step == pytest.approx(1365 * 5, rel=1e-12)


@pytest.mark.parametrize("dec, chunks, T, S, K", [
    (8, [], 8, 8, 8 * 1001),                    # 8 sequences decoding after 1000 cached tokens
    (8, [(0, 512)], 520, 9, 8 * 1001 + 512),     # the same plus a 512-token prompt chunk
    (0, [(0, 512)], 512, 1, 512),                # a lone 512-token prefill
])
def test_step_model_prices_a_step_by_its_bytes(toy, dec, chunks, T, S, K):
    sm = StepModel(toy, 4096)
    t, _ = sm.step(np.full(dec, 1000.0), chunks)
    assert t == pytest.approx(toy_bytes(T, S, K) / TOY_BW, rel=1e-9)


def test_toy_max_throughput_by_hand(toy):
    I, O, Dd = 1000, 201, 1365
    # steady state: T = D + 5D tokens, S = D + D/200 sequences, K = D·(mean context 1099.5 + 1) + (D/200)·1000
    b = toy_bytes(6 * Dd, Dd * (1 + 1 / 200), Dd * (1099.5 + 1) + Dd / 200 * 1000)
    r = max_throughput(toy, input_len=I, output_len=O)
    assert r.step_time_s == pytest.approx(b / TOY_BW, rel=1e-9)
    assert r.output_tok_s == pytest.approx(Dd * (1 + 1 / 200) * TOY_BW / b, rel=1e-9)


def test_vllm_and_trtllm_operating_points_differ():
    """The issue's case (docs/scenarios/max-throughput.md): Llama-3.1-70B TP4 on H100, 1024 in / 1024 out.
    vLLM holds I + O/2 = 1536 tokens per sequence (blocks of 16: 96 blocks), TensorRT-LLM reserves
    I + O = 2048 (blocks of 32); their KV pools follow different rules; trtllm-bench sets its own limits."""
    from inferbound.deploy.engines import get_engine
    from inferbound.workloads.steady_state import held_tokens
    kw = dict(model="llama-3.1-70b", gpu="h100_sxm", tp=4)
    v = max_throughput(make_deployment(**kw, engine="vllm"), input_len=1024, output_len=1024)
    t = max_throughput(make_deployment(**kw, engine="trtllm"), input_len=1024, output_len=1024)
    assert (v.kv_reservation, t.kv_reservation) == ("current", "max")
    assert held_tokens(1024, 1024, "current", 16) == 1536 and held_tokens(1024, 1024, "max", 32) == 2048
    assert v.kv_capacity_bytes_per_gpu != t.kv_capacity_bytes_per_gpu
    # trtllm-bench's limits come from its heuristic over the KV-bound request count (rounded up to a multiple
    # of 32 below 256 requests, engine_rules.trtllm_bench_limits), not trtllm-serve's defaults (2048 sequences)
    p = get_engine("trtllm")
    assert t.max_num_seqs != p.max_seqs.tiers[0].value == 2048
    assert t.max_num_seqs % 32 == 0 and t.max_num_seqs >= t.decode_batch
    assert (v.concurrency, v.output_tok_s) != (t.concurrency, t.output_tok_s)


def test_the_package_name_is_the_function_after_the_submodule_is_imported():
    """``workloads.max_throughput`` is both a submodule and the function the package exports: importing
    the submodule must not leave the package attribute pointing at the module (callers write
    ``from inferbound.workloads import max_throughput``)."""
    import importlib

    import inferbound
    import inferbound.workloads as w
    mod = importlib.import_module("inferbound.workloads.max_throughput")
    from inferbound.workloads import max_throughput as f
    assert f is mod.max_throughput and w.max_throughput is mod.max_throughput and callable(f)
    assert inferbound.max_throughput is mod.max_throughput
