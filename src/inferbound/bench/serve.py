"""Serve commands read as the engine reads them: ``vllm serve``, ``python -m sglang.launch_server``,
``trtllm-serve``, mapped onto a deployment (deploy.make_deployment) and its engine options
(deploy.runtime.resolve: block_size, token_budget, max_num_seqs, memory_fraction, chunked_prefill,
prefix_caching). Flag names as each engine spells them (data/bench.yaml ``serve_commands``: the source).

Layout, the inverse of search/emit.py's rules:

- vLLM: GPUs = TP x PP x DP. ``--enable-expert-parallel`` on a mixture-of-experts model makes the experts
  span TP x DP GPUs (EP = TP x DP) and the DP ranks attention data-parallel; without it DP ranks are
  replicas. ``--max-num-seqs`` and ``--max-num-batched-tokens`` are per DP rank, as inferbound's options.
- SGLang: ``--tp-size`` counts every GPU of an instance; with attention DP of size d (``--attn-dp-size d``,
  or ``--dp-size d --enable-dp-attention``) each attention group has tp-size/d GPUs, and
  ``--max-running-requests`` / ``--chunked-prefill-size`` are totals SGLang divides by d, so the per-group
  figures are ceil(total/d) and total/d. Without ``--ep-size`` SGLang runs the experts tensor-parallel over
  the tp-size GPUs; inferbound's attention DP needs them expert-parallel, so EP = tp-size, with a warning.
  ``--chunked-prefill-size -1`` turns chunking off. Without DP attention ``--dp-size`` copies the instance
  (replicas).
- TensorRT-LLM: GPUs = tp_size x pp_size; ``--max_batch_size`` is the running-sequence cap, ``--max_num_tokens``
  the token budget, ``--kv_cache_free_gpu_memory_fraction`` the KV memory fraction; the ``--config`` YAML, when
  the file is here, replaces them and adds its own keys (bench/trtllm_options.py).

Formats: ``--dtype`` is the compute format; ``--kv-cache-dtype`` the KV format; ``--quantization`` the
weight and compute formats of the method as bench.yaml lists them (an unlisted method: a warning, the
checkpoint's own formats).
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from . import serve_features as SF
from . import trtllm_options
from .argv import ToolParser, bench_data, parse, split, unknown_warning

ENGINES = ("vllm", "sglang", "trtllm")
LAUNCHERS = "vllm serve MODEL, python -m vllm.entrypoints.openai.api_server, python -m sglang.launch_server, " \
            "trtllm-serve MODEL"


@dataclass(frozen=True)
class ServeSpec:
    """A parsed serve command: the engine, the model id, make_deployment keywords, engine options."""

    engine: str
    model: str
    deployment: dict
    engine_options: dict
    max_model_len: int | None = None
    expert_parallel: bool = False  # vLLM --enable-expert-parallel (applies to MoE models only)
    warnings: tuple[str, ...] = field(default_factory=tuple)
    served_names: tuple[str, ...] = ()  # --served-model-name: the names a load tool may ask for
    features: dict = field(default_factory=dict)  # engine-feature flags read back (serve_features.py)


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; allowed: an integer >= 1") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; allowed: an integer >= 1")
    return v


def fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; allowed: a number in (0, 1]") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}; allowed: a number in (0, 1]")
    return v


def token_count(text: str) -> int:
    """An integer, or with a k/K (x1000) or m/M (x1e6) suffix as vLLM's --max-model-len takes it."""
    t = text.strip()
    scale = {"k": 1000, "m": 1_000_000}.get(t[-1:].lower(), 1)
    return positive_int(str(int(float(t[:-1]) * scale)) if scale > 1 and t[:-1] else t)


def _choices(table: str) -> list[str]:
    return list(bench_data()[table])


