"""Launch commands that deploy a searched configuration with vLLM, SGLang or TensorRT-LLM.

Flag names and semantics are those of the engine profile the row was evaluated under (data/engines.yaml:
each profile names the argument-parser file of its version); the header of every command says which.

- Limits per rank: a row's ``max_num_seqs`` is per replica and its ``token_budget`` per attention
  group. vLLM's ``--max-num-seqs`` / ``--max-num-batched-tokens`` and TensorRT-LLM's
  ``--max_batch_size`` / ``--max_num_tokens`` apply per data-parallel rank (engines.yaml
  ``dp_*_scope: per_rank``), so they get ceil(max_num_seqs / dp) and the budget; SGLang's
  ``--max-running-requests`` and ``--chunked-prefill-size`` are totals it divides by the attention-DP
  size (``total``), so they get max_num_seqs and budget x dp.
- Weights: the checkpoint that was priced. An fp8/fp4/int4 row launches the published checkpoint of that
  format (data/checkpoints.yaml, each id as NVIDIA benchmarks it) on every engine, whose own
  quantization_config the engine reads (no flag); without one, vLLM and SGLang quantize the BF16 base to
  FP8 online (``--quantization fp8``), and TensorRT-LLM (no online flag), FP4 and int4 get a comment
  asking for a checkpoint of that format.
- Context: the longest request the row priced (prompt + output, ``Row.context_len``) as vLLM
  ``--max-model-len``, SGLang ``--context-length``, TensorRT-LLM ``--max_seq_len`` (vLLM refuses to start
  when the model's full context does not fit the KV it can allocate).
- Engine features (speculative decoding, prefix caching, host KV tier) as the version's own flags:
  search/launch_features.py.
- Memory: the engine's own fraction as the row assumed it (vLLM ``--gpu-memory-utilization``,
  TensorRT-LLM ``--kv_cache_free_gpu_memory_fraction``); SGLang gets the static share (weights + KV
  pool)/HBM of the row unless its automatic fraction was modelled.
- Version-dependent spellings: SGLang >= 0.5.22 ``--attn-dp-size`` (before: ``--dp-size N
  --enable-dp-attention``); vLLM's NixlConnector for disaggregated serving from 0.15; TensorRT-LLM 1.x
  ``--config`` YAML (alias ``--extra_llm_api_options``) with ``enable_chunked_prefill`` (off by default
  in trtllm-serve) and ``enable_attention_dp``.
"""
from __future__ import annotations

import math
import shlex

from ..base.datafiles import data_yaml
from ..deploy.engines import _vtuple, get_engine
from . import launch_features as LF
from .result import Row
from ..base.choices import ENGINES  # noqa: F401  (re-exported; defined there for faces/options.py)

Flags = list[tuple[str, str | None]]


def render(prefix: list[str], flags: Flags) -> str:
    """One flag (and its value) per line, joined with backslash continuations."""
    parts = [" ".join(shlex.quote(x) for x in prefix)]
    parts += [f if v is None else f"{f} {shlex.quote(v)}" for f, v in flags]
    return " \\\n    ".join(parts)


def argv(prefix: list[str], flags: Flags) -> list[str]:
    return prefix + [x for f, v in flags for x in ((f,) if v is None else (f, v))]


def checkpoint(model: str, weight_dtype: str, engine: str) -> tuple[str, list[str]]:
    """(model id to launch, comment lines): a published checkpoint where the engine needs one."""
    if weight_dtype not in ("fp8", "fp4", "int4"):
        return model, []
    known = (data_yaml("checkpoints.yaml") or {}).get(model, {}).get(weight_dtype)
    if known is not None:
        note = [f"# {weight_dtype} weights: the published checkpoint {known['id']} ({known['source']})"]
        return known["id"], note
    if weight_dtype == "fp8" and engine != "trtllm":
        return model, []   # quantized online (--quantization fp8)
    kind = {"fp8": "ModelOpt FP8", "fp4": "NVFP4/MXFP4", "int4": "AWQ/GPTQ int4"}[weight_dtype]
    return model, [f"# {weight_dtype} weights: point MODEL at a {kind} checkpoint of {model} (quantization is read "
                   f"from it; no online flag for {engine})"]


