"""fp8 and fp4 checkpoints run as shipped (deploy/checkpoint.py, hardware/precision.py quantized_act_dtype):
fp8 weights with no --act-dtype compute W8A8 on GPUs with fp8 tensor cores (vLLM fp8.py / docs
features/quantization/fp8.md, SGLang fp8, TensorRT-LLM FP8) unless the checkpoint is weight-only, and
weight-only at bf16 elsewhere (vLLM's FP8 Marlin on Ampere); NVFP4 runs FP4 GEMMs on Blackwell. An explicit
--act-dtype always wins. And a stated concurrency wins in max-throughput (workloads/max_throughput.py).
"""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferbound import make_deployment
from inferbound.cli import app
from inferbound.model import count_params, load_model
from inferbound.model.weights import weight_bytes_by_component
from inferbound.validation.dataset import parse_row
from inferbound.validation.predict import DEFAULT_OFFLINE_REQUESTS, deployment_for, predict_max_throughput
from inferbound.workloads.max_throughput import max_throughput, with_concurrency
from inferbound.workloads.static import estimate

LLAMA_8B = dict(model_type="llama", num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                num_key_value_heads=8, intermediate_size=14336, vocab_size=128256, torch_dtype="bfloat16")
#: compressed-tensors FP8 weight-only (W8A16): a weights scheme and ``input_activations: null``
FP8_WEIGHT_ONLY = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
    "input_activations": None}}, "ignore": ["lm_head"]}
#: compressed-tensors FP8-dynamic (W8A8): dynamic per-token fp8 activations
FP8_DYNAMIC = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
    "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
    "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True}}}, "ignore": ["lm_head"]}


def _compute(model, gpu, **kw):
    d = make_deployment(model=model, gpu=gpu, **kw)
    return d.dtypes.act, d.compute_dtype


# (model, gpu, options) -> (act dtype, compute dtype), by hand from the rule in the module docstring
CASES = [
    # --weight-dtype fp8 on a bf16 checkpoint (online fp8, vLLM --quantization fp8: W8A8 dynamic)
    ("llama-3.1-8b", "h100_sxm", {"weight_dtype": "fp8"}, ("fp8", "fp8")),         # Hopper: fp8 tensor cores
    ("llama-3.1-8b", "h200_sxm", {"weight_dtype": "fp8"}, ("fp8", "fp8")),
    ("llama-3.1-8b", "l40s", {"weight_dtype": "fp8"}, ("fp8", "fp8")),             # Ada (SM89)
    ("llama-3.1-8b", "b200_hgx", {"weight_dtype": "fp8"}, ("fp8", "fp8")),         # Blackwell
    ("llama-3.1-8b", "mi300x", {"weight_dtype": "fp8"}, ("fp8", "fp8")),           # CDNA3 lists fp8
    ("llama-3.1-8b", "a100_80gb_sxm", {"weight_dtype": "fp8"}, ("bf16", "bf16")),  # Ampere: FP8 Marlin W8A16
    # fp4 weights: FP4 GEMMs on Blackwell, weight-only elsewhere
    ("llama-3.1-8b", "b200_hgx", {"weight_dtype": "fp4"}, ("fp4", "fp4")),
    ("llama-3.1-8b", "h100_sxm", {"weight_dtype": "fp4"}, ("bf16", "bf16")),
    # the checkpoint's own format, from the repo id (ModelOpt / Qwen / llm-compressor FP8: W8A8)
    ("Qwen/Qwen3-30B-A3B-FP8", "h100_sxm", {}, ("fp8", "fp8")),
    ("Qwen/Qwen3-30B-A3B-FP8", "a100_80gb_sxm", {}, ("bf16", "bf16")),
    ("nvidia/Llama-3.3-70B-Instruct-FP8", "h200_sxm", {"num_gpus": 2}, ("fp8", "fp8")),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "h100_sxm", {}, ("fp8", "fp8")),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "a100_80gb_sxm", {}, ("bf16", "bf16")),
    # the checkpoint's own format, from its config (DeepSeek-R1: fp8 with activation_scheme dynamic)
    ("deepseek-r1", "h200_sxm", {"num_gpus": 8, "ep": 8}, ("fp8", "fp8")),
    # NVFP4 (ModelOpt): FP4 GEMMs on Blackwell; on Hopper weight-only (vLLM FP4 Marlin)
    ("nvidia/DeepSeek-R1-FP4", "b200_hgx", {"num_gpus": 8, "ep": 8}, ("fp4", "fp4")),
    ("nvidia/DeepSeek-R1-FP4", "h200_sxm", {"num_gpus": 8, "ep": 8}, ("bf16", "bf16")),
    # weight-only checkpoints stay weight-only even where the GPU has the tensor cores
    ("gpt-oss-120b", "b200_hgx", {}, ("bf16", "bf16")),                              # MXFP4 experts, no act scheme
    ("gpt-oss-120b", "b200_hgx", {"weight_dtype": "fp4"}, ("bf16", "bf16")),        # --weight-dtype names its format
    ({**LLAMA_8B, "quantization_config": FP8_WEIGHT_ONLY}, "h100_sxm", {}, ("bf16", "bf16")),
    ({**LLAMA_8B, "quantization_config": FP8_WEIGHT_ONLY}, "h100_sxm", {"weight_dtype": "fp8"}, ("bf16", "bf16")),
    ({**LLAMA_8B, "quantization_config": FP8_DYNAMIC}, "h100_sxm", {}, ("fp8", "fp8")),
    ({**LLAMA_8B, "quantization_config": FP8_DYNAMIC}, "a100_80gb_sxm", {}, ("bf16", "bf16")),
    # formats other than fp8/fp4 are unchanged: int4 weight-only at bf16
    ("llama-3.1-8b", "h100_sxm", {"weight_dtype": "int4"}, ("bf16", "bf16")),
]


