"""Launch commands for what disaggregation priced (search/emit.py, search/launch_features.py): redundant
experts, the DeepEP all-to-all and each pool's own layout, read back by bench/serve.py's parser.

The layouts are the LMSYS 96x H100 DeepSeek deployment's (https://lmsys.org/blog/2025-05-05-large-scale-ep/,
benchmarks/data/disagg_published.yaml): prefill EP32 with DP attention over 4 nodes, decode EP72 over 9,
32 redundant experts in both, DeepEP in the prefill. Flags: SGLang python/sglang/srt/server_args.py
(``--enable-eplb --ep-num-redundant-experts``, ``--moe-a2a-backend deepep`` from 0.5, ``--enable-deepep-moe``
before, ``--disaggregation-mode``); vLLM ``--enable-eplb --eplb-config``, ``--all2all-backend``,
``--kv-transfer-config`` (NixlConnector, kv_both)."""
from __future__ import annotations

import json
import shlex

import pytest

from inferbound.bench import deployment_of
from inferbound.bench.serve import parse_serve
from inferbound.search import emit_command
from inferbound.search.result import Row

MODEL = "deepseek-ai/DeepSeek-V3"
POOLS = {"prefill": dict(tp=1, dp=32, ep=32, attention_dp=True, nodes=4, replica_gpus=32, ep_a2a="deepep"),
         "decode": dict(tp=1, dp=72, ep=72, attention_dp=True, nodes=9, replica_gpus=72, ep_a2a="pairwise")}


def _row(engine: str, **over) -> Row:
    base = dict(rank=1, gpu="h100_sxm", mode="disaggregated", layout="104x h100_sxm fp8", replica_gpus=32,
                unit_gpus=104, tp=1, pp=1, ep=32, dp=32, attention_dp=True, nodes=4, dtype="fp8",
                weight_dtype="fp8", act_dtype="fp8", kv_dtype="bf16", concurrency=256, max_num_seqs=18432,
                token_budget=16384, prefill_replicas=1, decode_replicas=1, replicas=1, objective="tok_s_per_gpu",
                objective_value=1.0, limit="kv-cache", memory_fraction=None, mem_fraction_static=0.8,
                context_len=4096, engine=engine, redundant_experts=32, ep_a2a="deepep", pools=POOLS)
    return Row(**(base | over))


def commands(text: str) -> dict[str, str]:
    """{role: launch line} of an emitted text: the line after each '# ROLE instance' comment, joined."""
    out, role, buf = {}, None, []
    for ln in text.splitlines() + ["# end"]:
        if ln.startswith("#"):
            if role and buf:
                out[role] = " ".join(buf)
            role = ln.split()[1] if ln.split()[-1:] and " instance" in ln else None
            buf = []
        elif role:
            buf.append(ln.rstrip("\\").strip())
    return out


def test_sglang_pools_round_trip():
    text = emit_command("sglang", MODEL, _row("sglang@0.5.9"))
    cmds = commands(text)
    assert set(cmds) == {"prefill", "decode"}
    pre, dec = parse_serve(cmds["prefill"]), parse_serve(cmds["decode"])
    # each pool comes back with its own layout: tp-size = every GPU of the instance, attention DP d
    assert (pre.deployment["tp"], pre.deployment["dp"], pre.deployment["ep"]) == (1, 32, 32)
    assert (dec.deployment["tp"], dec.deployment["dp"], dec.deployment["ep"]) == (1, 72, 72)
    assert (pre.deployment["nodes"], dec.deployment["nodes"]) == (4, 9)     # --nnodes
    assert pre.deployment["redundant_experts"] == dec.deployment["redundant_experts"] == 32
    assert pre.deployment["ep_a2a"] == "deepep" and "ep_a2a" not in dec.deployment
    assert (pre.features["disaggregation"], dec.features["disaggregation"]) == ("prefill", "decode")
    argv = shlex.split(cmds["prefill"])
    assert argv[argv.index("--moe-a2a-backend") + 1] == "deepep" and "--enable-eplb" in argv
    assert not pre.warnings or all("unknown" not in w for w in pre.warnings)


