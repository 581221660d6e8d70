"""Launch commands that deploy a searched configuration with vLLM, SGLang or TensorRT-LLM.

Flag names, from each engine's documentation:

- vLLM ``vllm serve MODEL`` (https://docs.vllm.ai/en/latest/configuration/engine_args/ ,
  https://docs.vllm.ai/en/latest/serving/expert_parallel_deployment/ ,
  https://docs.vllm.ai/en/latest/features/nixl_connector_usage.html): --tensor-parallel-size,
  --pipeline-parallel-size, --data-parallel-size, --enable-expert-parallel (EP = TP x DP, set by vLLM),
  --max-num-seqs, --max-num-batched-tokens, --kv-cache-dtype {auto,fp8,...}, --gpu-memory-utilization,
  --quantization fp8, --kv-transfer-config (disaggregated prefill, NixlConnector).
- SGLang ``python -m sglang.launch_server`` (https://docs.sglang.io/advanced_features/server_arguments.html):
  --model-path, --tp-size, --pp-size, --ep-size, --dp-size, --enable-dp-attention,
  --max-running-requests, --chunked-prefill-size, --kv-cache-dtype {auto,fp8_e4m3,...},
  --mem-fraction-static, --quantization fp8, --disaggregation-mode {prefill,decode}.
- TensorRT-LLM ``trtllm-serve MODEL`` (https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve.html):
  --tp_size, --pp_size, --ep_size, --max_batch_size, --max_num_tokens,
  --kv_cache_free_gpu_memory_fraction, --extra_llm_api_options FILE.yaml; the YAML (LLM API fields)
  carries ``kv_cache_config: {dtype: fp8}``, ``enable_attention_dp`` and ``enable_chunked_prefill``.

Values: parallel sizes of the layout; max sequences in flight = the row's ``max_num_seqs`` (decode
batch D plus the prompts being prefilled); token budget per step = the search's token budget;
KV dtype; memory fractions of result.py. int4/fp4 weights need a pre-quantized checkpoint (AWQ/GPTQ,
NVFP4/MXFP4): the engines read its quantization from the checkpoint, so the command says so.
"""
from __future__ import annotations

import shlex

from .result import Row

ENGINES = ("vllm", "sglang", "trtllm")


def _checkpoint_note(row: Row) -> list[str]:
    if row.weight_dtype in ("int4", "fp4"):
        kind = "AWQ/GPTQ int4" if row.weight_dtype == "int4" else "NVFP4/MXFP4"
        return [f"# weights {row.weight_dtype}: point MODEL at a {kind} checkpoint (quantization read from it)"]
    return []


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


Flags = list[tuple[str, str | None]]


def render(prefix: list[str], flags: Flags) -> str:
    """One flag (and its value) per line, joined with backslash continuations."""
    parts = [" ".join(shlex.quote(x) for x in prefix)]
    parts += [f if v is None else f"{f} {shlex.quote(v)}" for f, v in flags]
    return " \\\n    ".join(parts)


def argv(prefix: list[str], flags: Flags) -> list[str]:
    return prefix + [x for f, v in flags for x in ((f,) if v is None else (f, v))]


