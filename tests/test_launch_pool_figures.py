"""Each disaggregated pool's command carries its own priced figures (search/result.pool_fields, search/emit.py):
--max-running-requests and --mem-fraction-static of the prefill pool are the prefill deployment's, not the
decode pool's; SGLang 0.4.3 (no --disaggregation-mode: data/engines.yaml, SGLang v0.4.3.post4 server_args.py)
gets a comment naming the version instead of the flag. Round trips through bench/serve.py's parser."""
from __future__ import annotations

import shlex

import pytest

from inferbound.bench.serve import parse_serve
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.memory import weight_bytes_per_gpu
from inferbound.search import emit_command, search
from inferbound.search.result import Row, static_fraction

from test_launch_pools import commands

MODEL = "deepseek-ai/DeepSeek-V3"
POOLS = {"prefill": dict(tp=1, dp=32, ep=32, attention_dp=True, nodes=4, replica_gpus=32, ep_a2a="deepep",
                         max_num_seqs=64, token_budget=16384, mem_fraction_static=0.71),
         "decode": dict(tp=1, dp=72, ep=72, attention_dp=True, nodes=9, replica_gpus=72, ep_a2a="pairwise",
                        max_num_seqs=18432, token_budget=16384, mem_fraction_static=0.83)}


def _row(engine: str) -> Row:
    return Row(rank=1, gpu="h100_sxm", mode="disaggregated", layout="104x h100_sxm fp8", replica_gpus=72,
               unit_gpus=104, tp=1, pp=1, ep=72, dp=72, attention_dp=True, nodes=9, dtype="fp8",
               weight_dtype="fp8", act_dtype="fp8", kv_dtype="bf16", concurrency=256, max_num_seqs=18432,
               token_budget=16384, prefill_replicas=1, decode_replicas=1, replicas=1, objective="tok_s_per_gpu",
               objective_value=1.0, limit="kv-cache", memory_fraction=None, mem_fraction_static=0.83,
               context_len=4096, engine=engine, redundant_experts=32, ep_a2a="deepep", prefill_batch=64, pools=POOLS)


def _value(cmd: str, flag: str) -> str:
    argv = shlex.split(cmd)
    return argv[argv.index(flag) + 1]


def test_each_sglang_pool_has_its_own_limits_and_memory_share():
    cmds = commands(emit_command("sglang", MODEL, _row("sglang@0.5.9")))
    pre, dec = cmds["prefill"], cmds["decode"]
    assert (_value(pre, "--max-running-requests"), _value(pre, "--mem-fraction-static")) == ("64", "0.71")
    assert (_value(dec, "--max-running-requests"), _value(dec, "--mem-fraction-static")) == ("18432", "0.83")
    # read back: SGLang's totals divided by the attention-DP size, ⌈64/32⌉ = 2 and ⌈18432/72⌉ = 256 per group
    p, d = parse_serve(pre), parse_serve(dec)
    assert (p.engine_options["max_num_seqs"], p.engine_options["memory_fraction"]) == (2, 0.71)
    assert (d.engine_options["max_num_seqs"], d.engine_options["memory_fraction"]) == (256, 0.83)
    assert (p.features["disaggregation"], d.features["disaggregation"]) == ("prefill", "decode")


def test_sglang_0_4_3_gets_a_comment_not_the_disaggregation_flag():
    text = emit_command("sglang", MODEL, _row("sglang@0.4.3"))
    assert "--disaggregation-mode" not in " ".join(commands(text).values())
    assert "# disaggregated prefill/decode priced; SGLang 0.4.3" in text and "has no --disaggregation-mode" in text
    assert "has no --disaggregation-mode" not in emit_command("sglang", MODEL, _row("sglang@0.4.10"))


def test_static_fraction_is_weights_plus_kv_over_hbm_rounded_down():
    # Llama-3.1-8B in bf16 on one H100 (80 GB HBM as the catalog states it): weights ≈ 8.03e9 params × 2 bytes
    # = 16.06 GB; with KV = 40e9 − W the share is 40e9 / HBM, and one byte more than 0.3·HBM − W still floors to 0.30
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=1, calibration="none")  # bf16 by default
    hbm = dep.gpu.hbm_bytes
    w = weight_bytes_per_gpu(dep.model, dep.dtypes, dep.par)
    assert w == pytest.approx(16.06e9, rel=0.02)
    assert static_fraction(dep, 0.5 * hbm - w) == 0.5
    assert static_fraction(dep, 0.309 * hbm - w) == 0.30
    assert static_fraction(dep, 2 * hbm) == 1.0


def test_a_searched_row_prices_each_pool_on_its_own_deployment():
    # test_search_pools' case: TP4 decode pool (TPOT ≤ 6 ms), a smaller prefill pool
    r = search("llama-3.1-8b", top=1, disaggregated=True, objective="tok_s_per_gpu", slo_tpot_ms=6.0,
               gpus=["h100_sxm"], max_gpus=4, dtypes=["bf16"], input_len=2000, output_len=200, workers=1,
               calibration="none")
    best = r.table[0]
    pre, dec = best.pools["prefill"], best.pools["decode"]
    assert pre["max_num_seqs"] == best.prefill_batch and dec["max_num_seqs"] == best.max_num_seqs
    assert dec["mem_fraction_static"] == best.mem_fraction_static
    assert pre["tp"] < dec["tp"] and pre["mem_fraction_static"] != dec["mem_fraction_static"]
    cmds = commands(emit_command("sglang", "meta-llama/Llama-3.1-8B-Instruct", best))
    assert _value(cmds["prefill"], "--max-running-requests") == str(best.prefill_batch)
    assert _value(cmds["prefill"], "--mem-fraction-static") == f"{pre['mem_fraction_static']:g}"
    assert _value(cmds["decode"], "--max-running-requests") == str(best.max_num_seqs)
