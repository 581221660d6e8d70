"""The engine features a searched row was priced with, as the flags of the engine version it names.

Spellings are the engines' argument parsers as engines.yaml ``flags`` records them per version (vLLM
vllm/engine/arg_utils.py, SGLang python/sglang/srt/server_args.py, TensorRT-LLM's LLM-API options YAML);
a flag is rendered only where the version's template lists it, else a comment says why there is none.

Speculative decoding (row.features: speculative, spec_tokens k, spec_topk, spec_draft_tokens):

    vLLM >= 0.8.5   --speculative-config '{"method": M, "model": HEAD, "num_speculative_tokens": k}'
                    eagle -> "eagle" with the EAGLE head of data/checkpoints.yaml (``eagle``); mtp -> "mtp"
                    (the checkpoint's own MTP layers, no model); ngram -> "ngram"; draft:MODEL -> "model": MODEL
    vLLM 0.6.3      --speculative-model HEAD|MODEL --num-speculative-tokens k
    SGLang          --speculative-algorithm EAGLE|NEXTN|NGRAM|STANDALONE [--speculative-draft-model-path HEAD]
                    --speculative-num-steps k --speculative-eagle-topk t --speculative-num-draft-tokens N
                    (N = spec_draft_tokens for a tree, k + 1 for a chain)
    TensorRT-LLM 1.x speculative_config: {decoding_type: Eagle|MTP|NGram|DraftTarget, max_draft_len: k,
                    speculative_model_dir: HEAD} (MTP: num_nextn_predict_layers: k)

Prefix reuse (prefix_hit_rate or shared_prefix_len modelled): vLLM ``--enable-prefix-caching`` (on by
default from 0.8.5; stated so the command does not depend on it), SGLang's radix cache is on unless
``--disable-radix-cache`` (nothing to add), TensorRT-LLM ``kv_cache_config.enable_block_reuse: true``.

Host KV tier (kv_offload=host, pool P GB per GPU as priced, deploy/offload.py):

    vLLM >= 0.12    --kv-offloading-size ⌈P·1e9·tp/2^30⌉ (GiB, summed over the TP ranks) --kv-offloading-backend native
    SGLang 0.4.10+  --enable-hierarchical-cache --hicache-size ⌈P⌉ (GB per rank)
    TensorRT-LLM 1.x kv_cache_config.host_cache_size: ⌈P·1e9⌉ (bytes per rank)

Expert parallelism as priced (Row.redundant_experts N, Row.ep_a2a; deploy/eplb.py, pricing/comm.py):

    SGLang >= 0.4.10 --enable-eplb --ep-num-redundant-experts N          (python/sglang/srt/server_args.py)
    SGLang >= 0.5    --moe-a2a-backend deepep; 0.4.10 --enable-deepep-moe (server_args.py maps the older flag
                     to moe_a2a_backend "deepep" with "NOTE: --enable-deepep-moe is deprecated")
    vLLM >= 0.15     --enable-eplb --eplb-config '{"num_redundant_experts": N}' (vllm/config/parallel.py EPLBConfig);
                     --all2all-backend deepep_high_throughput (prefill pool) | deepep_low_latency (decode pool)
    older versions   a comment naming the version (no EPLB / DeepEP flag in their parsers)

Disaggregated pools (Row.pools: each pool's own TP/EP/DP, deploy/pools.py): one command per pool, each
with its layout. SGLang ``--disaggregation-mode prefill|decode``; vLLM ``--kv-transfer-config
{"kv_connector": "NixlConnector", "kv_role": "kv_both"}`` (0.15 on; LMCacheConnectorV1 before), with
P2pNcclConnector (``kv_role`` kv_producer for prefill, kv_consumer for decode) as the NCCL alternative.
"""
from __future__ import annotations

import json
import math

from dataclasses import replace

from ..base.datafiles import data_yaml
from ..deploy.engines import _vtuple
from ..deploy.speculative import parse_method

Flags = list[tuple[str, str | None]]


def eagle_head(model: str) -> str | None:
    """The published EAGLE head of ``model`` (data/checkpoints.yaml ``eagle``), None if none is recorded."""
    entry = (data_yaml("checkpoints.yaml") or {}).get(model, {}).get("eagle")
    return None if entry is None else str(entry["id"])


def _template(p, name: str) -> str:
    return str(getattr(p.flags, name, None) or "") if p.flags is not None else ""


def _spec(model: str, row) -> tuple[str, str | None, int] | None:
    """(method, head, k) of the row's speculation, None without: head = the EAGLE head of ``model``
    (:func:`eagle_head`, None if none is recorded) for eagle, the draft model for draft:MODEL, else None;
    k = spec_tokens."""
    f = row.features
    if not f.get("speculative"):
        return None
    method, draft = parse_method(f["speculative"])
    head = eagle_head(model) if method == "eagle" else draft
    return method, head, int(f.get("spec_tokens") or 0)


def _draft_tokens(row, k: int) -> int:
    return int(row.features.get("spec_draft_tokens") or (k + 1))


def _host_gb(row) -> float | None:
    gb = row.features.get("kv_offload_gb")
    return None if gb is None else float(gb)