def vllm_args(model: str, row: Row, role: str | None = None) -> tuple[list[str], Flags]:
    f: Flags = [("--tensor-parallel-size", str(row.tp)), ("--pipeline-parallel-size", str(row.pp))]
    if row.dp > 1:
        f.append(("--data-parallel-size", str(row.dp)))
    if row.ep > 1:
        f.append(("--enable-expert-parallel", None))
    f += [("--max-num-seqs", str(row.max_num_seqs)), ("--max-num-batched-tokens", str(row.token_budget))]
    if row.kv_dtype == "fp8":
        f.append(("--kv-cache-dtype", "fp8"))
    if row.weight_dtype == "fp8":
        f.append(("--quantization", "fp8"))
    f.append(("--gpu-memory-utilization", f"{row.gpu_memory_utilization:g}"))
    if role is not None:
        f.append(("--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'))
    return ["vllm", "serve", model], f


def sglang_args(model: str, row: Row, role: str | None = None) -> tuple[list[str], Flags]:
    world = row.tp * (row.dp if row.attention_dp else 1)  # with DP attention, tp-size counts every rank
    f: Flags = [("--model-path", model), ("--tp-size", str(world))]
    if row.pp > 1:
        f.append(("--pp-size", str(row.pp)))
    if row.ep > 1:
        f.append(("--ep-size", str(row.ep)))
    if row.dp > 1:
        f.append(("--dp-size", str(row.dp)))
        if row.attention_dp:
            f.append(("--enable-dp-attention", None))
    f += [("--max-running-requests", str(row.max_num_seqs)), ("--chunked-prefill-size", str(row.token_budget))]
    if row.kv_dtype == "fp8":
        f.append(("--kv-cache-dtype", "fp8_e4m3"))
    if row.weight_dtype == "fp8":
        f.append(("--quantization", "fp8"))
    f.append(("--mem-fraction-static", f"{row.mem_fraction_static:g}"))
    if role is not None:
        f.append(("--disaggregation-mode", role))
    return ["python", "-m", "sglang.launch_server"], f


def trtllm_options(row: Row) -> str:
    """The --extra_llm_api_options YAML of a row."""
    lines = ["enable_chunked_prefill: true"]
    if row.attention_dp:
        lines.append("enable_attention_dp: true")
    if row.kv_dtype == "fp8":
        lines += ["kv_cache_config:", "  dtype: fp8"]
    return "\n".join(lines) + "\n"


def trtllm_args(model: str, row: Row, options_file: str = "extra_llm_api_options.yaml") -> tuple[list[str], Flags]:
    f: Flags = [("--tp_size", str(row.tp * (row.dp if row.attention_dp else 1))), ("--pp_size", str(row.pp))]
    if row.ep > 1:
        f.append(("--ep_size", str(row.ep)))
    f += [("--max_batch_size", str(row.max_num_seqs)), ("--max_num_tokens", str(row.token_budget)),
          ("--kv_cache_free_gpu_memory_fraction", f"{row.kv_cache_free_fraction:g}"),
          ("--extra_llm_api_options", options_file)]
    return ["trtllm-serve", model], f


def emit_command(engine: str, model: str, row: Row) -> str:
    """Shell text that launches ``row`` with ``engine`` (vllm, sglang, trtllm), with comments."""
    if engine not in ENGINES:
        raise ValueError(f"emit={engine!r} unknown; allowed: {', '.join(ENGINES)}")
    head = [f"# {row.layout}, {row.mode}, concurrency {row.concurrency} (inferbound search, rank {row.rank})"]
    head += _checkpoint_note(row) + _fleet_note(row)
    body = []
    if engine == "trtllm":
        if row.mode == "disaggregated":
            body.append("# TensorRT-LLM: use this as the context and the generation server config of "
                        "`trtllm-serve disaggregated`")
        body += ["cat > extra_llm_api_options.yaml <<'EOF'", trtllm_options(row).rstrip("\n"), "EOF",
                 render(*trtllm_args(model, row))]
        return "\n".join(head + body) + "\n"
    build = vllm_args if engine == "vllm" else sglang_args
    if engine == "vllm" and 1 < row.ep != row.tp * row.dp:
        head.append(f"# vLLM sets EP = TP x DP = {row.tp * row.dp} with --enable-expert-parallel; ep={row.ep} "
                    f"(expert TP inside EP groups) has no vLLM flag")
    for role in (["prefill", "decode"] if row.mode == "disaggregated" else [None]):
        if role is not None:
            body.append(f"# {role} instance")
        body.append(render(*build(model, row, role)))
    return "\n".join(head + body) + "\n"
