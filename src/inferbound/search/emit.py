"""Launch commands that deploy a searched configuration with vLLM, SGLang or TensorRT-LLM.

Flag names and semantics are those of the engine profile the row was evaluated under (data/engines.yaml:
each profile names the argument-parser file of its version); the header of every command says which.

- Limits per rank: a row's ``max_num_seqs`` is per replica and its ``token_budget`` per attention
  group. vLLM's ``--max-num-seqs`` / ``--max-num-batched-tokens`` and TensorRT-LLM's
  ``--max_batch_size`` / ``--max_num_tokens`` apply per data-parallel rank (engines.yaml
  ``dp_*_scope: per_rank``), so they get ceil(max_num_seqs / dp) and the budget; SGLang's
  ``--max-running-requests`` and ``--chunked-prefill-size`` are totals it divides by the attention-DP
  size (``total``), so they get max_num_seqs and budget x dp.
- Weights: vLLM and SGLang quantize a BF16 checkpoint to FP8 online (``--quantization fp8``); TensorRT-LLM
  has no online flag and FP4 needs a pre-quantized checkpoint on every engine: the model is replaced by
  the published checkpoint of that format (data/checkpoints.yaml, each id as NVIDIA benchmarks it), or
  a comment says one is needed. int4 needs an AWQ/GPTQ checkpoint. Quantization is read from a
  checkpoint's own config, so no flag is added for one.
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
from .result import Row

ENGINES = ("vllm", "sglang", "trtllm")

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
    needs = weight_dtype in ("fp4", "int4") or (weight_dtype == "fp8" and engine == "trtllm")
    if not needs:
        return model, []
    known = (data_yaml("checkpoints.yaml") or {}).get(model, {}).get(weight_dtype)
    if known is not None:
        note = [f"# {weight_dtype} weights: the published checkpoint {known['id']} ({known['source']})"]
        return known["id"], note
    kind = {"fp8": "ModelOpt FP8", "fp4": "NVFP4/MXFP4", "int4": "AWQ/GPTQ int4"}[weight_dtype]
    return model, [f"# {weight_dtype} weights: point MODEL at a {kind} checkpoint of {model} (quantization is read "
                   f"from it; no online flag for {engine})"]


def _fleet_note(row: Row) -> list[str]:
    notes = []
    if row.mode == "disaggregated":
        notes.append(f"# disaggregated: run {row.prefill_replicas} prefill and {row.decode_replicas} decode "
                     f"instance(s), each as below, behind a prefill/decode router")
    if row.replicas > 1:
        notes.append(f"# fleet: {row.replicas} copies of this unit behind a load balancer (target rate)")
    if row.nodes > 1:
        notes.append(f"# spans {row.nodes} machines: start it with the engine's multi-node launcher")
    return notes


def _per_rank_seqs(row: Row) -> str:
    return str(math.ceil(row.max_num_seqs / max(row.dp, 1)))


def vllm_args(model: str, row: Row, profile, role: str | None = None, online_fp8: bool = True) -> tuple[list[str], Flags]:
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
    if role is not None:
        connector = "NixlConnector" if _vtuple(profile.version) >= (0, 15) else "LMCacheConnectorV1"
        f.append(("--kv-transfer-config", f'{{"kv_connector":"{connector}","kv_role":"kv_both"}}'))
    return ["vllm", "serve", model], f


def sglang_args(model: str, row: Row, profile, role: str | None = None, online_fp8: bool = True) -> tuple[list[str], Flags]:
    world = row.tp * (row.dp if row.attention_dp else 1)  # with DP attention, tp-size counts every rank
    f: Flags = [("--model-path", model), ("--tp-size", str(world))]
    if row.pp > 1:
        f.append(("--pp-size", str(row.pp)))
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
    if role is not None:
        f.append(("--disaggregation-mode", role))
    return ["python", "-m", "sglang.launch_server"], f


def trtllm_options(row: Row) -> str:
    """The --config (--extra_llm_api_options) YAML of a row."""
    lines = ["enable_chunked_prefill: true"]
    if row.attention_dp:
        lines.append("enable_attention_dp: true")
    if row.kv_dtype == "fp8":
        lines += ["kv_cache_config:", "  dtype: fp8"]
    return "\n".join(lines) + "\n"


def trtllm_args(model: str, row: Row, profile, options_file: str = "extra_llm_api_options.yaml") -> tuple[list[str], Flags]:
    f: Flags = [("--tp_size", str(row.tp * (row.dp if row.attention_dp else 1))), ("--pp_size", str(row.pp))]
    if row.ep > 1:
        f.append(("--ep_size", str(row.ep)))
    f += [("--max_batch_size", _per_rank_seqs(row)), ("--max_num_tokens", str(row.token_budget))]
    if row.memory_fraction is not None:
        f.append(("--kv_cache_free_gpu_memory_fraction", f"{row.memory_fraction:g}"))
    f.append(("--extra_llm_api_options", options_file))
    return ["trtllm-serve", model], f


def _profile(engine: str, row: Row):
    """The row's engine profile when it is this engine, else the engine's default (with a warning line)."""
    if row.engine and row.engine.split("@")[0] == engine:
        return get_engine(*row.engine.split("@", 1)), []
    p = get_engine(engine)
    return p, ([f"# note: the search modelled {row.engine}; these are {p.label}'s defaults and flags"]
               if row.engine else [])


def feature_notes(row: Row, p) -> list[str]:
    """Comment lines for the engine features the row was modelled with, with the engine's own flag template
    (engines.yaml ``flags``: speculative, prefix_caching, kv_offload); features are not rendered as flags
    because their spelling takes values the row does not carry (a draft checkpoint, a host pool size)."""
    f, flags = row.features, p.flags
    out = []

    def template(name):
        t = getattr(flags, name, None) if flags is not None else None
        return t or f"no {name} flag recorded for {p.label}"
    if f.get("speculative"):
        out.append(f"# speculative decoding modelled ({f['speculative']}, k={f['spec_tokens']}, acceptance "
                   f"{f['acceptance']:g}): {template('speculative')}")
    if f.get("prefix_hit_rate") or f.get("shared_prefix_len"):
        on = "on by default" if p.prefix_caching is not None and p.prefix_caching.value else "off by default"
        out.append(f"# prefix caching modelled ({on} in {p.label}): {template('prefix_caching')}")
    if f.get("kv_offload"):
        out.append(f"# KV offload to host modelled: {template('kv_offload')}")
    return out


def emit_command(engine: str, model: str, row: Row) -> str:
    """Shell text that launches ``row`` with ``engine`` (vllm, sglang, trtllm), with comments."""
    if engine not in ENGINES:
        raise ValueError(f"emit={engine!r} unknown; allowed: {', '.join(ENGINES)}")
    p, warn = _profile(engine, row)
    launch, ck = checkpoint(model, row.weight_dtype, engine)
    source = p.flags.source if p.flags is not None else p.label
    head = [f"# {row.layout}, {row.mode}, concurrency {row.concurrency} (inferbound search, rank {row.rank})",
            f"# {p.label}; flags as in {source}"] + warn + ck + _fleet_note(row) + feature_notes(row, p)
    online_fp8 = launch == model  # a pre-quantized checkpoint carries its own quantization_config
    body = []
    if engine == "trtllm":
        if row.mode == "disaggregated":
            body.append("# TensorRT-LLM: use this as the context and the generation server config of "
                        "`trtllm-serve disaggregated`")
        body += ["cat > extra_llm_api_options.yaml <<'EOF'", trtllm_options(row).rstrip("\n"), "EOF",
                 render(*trtllm_args(launch, row, p))]
        return "\n".join(head + body) + "\n"
    build = vllm_args if engine == "vllm" else sglang_args
    if engine == "vllm" and 1 < row.ep != row.tp * row.dp:
        head.append(f"# vLLM sets EP = TP x DP = {row.tp * row.dp} with --enable-expert-parallel; ep={row.ep} "
                    f"(expert TP inside EP groups) has no vLLM flag")
    for role in (["prefill", "decode"] if row.mode == "disaggregated" else [None]):
        if role is not None:
            body.append(f"# {role} instance")
        body.append(render(*build(launch, row, p, role, online_fp8)))
    return "\n".join(head + body) + "\n"