def _formats(ns, engine: str) -> tuple[dict, list[str]]:
    """make_deployment's weight/act/kv formats from --dtype, --kv-cache-dtype, --quantization."""
    data, out, warn = bench_data(), {}, []
    if getattr(ns, "kv_cache_dtype", None):
        out["kv_dtype"] = data["kv_cache_dtypes"][ns.kv_cache_dtype]
    if getattr(ns, "dtype", None):
        out["act_dtype"] = data["dtypes"][ns.dtype]
    q = getattr(ns, "quantization", None)
    if q:
        table = data["serve_commands"][engine]["quantization"]
        if q in table:
            w, a = table[q]
            out["weight_dtype"] = w
            if a is not None:
                out["act_dtype"] = a
        else:
            warn.append(f"{engine}: --quantization {q} is not modelled; the checkpoint's own formats are used "
                        f"(modelled: {', '.join(table) or 'none'})")
    return {k: v for k, v in out.items() if v is not None}, warn


def _vllm_parser() -> ToolParser:
    p = ToolParser("vllm serve")
    p.add_argument("model_tag", nargs="?")
    p.add_argument("--model")
    p.add_argument("--tensor-parallel-size", "-tp", type=positive_int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=positive_int, default=1)
    p.add_argument("--data-parallel-size", "-dp", type=positive_int, default=1)
    p.add_argument("--enable-expert-parallel", action="store_true")
    p.add_argument("--max-num-seqs", type=positive_int)
    p.add_argument("--max-num-batched-tokens", type=positive_int)
    p.add_argument("--gpu-memory-utilization", type=fraction)
    p.add_argument("--max-model-len", type=token_count)
    p.add_argument("--kv-cache-dtype", choices=_choices("kv_cache_dtypes"))
    p.add_argument("--dtype", choices=_choices("dtypes"))
    p.add_argument("--quantization", "-q")
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--block-size", type=positive_int)
    p.add_argument("--num-scheduler-steps", type=positive_int)  # V0 multi-step (vLLM 0.6.x arg_utils.py)
    p.add_argument("--enforce-eager", action="store_true")  # no CUDA graphs (vLLM arg_utils.py)
    SF.add_vllm_args(p)
    for flag in ("--host", "--port", "--api-key", "--download-dir", "--tokenizer", "--revision", "--seed",
                 "--uvicorn-log-level"):  # no effect on performance: read, unused
        p.add_argument(flag)
    p.add_argument("--served-model-name", nargs="+")
    for flag in ("--trust-remote-code", "--disable-log-requests", "--disable-log-stats", "--enable-log-requests"):
        p.add_argument(flag, action="store_true")
    return p


def parse_vllm(words: list[str]) -> ServeSpec:
    ns, unknown = parse(_vllm_parser(), words, underscores_as_dashes=True)
    model = ns.model_tag or ns.model
    if not model:
        raise ValueError("vllm serve: the model is missing; allowed: vllm serve MODEL [flags] or --model MODEL")
    tp, pp, dp = ns.tensor_parallel_size, ns.pipeline_parallel_size, ns.data_parallel_size
    dep = {"tp": tp, "pp": pp, "dp": dp, "num_gpus": tp * pp * dp}
    formats, warn = _formats(ns, "vllm")
    opts = {"max_num_seqs": ns.max_num_seqs, "token_budget": ns.max_num_batched_tokens,
            "memory_fraction": ns.gpu_memory_utilization, "block_size": ns.block_size,
            "prefix_caching": ns.enable_prefix_caching, "chunked_prefill": ns.enable_chunked_prefill,
            "scheduler_steps": ns.num_scheduler_steps, "cuda_graphs": "off" if ns.enforce_eager else None}
    feats = SF.vllm_features(ns, tp)
    ep_dep, pd = SF.vllm_parallel(ns)
    dep.update(ep_dep)
    feats.update(pd)
    return ServeSpec("vllm", model, {**dep, **formats}, {k: v for k, v in opts.items() if v is not None},
                     ns.max_model_len, bool(ns.enable_expert_parallel),
                     tuple(warn + SF.warning("vllm serve", feats) + unknown_warning("vllm serve", unknown)),
                     tuple(ns.served_model_name or ()), feats)


