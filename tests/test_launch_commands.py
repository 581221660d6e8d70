"""Launch commands that run as printed (search/emit.py, search/launch_features.py), read back by the
project's own serve-command parser (bench/serve.py, bench/serve_features.py): the same layout, formats,
context and engine features come back.

Flag spellings (engines.yaml ``flags``, each from the version's argument parser): vLLM
``--speculative-config`` JSON (method, model, num_speculative_tokens), ``--kv-offloading-size`` GiB summed
over the TP ranks with ``--kv-offloading-backend native``, ``--enable-prefix-caching``, ``--max-model-len``;
SGLang ``--speculative-algorithm EAGLE --speculative-draft-model-path --speculative-num-steps
--speculative-eagle-topk --speculative-num-draft-tokens``, ``--enable-hierarchical-cache --hicache-size`` GB,
``--context-length``; TensorRT-LLM ``--max_seq_len`` and the options YAML (speculative_config,
kv_cache_config.host_cache_size bytes, enable_block_reuse). The EAGLE head of Llama-3.1-8B is the one vLLM's
examples/offline_inference/spec_decode.py names (data/checkpoints.yaml ``eagle``); the fp8 checkpoint is
NVIDIA's nvidia/Llama-3.1-8B-Instruct-FP8 (data/checkpoints.yaml ``fp8``).
"""
from __future__ import annotations

import math
import shlex

import pytest
import yaml

from inferbound.bench.serve import parse_serve
from inferbound.deploy.deployment import make_deployment
from inferbound.search import emit_command, search
from inferbound.search.result import Row

BASE = "meta-llama/Llama-3.1-8B"
FP8 = "nvidia/Llama-3.1-8B-Instruct-FP8"
HEAD = "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"
FEATURES = dict(speculative="eagle", spec_tokens=3, acceptance=0.7, prefix_hit_rate=0.5, kv_offload="host")


def command(text: str) -> str:
    """The launch line of an emitted text: comments and the YAML heredoc dropped, continuations joined."""
    lines, skip = [], False
    for ln in text.splitlines():
        if ln.startswith("cat > "):
            skip = True
            continue
        if skip:
            skip = ln != "EOF"
            continue
        if not ln.startswith("#"):
            lines.append(ln.rstrip("\\").strip())
    return " ".join(lines)


def options_yaml(text: str) -> dict:
    body = text.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    return yaml.safe_load(body)


@pytest.fixture(scope="module")
def row() -> Row:
    """The winner of a real search: fp8 Llama-3.1-8B on one H100 with EAGLE k=3, prefix hits and a host tier,
    for 2000-token prompts and 500-token outputs (context 2500)."""
    res = search(BASE, gpus=["h100_sxm"], max_gpus=1, dtypes=["fp8"], top=3, input_len=2000, output_len=500,
                 workers=1, calibration="none", engine_options=FEATURES)
    r = res.table[0]
    assert r.weight_dtype == "fp8" and r.context_len == 2500
    assert r.features["kv_offload_gb"] > 0
    return r


def test_vllm_round_trip(row):
    text = emit_command("vllm", BASE, row)
    spec = parse_serve(command(text))
    assert spec.engine == "vllm" and spec.model == FP8               # the fp8 checkpoint that was priced
    assert "--quantization" not in text                              # the checkpoint carries its own
    assert (spec.deployment["tp"], spec.deployment["pp"], spec.deployment["kv_dtype"]) == (row.tp, row.pp, "fp8")
    assert spec.max_model_len == 2500
    assert spec.engine_options["max_num_seqs"] == row.max_num_seqs
    f = spec.features
    assert (f["speculative"], f["spec_tokens"], f["draft_model"]) == ("eagle", 3, HEAD)
    assert f["prefix_caching"] is True and f["kv_offload"] == "host"
    # GiB summed over TP ranks, rounded up: back per GPU in GB within one GiB of the priced pool
    gb = row.features["kv_offload_gb"]
    assert gb <= f["kv_offload_gb"] < gb + 2**30 / 1e9
    assert f"--kv-offloading-size {math.ceil(gb * 1e9 / 2**30)}" in text


def test_sglang_round_trip(row):
    spec = parse_serve(command(emit_command("sglang", BASE, row)))
    assert spec.engine == "sglang" and spec.model == FP8
    assert spec.deployment["tp"] == row.tp and spec.deployment["kv_dtype"] == "fp8"
    assert spec.max_model_len == 2500                                 # --context-length
    f = spec.features
    assert (f["speculative"], f["spec_tokens"], f["draft_model"]) == ("eagle", 3, HEAD)
    assert f["kv_offload"] == "host" and row.features["kv_offload_gb"] <= f["kv_offload_gb"] < \
        row.features["kv_offload_gb"] + 1                             # --hicache-size GB, rounded up