def _fleet_note(row: Row) -> list[str]:
    notes = []
    if row.mode == "disaggregated":
        notes.append(f"# disaggregated: run {row.prefill_replicas} prefill and {row.decode_replicas} decode "
                     f"instance(s), each pool with its own command below, behind a prefill/decode router")
    if row.replicas > 1:
        notes.append(f"# fleet: {row.replicas} copies of this unit behind a load balancer (target rate)")
    if row.nodes > 1:
        notes.append(f"# spans {row.nodes} machines: start it with the engine's multi-node launcher (SGLang: the "
                     f"same command on each machine with --node-rank i --dist-init-addr HEAD_IP:PORT)")
    return notes


def _per_rank_seqs(row: Row) -> str:
    return str(math.ceil(row.max_num_seqs / max(row.dp, 1)))


def vllm_args(model: str, row: Row, profile, role: str | None = None, online_fp8: bool = True,
              base: str | None = None) -> tuple[list[str], Flags]:
    """``model``: the checkpoint launched; ``base``: the catalog model it was priced as (feature lookups)."""
    f: Flags = [("--tensor-parallel-size", str(row.tp)), ("--pipeline-parallel-size", str(row.pp))]
    if row.dp > 1:
        f.append(("--data-parallel-size", str(row.dp)))
    if row.ep > 1:
        f.append(("--enable-expert-parallel", None))
    f += [("--max-num-seqs", _per_rank_seqs(row)), ("--max-num-batched-tokens", str(row.token_budget))]
    if row.kv_dtype == "fp8":
        f.append(("--kv-cache-dtype", "fp8"))
    if row.weight_dtype == "fp8" and online_fp8:
        f.append(("--quantization", "fp8"))
    if row.memory_fraction is not None:
        f.append(("--gpu-memory-utilization", f"{row.memory_fraction:g}"))
    if row.context_len:
        f.append(("--max-model-len", str(row.context_len)))
    f += LF.vllm_flags(base or model, row, profile)[0]
    f += LF.vllm_ep_flags(row, profile, role)[0]
    if role is not None:
        f += LF.vllm_kv_transfer(role, profile)
    return ["vllm", "serve", model], f


def sglang_args(model: str, row: Row, profile, role: str | None = None, online_fp8: bool = True,
                base: str | None = None) -> tuple[list[str], Flags]:
    world = row.tp * (row.dp if row.attention_dp else 1)  # with DP attention, tp-size counts every rank
    f: Flags = [("--model-path", model), ("--tp-size", str(world))]
    if row.pp > 1:
        f.append(("--pp-size", str(row.pp)))
    if row.nodes > 1:  # each machine adds its own --node-rank i and the head's --dist-init-addr (server_args.py)
        f.append(("--nnodes", str(row.nodes)))
    if row.ep > 1:
        f.append(("--ep-size", str(row.ep)))
    if row.dp > 1 and row.attention_dp:
        if _vtuple(profile.version) >= (0, 5, 22):
            f.append(("--attn-dp-size", str(row.dp)))
        else:
            f += [("--dp-size", str(row.dp)), ("--enable-dp-attention", None)]
    dp = row.dp if row.attention_dp else 1
    f += [("--max-running-requests", str(row.max_num_seqs)), ("--chunked-prefill-size", str(row.token_budget * dp))]
    if row.kv_dtype == "fp8":
        f.append(("--kv-cache-dtype", "fp8_e4m3"))
    if row.weight_dtype == "fp8" and online_fp8:
        f.append(("--quantization", "fp8"))
    f.append(("--mem-fraction-static", f"{row.mem_fraction_static:g}"))
    if row.context_len:
        f.append(("--context-length", str(row.context_len)))
    f += LF.sglang_flags(base or model, row, profile)[0]
    f += LF.sglang_ep_flags(row, profile)[0]
    if role is not None and LF.sglang_has_disaggregation(profile):
        f.append(("--disaggregation-mode", role))
    return ["python", "-m", "sglang.launch_server"], f


def trtllm_options(row: Row, model: str = "", profile=None) -> str:
    """The --config (--extra_llm_api_options) YAML of a row (features: launch_features.trtllm_yaml)."""
    lines = ["enable_chunked_prefill: true"]
    if row.attention_dp:
        lines.append("enable_attention_dp: true")
    if profile is None:
        profile = get_engine("trtllm")
    lines += LF.trtllm_yaml(model, row, profile)[0]
    return "\n".join(lines) + "\n"


