"""Images in the steady states (workloads/images.py): a request with N images is the text request with its
image tokens in the prompt, plus the towers' encoder pass in its prefill work, priced in the step kinds that
carry prompt chunks (max throughput, serving) and in each prompt's own steps (TTFT).

The towers' FLOPs per image are worked out by hand from google/gemma-3-27b-it's vision_config (SigLIP
so400m at 896 px, as tests/test_towers.py works out Gemma-3-4B's): the expected differences below are
those FLOPs, never the code's output read back."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.runtime import offline_runtime
from inferbound.step.table import StepModel
from inferbound.step.towers import tower_prefill
from inferbound.workloads import steady_state
from inferbound.workloads.images import with_images
from inferbound.workloads.max_throughput import MAX_THROUGHPUT_GRID, bench_limits, max_throughput
from inferbound.workloads.serving import serving

MODEL = "google/gemma-3-27b-it"
TEXT, OUT, IMAGES = 1000, 128, 2


def _siglip_896_flops() -> float:
    """FLOPs of one 896 px image through gemma-3-27b-it's SigLIP tower and projector, by hand."""
    d, ff, L, p, C = 1152, 4304, 27, 14, 3             # vision_config: hidden, intermediate, layers, patch, RGB
    t = 5376                                          # text_config hidden_size: the projection's output
    n = (896 // p) ** 2                               # 64 x 64 = 4096 encoder positions
    e = 256                                           # mm_tokens_per_image: 4096 positions pooled 4x4
    layer = 4 * d * d + 4 * d + 2 * d * ff + ff + d   # q, k, v, out with biases; fc1, fc2 with biases
    patch = C * p * p * d + d                         # the patch convolution with its bias
    linear = 2 * (L * layer + patch) * n               # 2 FLOPs a weight a position
    attention = L * 4 * n * n * d                     # QK^T and PV over all 4096 positions, every layer
    projector = 2 * d * t * e                         # mm_input_projection over the 256 pooled embeddings
    return linear + attention + projector


@pytest.fixture(scope="module")
def dep():
    return make_deployment(model=MODEL, gpu="h100_sxm", num_gpus=2)


def _step_model(dep, rt):
    g = dep.par.attention_groups
    return StepModel(dep, rt.token_budget * g + g, grid_points=MAX_THROUGHPUT_GRID)


def test_the_hand_flops_are_the_towers():
    (tw,) = make_deployment(model=MODEL, gpu="h100_sxm", num_gpus=2).model.towers
    assert _siglip_896_flops() == pytest.approx(5.4657987e12, rel=1e-7)   # 5.466 TFLOP an image
    assert tw.flops_per_image == pytest.approx(_siglip_896_flops(), rel=1e-12)
    assert tw.tokens_per_image == 256


def test_image_tokens_join_every_prompt_of_a_mix(dep):
    text = steady_state.as_mix(TEXT, OUT)
    mix = with_images(dep.model, text, IMAGES)
    assert mix.inputs == (TEXT + IMAGES * 256.0,) and mix.outputs == text.outputs and mix.images == IMAGES
    assert with_images(dep.model, text, 0) is text
    with pytest.raises(ValueError, match="needs a multimodal checkpoint"):
        with_images(make_deployment(model="llama-3.1-8b", gpu="h100_sxm").model, text, 1)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])   # mixed batches; prefill-first steps
