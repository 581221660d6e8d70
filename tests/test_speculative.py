"""Speculative decoding (speculative.py; docs/features/speculative.md): tokens per step, the verify pass,
the draft's cost and memory, the crossover batch, the steady state, the simulator, search, validation
rows and bad input. Expected values are hand computations written out here."""
from __future__ import annotations

import math

import numpy as np
import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound.deploy import speculative
from inferbound.step import speculative as spec_step
from inferbound.step import contract as step
from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.workloads.static import estimate
from inferbound.pricing.kernel_pricing import host_cost
from inferbound.deploy.memory import sequence_kv_bytes

I, O = 1024, 256


def dep70(**spec):
    return make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, engine_options=spec or None)


@pytest.fixture(scope="module")
def base():
    return estimate(dep70(), batch=1, input_len=I, output_len=O)


def test_tokens_per_step_by_hand():
    # τ = 1 + a + a² + … + a^k: a = 0.8, k = 3 -> 1 + 0.8 + 0.64 + 0.512 = 2.952
    assert speculative.tokens_per_step(0.8, 3) == pytest.approx(2.952, rel=1e-12)
    assert speculative.tokens_per_step(0.5, 1) == pytest.approx(1.5, rel=1e-12)
    assert speculative.tokens_per_step(0.0, 5) == pytest.approx(1.0, rel=1e-12)   # nothing accepted
    # a -> 1: every draft accepted, k + 1 tokens
    assert speculative.tokens_per_step(1 - 1e-9, 4) == pytest.approx(5.0, rel=1e-6)
    # arrays (a sweep over acceptance)
    np.testing.assert_allclose(speculative.tokens_per_step(np.array([0.0, 0.5]), 2), [1.0, 1.75])


def test_verify_pass_is_a_decode_read_of_k_plus_one():
    # issue 20: the verify pass is the decode kernel with k + 1 query tokens per sequence (it was a prefill
    # chunk of k + 1 before, priced by the prefill-attention curve): the pairs are decode pairs and the
    # fourth entry counts the query tokens beyond one per sequence
    m = dep70().model
    load = spec_step.verify_load(m, 2, 1000.0, 3)
    assert float(load.tokens) == 8.0 and float(load.sampled) == 8.0 and float(load.sequences) == 2.0
    dec, pre, cached, extra = load.attention[("full", None)]
    # 4 new tokens after 1000 cached: pairs 4·1000 + (1+2+3+4) = 4010 per sequence; reads 1004; 3 extra queries
    assert float(pre) == 0.0
    assert float(dec) == pytest.approx(2 * 4010)
    assert float(cached) == pytest.approx(2 * 1004)
    assert float(extra) == pytest.approx(2 * 3)


def test_batch1_70b_tp4_speeds_up_at_high_acceptance_and_slows_at_zero(base):
    """Done when: acceptance 0.8, k = 3 raises batch-1 tok/s per user of Llama-3.1-70B TP4 on H100 by more
    than 1.5x; acceptance 0 lowers it (verify k + 1 tokens and draft, for one token per step)."""
    for method in ("eagle", "draft:llama-3.2-1b"):
        hi = estimate(dep70(speculative=method, spec_tokens=3, acceptance=0.8), batch=1, input_len=I, output_len=O)
        lo = estimate(dep70(speculative=method, spec_tokens=3, acceptance=0.0), batch=1, input_len=I, output_len=O)
        assert hi.tok_s_per_user > 1.5 * base.tok_s_per_user, method
        assert lo.tok_s_per_user < base.tok_s_per_user, method
        # TPOT = step / τ: the same step at both acceptances, τ = 2.952 against 1
        assert hi.tpot_s * 2.952 == pytest.approx(lo.tpot_s, rel=1e-9)


def test_tpot_is_verify_plus_draft_over_tau():
    dep = dep70(speculative="eagle", spec_tokens=3, acceptance=0.8)
    e = estimate(dep, batch=1, input_len=I, output_len=O)
    ctx = 1024 + (np.arange(32) + 0.5) * (255 / 32) - 0.5  # estimate.decode_contexts for N − 1 = 255 steps
    verify = step.price(dep, spec_step.verify_load(dep.model, 1, ctx, 3))
    dr = speculative.drafter_of(dep)
    draft = spec_step.draft_cost(dr, lambda ld: step.price(dr.deployment, ld), step.uniform(dr.model, decode=1, context=ctx), 1)
    # the verify pass samples k + 1 = 4 logits rows of one sequence, but the engine's per-sequence host
    # work (engines.yaml pricing.host seq_s, times the GPU's host_factor) is paid once: 3 rows too many
    _, seq_s = host_cost(dep.engine, dep.calibration)
    over = 3 * seq_s * dep.gpu.efficiency.host_factor
    assert over > 0
    assert e.tpot_s == pytest.approx(float(np.mean(verify.time + draft.time - over)) / 2.952, rel=1e-9)
    # the head's passes cost something, far less than the 70B target
    assert 0 < float(np.mean(draft.time)) < 0.2 * float(np.mean(verify.time))