@pytest.mark.parametrize("model,gpu,kw,expected", CASES,
                         ids=[f"{m if isinstance(m, str) else 'config'}-{g}-{'-'.join(map(str, k.values()))}"
                              for m, g, k, _ in CASES])
def test_compute_format_by_gpu_and_checkpoint(model, gpu, kw, expected):
    assert _compute(model, gpu, **kw) == expected


def test_explicit_act_dtype_always_wins():
    assert _compute("llama-3.1-8b", "h100_sxm", weight_dtype="fp8", act_dtype="bf16") == ("bf16", "bf16")
    assert _compute("Qwen/Qwen3-30B-A3B-FP8", "h100_sxm", act_dtype="bf16") == ("bf16", "bf16")
    assert _compute("nvidia/DeepSeek-R1-FP4", "b200_hgx", num_gpus=8, ep=8, act_dtype="fp8") == ("fp8", "fp8")
    # nothing was chosen, so nothing is noted about the compute format
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", weight_dtype="fp8", act_dtype="bf16")
    assert not [n for n in d.notes if n.startswith("compute ")]


def test_the_note_says_which_compute_format_and_why():
    (w8a8,) = [n for n in make_deployment(model="llama-3.1-8b", gpu="h100_sxm", weight_dtype="fp8").warnings
               if n.startswith("compute ")]
    assert "fp8 x fp8 (W8A8" in w8a8 and "h100_sxm has fp8 tensor cores" in w8a8 and "--act-dtype bf16" in w8a8
    assert "KV cache fp8" in w8a8          # a blank KV format follows the fp8 activations (config.Dtypes.kv_dtype)
    (wo,) = [n for n in make_deployment(model="llama-3.1-8b", gpu="a100_80gb_sxm", weight_dtype="fp8").warnings
             if n.startswith("compute ")]
    assert "no fp8 tensor cores" in wo and "weight-only at bf16" in wo and "Marlin" in wo
    (ckpt,) = [n for n in make_deployment(model={**LLAMA_8B, "quantization_config": FP8_WEIGHT_ONLY},
                                          gpu="h100_sxm").warnings if n.startswith("compute ")]
    assert "weight-only" in ckpt and "quantizes no activations" in ckpt
    (fp4,) = [n for n in make_deployment(model="nvidia/DeepSeek-R1-FP4", gpu="b200_hgx", num_gpus=8, ep=8).warnings
              if n.startswith("compute ")]
    assert "fp4 x fp4 (W4A4" in fp4


def test_fp8_compute_decodes_faster_than_weight_only_fp8():
    """Llama-3.1-8B, fp8 weights on one H100, batch 32: the same weights with fp8 GEMMs (the default now) take
    less time per output token than with bf16 GEMMs (--act-dtype bf16, weight-only); KV kept bf16 in both
    so only the compute format differs."""
    kw = dict(model="llama-3.1-8b", gpu="h100_sxm", weight_dtype="fp8", kv_dtype="bf16")
    fp8 = estimate(make_deployment(**kw), batch=32, input_len=1024, output_len=128)
    wo = estimate(make_deployment(**kw, act_dtype="bf16"), batch=32, input_len=1024, output_len=128)
    assert fp8.compute_dtype == "fp8" and wo.compute_dtype == "bf16"
    assert fp8.tpot_s < wo.tpot_s and fp8.ttft_s < wo.ttft_s