def _sglang_parser() -> ToolParser:
    p = ToolParser("sglang.launch_server")
    p.add_argument("--model-path", "--model")
    # SGLang server_args.py names each size twice (--tensor-parallel-size / --tp-size, --data-parallel-size /
    # --dp-size, --expert-parallel-size / --ep-size, --pipeline-parallel-size / --pp-size); InferenceX's launch
    # scripts use the long forms (benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200.sh)
    p.add_argument("--tp-size", "--tp", "--tensor-parallel-size", dest="tp_size", type=positive_int, default=1)
    p.add_argument("--dp-size", "--dp", "--data-parallel-size", dest="dp_size", type=positive_int, default=1)
    p.add_argument("--ep-size", "--ep", "--expert-parallel-size", dest="ep_size", type=positive_int, default=1)
    p.add_argument("--pp-size", "--pipeline-parallel-size", dest="pp_size", type=positive_int, default=1)
    p.add_argument("--nnodes", type=positive_int, default=1)
    p.add_argument("--attn-dp-size", type=positive_int)
    p.add_argument("--enable-dp-attention", action="store_true")
    p.add_argument("--mem-fraction-static", type=fraction)
    p.add_argument("--max-running-requests", type=positive_int)
    p.add_argument("--chunked-prefill-size", type=int)
    p.add_argument("--kv-cache-dtype", choices=_choices("kv_cache_dtypes"))
    p.add_argument("--dtype", choices=_choices("dtypes"))
    p.add_argument("--quantization")
    p.add_argument("--page-size", type=positive_int)
    p.add_argument("--disable-radix-cache", action="store_true")
    p.add_argument("--context-length", type=positive_int)
    p.add_argument("--disable-cuda-graph", action="store_true")  # eager steps (SGLang server_args.py)
    p.add_argument("--stream-interval", type=positive_int)  # tokens per streamed chunk (SGLang server_args.py)
    p.add_argument("--scheduler-recv-interval", type=positive_int)  # decode passes between receives (server_args.py)
    # declared in server_args.py (num_continuous_decode_steps: int = 1) and read by no other module of the
    # SGLang 0.5.9 and 0.5.12 wheels (PyPI): read here so that the note says it changes nothing
    p.add_argument("--num-continuous-decode-steps", type=positive_int)
    SF.add_sglang_args(p)
    for flag in ("--host", "--port", "--api-key", "--served-model-name", "--tokenizer-path", "--revision",
                 "--random-seed", "--log-level", "--node-rank", "--dist-init-addr"):
        p.add_argument(flag)
    p.add_argument("--trust-remote-code", action="store_true")
    return p


