"""Engine versions (issue 19, item 3): every version a user names resolves to its own profile or to the
nearest one, and the substitution is said on every face and in ``validate``'s row reason; framework text
is read for a version only right after an engine's name; SGLang 0.5.3-0.5.9 and AMD's ATOM have cited
profiles; vLLM and SGLang on ROCm carry their cited platform notes.

The rule (deploy/engines.py docstring): the profile of that version; else a major version no profile
has -> one-line error; else the profile whose ``covers`` range holds it, else the newest profile not
newer than it, else (older than all) the oldest - each with a note.
"""
from __future__ import annotations

import csv
import json
import warnings

import pytest
from typer.testing import CliRunner

from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.engine_rules import cuda_graph_cap, kv_cache_bytes, sglang_mem_fraction, tier_value
from inferbound.deploy.engines import (GIB, MIB, engine_for_framework, framework_resolution, get_engine,
                                       platform_notes, resolve_version, version_after_name)
from inferbound.validation import predict_rows, read_csv
from inferbound.validation.report import row_records

from cli_helpers import assert_one_line_error

with warnings.catch_warnings():  # starlette's TestClient warns about httpx; not ours to fix
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient
from inferbound.web import create_app

H100_MIB = 81559 * MIB   # nvidia-smi memory.total of an H100-SXM 80GB
H200_MIB = 143771 * MIB  # nvidia-smi memory.total of an H200 141GB


# ---------------------------------------------------------------- resolution, hand-listed

@pytest.mark.parametrize("engine, version, key, why", [
    # a profile's own version (patch suffixes and trailing zeros are the same version): no note
    ("vllm", "0.6.3", "vllm@0.6.3", None),
    ("vllm", "v0.6.3.post1", "vllm@0.6.3", None),
    ("trtllm", "0.17.0", "trtllm@0.17", None),
    ("sglang", "0.5.3", "sglang@0.5.3", None),
    ("sglang", "0.5.6", "sglang@0.5.6", None),
    ("sglang", "0.5.9", "sglang@0.5.9", None),
    ("sglang", "0.5.6.post2", "sglang@0.5.6", None),
    ("atom", "0.1.2", "atom@0.1.2", None),
    ("atom", "0.1.5", "atom@0.1.5", None),
    # inside a profile's covers range: that profile, noted
    ("vllm", "0.11.0", "vllm@0.15.1", "vllm@0.15.1 stands for 0.11 <= version < 0.21"),
    ("vllm", "0.10.1", "vllm@0.8.5", "vllm@0.8.5 stands for 0.8 <= version < 0.11"),
    ("vllm", "v0.15", "vllm@0.15.1", "stands for 0.11 <= version < 0.21"),
    ("sglang", "0.5.4", "sglang@0.5.3", "stands for 0.5.3 <= version < 0.5.5"),
    ("sglang", "0.5.5", "sglang@0.5.6", "stands for 0.5.5 <= version < 0.5.7"),
    ("sglang", "0.5.7", "sglang@0.5.9", "stands for 0.5.7 <= version < 0.5.10"),
    ("sglang", "0.5.8", "sglang@0.5.9", "stands for 0.5.7 <= version < 0.5.10"),
    ("sglang", "0.5.10", "sglang@0.5.15", "stands for 0.5.10 <= version < 0.5.22"),
    ("trtllm", "1.0", "trtllm@1.2", "stands for versions >= 1.0"),
    ("trtllm", "1", "trtllm@1.2", "stands for versions >= 1.0"),       # 1 = 1.0, not below 1.0
    ("vllm", "0.8", "vllm@0.8.5", "stands for 0.8 <= version < 0.11"),
    ("atom", "0.1.1", "atom@0.1.2", "stands for 0.1 <= version < 0.1.3"),
    ("atom", "0.1.4", "atom@0.1.5", "stands for versions >= 0.1.3"),
    # newer than every checked version, same major: the newest, said so
    ("vllm", "0.40.1", "vllm@0.33.0", "newer than every vllm version checked (newest 0.33.0)"),
    ("atom", "0.1.6", "atom@0.1.5", "newer than every atom version checked (newest 0.1.5)"),
    # older than every profile: the oldest, said so
    ("vllm", "0.3", "vllm@0.6.3", "older than every vllm profile; vllm@0.6.3 is the oldest"),
    ("trtllm", "0.9", "trtllm@0.17", "older than every trtllm profile; trtllm@0.17 is the oldest"),
    # engines with one profile for every version
    ("gpt-fast", "2.0", "gpt-fast@static", "gpt-fast has one profile for every version"),
])
def test_each_named_version_resolves_as_defined(engine, version, key, why):
    r = resolve_version(engine, version)
    assert r.profile.key == key
    if why is None:
        assert r.note is None
    else:
        assert why in r.note and f"engine {engine} {version} predicted with the {key} profile" in r.note
        assert "\n" not in r.note