def test_draft_memory_by_hand():
    dep = dep70(speculative="eagle", spec_tokens=3, acceptance=0.8)
    dr = speculative.drafter_of(dep)
    # EAGLE head of Llama-3.1-70B (d = 8192, 64 heads / 8 KV of 128, ff 28672) at TP4, bf16:
    #   attention 8192·8192·2 + 8192·1024·2 = 150,994,944; MLP 3·8192·28672 = 704,643,072  -> /4 · 2 B
    #   norms 2·8192 replicated · 2 B; fc 2·8192² · 2 B / 4
    layer = (150_994_944 + 704_643_072) / 4 * 2 + 2 * 8192 * 2
    fc = 2 * 8192 ** 2 * 2 / 4
    assert dr.weight_bytes_per_gpu() == pytest.approx(layer + fc, rel=1e-12)
    # KV per GPU: target 2·80 layers·(8/4) heads·128·2 B = 81,920 B per token at context + k drafted slots;
    # the head's own layer 2·1·2·128·2 = 1,024 B per token
    assert float(sequence_kv_bytes(dep, 1, 1000)) == pytest.approx(81_920 * 1003 + 1_024 * 1000, rel=1e-12)
    # the engine's KV cache loses the head's weights
    assert dep.runtime.speculative == "eagle"
    from inferbound.deploy.runtime import kv_capacity_bytes
    plain = dep70()
    assert kv_capacity_bytes(plain, plain.runtime) - kv_capacity_bytes(dep, dep.runtime) == \
        pytest.approx(layer + fc, rel=1e-9)


def test_mtp_modules_from_the_config():
    dep = make_deployment(model="deepseek-ai/DeepSeek-R1", gpu="h200_sxm", tp=8, ep=8,
                          engine_options={"speculative": "mtp", "spec_tokens": 3})
    assert dep.model.mtp_layers == 1            # config.json num_nextn_predict_layers
    assert dep.runtime.acceptance == 0.85       # data/features.yaml, DeepSeek-V3 report (printed as a note)
    assert any("acceptance defaults to 0.85" in n for n in dep.warnings)
    dr = speculative.drafter_of(dep)
    assert dr.model.num_layers == 1 and dr.model.layers[0].moe  # one MoE decoder layer per pass
    with pytest.raises(ValueError, match="speculative='mtp' needs a model with multi-token-prediction"):
        dep70(speculative="mtp", spec_tokens=2, acceptance=0.5)


def test_crossover_batch_where_verify_cost_meets_tau():
    # a = 0.6 (issue 20: with the verify read as a decode, the k + 1 queries share one KV read, and at
    # a = 0.8 speculation pays at every batch up to 4,096 here; at 0.6, τ = 2.176, it stops within the sweep)
    dep = dep70(speculative="eagle", spec_tokens=3, acceptance=0.6)
    b = spec_step.crossover_batch(dep, 1152)
    assert b is not None and b > 1

    def ratio(batch):
        cost, tau = spec_step.step_cost(dep, batch, 1152)
        return float(cost.time) / tau / float(step.decode(dep, batch, 1152).time)
    assert ratio(b) >= 1.0 > ratio(b - 1)   # the smallest batch where t_step/τ >= t_decode
    assert ratio(1) < 1 / 1.5               # batch 1: helps by > 1.5x (τ = 2.176, the step ~1.2x a decode)
    # near the compute-bound batch (GEMMs compute-bound from 258 here) it no longer pays
    assert b < 2 * estimate(dep70(), batch=8, input_len=I, output_len=O).decode_gemm_compute_bound_batch


def test_steady_state_costs_throughput_at_zero_acceptance():
    from inferbound.workloads import max_throughput
    plain = max_throughput(make_deployment(model="llama-3.1-8b", gpu="h100_sxm"), input_len=1000, output_len=201)
    zero = max_throughput(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options=dict(
        speculative="ngram", spec_tokens=3, acceptance=0.0)), input_len=1000, output_len=201)
    assert zero.tokens_per_step == 1.0
    assert zero.output_tok_s < plain.output_tok_s
    # the verify pass takes k + 1 = 4 tokens of the budget per decode and 3 more KV slots per sequence
    assert zero.kv_limit_concurrency < plain.kv_limit_concurrency


