"""Failures a smoke sweep of the faces found (task M), each reproduced as the user met it.

1. A checkpoint whose config.json states no ``max_position_embeddings`` (Falcon-40B, Falcon-Mamba) on an engine
   whose token budget is ``max(max_model_len, 2048)`` (vLLM 0.6.3 without chunked prefill): ``TypeError: int()
   argument ... 'NoneType'`` from deploy/runtime.py for every scenario.
2. ``estimate --scenario serving --concurrency N --output 2`` in closed-loop waves: the view (memory bar and
   time split) priced the random-arrival step kinds at the waves' decode batch and failed with "steps of up to
   131200 tokens exceed the tabulated max_tokens=2049".
3. A static batch with ``--output 1`` reported a TPOT larger than its end-to-end latency without a word.
"""
import json

import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.workloads.scenario_view import serving_view
from inferbound.workloads.serving import serving
from inferbound.workloads.static import estimate
from inferbound.workloads.steady_state import as_mix


def test_vllm_063_budget_without_a_context_length_in_the_config():
    # vLLM 0.6.3 (engines.yaml): tiers [{min_total_gib: 0, value: 2048}], at_least_max_model_len, no chunked
    # prefill, so budget = max(max_model_len, 2048) where the config states the length:
    llama = make_deployment("llama-3.1-8b", "h200_sxm", engine="vllm@0.6.3")  # max_position_embeddings 131072
    assert llama.runtime.token_budget == max(131072, 2048) == 131072
    falcon180 = make_deployment("falcon-180b", "h200_sxm", num_gpus=8, engine="vllm@0.6.3")  # states 2048
    assert falcon180.runtime.token_budget == max(2048, 2048)
    # Falcon-40B's config.json has no max_position_embeddings: FalconConfig's default 2048 fills it (task P1,
    # test_falcon_context_is_the_config_class_default below), so budget = max(2048, 2048)
    falcon40 = make_deployment("falcon-40b", "h200_sxm", num_gpus=2, engine="vllm@0.6.3")
    assert falcon40.model.max_position_embeddings == 2048
    assert falcon40.runtime.token_budget == max(2048, 2048)
    # Falcon-Mamba's config class has no context length at all: the max(·) term is dropped, and said so
    mamba = make_deployment("falcon-mamba-7b", "h200_sxm", engine="vllm@0.6.3")
    assert mamba.model.max_position_embeddings is None
    assert mamba.runtime.token_budget == 2048
    assert any("states no max_position_embeddings" in w and "2048" in w for w in mamba.warnings)
    est = estimate(falcon40, batch=1, input_len=1024, output_len=16)
    assert est.e2e_s == pytest.approx(est.ttft_s + 15 * est.tpot_s, rel=1e-12)  # E2E = TTFT + (N − 1)·TPOT


def test_closed_loop_waves_with_two_output_tokens_have_a_view():
    # Mistral-7B on 2x L40S TP2, vLLM 0.33: 48 GB < 70 GiB, so token budget 2048; max_num_seqs 256
    dep = make_deployment("mistral-7b-instruct-v0.3", "l40s", num_gpus=2, tp=2)
    assert (dep.runtime.token_budget, dep.runtime.max_num_seqs) == (2048, 256)
    s = serving(dep, concurrency=1024, input_len=1024, output_len=2)
    assert s.wave_step is not None  # fixed lengths, back-to-back clients: waves (closed_loop.py)
    # 256 running of 1024 clients; D = running·(O − 1)/O = 256·1/2 = 128 decodes
    assert s.in_service == 256 and s.decode_batch == 128
    # a random-arrival step at D = 128 would carry p = 1/(O − 1) = 1 prompt per decode: 128·(1024 + 1) = 131,200
    # tokens, past the 2048-token budget (the old error); the waves' decode step alone is priced instead
    view = serving_view(dep, s, as_mix(1024, 2))["step"]
    assert view["decode_batch"] == 128 and view["tokens_per_step"] == 1.0
    assert view["time_s"] == s.tpot_s and view["bound"] == s.bound  # one TPOT, one bound for one operating point