@pytest.mark.parametrize("engine, version, majors", [
    ("vllm", "99", "major version 0"), ("vllm", "1.0", "major version 0"),
    ("trtllm", "2.0", "major version 0 or 1"), ("atom", "1.0", "major version 0"),
    ("sglang", "1.0.0", "major version 0"),
])
def test_a_major_version_no_profile_has_is_a_one_line_error(engine, version, majors):
    with pytest.raises(ValueError) as e:
        get_engine(engine, version)
    msg = str(e.value)
    assert "\n" not in msg and f"engine_version={version!r}" in msg and majors in msg and "allowed:" in msg


# ---------------------------------------------------------------- the note on every face

def test_substitution_note_in_the_deployment_and_estimate_json():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.11.0")
    assert dep.engine == "vllm@0.15.1"
    note = [w for w in dep.warnings if "engine vllm 0.11.0 predicted with the vllm@0.15.1 profile" in w]
    assert len(note) == 1
    exact = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.15.1")
    assert not [w for w in exact.warnings if "predicted with the" in w]
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100_sxm", "--engine", "vllm@0.11.0",
                                 "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert any("engine vllm 0.11.0 predicted with the vllm@0.15.1 profile" in w for w in out["warnings"])


def test_substitution_note_in_the_api_warnings():
    body = {"model": "llama-3.1-8b", "gpu": "h100_sxm", "engine": "sglang@0.5.5"}
    r = TestClient(create_app()).post("/api/estimate", json=body)
    assert r.status_code == 200, r.text
    assert any("engine sglang 0.5.5 predicted with the sglang@0.5.6 profile" in w for w in r.json()["warnings"])


def test_cli_refuses_a_version_far_outside_in_one_line():
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--engine", "vllm@99"])
    assert_one_line_error(r, "engine_version='99'", "vllm@0.33.0")


ROW = {"case": "c1", "source": "test", "model": "llama-3.1-8b", "gpu": "h100_sxm", "num_gpus": "1", "tp": "1",
       "pp": "1", "ep": "1", "weight_dtype": "bf16", "act_dtype": "bf16", "kv_dtype": "bf16",
       "scenario": "static_batch", "batch_size": "1", "input_len": "128", "output_len": "128",
       "metric": "itl_ms", "value": "7", "source_url": ""}


def _rows(tmp_path, frameworks):
    path = tmp_path / "rows.csv"
    rows = [{**ROW, "case": f"c{i}", "framework": fw} for i, fw in enumerate(frameworks)]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    parsed, bad = read_csv(path)
    assert not bad
    return predict_rows(parsed)


def test_validate_row_reason_states_substitution_and_fallback(tmp_path):
    sub, exact, unknown, far = _rows(tmp_path, ["vLLM 0.11.0", "vLLM 0.6.3", "HF TGI 2.0", "vLLM 99.1"])
    assert sub.covered and "engine vllm 0.11.0 predicted with the vllm@0.15.1 profile" in sub.reason
    assert exact.covered and "predicted with the" not in exact.reason
    # no engine recognized: the default engine, and the row's reason says so
    assert unknown.covered and "framework='HF TGI 2.0' names no engine profile" in unknown.reason
    assert "vllm@0.33.0" in unknown.reason
    # a version far outside every profile: not covered, the reason is the one-line error
    assert not far.covered and "engine_version='99.1'" in far.reason
    recs = {r["case"]: r for r in row_records([sub, exact, unknown, far])}
    assert "vllm@0.15.1" in recs["c0"]["reason"] and "names no engine profile" in recs["c2"]["reason"]


def test_api_validate_row_reason_states_the_substitution():
    cols = list({**ROW, "framework": ""})
    text = ",".join(cols) + "\n" + ",".join({**ROW, "framework": "sglang==0.5.8"}[c] for c in cols) + "\n"
    r = TestClient(create_app()).post("/api/validate", json={"csv": text})
    assert r.status_code == 200, r.text
    (row,) = r.json()["rows"]
    assert row["predicted"] is not None
    assert "engine sglang 0.5.8 predicted with the sglang@0.5.9 profile" in row["reason"]


# ---------------------------------------------------------------- framework text

