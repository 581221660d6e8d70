"""Options of the deployment and its serving engine (faces/options.py re-exports every name): ``DEPLOYMENT``
(model, GPU, layout, dtypes: make_deployment), ``ENGINE`` (the serving engine and its overrides:
runtime.resolve), the options several commands share (model, calibration, GPU files, overrides, prices) and the
work caps of the JSON API (``MAX_*``). Declared with :func:`_o` (opt.declare: once per name)."""
from __future__ import annotations

from ..base.datafiles import data_yaml
from ..base.dtypes import DTYPES
from ..deploy.config import COLLECTIVE_ALGOS, EP_A2A
from ..deploy.offload import MODES as KV_OFFLOAD_MODES
from ..deploy.runtime import PREEMPTIONS, RESERVATIONS
from ..deploy.engine_modes import GRAPH_CHOICES as ENGINE_GRAPH_CHOICES
from .opt import Opt, declare as _o

MAX_GPUS = 4096
MAX_BATCH = 4096
MAX_TOKENS = 1_000_000
MAX_TOKEN_BUDGET = 1 << 20


def _default_engine() -> str:
    """The default engine named in data/engines.yaml (read raw: help text must not validate every profile)."""
    d = data_yaml("engines.yaml")["default"]
    return f"{d['engine']}@{d['version']}"


#: the user's own $/GPU-hour for catalog GPUs (hardware/prices.py): CLI --price GPU=USD (repeatable), JSON
#: prices {gpu_id: usd}; replaces the catalog's cited figure in every cost, labelled "(--price)"
PRICES = _o("prices", "price", None, "your own USD per GPU-hour for catalog GPUs (CLI: GPU=USD, repeatable, e.g. "
            "h100_sxm=2.49; JSON: {gpu_id: usd}); replaces the catalog's cited on-demand price, labelled (--price)",
            flags=("--price",))

# the JSON API takes both in its own form (web/schemas.py ModelIn, its _SKIP): a catalog name or a pasted
# config.json (exactly one); 'default' or 'none' (never a server file)
MODEL = _o("model", "str", "llama-3.1-8b", "catalog alias, HF id, config.json path or folder", argument=True)
CALIBRATION = _o("calibration", "str", None, "calibration YAML, 'default' (packaged fit) or 'none' (catalog priors)")
GPU_FILE = _o("gpu_file", "path", None, "extra hardware YAML file(s)", api=False)
MODEL_OVERRIDES = _o("model_overrides", "kv", None, "override a model config field, KEY=VALUE", flags=("--set",))
GPU_OVERRIDES = _o("gpu_overrides", "kv", None, "override a GPU field, KEY=VALUE (SI units)", flags=("--gpu-set",))
GPU_SCALE = _o("gpu_scale", "kv", None, "what-if GPU: scale its figures, NAME=FACTOR[,NAME=FACTOR]: hbm_bw, flops, "
               "hbm_gb, link_bw, scaleup_bw, scaleout_bw, pcie_bw (e.g. hbm_bw=2,flops=1.5)", flags=("--gpu-scale",))

DEPLOYMENT: tuple[Opt, ...] = (
    MODEL,
    _o("gpu", "str", "h100_sxm", "GPU id from `inferbound gpus`"),
    _o("num_gpus", "int", None, "GPUs of the deployment (default tp*pp*dp)", ge=1, api_le=MAX_GPUS),
    _o("tp", "int", None, "tensor-parallel size (default: num_gpus/(pp*dp) or 1)", ge=1, api_le=MAX_GPUS),
    _o("pp", "int", 1, "pipeline-parallel stages", ge=1, api_le=MAX_GPUS),
    _o("ep", "int", 1, "expert-parallel size (MoE)", ge=1, api_le=MAX_GPUS),
    _o("redundant_experts", "int", 0, "redundant expert copies per MoE layer placed by EPLB (SGLang "
       "--ep-num-redundant-experts): ep must divide experts+N, each GPU holds (experts+N)/ep, e.g. DeepSeek-V3 "
       "256+32=288 for EP72", ge=0, api_le=4096),
    _o("ep_a2a", "str", "pairwise", "MoE all-to-all across machines: pairwise (every expert copy of a token to its "
       "GPU) or deepep (DeepEP normal kernels, SGLang --moe-a2a-backend deepep --deepep-mode normal: once per "
       "remote node over RDMA, forwarded over NVLink)", choices=EP_A2A),
    _o("dp", "int", 1, "data-parallel replicas (attention data parallel with --attention-dp)", ge=1, api_le=MAX_GPUS),
    _o("nodes", "int", 1, "machines the GPUs are spread over", ge=1, api_le=MAX_GPUS),
    _o("attention_dp", "bool", False, "attention data parallel (MoE, DeepSeek-style): beside EP, or with ep=1 the MoE TP-sharded over every GPU (SGLang --enable-dp-attention)"),
    _o("sequence_parallel", "bool", False, "reduce-scatter + all-gather instead of all-reduce"),
    _o("pp_split", "list_int", None, "layers per pipeline stage, e.g. 20,20,20,20"),
    _o("microbatches", "int", None, "pipeline micro-batches (default min(sequences, pp))", ge=1, api_le=MAX_BATCH),
    _o("collective_algo", "str", "auto", "all-reduce algorithm", choices=COLLECTIVE_ALGOS),
    _o("comm_overlap", "float", 0.0, "share of collective time hidden behind compute (0-1)", ge=0, le=1),
    _o("weight_dtype", "str", None, "weight format (default: as the checkpoint ships, its quantization_config "
       "or torch_dtype)", choices=DTYPES),
    _o("act_dtype", "str", None, "compute/activation format (default: the checkpoint's, else 16-bit)",
       choices=DTYPES),
    _o("kv_dtype", "str", None, "KV-cache format (default: as activations)", choices=DTYPES),
    _o("emulate", "bool", False, "allow formats the GPU lacks (weight-only emulation)"),
    _o("sliding_window", "bool", None, "honour the model's sliding windows (default: as the engine does)",
       flags=("--sliding-window/--no-sliding-window",)),
    MODEL_OVERRIDES,
    _o("assume_family", "str", None, "read a config of an unsupported model_type as this supported family"),
    GPU_OVERRIDES,
    GPU_FILE,
    PRICES,
    GPU_SCALE,
    CALIBRATION,
)