def test_trtllm_round_trip(row):
    text = emit_command("trtllm", BASE, row)
    spec = parse_serve(command(text))
    assert spec.engine == "trtllm" and spec.model == FP8
    assert (spec.deployment["tp"], spec.deployment["pp"], spec.max_model_len) == (row.tp, row.pp, 2500)
    opts = options_yaml(text)
    assert opts["speculative_config"] == {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": HEAD}
    kv = opts["kv_cache_config"]
    assert kv["dtype"] == "fp8" and kv["enable_block_reuse"] is True
    assert kv["host_cache_size"] == math.ceil(row.features["kv_offload_gb"] * 1e9)


def test_parsed_command_prices_the_same_layout(row):
    """What the parser reads back builds the deployment the row priced (layout, formats, features)."""
    spec = parse_serve(command(emit_command("vllm", BASE, row)))
    f = {k: v for k, v in spec.features.items() if k not in ("draft_model", "prefix_caching")}
    dep = make_deployment(model=BASE, gpu="h100_sxm", calibration="none", weight_dtype="fp8",
                          **{k: v for k, v in spec.deployment.items() if k != "num_gpus"},
                          engine_options=f | {"acceptance": 0.7, "prefix_hit_rate": 0.5})
    assert (dep.par.tp, dep.par.pp, dep.dtypes.weight, dep.dtypes.kv_dtype) == (row.tp, row.pp, "fp8", "fp8")
    rt = dep.runtime
    assert (rt.speculative, rt.spec_tokens, rt.kv_offload) == ("eagle", 3, "host")


def _row(**over) -> Row:
    base = dict(rank=1, gpu="h100_sxm", mode="aggregated", layout="2x h100_sxm TP2 bf16", replica_gpus=2,
                unit_gpus=2, tp=2, pp=1, ep=1, dp=1, attention_dp=False, nodes=1, dtype="bf16", weight_dtype="bf16",
                act_dtype="bf16", kv_dtype="bf16", concurrency=64, max_num_seqs=64, token_budget=8192,
                prefill_replicas=0, decode_replicas=1, replicas=1, objective="tok_s_per_gpu", objective_value=1.0,
                limit="kv-cache", memory_fraction=0.9, mem_fraction_static=0.85, context_len=4096)
    return Row(**(base | over))


@pytest.mark.parametrize("spec, want", [
    ("ngram", {"speculative": "ngram", "spec_tokens": 4}),
    ("draft:meta-llama/Llama-3.2-1B", {"speculative": "draft:meta-llama/Llama-3.2-1B", "spec_tokens": 4}),
])
def test_vllm_other_methods_round_trip(spec, want):
    r = _row(engine="vllm@0.15.1", features={"speculative": spec, "spec_tokens": 4, "acceptance": 0.5})
    s = parse_serve(command(emit_command("vllm", BASE, r)))
    assert {k: s.features[k] for k in want} == want and s.max_model_len == 4096
    assert s.deployment["tp"] == 2 and s.model == BASE                # bf16: the base checkpoint


def test_sglang_tree_drafting_round_trip():
    feats = {"speculative": "eagle", "spec_tokens": 5, "acceptance": 0.7, "spec_topk": 4, "spec_draft_tokens": 8}
    text = emit_command("sglang", BASE, _row(engine="sglang", features=feats))
    argv = shlex.split(command(text))
    assert argv[argv.index("--speculative-eagle-topk") + 1] == "4"
    assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "8"
    f = parse_serve(command(text)).features
    assert (f["spec_tokens"], f["spec_topk"], f["spec_draft_tokens"]) == (5, 4, 8)


def test_a_version_without_the_flag_says_so():
    """vLLM 0.8.5 has no --kv-offloading-size and its --speculative-config lists no mtp; SGLang 0.4.3 has no
    NGRAM: each is a comment naming the version, not a flag the engine would refuse."""
    r = _row(engine="vllm@0.8.5", features={"speculative": "ngram", "spec_tokens": 3, "acceptance": 0.5,
                                            "kv_offload": "host", "kv_offload_gb": 100.0})
    text = emit_command("vllm", BASE, r)
    assert "--kv-offloading-size" not in command(text) and "# host KV tier priced, 100 GB per GPU" in text
    assert '"method":"ngram"' in text
    s = _row(engine="sglang@0.4.3", features={"speculative": "ngram", "spec_tokens": 3, "acceptance": 0.5})
    text = emit_command("sglang", BASE, s)
    assert "--speculative-algorithm" not in command(text) and "has no --speculative-algorithm NGRAM" in text


def test_an_eagle_head_not_recorded_is_a_comment_not_a_guess():
    r = _row(engine="vllm", features={"speculative": "eagle", "spec_tokens": 3, "acceptance": 0.7})
    text = emit_command("vllm", "org/model", r)
    assert "--speculative-config" not in command(text)
    assert "records no EAGLE head for org/model" in text