@pytest.mark.parametrize("text, expected", [
    # the two misreads of the issue
    ("TensorRT-LLM --random-range-ratio 0.8", ("trtllm", "0.17")),   # not TensorRT-LLM 0.8
    ("rocm/atom:rocm7.1.1-ubuntu24.04-pytorch2.9-atom0.1.1", ("atom", "0.1.2")),  # not gpt-fast
    ("rocm/atom-dev:latest (pytorch 2.9)", ("atom", "0.1.5")),
    # versions right after the name
    ("vLLM 0.6.3", ("vllm", "0.6.3")),
    ("sglang==0.5.6", ("sglang", "0.5.6")),
    ("TensorRT-LLM v0.17", ("trtllm", "0.17")),
    ("vllm/vllm-openai:v0.10.1", ("vllm", "0.8.5")),
    ("rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909", ("vllm", "0.8.5")),   # 6.4.1 is ROCm's, not vLLM's
    ("lmsysorg/sglang:v0.5.9-rocm630-mi30x", ("sglang", "0.5.9")),
    ("SGLang 0.5.6 random-range-ratio 1.0", ("sglang", "0.5.6")),
    ("vLLM (max-num-seqs 256, ratio 0.8)", ("vllm", "0.33.0")),        # no version after the name
    ("NVIDIA NIM 1.8.0", ("trtllm", "1.2")),                           # a NIM release is not a TRT-LLM version
    ("vLLM-ATOM plugin", ("vllm", "0.33.0")),                          # vLLM schedules (ATOM docs)
    ("PyTorch 2.5 eager", ("gpt-fast", "static")),
])
def test_framework_text_version_only_after_the_engine_name(text, expected):
    assert engine_for_framework(text) == expected


def test_version_after_name_reads_nothing_else():
    assert version_after_name("TensorRT-LLM random-range-ratio 0.8", "tensorrt[- ]?llm") is None
    assert version_after_name("TensorRT-LLM 1.x", "tensorrt[- ]?llm") == "1.0"
    assert version_after_name("vLLM V1", "vllm") is None  # V1 is vLLM's engine generation, not a release


def test_framework_text_substitution_note():
    rule, res = framework_resolution("rocm/atom:rocm7.1.1-ubuntu24.04-pytorch2.9-atom0.1.1")
    assert rule.engine == "atom" and "engine atom 0.1.1 predicted with the atom@0.1.2 profile" in res.note
    # the row's engine_version wins over the text; free text there is read like the framework's
    assert framework_resolution("vllm/vllm-openai:latest", "0.6.3")[1].profile.key == "vllm@0.6.3"
    rocm = framework_resolution("vLLM (ROCm)", "vLLM 0.10.0 (rocm/vllm-dev, ROCm 6.4.1, hipBLASLt 0.15)")[1]
    assert rocm.profile.key == "vllm@0.8.5" and "engine vllm 0.10.0 predicted with the vllm@0.8.5" in rocm.note
    assert framework_resolution("TensorRT-LLM", "1.x (commit 03e27c7d)")[1].profile.key == "trtllm@1.2"
    mlperf = framework_resolution("TensorRT-LLM (TensorRT 10.8, CUDA 12.8)", "MLPerf Inference v5.0")[1]
    assert mlperf.profile.key == "trtllm@0.17"  # neither TensorRT's 10.8 nor MLPerf's 5.0 is TRT-LLM's version
    assert "engine_version='MLPerf Inference v5.0' names no trtllm version" in mlperf.note


# ---------------------------------------------------------------- SGLang 0.5.3-0.5.9, read by hand