def parse_sglang(words: list[str]) -> ServeSpec:
    ns, unknown = parse(_sglang_parser(), words)
    if not ns.model_path:
        raise ValueError("sglang.launch_server: --model-path is missing; allowed: --model-path MODEL")
    world, pp = ns.tp_size, ns.pp_size
    d = ns.attn_dp_size or (ns.dp_size if ns.enable_dp_attention else 1)
    if world % d:
        raise ValueError(f"sglang.launch_server: --tp-size {world} is not a multiple of the attention DP size {d}; "
                         f"allowed: a tp-size divisible by it")
    opts = {"memory_fraction": ns.mem_fraction_static, "block_size": ns.page_size}
    if ns.max_running_requests is not None:
        opts["max_num_seqs"] = math.ceil(ns.max_running_requests / d)
    if ns.chunked_prefill_size is not None:
        if ns.chunked_prefill_size == -1 or ns.chunked_prefill_size == 0:
            opts["chunked_prefill"] = False
        elif ns.chunked_prefill_size < 0:
            raise ValueError(f"sglang.launch_server: --chunked-prefill-size {ns.chunked_prefill_size}; allowed: "
                             f"an integer >= 1, or -1 (no chunking)")
        else:
            opts["token_budget"] = max(1, ns.chunked_prefill_size // d)
    if ns.disable_radix_cache:
        opts["prefix_caching"] = False
    if ns.disable_cuda_graph:
        opts["cuda_graphs"] = "off"
    if ns.stream_interval is not None:
        opts["stream_interval"] = ns.stream_interval
    if ns.scheduler_recv_interval is not None:
        opts["recv_interval"] = ns.scheduler_recv_interval
    if d > 1:
        dep = {"tp": world // d, "dp": d, "attention_dp": True, "pp": pp, "num_gpus": world * pp}
    else:
        dep = {"tp": world, "dp": ns.dp_size, "pp": pp, "num_gpus": world * pp * ns.dp_size}
    formats, warn = _formats(ns, "sglang")
    if ns.ep_size > 1:
        dep["ep"] = ns.ep_size
    elif d > 1:  # inferbound's attention DP splits the experts over the attention ranks' GPUs
        dep["ep"] = world
        warn.append(f"sglang.launch_server: DP attention without --ep-size runs the experts tensor-parallel over "
                    f"the {world} GPUs; modelled as expert-parallel over them (EP {world}), the layout inferbound "
                    f"prices for attention DP")
    if ns.nnodes > 1:
        dep["nodes"] = ns.nnodes
    if ns.num_continuous_decode_steps not in (None, 1):
        warn.append(f"sglang.launch_server: --num-continuous-decode-steps {ns.num_continuous_decode_steps} is "
                    f"declared but read by no scheduler code in SGLang 0.5.9-0.5.12 (server_args.py only): "
                    f"priced as 1 decode step per scheduler pass")
    feats = SF.sglang_features(ns)
    ep_dep, pd = SF.sglang_parallel(ns)
    dep.update(ep_dep)
    feats.update(pd)
    return ServeSpec("sglang", ns.model_path, {**dep, **formats}, {k: v for k, v in opts.items() if v is not None},
                     ns.context_length, False, tuple(warn + SF.warning("sglang.launch_server", feats) +
                                                     unknown_warning("sglang.launch_server", unknown)),
                     (ns.served_model_name,) if ns.served_model_name else (), feats)


def _trtllm_parser() -> ToolParser:
    p = ToolParser("trtllm-serve")
    p.add_argument("model")
    p.add_argument("--tp_size", type=positive_int, default=1)
    p.add_argument("--pp_size", type=positive_int, default=1)
    p.add_argument("--ep_size", type=positive_int)
    p.add_argument("--max_batch_size", type=positive_int)
    p.add_argument("--max_num_tokens", type=positive_int)
    p.add_argument("--kv_cache_free_gpu_memory_fraction", type=fraction)
    p.add_argument("--max_seq_len", type=positive_int)
    p.add_argument("--extra_llm_api_options", "--config")
    for flag in ("--host", "--port", "--backend", "--tokenizer", "--log_level"):
        p.add_argument(flag)
    p.add_argument("--trust_remote_code", action="store_true")
    return p


def parse_trtllm(words: list[str]) -> ServeSpec:
    ns, unknown = parse(_trtllm_parser(), words)
    dep = {"tp": ns.tp_size, "pp": ns.pp_size, "num_gpus": ns.tp_size * ns.pp_size}
    if ns.ep_size and ns.ep_size > 1:
        dep["ep"] = ns.ep_size
    opts = {"max_num_seqs": ns.max_batch_size, "token_budget": ns.max_num_tokens,
            "memory_fraction": ns.kv_cache_free_gpu_memory_fraction}
    yaml_opts, yaml_dep, warn = trtllm_options.read(ns.extra_llm_api_options)  # the YAML applies last
    opts.update(yaml_opts)
    return ServeSpec("trtllm", ns.model, trtllm_options.apply_layout(dep, yaml_dep),
                     {k: v for k, v in opts.items() if v is not None}, ns.max_seq_len,
                     False, tuple(warn + unknown_warning("trtllm-serve", unknown)))


def parse_serve(command: str | list[str]) -> ServeSpec:
    """The ServeSpec of a launch command (see the module docstring); one-line ValueErrors."""
    w = split(command)
    if len(w) >= 2 and w[0] in ("python", "python3") and w[1] == "-m" and len(w) >= 3:
        module, rest = w[2], w[3:]
        if module == "sglang.launch_server":
            return parse_sglang(rest)
        if module == "vllm.entrypoints.openai.api_server":
            return parse_vllm(rest)
    elif w[:2] == ["vllm", "serve"]:
        return parse_vllm(w[2:])
    elif w[:1] == ["trtllm-serve"]:
        return parse_trtllm(w[2:] if w[1:2] == ["serve"] else w[1:])
    shown = " ".join(w[:3]) if w else ""
    raise ValueError(f"serve command {shown!r} unknown; allowed: {LAUNCHERS}")