def test_the_steady_state_adds_the_towers_to_the_prefill_work(engine):
    d_ = make_deployment(model=MODEL, gpu="h100_sxm", num_gpus=2, engine=engine)
    rt = d_.runtime
    sm = _step_model(d_, rt)
    text = steady_state.as_mix(TEXT + IMAGES * 256, OUT)          # the same prompt as text tokens only
    img = with_images(d_.model, steady_state.as_mix(TEXT, OUT), IMAGES)
    decode = np.array([4.0, 32.0, 96.0])
    a, b = steady_state.steps(sm, rt, decode, img), steady_state.steps(sm, rt, decode, text)
    # per decode step, lambda = D/(O - 1) new prompts bring lambda*N images, each F/2 FLOPs per GPU (TP2)
    lam = decode / (OUT - 1)
    expected = lam * IMAGES * _siglip_896_flops() / 2
    np.testing.assert_allclose(a.per_token("flops") - b.per_token("flops"), expected, rtol=1e-9)
    # the prefill-carrying kind runs one tower pass for its images: freq_1 steps of lambda*N/freq_1 images
    f = np.asarray(a.freq[1], dtype=float)
    np.testing.assert_allclose(a.freq[1], b.freq[1], rtol=1e-12)
    tower = tower_prefill(d_, lam * IMAGES / f)
    np.testing.assert_allclose(a.per_token("time") - b.per_token("time"), f * tower.time, rtol=1e-9)
    # a prompt's own steps (TTFT): + the pass of its own N images, 2F/2 FLOPs per GPU
    one = tower_prefill(d_, IMAGES)
    assert float(one.flops) == pytest.approx(IMAGES * _siglip_896_flops() / 2, rel=1e-12)
    (sa,), (sb,) = (steady_state.prefill_seconds(sm, rt, decode, m) for m in (img, text))
    np.testing.assert_allclose(sa - sb, float(one.time), rtol=1e-9)


def test_serving_with_images_is_the_longer_text_prompt_plus_the_tower(dep):
    a = serving(dep, rate=2.0, input_len=TEXT, output_len=OUT, images=IMAGES)
    b = serving(dep, rate=2.0, input_len=TEXT + IMAGES * 256, output_len=OUT)
    assert a.input_len == b.input_len == TEXT + IMAGES * 256
    assert "+512 image tokens a prompt: 2 images" in a.lengths
    assert any("images=2 per request" in n for n in a.notes)
    tower = float(tower_prefill(dep, IMAGES).time)
    # the towers lengthen each prompt's steps by their pass, and the prefill steps others' prompts share
    assert a.ttft_s["mean"] >= b.ttft_s["mean"] + tower * (1 - 1e-9)
    assert a.tpot_s > b.tpot_s
    assert a.requests_per_s == pytest.approx(b.requests_per_s, rel=1e-12)   # the offered rate, open loop


def test_closed_loop_with_images_is_a_steady_state_with_a_note(dep):
    s = serving(dep, concurrency=8, input_len=TEXT, output_len=OUT, images=1)
    assert s.wave_step is None and "images=1 per request: the closed loop's wave model" in s.notes[0]
    assert s.littles_law == pytest.approx(1.0, rel=1e-9)


def test_max_throughput_prices_the_towers_in_its_steps(dep):
    a = max_throughput(dep, input_len=TEXT, output_len=OUT, images=IMAGES)
    b = max_throughput(dep, input_len=TEXT + IMAGES * 256, output_len=OUT)
    assert a.input_len == b.input_len and a.output_tok_s < b.output_tok_s
    assert any("images=2 per request" in n for n in a.notes)
    text = steady_state.as_mix(TEXT + IMAGES * 256, OUT)
    img = with_images(dep.model, steady_state.as_mix(TEXT, OUT), IMAGES)
    rt = bench_limits(dep, offline_runtime(dep), text)
    sm = _step_model(dep, rt)
    d = float(a.decode_batch)
    ta, fa, _, _ = steady_state.step_cost(sm, rt, d, img)
    tb, fb, _, _ = steady_state.step_cost(sm, rt, d, text)
    assert float(fa - fb) == pytest.approx(d / (OUT - 1) * IMAGES * _siglip_896_flops() / 2, rel=1e-9)
    assert a.step_time_s == pytest.approx(float(ta), rel=1e-9)
    # throughput counts the decodes and first tokens of the step: D (1 + p) / t
    assert a.output_tok_s == pytest.approx(d * (1 + 1 / (OUT - 1)) / float(ta), rel=1e-9)