def test_nvidia_deepseek_r1_fp4_is_sized_as_nvfp4_with_bf16_attention():
    """nvidia/DeepSeek-R1-FP4 (ModelOpt's DeepSeek recipe, data/checkpoints.yaml): every linear layer but the
    attention at NVFP4, 4 bits + one FP8 scale per 16 values = 4.5 bits; attention, embeddings, LM head,
    router and norms at BF16 — not the base checkpoint's FP8 (673 GB)."""
    m = load_model("nvidia/DeepSeek-R1-FP4")
    q = m.quantization
    assert (q.method, q.weight_dtype, q.activation_dtype) == ("modelopt", "fp4", "fp4")
    assert q.bits_per_weight == 4 + 8 / 16
    assert set(q.components) == {"ssm", "dense_mlp", "routed_experts", "shared_experts"}
    p = count_params(m)
    fp4 = p.dense_mlp + p.routed_experts + p.shared_experts + p.ssm
    bf16 = p.total - fp4
    assert weight_bytes_by_component(m)["total"] == pytest.approx(fp4 * 4.5 / 8 + bf16 * 2, rel=1e-12)
    assert 380e9 < fp4 * 4.5 / 8 + bf16 * 2 < 420e9          # about 0.59x the FP8 release's 673 GB
    d = make_deployment(model="nvidia/DeepSeek-R1-FP4", gpu="b200_hgx", num_gpus=8, ep=8)
    # TP8/EP8 shards all of it but a few replicated vectors (norms, router bias): 8 GPUs hold ~ the checkpoint
    assert d.weight_bytes_per_gpu * 8 == pytest.approx(fp4 * 4.5 / 8 + bf16 * 2, rel=1e-3)
    assert any("FP4" in w and "DeepSeek-R1" in w for w in d.warnings)


def test_an_id_naming_another_format_than_its_base_config_wins():
    """nvidia/DeepSeek-R1-0528-FP4 has no layout recorded: the id's NVFP4 (4.5 bits on every linear layer) wins over
    the base's fp8 quantization_config, with a warning saying so."""
    m = load_model("nvidia/DeepSeek-R1-0528-FP4")
    assert (m.quantization.weight_dtype, m.quantization.bits_per_weight) == ("fp4", 4.5)
    assert any("quantization_config" in w and "not used" in w for w in m.warnings)
    assert load_model("deepseek-ai/DeepSeek-R1").quantization.weight_dtype == "fp8"   # the base is untouched


# ---------------------------------------------------------------------- stated concurrency
def test_with_concurrency_caps_running_sequences_per_replica():
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", num_gpus=2, tp=1, dp=2)
    assert with_concurrency(d, 64).runtime.max_num_seqs == 64 // 2     # 2 replicas, one attention group each
    assert with_concurrency(d, None) is d
    with pytest.raises(ValueError, match="concurrency=0"):
        with_concurrency(d, 0)


def test_stated_concurrency_is_issued_in_full():
    """--concurrency 512 with --requests 100: at least 512 requests are issued (fewer could not fill the slots),
    noted; in flight never above 512."""
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm")
    r = max_throughput(d, input_len=256, output_len=64, num_requests=100, concurrency=512)
    assert r.num_requests == 512 and r.stated_concurrency == 512
    assert any("512 requests issued" in n for n in r.notes)
    assert r.concurrency <= 512
    free = max_throughput(d, input_len=256, output_len=64, num_requests=100)
    assert free.num_requests == 100 and free.concurrency <= 100 < r.concurrency


def test_a_max_throughput_row_with_a_large_concurrency_is_not_capped_by_the_default_request_count():
    """A row stating 5,000 requests in flight and no request count: the 3,000-request default no longer caps
    it. Llama-3.1-8B on one H200 at 64/64 tokens holds ~7,000 sequences of 128 tokens (bf16 KV
    32·2·8·128·2 B = 128 KiB per token), so the stated 5,000 binds, not the default."""
    raw = dict(case="c", source="s", model="meta-llama/Llama-3.1-8B", gpu="h200_sxm", num_gpus="1", tp="1", pp="1",
               ep="", weight_dtype="bf16", act_dtype="bf16", kv_dtype="", framework="vLLM", scenario="max_throughput",
               batch_size="", request_rate="", num_requests="", input_len="64", output_len="64",
               metric="output_tok_s", value="1000", source_url="https://example.org", concurrency="5000",
               max_num_seqs="8192", max_num_batched_tokens="16384")
    row = parse_row(raw, 2)
    assert row.concurrency == 5000 and row.num_requests is None and DEFAULT_OFFLINE_REQUESTS < 5000
    dep = deployment_for(row)
    r = max_throughput(dep, num_requests=DEFAULT_OFFLINE_REQUESTS, input_len=64, output_len=64, concurrency=5000)
    assert r.num_requests == 5000 and DEFAULT_OFFLINE_REQUESTS < r.concurrency <= 5000
    # the validation predictor runs the same point: Little's law in service, e2e = C/X with C > 3,000
    out = predict_max_throughput(dep, row)
    assert out["e2e_ms"] == pytest.approx(r.concurrency / r.requests_per_s * 1e3)


def test_estimate_cli_max_throughput_honours_concurrency():
    """`estimate --scenario max-throughput --concurrency 64`: the running cap is 64 on the one replica and the
    default 10,000 requests stand (>= 64); --rate still applies to serving only."""
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--concurrency", "64",
                                 "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["stated_concurrency"], out["max_num_seqs"], out["num_requests"]) == (64, 64, 10_000)
    assert out["concurrency"] <= 64
    assert not any(w.startswith("compute ") for w in out["warnings"])   # bf16 checkpoint: nothing chosen
    bad = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--rate", "2"])
    assert bad.exit_code == 2 and "--rate" in bad.stderr