ENGINE_OPT = _o("engine", "str", None, "serving engine profile: vllm, sglang, trtllm, atom, gpt-fast, llama.cpp, or "
                f"NAME@VERSION (a version without a profile of its own: the nearest, noted; default: "
                f"{_default_engine()}, data/engines.yaml)")
ENGINE: tuple[Opt, ...] = (
    ENGINE_OPT,
    _o("block_size", "int", None, "KV block (page) tokens (default: the engine's)", ge=1, api_le=4096),
    _o("token_budget", "int", None, "tokens per step: vLLM max_num_batched_tokens, SGLang chunked_prefill_size, "
       "TensorRT-LLM max_num_tokens (default: the engine's)", ge=1, api_le=MAX_TOKEN_BUDGET,
       flags=("--token-budget", "--max-batched-tokens")),
    _o("max_num_seqs", "int", None, "running sequences per replica rank (default: the engine's)", ge=1,
       api_le=MAX_BATCH * 16, flags=("--max-num-seqs", "--max-seqs")),
    _o("memory_fraction", "float", None, "the engine's KV memory fraction: vLLM gpu_memory_utilization, SGLang "
       "mem_fraction_static, TensorRT-LLM kv_cache_free_gpu_memory_fraction (default: the engine's)", gt=0, le=1,
       flags=("--memory-fraction", "--kv-fraction")),
    _o("kv_reservation", "str", None, "KV a running sequence holds: max (prompt + max output, never evict) or "
       "current (as it grows, preempt when full) (default: the engine's)", choices=RESERVATIONS),
    _o("preemption", "str", None, "when blocks run out: recompute (free the KV, prefill again on readmission: vLLM, "
       "SGLang's retract), swap (to host memory: vLLM V0) or none (TensorRT-LLM's GUARANTEED_NO_EVICT: with "
       "--kv-reservation max nothing is evicted) (default: the engine's)", choices=PREEMPTIONS),
    # engine features (docs/features/: speculative.md, prefix-caching.md, kv-offload.md)
    _o("speculative", "str", None, "speculative decoding: draft:MODEL (a draft model), eagle (an EAGLE head), "
       "mtp (the model's multi-token-prediction layers) or ngram (prompt lookup)"),
    _o("spec_tokens", "int", None, "speculative decoding: tokens drafted per step, k (default for mtp: the model's "
       "num_nextn_predict_layers)", ge=1, le=32),
    _o("acceptance", "float", None, "speculative decoding: per-token i.i.d. probability a drafted token is "
       "accepted, in [0, 1): tau = (1 - a^(k+1))/(1 - a) tokens per step (default for mtp: 0.85, DeepSeek-V3 "
       "report; data/features.yaml). NOT the 'acceptance rate' engines print (vLLM: accepted/drafted, use "
       "--acceptance-rate) nor their acceptance length (use --accept-length)", ge=0, lt=1),
    _o("acceptance_positions", "str", None, "speculative decoding: acceptance per drafted position a1,a2,... "
       "(a_i: position i accepted given the earlier ones; tau = 1 + sum_i prod_{j<=i} a_j; k = their count); vLLM's "
       "per-position rates are p_i = prod_{j<=i} a_j", flags=("--acceptance-positions",)),
    _o("acceptance_rate", "float", None, "speculative decoding: vLLM's reported acceptance rate, accepted/drafted "
       "tokens: tau = 1 + k*rate", ge=0, lt=1),
    _o("accept_length", "float", None, "speculative decoding: tokens per verify step as engines report it (SGLang "
       "'accept len', vLLM 'mean acceptance length'): tau itself, in [1, k + 1)", ge=1),
    _o("spec_topk", "int", None, "speculative decoding, tree drafting: candidates kept per depth (SGLang "
       "--speculative-eagle-topk; eagle, mtp)", ge=1, le=16),
    _o("spec_draft_tokens", "int", None, "speculative decoding, tree drafting: tokens verified per sequence, N "
       "(SGLang --speculative-num-draft-tokens; needed with --spec-topk > 1, at most 1 + topk*k)", ge=2, le=513),
    _o("spec_match_rate", "float", None, "speculative decoding, ngram: share of sequences whose prompt lookup "
       "finds a match (the rest decode one token; default 1)", ge=0, le=1),
    _o("prefix_hit_rate", "float", None, "prefix caching: share of each prompt's tokens found in the cache (0-1)",
       ge=0, le=1),
    _o("shared_prefix_len", "int", None, "prefix caching: tokens of a system prompt every request shares "
       "(instead of --prefix-hit-rate)", ge=0, api_le=MAX_TOKENS),
    _o("prefix_groups", "int", None, "prefix caching: distinct shared prefixes (of --shared-prefix-len tokens) the "
       "requests pick from uniformly; the hit share follows from LRU residency (docs/features/prefix-caching.md; "
       "default 1)", ge=1, api_le=10**7),
    _o("kv_offload", "str", None, "KV offload tier: none, or host (evicted prefixes kept in CPU memory and loaded "
       "back over PCIe / NVLink-C2C on reuse; the running batch's KV stays on the GPU; data/host_tier.yaml)",
       choices=KV_OFFLOAD_MODES),
    _o("kv_offload_gb", "float", None, "host KV pool per GPU for evicted prefixes, GB (default: 2x the GPU's KV "
       "cache, SGLang's hicache_ratio, capped by the host memory per GPU)", gt=0, api_le=1e6),
    # sampling beyond the plain path (deploy/sampling.py, docs/features/energy.md)
    _o("top_p", "float", None, "sampling: the requests' top_p; below 1 the engine filters the logits (vLLM "
       "0.11.1-0.20 and ROCm: a full fp32 sort of every row, priced as a 'sampler' operator of B x vocab x 218-238 "
       "bytes; FlashInfer's sort-free sampler 12; data/features.yaml sampling; vLLM and SGLang) (default 1: the "
       "plain path, inside the fitted host term)", gt=0, le=1),
    _o("repetition_penalty", "float", None, "sampling: the requests' repetition penalty; other than 1 the engine "
       "applies its penalties over B x vocab (vLLM's bin counts and masks 85 bytes per logit, frequency and presence "
       "penalties take the same path; SGLang's penalty tensor 66) (default 1)", gt=0),
    _o("recv_interval", "int", None, "SGLang --scheduler-recv-interval k (0.5 series): new requests are received "
       "when k decode steps have run since the last receive (a prefill step counts 1000), so a request arriving "
       "mid-decode waits up to k steps before its prefill (default 1)", ge=1, le=10000),
    # engine run modes (deploy/engine_modes.py)
    _o("scheduler_steps", "int", None, "vLLM V0 multi-step scheduling (--num-scheduler-steps N, vLLM 0.5-0.7): N "
       "decode steps per scheduler call, no prompt admitted between them, tokens streamed every N steps "
       "(default: the engine's, 1)", ge=1, le=1024),
    _o("cuda_graphs", "str", None, "CUDA graphs: off runs every step eagerly, each kernel paying its launch cost "
       "(SGLang --disable-cuda-graph, vLLM --enforce-eager); on keeps the engine's graph mode (default: the "
       "engine's)", choices=ENGINE_GRAPH_CHOICES),
    _o("stream_interval", "int", None, "tokens per streamed chunk (SGLang --stream-interval k, TensorRT-LLM stream_interval: k): "
       "the client sees a "
       "chunk every k decode steps, so ITL is the gap between chunks; steps are unchanged (default: the engine's, "
       "1)", ge=1, le=4096),
)


def engine_options(values: dict) -> dict:
    """The runtime.resolve overrides among parsed option ``values`` (ENGINE names -> runtime fields)."""
    rename = {"kv_reservation": "reservation"}
    return {rename.get(o.name, o.name): values.get(o.name) for o in ENGINE
            if o.name != "engine" and values.get(o.name) is not None}