def test_serving_concurrency_one_tpot_is_step_over_tau():
    from inferbound.workloads.serving import serving
    dep = dep70(speculative="eagle", spec_tokens=3, acceptance=0.8)
    s = serving(dep, concurrency=1, input_len=I, output_len=O)
    p = serving(dep70(), concurrency=1, input_len=I, output_len=O)
    assert s.tpot_s < p.tpot_s / 1.5


def test_simulator_draws_tau_tokens_per_step():
    from inferbound.sim import simulate
    r = simulate(dep70(speculative="eagle", spec_tokens=3, acceptance=0.8), rate=1, requests=30, input_len=256,
                 output_len=200, seed=0)
    s = r.summary
    # E[1 + j] = τ = 2.952; about 30·199/2.95 ≈ 2000 verify passes: within 4 %
    assert s["tokens_per_step"] == pytest.approx(2.952, rel=0.04)
    plain = simulate(dep70(), rate=1, requests=30, input_len=256, output_len=200, seed=0).summary
    assert s["tpot_ms_mean"] < plain["tpot_ms_mean"] / 1.5
    assert s["output_tokens"] == plain["output_tokens"] == 30 * 200   # no token lost or added


def test_search_sweeps_k():
    from inferbound.search import search
    r = search("llama-3.1-70b", gpus=["h100_sxm"], max_gpus=4, objective="tok_s_per_user", input_len=I,
               output_len=O, dtypes=["bf16"], engine_options=dict(speculative="eagle", spec_tokens=3, acceptance=0.8))
    ks = sorted({lab.rsplit("k=", 1)[1] for lab in r.labels})
    assert ks == ["0", "1", "2", "3"]   # issue 20: k = 0 (no speculation) is searched too
    assert r.table[0].layout.endswith("spec k=3")   # per user, more drafts at a = 0.8 win


def test_validation_rows_run_mtp():
    from inferbound.validation.predict import row_speculative
    assert row_speculative("mtp:3") == {"speculative": "mtp", "spec_tokens": 3}
    assert row_speculative("draft:llama-3.2-1b:4") == {"speculative": "draft:llama-3.2-1b", "spec_tokens": 4}
    assert row_speculative("eagle") == {"speculative": "eagle"}


@pytest.mark.parametrize("opts, words", [
    ({"speculative": "eagle", "spec_tokens": 3, "acceptance": 1.0}, ("acceptance=1.0", "[0, 1)")),
    ({"speculative": "eagle", "spec_tokens": 3, "acceptance": -0.1}, ("acceptance=-0.1",)),
    ({"speculative": "eagle", "spec_tokens": 0, "acceptance": 0.5}, ("spec_tokens=0",)),
    ({"speculative": "medusa", "spec_tokens": 3, "acceptance": 0.5}, ("speculative='medusa'", "draft:MODEL")),
    ({"speculative": "eagle", "acceptance": 0.5}, ("needs spec_tokens",)),
    ({"speculative": "eagle", "spec_tokens": 2}, ("needs acceptance",)),
    ({"spec_tokens": 2}, ("spec_tokens=2 given without speculative",)),
])
def test_bad_values_name_the_field(opts, words):
    with pytest.raises(ValueError) as e:
        dep70(**opts)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("args, words", [
    (["--speculative", "eagle", "--spec-tokens", "3", "--acceptance", "1"], ("acceptance", "< 1")),
    (["--speculative", "eagle", "--spec-tokens", "0", "--acceptance", "0.5"], ("spec_tokens", ">= 1")),
    (["--speculative", "lookahead", "--spec-tokens", "3", "--acceptance", "0.5"], ("speculative", "lookahead")),
])
def test_cli_one_line_errors(args, words):
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", *args])
    assert_one_line_error(r, *words)


def test_cli_prints_tau_and_crossover():
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--batch", "1", "--speculative", "eagle",
                                 "--spec-tokens", "3", "--acceptance", "0.8"])
    assert r.exit_code == 0, r.output
    assert "2.952 tokens per step" in r.output
    assert "stops raising tok/s from batch" in r.output
    assert math.isfinite(speculative.tokens_per_step(0.8, 3))


def test_simulator_blocks_balance_with_drafted_slots():
    """Blocks for C + k + 1 tokens per verify step, returned at the end: free == pool after the run, also
    under preemption."""
    from inferbound.sim import simulate
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm",
                          engine_options=dict(speculative="eagle", spec_tokens=4, acceptance=0.7))
    res = simulate(dep, rate=float("inf"), requests=30, input_len=1024, output_len=300, num_blocks=600, seed=2)
    assert res.summary["completed"] == 30 and res.summary["preemptions"] > 0
    assert res.summary["output_tokens"] == 30 * 300
    for rep in res.run.replicas:
        assert rep.pool.free + sum(rep.cache.blocks.values()) == rep.pool.num_blocks