def test_sglang_056_and_059_reserve_formula_without_prefill_graphs():
    """SGLang v0.5.6 / v0.5.9 server_args.py _handle_gpu_memory_settings, piecewise graphs off (default):
    reserved MiB = 512 + 1.5*max(chunked_prefill_size, 2048) + 2*cuda_graph_max_bs + tp*pp/8*1024, at
    least 10240 above 60 GiB; mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)."""
    for v in ("0.5.6", "0.5.9"):
        p = get_engine("sglang", v)
        # H100 (81559 MiB, 79.6 GiB: the < 90 GiB tier): chunked 8192, graph bs 256 (tp<4)
        assert tier_value(p.token_budget, H100_MIB) == 8192 and tier_value(p.cuda_graphs.max_batch, H100_MIB) == 256
        # 512 + 12288 + 512 + 128 = 13440; (81559 - 13440) / 81559 = 0.83521
        assert sglang_mem_fraction(p, H100_MIB, tp=1) == 0.835
        # TP8: bs 512; 512 + 12288 + 1024 + 1024 = 14848; (81559 - 14848) / 81559 = 0.81795
        assert sglang_mem_fraction(p, H100_MIB, tp=8) == 0.818
        # H200 (143771 MiB, 140.4 GiB: < 160 GiB): 8192 / 256; (143771 - 13440) / 143771 = 0.90652
        assert sglang_mem_fraction(p, H200_MIB, tp=1) == 0.907
        # A100 40GB (40960 MiB: the < 60 GiB tier): 4096 / 32; 512 + 6144 + 64 + 128 = 6848, no floor
        # (40960 - 6848) / 40960 = 0.83281
        assert sglang_mem_fraction(p, 40 * GIB, tp=1) == 0.833
        # 24 GiB card (< 35 GiB): 2048 / 24 (tp<4), 80 (tp>=4)
        assert tier_value(p.cuda_graphs.max_batch, 24 * GIB) == 24
        assert tier_value(p.cuda_graphs.max_batch, 24 * GIB, tp=4) == 80
        assert p.cuda_graphs.mode.value == "decode_only"
        assert p.kv_sizing.auto.mib_per_prefill_graph == 0 and p.kv_sizing.auto.prefill_graph_ranges == ()
        assert p.output_estimate.init_ratio == 0.7 and p.max_seqs_auto.hi == 4096
        assert p.output_estimate.schedule_conservativeness == 1.0  # x 0.3 with DP attention
        assert p.output_estimate.dp_attention_conservativeness == 0.3
    # 0.5.3 / 0.5.4: the < 35 GiB tier captured up to 16 (tp<4), the rest alike
    assert tier_value(get_engine("sglang", "0.5.3").cuda_graphs.max_batch, 24 * GIB) == 16
    assert sglang_mem_fraction(get_engine("sglang", "0.5.4"), H100_MIB, tp=1) == 0.835
    # 0.5.15 adds prefill-graph memory: its fraction on an H100 is below 0.5.6's
    assert sglang_mem_fraction(get_engine("sglang", "0.5.15"), H100_MIB, tp=1) < 0.835


# ---------------------------------------------------------------- ATOM, read by hand

def test_atom_profile_defaults():
    """ATOM v0.1.5 arg_utils.py: block_size 16, max_num_batched_tokens 16384, max_num_seqs 512,
    gpu_memory_utilization 0.9, cudagraph_capture_sizes [1..256], chunked prefill and prefix caching on;
    v0.1.2: neither chunked prefill nor prefix caching."""
    p = get_engine("atom")
    assert p.key == "atom@0.1.5"
    assert p.block_tokens.value == 16 and p.kv_sizing.fraction.value == 0.9
    assert tier_value(p.token_budget, 192e9) == 16384 and tier_value(p.max_seqs, 192e9) == 512
    assert cuda_graph_cap(p, 192e9, 1, max_seqs=512) == 256
    assert p.chunked_prefill.value is True and p.prefix_caching.value is True
    assert p.mixed_batches.value is False and p.kv_reservation.value == "prompt_on_admission"
    old = get_engine("atom", "0.1.2")
    assert old.chunked_prefill.value is False and old.prefix_caching.value is False
    assert "v0.1.5" in p.block_tokens.source and "v0.1.2" in old.block_tokens.source


def test_atom_kv_keeps_a_two_percent_safety_margin():
    """model_runner.get_num_blocks: KV = f*M - peak_torch - graphs - 0.02*M. M = 192e9, W = 16e9,
    A = 2e9, N = 1e9, f = 0.9: 172.8e9 - 19e9 - 3.84e9 = 149.96e9."""
    assert kv_cache_bytes(get_engine("atom"), 192e9, 16e9, 2e9, 1e9) == pytest.approx(149.96e9)


# ---------------------------------------------------------------- ROCm platforms

def test_rocm_platform_notes_on_amd_gpus_only():
    assert any("block_size 16" in n and "VLLM_ROCM_USE_AITER" in n and "v0.15.1" in n
               for n in platform_notes(get_engine("vllm", "0.15.1"), "AMD"))
    assert platform_notes(get_engine("vllm", "0.15.1"), "NVIDIA") == []
    assert any("aiter" in n for n in platform_notes(get_engine("sglang", "0.5.6"), "AMD"))
    dep = make_deployment(model="llama-3.1-8b", gpu="mi300x", engine="vllm")
    assert any("vllm@0.33.0 on rocm" in w for w in dep.warnings)
    assert not any(" on rocm " in w for w in make_deployment(model="llama-3.1-8b", gpu="h100_sxm").warnings)