def test_cli_serving_waves_output_two_runs():
    r = CliRunner().invoke(app, ["estimate", "mistral-7b-instruct-v0.3", "--gpu", "l40s", "--num-gpus", "2", "--tp",
                                 "2", "--input", "1024", "--output", "2", "--scenario", "serving", "--concurrency",
                                 "1024", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["view"]["step"]["decode_batch"] == 128


def test_static_one_output_token_says_tpot_is_for_reference():
    est = estimate(make_deployment("llama-3.1-8b", "h100_sxm"), batch=4096, input_len=1, output_len=1)
    assert est.e2e_s == est.ttft_s  # E2E = TTFT + (1 − 1)·TPOT: no decode step runs
    assert est.tpot_s > est.e2e_s   # the decode step that would follow (4096 sequences) outlasts the prefill
    assert any(w.startswith("output_len=1: no decode step runs") for w in est.warnings)
    two = estimate(make_deployment("llama-3.1-8b", "h100_sxm"), batch=4096, input_len=1, output_len=2)
    assert not any("output_len=1" in w for w in two.warnings)


def test_serving_long_prompt_short_output_is_served_not_refused():
    """4. ``estimate --scenario serving --input 32768 --output 2 --rate 0.01`` was refused with "no request fits the
    KV cache" although the KV cache holds 6 such requests: the token budget bound the mean decode batch below one.
    vLLM 0.33 on an H100 (80 GB >= 70 GiB): budget 8192. p = 1/(O − 1) = 1 prompt per decode, so a step of D decodes
    carries D·(1 + 32768) tokens: D_max = 8192/32769 = 0.25, C_max = D_max·(1 + p) = 0.5 requests in service."""
    dep = make_deployment("llama-3.1-8b", "h100_sxm")
    assert dep.runtime.token_budget == 8192
    r = serving(dep, rate=0.01, input_len=32768, output_len=2)
    assert r.output_tok_s == pytest.approx(0.01 * 2, rel=1e-9)          # R·O
    assert r.e2e_s["mean"] == pytest.approx(r.ttft_s["mean"] + 1 * r.tpot_s, rel=1e-9)  # TTFT + (O − 1)·TPOT
    assert r.in_service == pytest.approx(0.01 * r.e2e_s["mean"], rel=1e-4)  # Little: C = λ·E2E
    assert r.in_service < 8192 / 32769 * 2
    with pytest.raises(ValueError, match=r"^rate=1 req/s overloads .*token budget holds 0\.5 requests per replica"):
        serving(dep, rate=1.0, input_len=32768, output_len=2)


def test_max_throughput_names_the_cap_that_binds():
    """5. ``--scenario max-throughput --max-num-seqs 1`` said "no request fits: KV capacity ... holds 363 sequences":
    one running sequence is D = 1/(1 + p) = 1/(1 + 1/255) = 0.996 decodes beside its prompt, below the whole batch
    of one that max-throughput prices; the error now names that cap."""
    from inferbound.workloads.max_throughput import max_throughput
    dep = make_deployment("llama-3.1-8b", "h100_sxm", engine_options={"max_num_seqs": 1})
    with pytest.raises(ValueError, match=r"^no whole decode batch fits .*the max_num_seqs cap allows D = 0\.996 "):
        max_throughput(dep, input_len=1024, output_len=256)
    assert 1 / (1 + 1 / 255) == pytest.approx(0.996, abs=5e-4)
    tiny = make_deployment("deepseek-r1", "l40s")  # 671B weights on one 48 GB GPU: the KV cache holds nothing
    with pytest.raises(ValueError, match=r"^no request fits: KV capacity 0\.00 GB"):
        max_throughput(tiny, input_len=1024, output_len=256)


def test_serving_rate_past_the_decodes_cap_is_overload():
    """6. ``estimate llama-2-13b-hf --gpu h20 --num-gpus 8 --input 1024 --output 2 --scenario serving --rate 50``
    reported 50 req/s (100 tok/s) at 100% busy, above the 67 tok/s max-throughput gives: past C ≈ 9.5 the decodes
    the requests in service ask for, C/b·share, were clipped at D_max while λ = C/E2E kept growing.
    vLLM 0.33 on H20 (96 GB >= 70 GiB): budget 8192; O = 2, p = 1: D_max = 8192/(1 + 1024) = 7.99."""
    from inferbound.workloads import serving as S
    dep = make_deployment("llama-2-13b-hf", "h20", num_gpus=8)
    assert (dep.par.tp, dep.runtime.token_budget) == (8, 8192)
    r = S._Replica(dep, as_mix(1024, 2), False, 0, 0)
    assert r.d_max == pytest.approx(8192 / 1025, rel=1e-9)
    assert r.c_caps == pytest.approx(2 * 8192 / 1025, rel=1e-9)  # C = D_max·(1 + p)
    assert r.c_max < r.c_caps
    p = r.point(r.c_max)
    assert p["free"] == pytest.approx(r.d_max, rel=1e-6)  # at C_max the decodes asked for just reach D_max
    # there λ·O equals what the steps serve, b·D·(1 + p)/t (Little with share = (O − 1)·t/E2E), to the refinement
    assert p["c"] / p["mean_e2e"] * 2 == pytest.approx(p["b"] * p["d"] * 2 / p["t"], rel=1e-2)
    x_max = p["c"] / p["mean_e2e"]
    with pytest.raises(ValueError, match=r"^rate=50 req/s overloads 8x h20 TP8: it serves at most "):
        serving(dep, rate=50.0, input_len=1024, output_len=2)
    assert 30 < x_max < 50
    ok = serving(dep, rate=30.0, input_len=1024, output_len=2)
    assert ok.output_tok_s == pytest.approx(30.0 * 2, rel=1e-9) and ok.decode_batch <= r.d_max


def test_falcon_context_is_the_config_class_default():
    """7. Falcon-40B's config.json states no ``max_position_embeddings``, so no context check ran and a 131,072-token
    prompt was accepted without --allow-long-context. transformers 5.24.0 FalconConfig: ``max_position_embeddings:
    int = 2048`` (models/falcon/configuration_falcon.py), the value the config object holds when the key is absent."""
    from inferbound import load_model
    m = load_model("falcon-40b")
    assert m.max_position_embeddings == 2048
    assert "max_position_embeddings absent: using the falcon config class default 2048 (transformers); set it if " \
           "the checkpoint differs" in m.warnings
    assert load_model("tiiuae/falcon-180B").max_position_embeddings == 2048  # stated in its config: no note
    assert not any("max_position_embeddings" in w for w in load_model("tiiuae/falcon-180B").warnings)
    # a stated length wins over the class default
    from inferbound.model import catalog_files, parse_config
    raw = json.loads(catalog_files()["tiiuae/falcon-40b"].read_text())
    assert "max_position_embeddings" not in raw
    assert parse_config({**raw, "max_position_embeddings": 8192}).max_position_embeddings == 8192
    # 131,072 + 128 tokens > 2,048: refused in one line, exit 2
    args = ["estimate", "falcon-40b", "--gpu", "h200_sxm", "--num-gpus", "2", "--input", "131072", "--output", "128"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2
    assert "input_len=131072 + output_len=128 = 131,200 tokens exceeds max_position_embeddings=2,048" in r.output


def test_shared_prefix_longer_than_the_prompt_is_refused():
    """8. ``--shared-prefix-len 200000 --input 16`` was accepted silently (the hit capped at I − 1 = 15, whole
    blocks: 0 tokens). The option is a system prompt every request shares (docs/features/prefix-caching.md), a part
    of each prompt, so a fixed prompt of I tokens holds at most S = I of it."""
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--input", "16", "--shared-prefix-len", "200000"])
    assert r.exit_code == 2
    line = ("shared_prefix_len=200000 exceeds input_len=16: the shared prefix is a system prompt inside every "
            "request's prompt; allowed: shared_prefix_len <= input_len (16)")
    assert line in r.output and len(r.output.strip().splitlines()) == 1
    # S = I: every prompt is the system prompt; the hit is ⌊(I − 1)/b⌋·b = ⌊1023/16⌋·16 = 1008 tokens (vLLM block 16)
    from inferbound.deploy import prefix
    dep = make_deployment("llama-3.1-8b", "h100_sxm", engine_options={"shared_prefix_len": 1024})
    prefix.check_shared_prefix(dep.runtime, 1024)
    assert float(prefix.hit_tokens(dep.runtime, 1024)) == 1008.0
    with pytest.raises(ValueError, match=r"^shared_prefix_len=1024 exceeds input_len=1023: "):
        prefix.check_shared_prefix(dep.runtime, 1023)
    ok = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--input", "1024", "--shared-prefix-len", "1024"])
    assert ok.exit_code == 0, ok.output
    # lengths that vary are not refused: a class shorter than S hits ⌊(I_c − 1)/b⌋·b (the formula's cap)
    assert float(prefix.hit_tokens(dep.runtime, 100)) == 96.0  # ⌊99/16⌋·16


def test_shared_prefix_longer_than_the_prompt_is_refused_by_the_api():
    from fastapi.testclient import TestClient

    from inferbound.web import create_app
    r = TestClient(create_app()).post("/api/estimate", json={"model": "llama-3.1-8b", "input_len": 16,
                                                             "shared_prefix_len": 200000})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "shared_prefix_len"]
    assert r.json()["detail"][0]["msg"].endswith("allowed: shared_prefix_len <= input_len (16)")
