"""Engine-feature flags of a serve command read back as inferbound's feature settings.

What a launch command says about speculative decoding, prefix caching and a host KV tier, as the keys
of inferbound's engine options (deploy/runtime.py FEATURES: ``speculative``, ``spec_tokens``,
``spec_topk``, ``spec_draft_tokens``, ``kv_offload``, ``kv_offload_gb``, ``prefix_caching``) plus
``draft_model`` (the EAGLE head or draft checkpoint named). Flags as the engines' argument parsers
spell them (engines.yaml ``flags``):

- vLLM (vllm/engine/arg_utils.py, 0.8.5 on): ``--speculative-config JSON`` with ``method`` (eagle,
  eagle3 -> eagle; mtp, deepseek_mtp -> mtp; ngram; draft_model or no method with a ``model`` -> draft),
  ``model``, ``num_speculative_tokens``; ``--kv-offloading-size GIB`` (summed over the TP ranks) with
  ``--kv-offloading-backend native|lmcache`` (0.12 on); ``--kv-transfer-config`` naming an offloading
  connector (OffloadingConnector, LMCacheConnectorV1); ``--enable-prefix-caching``.
- SGLang (python/sglang/srt/server_args.py): ``--speculative-algorithm`` (EAGLE, EAGLE3 -> eagle;
  NEXTN -> mtp; NGRAM -> ngram; STANDALONE -> draft), ``--speculative-draft-model-path``,
  ``--speculative-num-steps`` (k), ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``;
  ``--enable-hierarchical-cache`` (alias ``--enable-hicache``) with ``--hicache-size GB`` per rank.

Expert parallelism and P/D pools (``vllm_parallel``, ``sglang_parallel``): redundant experts (vLLM
``--eplb-config`` ``num_redundant_experts``, SGLang ``--ep-num-redundant-experts``) and the DeepEP
all-to-all (vLLM ``--all2all-backend deepep_*``, SGLang ``--moe-a2a-backend deepep`` or the older
``--enable-deepep-moe``) as the deployment's ``redundant_experts`` and ``ep_a2a``; the pool an instance
serves (SGLang ``--disaggregation-mode``, vLLM's ``--kv-transfer-config`` kv_role) as ``disaggregation``.

The acceptance is a property of the workload, not of the command, so a replay (bench/) does not model
the speculation from these alone; the serve parser says so in a warning.
"""
from __future__ import annotations

import argparse
import json

#: vLLM speculative methods -> inferbound's
VLLM_METHODS = {"eagle": "eagle", "eagle3": "eagle", "mtp": "mtp", "deepseek_mtp": "mtp", "ngram": "ngram",
                "draft_model": "draft"}
#: SGLang --speculative-algorithm -> inferbound's
SGLANG_ALGORITHMS = {"EAGLE": "eagle", "EAGLE3": "eagle", "NEXTN": "mtp", "NGRAM": "ngram", "STANDALONE": "draft"}
#: vLLM KV connectors that keep KV in host memory
OFFLOAD_CONNECTORS = ("OffloadingConnector", "LMCacheConnectorV1")


def add_vllm_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speculative-config")
    p.add_argument("--kv-offloading-size", type=float)
    p.add_argument("--kv-offloading-backend", choices=("native", "lmcache"))
    p.add_argument("--kv-transfer-config")
    p.add_argument("--enable-eplb", action="store_true")
    p.add_argument("--eplb-config")
    p.add_argument("--all2all-backend")


def add_sglang_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speculative-algorithm")
    p.add_argument("--speculative-draft-model-path")
    p.add_argument("--speculative-num-steps", type=int)
    p.add_argument("--speculative-eagle-topk", type=int)
    p.add_argument("--speculative-num-draft-tokens", type=int)
    p.add_argument("--enable-hierarchical-cache", "--enable-hicache", action="store_true")
    p.add_argument("--hicache-size", type=float)
    p.add_argument("--hicache-ratio", type=float)
    p.add_argument("--disaggregation-mode", choices=("null", "prefill", "decode"))
    p.add_argument("--enable-eplb", action="store_true")
    p.add_argument("--ep-num-redundant-experts", type=int, default=0)
    p.add_argument("--moe-a2a-backend")
    p.add_argument("--enable-deepep-moe", action="store_true")
    p.add_argument("--deepep-mode", choices=("auto", "normal", "low_latency"))


def _json(flag: str, text: str) -> dict:
    try:
        out = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"vllm serve: {flag} {text!r} is not JSON ({e.msg}); allowed: a JSON object") from None
    if not isinstance(out, dict):
        raise ValueError(f"vllm serve: {flag} {text!r} must be a JSON object")
    return out