def test_a_one_wave_run_carries_the_towers_in_its_prefill_steps(dep):
    n = 50                                            # fewer than the requests in flight: one wave
    a = max_throughput(dep, input_len=TEXT, output_len=OUT, images=IMAGES, num_requests=n)
    b = max_throughput(dep, input_len=TEXT + IMAGES * 256, output_len=OUT, num_requests=n)
    steps = -(-n * (TEXT + IMAGES * 256) // a.token_budget)   # ceil(50 * 1512 / 16384) = 5 prefill steps
    assert steps == 5
    per_step = tower_prefill(dep, n * IMAGES / steps)        # 20 images a step
    assert float(per_step.flops) == pytest.approx(20 * _siglip_896_flops() / 2, rel=1e-12)
    assert a.run_s - b.run_s == pytest.approx(steps * float(per_step.time), rel=1e-9)


def _one_line(r, code=2):
    return r.exit_code == code and len(r.output.strip().splitlines()) == 1


def test_cli_serving_and_max_throughput_take_images():
    base = ["estimate", MODEL, "--gpu", "h100_sxm", "--num-gpus", "2", "--input", "1000", "--output", "128",
            "--images", "2"]
    r = CliRunner().invoke(app, [*base, "--scenario", "serving", "--rate", "2"])
    assert r.exit_code == 0, r.output
    assert "images=2 per request" in r.output and "Serving" in r.output
    r = CliRunner().invoke(app, [*base, "--scenario", "max-throughput", "--requests", "500"])
    assert r.exit_code == 0, r.output
    assert "images=2 per request" in r.output
    r = CliRunner().invoke(app, [*base, "--scenario", "serving", "--rate", "2", "--prefill-layout", "tp=2"])
    assert _one_line(r) and "not on disaggregated pools" in r.output


def test_compare_takes_images_in_serving(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text("workload: {scenario: serving, rate: 2, input_len: 1000, output_len: 128, images: 2}\n"
                 f"deployments:\n  - {{model: {MODEL}, gpu: h100_sxm, num_gpus: 2}}\n")
    r = CliRunner().invoke(app, ["compare", str(f), "--json"])
    assert r.exit_code == 0, r.output
    assert "images=2 per request" in r.output


def test_simulate_bench_fleet_refuse_images_in_one_line(tmp_path):
    r = CliRunner().invoke(app, ["simulate", MODEL, "--gpu", "h100_sxm", "--num-gpus", "2", "--images", "2"])
    assert _one_line(r) and "--images" in r.output
    r = CliRunner().invoke(app, ["bench", "--serve", f"vllm serve {MODEL} -tp 2", "--", "vllm", "bench", "serve",
                                 "--dataset-name", "random-mm", "--num-prompts", "10"])
    assert _one_line(r) and "'random-mm'" in r.output and "allowed: random" in r.output
    spec = tmp_path / "fleet.yaml"
    spec.write_text("traffic: {rate: {mean: 1}, duration: 1m, input_len: 200, output_len: 50}\n"
                    f"pools:\n  - {{name: a, model: {MODEL}, gpu: h100_sxm, tp: 2, replicas: 1, images: 2}}\n")
    r = CliRunner().invoke(app, ["fleet", str(spec)])
    assert _one_line(r) and "images unknown; allowed:" in r.output


def test_the_api_takes_images_in_serving_and_max_throughput():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from inferbound.web import create_app
    client = TestClient(create_app())
    body = {"model": MODEL, "gpu": "h100_sxm", "num_gpus": 2, "input_len": 100, "output_len": 64, "images": 2}
    r = client.post("/api/estimate", json={**body, "scenario": "serving", "rate": 1})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["input_len"] == 100 + 2 * 256 and any("images=2 per request" in n for n in out["notes"])
    assert out["view"]["step"]["time_s"] == pytest.approx(out["step_time_s"], rel=1e-9)   # the view sees the towers
    r = client.post("/api/estimate", json={**body, "scenario": "max-throughput", "requests": 200})
    assert r.status_code == 200, r.text
    assert r.json()["input_len"] == 100 + 2 * 256
    r = client.post("/api/estimate", json={**body, "scenario": "serving", "rate": 1, "model": "llama-3.1-8b"})
    assert r.status_code == 422 and "needs a multimodal checkpoint" in r.text