def test_sglang_before_0_5_uses_enable_deepep_moe():
    text = emit_command("sglang", MODEL, _row("sglang@0.4.10"))
    pre = commands(text)["prefill"]
    assert "--enable-deepep-moe" in pre and "--moe-a2a-backend" not in pre
    assert parse_serve(pre).deployment["ep_a2a"] == "deepep"


def test_sglang_0_4_3_has_neither_flag_and_says_so():
    text = emit_command("sglang", MODEL, _row("sglang@0.4.3"))
    launched = " ".join(commands(text).values())
    assert "--ep-num-redundant-experts" not in launched and "deepep" not in launched
    assert "# 32 redundant experts (EPLB) priced; SGLang 0.4.3" in text and "has no --ep-num-redundant-experts" in text
    assert "has no DeepEP flag" in text


def test_the_parsed_pools_build_the_priced_deployments():
    """Each pool's command, parsed, builds the layout the pool was priced with: (E + N)/ep experts per GPU
    = (256 + 32)/32 = 9 in prefill and (256 + 32)/72 = 4 in decode (the blog: "EP72 ... 288 = 72 x 4")."""
    cmds = commands(emit_command("sglang", MODEL, _row("sglang@0.5.9")))
    for role, per_gpu in (("prefill", 9), ("decode", 4)):
        spec = parse_serve(cmds[role])
        dep = deployment_of(spec, gpu="h100_sxm", engine="sglang@0.5.9")
        par = dep.par
        assert (par.ep, par.redundant_experts) == (POOLS[role]["ep"], 32)
        assert (256 + par.redundant_experts) // par.ep == per_gpu and (256 + 32) % par.ep == 0
        assert par.ep_a2a == POOLS[role]["ep_a2a"]


def test_vllm_pools_round_trip():
    text = emit_command("vllm", MODEL, _row("vllm@0.15.1"))
    cmds = commands(text)
    pre, dec = parse_serve(cmds["prefill"]), parse_serve(cmds["decode"])
    assert (pre.deployment["dp"], dec.deployment["dp"]) == (32, 72)
    assert pre.deployment["redundant_experts"] == 32 and pre.deployment["ep_a2a"] == "deepep"
    assert pre.features["kv_connector"] == "NixlConnector" and pre.features["disaggregation"] == "both"
    argv = shlex.split(cmds["prefill"])
    assert json.loads(argv[argv.index("--eplb-config") + 1]) == {"num_redundant_experts": 32}
    assert argv[argv.index("--all2all-backend") + 1] == "deepep_high_throughput"
    assert "P2pNcclConnector" in text and "kv_producer" in text       # the NCCL alternative, as a comment


def test_vllm_0_8_5_has_no_eplb_and_says_so():
    text = emit_command("vllm", MODEL, _row("vllm@0.8.5"))
    assert "--enable-eplb" not in "".join(commands(text).values())
    assert "has no --enable-eplb" in text and "has no --all2all-backend" in text


def test_trtllm_writes_one_config_per_pool():
    text = emit_command("trtllm", MODEL, _row("trtllm@1.2"))
    assert "extra_llm_api_options_prefill.yaml" in text and "extra_llm_api_options_decode.yaml" in text
    # each server's tp_size counts its attention-DP ranks: 32 and 72
    assert "--tp_size 32" in text and "--tp_size 72" in text


def test_an_aggregated_row_has_one_command_and_its_ep_flags():
    r = _row("sglang@0.5.9", mode="aggregated", pools={}, prefill_replicas=0)
    text = emit_command("sglang", MODEL, r)
    assert text.count("sglang.launch_server") == 1 and "--disaggregation-mode" not in text
    assert "--ep-num-redundant-experts 32" in text


@pytest.mark.parametrize("flag", ["--eplb-config", "--kv-transfer-config"])
def test_bad_json_is_one_line(flag):
    with pytest.raises(ValueError) as e:
        parse_serve(f"vllm serve {MODEL} {flag} nope")
    assert str(e.value).count("\n") == 0 and flag in str(e.value)