def vllm_features(ns, tp: int) -> dict:
    """Feature settings of a parsed ``vllm serve`` namespace (module docstring); ``tp``: its TP size."""
    out: dict = {}
    if ns.speculative_config:
        c = _json("--speculative-config", ns.speculative_config)
        method = c.get("method") or ("draft_model" if c.get("model") else None)
        if method not in VLLM_METHODS:
            raise ValueError(f"vllm serve: --speculative-config method={method!r} is not modelled; allowed: "
                             f"{', '.join(VLLM_METHODS)}")
        kind = VLLM_METHODS[method]
        out["speculative"] = f"draft:{c['model']}" if kind == "draft" else kind
        if c.get("num_speculative_tokens") is not None:
            out["spec_tokens"] = int(c["num_speculative_tokens"])
        if kind == "eagle" and c.get("model"):
            out["draft_model"] = str(c["model"])
    if ns.kv_offloading_size is not None:
        out.update(kv_offload="host", kv_offload_gb=ns.kv_offloading_size * 2**30 / 1e9 / max(tp, 1))
    if ns.kv_transfer_config:
        c = _json("--kv-transfer-config", ns.kv_transfer_config)
        if c.get("kv_connector") in OFFLOAD_CONNECTORS:
            out["kv_offload"] = "host"
    if getattr(ns, "enable_prefix_caching", None):
        out["prefix_caching"] = True
    return out


def sglang_features(ns) -> dict:
    """Feature settings of a parsed ``sglang.launch_server`` namespace (module docstring)."""
    out: dict = {}
    algo = ns.speculative_algorithm
    if algo:
        if algo.upper() not in SGLANG_ALGORITHMS:
            raise ValueError(f"sglang.launch_server: --speculative-algorithm {algo!r} is not modelled; allowed: "
                             f"{', '.join(SGLANG_ALGORITHMS)}")
        kind = SGLANG_ALGORITHMS[algo.upper()]
        draft = ns.speculative_draft_model_path
        out["speculative"] = f"draft:{draft}" if kind == "draft" else kind
        if kind == "eagle" and draft:
            out["draft_model"] = draft
        k = ns.speculative_num_steps if kind != "ngram" else (
            ns.speculative_num_draft_tokens - 1 if ns.speculative_num_draft_tokens else None)
        if k is not None:
            out["spec_tokens"] = int(k)
        topk = ns.speculative_eagle_topk
        if topk is not None and topk > 1:
            out["spec_topk"] = int(topk)
            if ns.speculative_num_draft_tokens is not None:
                out["spec_draft_tokens"] = int(ns.speculative_num_draft_tokens)
    if ns.enable_hierarchical_cache:
        out["kv_offload"] = "host"
        if ns.hicache_size:
            out["kv_offload_gb"] = float(ns.hicache_size)
    return out


#: vLLM KV connectors of disaggregated prefill/decode, and kv_role -> the pool
PD_CONNECTORS = ("NixlConnector", "P2pNcclConnector", "LMCacheConnectorV1", "MooncakeConnector")
KV_ROLES = {"kv_producer": "prefill", "kv_consumer": "decode", "kv_both": "both"}


def vllm_parallel(ns) -> tuple[dict, dict]:
    """(make_deployment keywords, features) of vLLM's expert-parallel and P/D flags: --eplb-config's
    num_redundant_experts (vllm/config/parallel.py EPLBConfig) as ``redundant_experts``, an --all2all-backend
    deepep_* as ``ep_a2a="deepep"``, a P/D --kv-transfer-config as ``disaggregation`` (its pool by kv_role)."""
    dep: dict = {}
    feats: dict = {}
    if ns.eplb_config:
        n = int(_json("--eplb-config", ns.eplb_config).get("num_redundant_experts", 0) or 0)
        if n:
            dep["redundant_experts"] = n
    if ns.all2all_backend and ns.all2all_backend.startswith("deepep"):
        dep["ep_a2a"] = "deepep"
    if ns.kv_transfer_config:
        c = _json("--kv-transfer-config", ns.kv_transfer_config)
        if c.get("kv_connector") in PD_CONNECTORS:
            feats["disaggregation"] = KV_ROLES.get(str(c.get("kv_role")), "both")
            feats["kv_connector"] = str(c["kv_connector"])
    return dep, feats


def sglang_parallel(ns) -> tuple[dict, dict]:
    """(make_deployment keywords, features) of SGLang's --ep-num-redundant-experts, --moe-a2a-backend deepep
    (or the older --enable-deepep-moe) and --disaggregation-mode (python/sglang/srt/server_args.py)."""
    dep: dict = {}
    if ns.ep_num_redundant_experts:
        dep["redundant_experts"] = int(ns.ep_num_redundant_experts)
    if ns.moe_a2a_backend == "deepep" or ns.enable_deepep_moe:
        dep["ep_a2a"] = "deepep"
    mode = ns.disaggregation_mode
    return dep, ({"disaggregation": mode} if mode and mode != "null" else {})


def warning(tool: str, features: dict) -> list[str]:
    """The line a replay prints for the features it reads but does not model."""
    if not features.get("speculative"):
        return []
    return [f"{tool}: speculative decoding ({features['speculative']}) is read from the command but not replayed: "
            f"its acceptance depends on the workload; predict it with inferbound estimate --speculative "
            f"... --acceptance A"]