def trtllm_args(model: str, row: Row, profile, options_file: str = "extra_llm_api_options.yaml") -> tuple[list[str], Flags]:
    f: Flags = [("--tp_size", str(row.tp * (row.dp if row.attention_dp else 1))), ("--pp_size", str(row.pp))]
    if row.ep > 1:
        f.append(("--ep_size", str(row.ep)))
    f += [("--max_batch_size", _per_rank_seqs(row)), ("--max_num_tokens", str(row.token_budget))]
    if row.memory_fraction is not None:
        f.append(("--kv_cache_free_gpu_memory_fraction", f"{row.memory_fraction:g}"))
    if row.context_len:
        f.append(("--max_seq_len", str(row.context_len)))
    f.append(("--extra_llm_api_options", options_file))
    return ["trtllm-serve", model], f


def _profile(engine: str, row: Row):
    """The row's engine profile when it is this engine, else the engine's default (with a warning line)."""
    if row.engine and row.engine.split("@")[0] == engine:
        return get_engine(*row.engine.split("@", 1)), []
    p = get_engine(engine)
    return p, ([f"# note: the search modelled {row.engine}; these are {p.label}'s defaults and flags"]
               if row.engine else [])


def feature_notes(model: str, row: Row, engine: str, p) -> list[str]:
    """Comment lines for the engine features the row was priced with that its flags cannot carry
    (launch_features.py says which: a version without the flag, no recorded EAGLE head)."""
    ep = [n for role, r in LF.pool_rows(row) for n in
          (LF.vllm_ep_flags(r, p, role)[1] if engine == "vllm" else LF.sglang_ep_flags(r, p)[1]
           if engine == "sglang" else [])]
    ep = list(dict.fromkeys(ep))  # the same comment once for both pools
    if engine == "vllm":
        return LF.vllm_flags(model, row, p)[1] + ep + ([LF.P2P_NCCL_NOTE] if row.mode == "disaggregated" else [])
    if engine == "sglang":
        pd = [] if row.mode != "disaggregated" or LF.sglang_has_disaggregation(p) else [LF.sglang_no_pd_note(p)]
        return LF.sglang_flags(model, row, p)[1] + ep + pd
    return LF.trtllm_yaml(model, row, p)[1]


def emit_command(engine: str, model: str, row: Row) -> str:
    """Shell text that launches ``row`` with ``engine`` (vllm, sglang, trtllm), with comments."""
    if engine not in ENGINES:
        raise ValueError(f"emit={engine!r} unknown; allowed: {', '.join(ENGINES)}")
    p, warn = _profile(engine, row)
    launch, ck = checkpoint(model, row.weight_dtype, engine)
    source = p.flags.source if p.flags is not None else p.label
    head = [f"# {row.layout}, {row.mode}, concurrency {row.concurrency} (inferbound search, rank {row.rank})",
            f"# {p.label}; flags as in {source}"] + warn + ck + _fleet_note(row) + feature_notes(model, row, engine, p)
    if row.context_len:
        head.append(f"# context {row.context_len} tokens: the longest request priced (prompt + output; of a length "
                    f"distribution, its longest class); the engine refuses longer ones")
    online_fp8 = launch == model  # a pre-quantized checkpoint carries its own quantization_config
    body = []
    if engine == "trtllm":
        if row.mode == "disaggregated":
            body.append("# TensorRT-LLM: the context (prefill) and generation (decode) servers of "
                        "`trtllm-serve disaggregated`, each with its pool's layout")
        for role, r in LF.pool_rows(row):
            name = "extra_llm_api_options.yaml" if role is None else f"extra_llm_api_options_{role}.yaml"
            if role is not None:
                body.append(f"# {role} server: TP{r.tp} EP{r.ep} DP{r.dp}")
            body += [f"cat > {name} <<'EOF'", trtllm_options(r, model, p).rstrip("\n"), "EOF",
                     render(*trtllm_args(launch, r, p, name))]
        return "\n".join(head + body) + "\n"
    build = vllm_args if engine == "vllm" else sglang_args
    if engine == "vllm" and 1 < row.ep != row.tp * row.dp:
        head.append(f"# vLLM sets EP = TP x DP = {row.tp * row.dp} with --enable-expert-parallel; ep={row.ep} "
                    f"(expert TP inside EP groups) has no vLLM flag")
    for role, r in LF.pool_rows(row):
        if role is not None:
            body.append(f"# {role} instance: TP{r.tp} EP{r.ep} DP{r.dp}" + (f" over {r.nodes} nodes" if r.nodes > 1 else ""))
        body.append(render(*build(launch, r, p, role, online_fp8, model)))
    return "\n".join(head + body) + "\n"