def vllm_flags(model: str, row, p) -> tuple[Flags, list[str]]:
    """vLLM flags and comment lines for the row's features (module docstring). A disaggregated row's
    instances already take --kv-transfer-config (NixlConnector), which --kv-offloading-size would replace:
    its host tier is a comment (vLLM combines connectors with MultiConnector)."""
    flags: Flags = []
    notes: list[str] = []
    spec = _spec(model, row)
    tmpl = _template(p, "speculative")
    if spec is not None:
        method, head, k = spec
        if row.features.get("spec_topk", 1) > 1:
            notes.append(f"# tree drafting (topk {row.features['spec_topk']}) was priced; {p.label} drafts a chain: "
                         f"no flag")
        if method == "eagle" and head is None:
            notes.append(f"# EAGLE priced, but data/checkpoints.yaml records no EAGLE head for {model}: add "
                         f"--speculative-config with one ({tmpl})")
        elif "--speculative-config" in tmpl:
            name = {"eagle": "eagle", "mtp": "mtp", "ngram": "ngram", "draft": None}[method]
            if name is not None and '"method": ...' not in tmpl and name not in tmpl:
                notes.append(f"# {method} priced; {p.label}'s --speculative-config has no method {name!r} ({tmpl})")
            else:
                cfg = ({"method": name} if name else {}) | ({"model": head} if head else {}) | \
                      {"num_speculative_tokens": k}
                flags.append(("--speculative-config", json.dumps(cfg, separators=(",", ":"))))
        elif "--speculative-model" in tmpl and head is not None:
            flags += [("--speculative-model", head), ("--num-speculative-tokens", str(k))]
        else:
            notes.append(f"# {method} priced; no flag rendered for {p.label} ({tmpl or 'no template'})")
    if row.features.get("prefix_hit_rate") or row.features.get("shared_prefix_len"):
        flags.append(("--enable-prefix-caching", None))
    if row.features.get("kv_offload") == "host":
        gb = _host_gb(row)
        if row.mode == "disaggregated":
            notes.append("# host KV tier priced; the P/D instances' --kv-transfer-config carries NixlConnector: "
                         "combine it with OffloadingConnector in a MultiConnector to keep the host tier")
        elif "--kv-offloading-size" in _template(p, "kv_offload") and gb is not None:
            gib = math.ceil(gb * 1e9 * row.tp / 2**30)
            flags += [("--kv-offloading-size", str(gib)), ("--kv-offloading-backend", "native")]
        else:
            pool = "" if gb is None else f", {gb:,.0f} GB per GPU"
            why = "no pool size was priced" if gb is None else f"{p.label} has no native offload flag"
            how = _template(p, "kv_offload") or "an offloading connector (--kv-transfer-config, LMCache)"
            notes.append(f"# host KV tier priced{pool}; {why}: add {how}")
    return flags, notes


SGLANG_ALGO = {"eagle": "EAGLE", "mtp": "NEXTN", "ngram": "NGRAM", "draft": "STANDALONE"}


def sglang_flags(model: str, row, p) -> tuple[Flags, list[str]]:
    """SGLang flags and comment lines for the row's features (module docstring)."""
    flags: Flags = []
    notes: list[str] = []
    spec = _spec(model, row)
    tmpl = _template(p, "speculative")
    if spec is not None:
        method, head, k = spec
        algo = SGLANG_ALGO[method]
        if algo not in tmpl.replace("|", " ").split():
            notes.append(f"# {method} priced; {p.label} has no --speculative-algorithm {algo} ({tmpl})")
        elif method == "eagle" and head is None:
            notes.append(f"# EAGLE priced, but data/checkpoints.yaml records no EAGLE head for {model}: add "
                         f"--speculative-algorithm EAGLE --speculative-draft-model-path HEAD")
        else:
            flags.append(("--speculative-algorithm", algo))
            if head is not None:
                flags.append(("--speculative-draft-model-path", head))
            if method != "ngram":
                flags += [("--speculative-num-steps", str(k)),
                          ("--speculative-eagle-topk", str(int(row.features.get("spec_topk", 1))))]
            flags.append(("--speculative-num-draft-tokens", str(_draft_tokens(row, k))))
    if row.features.get("kv_offload") == "host":
        gb = _host_gb(row)
        if "--enable-hierarchical-cache" in _template(p, "kv_offload"):
            flags.append(("--enable-hierarchical-cache", None))
            if gb is not None:
                flags.append(("--hicache-size", str(math.ceil(gb))))
        else:
            notes.append(f"# host KV tier priced; {p.label} has no hierarchical cache flag")
    return flags, notes


TRTLLM_TYPE = {"eagle": "Eagle", "mtp": "MTP", "ngram": "NGram", "draft": "DraftTarget"}


