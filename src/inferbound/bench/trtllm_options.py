"""The options YAML of ``trtllm-serve --config FILE`` (alias ``--extra_llm_api_options``), read as the engine
reads it: the file's keys are LlmArgs fields and replace the command line's (TensorRT-LLM
``tensorrt_llm/commands/serve.py``: ``llm_args = update_llm_args_with_extra_options(llm_args,
extra_llm_api_options)``, the YAML applied last).

Keys mapped onto inferbound's options (the rest are named in one warning, never dropped silently):

- ``stream_interval: k`` -> ``stream_interval`` (a response every k iterations, engines.yaml trtllm@1.2);
- ``max_batch_size`` -> ``max_num_seqs``; ``max_num_tokens`` -> ``token_budget``;
  ``enable_chunked_prefill`` -> ``chunked_prefill``;
- ``kv_cache_config``: ``free_gpu_memory_fraction`` -> ``memory_fraction``, ``enable_block_reuse: false`` ->
  ``prefix_caching`` off, ``dtype: fp8`` -> the KV format fp8, ``tokens_per_block`` -> ``block_size``;
- ``enable_attention_dp: true`` -> attention data parallel over the tp_size ranks (tp_size counts them: attention
  TP 1, DP = tp_size, the experts expert-parallel over them unless ``--ep_size`` says otherwise);
- any other key (``cuda_graph_config``, ``moe_config``, ``attention_dp_config``, ``print_iter_log``, ...) is named
  in the warning as not modelled.

A file that is not on this machine is not read (a warning says so, as before).
"""
from __future__ import annotations

from pathlib import Path

import yaml

_KV_DTYPES = {"fp8": "fp8", "auto": None}  # kv_cache_config.dtype values; auto: the model's


def _int(key: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"trtllm-serve options YAML: {key}={v!r}; allowed: an integer >= 1")
    return v


def read(path: str | None) -> tuple[dict, dict, list[str]]:
    """(engine options, deployment changes, warnings) of the options YAML at ``path``; ({}, {}, []) without one."""
    if not path:
        return {}, {}, []
    p = Path(path)
    if not p.is_file():
        return {}, {}, [f"trtllm-serve: the options YAML {path!r} is not on this machine; its settings are not read"]
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"trtllm-serve options YAML {path!r}: not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ValueError(f"trtllm-serve options YAML {path!r}: a {type(data).__name__}; allowed: a mapping of "
                         f"LlmArgs fields")
    opts, dep, other = {}, {}, []
    for key, v in data.items():
        if key == "stream_interval":
            opts["stream_interval"] = _int(key, v)
        elif key == "max_batch_size":
            opts["max_num_seqs"] = _int(key, v)
        elif key == "max_num_tokens":
            opts["token_budget"] = _int(key, v)
        elif key == "enable_chunked_prefill":
            opts["chunked_prefill"] = bool(v)
        elif key == "enable_attention_dp":
            dep["attention_dp"] = bool(v)
        elif key == "kv_cache_config" and isinstance(v, dict):
            other += _kv_cache(v, opts, dep)
        else:
            other.append(key)
    warn = [f"trtllm-serve options YAML {path!r}: not modelled: {', '.join(sorted(other))}"] if other else []
    return opts, dep, warn


def _kv_cache(cfg: dict, opts: dict, dep: dict) -> list[str]:
    other = []
    for key, v in cfg.items():
        if key == "free_gpu_memory_fraction":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"trtllm-serve options YAML: kv_cache_config.free_gpu_memory_fraction={v!r}; "
                                 f"allowed: a number in (0, 1]")
            opts["memory_fraction"] = float(v)
        elif key == "enable_block_reuse":
            opts["prefix_caching"] = bool(v)
        elif key == "tokens_per_block":
            opts["block_size"] = _int("kv_cache_config.tokens_per_block", v)
        elif key == "dtype":
            if str(v) not in _KV_DTYPES:
                raise ValueError(f"trtllm-serve options YAML: kv_cache_config.dtype={v!r}; allowed: "
                                 f"{', '.join(_KV_DTYPES)}")
            if _KV_DTYPES[str(v)]:
                dep["kv_dtype"] = _KV_DTYPES[str(v)]
        else:
            other.append(f"kv_cache_config.{key}")
    return other


def apply_layout(dep: dict, changes: dict) -> dict:
    """``dep`` (tp, pp, ep, num_gpus) with the YAML's changes: attention DP over the tp_size ranks."""
    out = {**dep, **{k: v for k, v in changes.items() if k != "attention_dp"}}
    if changes.get("attention_dp") and dep["tp"] > 1:
        out.update(tp=1, dp=dep["tp"], attention_dp=True, ep=dep.get("ep", dep["tp"]))
    return out