def trtllm_yaml(model: str, row, p) -> tuple[list[str], list[str]]:
    """Lines of the TensorRT-LLM options YAML and comment lines for the row's features."""
    lines: list[str] = []
    notes: list[str] = []
    spec = _spec(model, row)
    yaml_ok = "YAML" in _template(p, "speculative")
    if spec is not None:
        method, head, k = spec
        if not yaml_ok:
            notes.append(f"# {method} priced; {p.label} sets speculation at engine build ({_template(p, 'speculative')})")
        elif method == "eagle" and head is None:
            notes.append(f"# EAGLE priced, but data/checkpoints.yaml records no EAGLE head for {model}: add "
                         f"speculative_config.speculative_model_dir")
        else:
            lines += ["speculative_config:", f"  decoding_type: {TRTLLM_TYPE[method]}"]
            lines.append(f"  num_nextn_predict_layers: {k}" if method == "mtp" else f"  max_draft_len: {k}")
            if head is not None:
                lines.append(f"  speculative_model_dir: {head}")
    kv = []
    if row.kv_dtype == "fp8":
        kv.append("  dtype: fp8")
    if row.features.get("prefix_hit_rate") or row.features.get("shared_prefix_len"):
        kv.append("  enable_block_reuse: true")
    if row.features.get("kv_offload") == "host" and _host_gb(row) is not None:
        kv.append(f"  host_cache_size: {math.ceil(_host_gb(row) * 1e9)}")
    if kv:
        lines += ["kv_cache_config:"] + kv
    return lines, notes


# -- expert parallelism and disaggregated pools ---------------------------------------------------------------
def pool_rows(row) -> list[tuple[str | None, object]]:
    """[(role, the row as that pool runs it)]: aggregated, [(None, row)]; disaggregated, the prefill and the
    decode pool, each with its own layout (``row.pools[role]``: Row fields) where the search gave one."""
    if row.mode != "disaggregated":
        return [(None, row)]
    return [(role, replace(row, **(row.pools or {}).get(role, {}))) for role in ("prefill", "decode")]


def vllm_ep_flags(row, p, role: str | None = None) -> tuple[Flags, list[str]]:
    """vLLM flags for redundant experts and the DeepEP all-to-all (module docstring), and comments."""
    flags: Flags = []
    notes: list[str] = []
    new = _vtuple(p.version) >= (0, 15)
    n = int(getattr(row, "redundant_experts", 0) or 0)
    if n and row.ep > 1:
        if new:
            flags += [("--enable-eplb", None),
                      ("--eplb-config", json.dumps({"num_redundant_experts": n}, separators=(",", ":")))]
        else:
            notes.append(f"# {n} redundant experts (EPLB) priced; {p.label} has no --enable-eplb: experts as loaded")
    if getattr(row, "ep_a2a", "pairwise") == "deepep" and row.ep > 1:
        if new:
            flags.append(("--all2all-backend", "deepep_low_latency" if role == "decode" else "deepep_high_throughput"))
        else:
            notes.append(f"# DeepEP all-to-all priced; {p.label} has no --all2all-backend")
    return flags, notes


def vllm_kv_transfer(role: str, p) -> Flags:
    """The P/D connector of a vLLM pool instance (module docstring)."""
    connector = "NixlConnector" if _vtuple(p.version) >= (0, 15) else "LMCacheConnectorV1"
    return [("--kv-transfer-config", json.dumps({"kv_connector": connector, "kv_role": "kv_both"},
                                                separators=(",", ":")))]


P2P_NCCL_NOTE = ('# NCCL instead of NIXL: --kv-transfer-config \'{"kv_connector":"P2pNcclConnector","kv_role":'
                 '"kv_producer"}\' on the prefill pool, "kv_consumer" on the decode pool')


def sglang_ep_flags(row, p) -> tuple[Flags, list[str]]:
    """SGLang flags for redundant experts and the DeepEP all-to-all (module docstring), and comments."""
    flags: Flags = []
    notes: list[str] = []
    v = _vtuple(p.version)
    n = int(getattr(row, "redundant_experts", 0) or 0)
    if n and row.ep > 1:
        if v >= (0, 4, 10):
            flags += [("--enable-eplb", None), ("--ep-num-redundant-experts", str(n))]
        else:
            notes.append(f"# {n} redundant experts (EPLB) priced; {p.label} has no --ep-num-redundant-experts")
    if getattr(row, "ep_a2a", "pairwise") == "deepep" and row.ep > 1:
        if v >= (0, 5):
            flags.append(("--moe-a2a-backend", "deepep"))
        elif v >= (0, 4, 10):
            flags.append(("--enable-deepep-moe", None))
        else:
            notes.append(f"# DeepEP all-to-all priced; {p.label} has no DeepEP flag")
    return flags, notes


def sglang_has_disaggregation(p) -> bool:
    """Whether the SGLang version's parser has --disaggregation-mode (engines.yaml ``flags.disaggregation``;
    0.4.3 records it missing: "No --pp-size, --page-size or --disaggregation-mode in 0.4.3")."""
    return "--disaggregation-mode" in _template(p, "disaggregation")


def sglang_no_pd_note(p) -> str:
    """The comment of a disaggregated row on an SGLang version without --disaggregation-mode."""
    return (f"# disaggregated prefill/decode priced; {p.label} has no --disaggregation-mode (from 0.4.10 in "
            f"data/engines.yaml): the pools' commands below run as plain servers")
