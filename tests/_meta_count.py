"""What PyTorch builds for a config: parameters on the meta device and the cache of a meta-device forward.

Shared by tests/test_transformers_wide.py and benchmarks/model_coverage.py (one comparison, one table).

**Parameters**: the elements of the model's ``state_dict`` built by ``AutoModelForCausalLM.from_config``
on the meta device (no weights, no hub), each tied tensor once, persistent buffers included,
non-persistent ones (rotary ``inv_freq``) not: the convention of tests/test_model_exact.py; less the
tensors a model allocates and never reads (``NEVER_READ``, each with why).

**Cache**: one forward of ``L`` tokens with ``use_cache=True`` on the meta device, in bfloat16 (grouped
expert matmuls have meta kernels only for bf16). Meta tensors carry shapes and no data, so the cache's
tensors have the exact shapes a real forward gives; their *elements* are compared, not their bytes
(a recurrent state may be kept in another dtype than the weights). Window layers keep
min(L, W - 1) tokens in transformers; with the class defaults' windows (hundreds of tokens and more)
and L = 12 every layer holds all L tokens, so the count is exact with no convention to subtract. A model
that keeps its state on its modules instead of the returned cache (RecurrentGemma: ``OWN_STATE``) is
given a cache to fill and its modules' state tensors are counted.

**Shrinking**: a class default is a published model (LlamaConfig: Llama-2-7B, DeepseekV3Config:
DeepSeek-V3, ...). Only its layer count is lowered (to ``MAX_LAYERS``, or a multiple of the family's layer
pattern), every switch and width kept: the counts are sums over layers of per-layer formulas, so exactness
at a few layers of every kind is exactness at any depth.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import torch
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()
L = 12
MAX_LAYERS = 8
#: keys a config class names its layer count by
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")


def default_config(model_type: str, **keys):
    """The class's default config with its layer count lowered to MAX_LAYERS (``keys`` win). A class that
    checks a per-layer list of its own against the depth (GPT-Neo's attention_types, Zamba2's hybrid
    layer ids) is kept at its full depth: on the meta device depth costs no memory."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = AutoConfig.for_model(model_type).to_dict()
        key = next((k for k in LAYER_KEYS if isinstance(raw.get(k), int)), None)
        shrink = {}
        if key and raw[key] > MAX_LAYERS and not any(k in keys for k in LAYER_KEYS):
            shrink = {key: MAX_LAYERS}
            if isinstance(raw.get("layer_types"), list) and "layer_types" not in keys:
                shrink["layer_types"] = raw["layer_types"][:MAX_LAYERS]
        try:
            return AutoConfig.for_model(model_type, **{**shrink, **keys})
        except Exception:  # noqa: BLE001 - the class's own validation of the shrunk depth
            if not shrink:
                raise
            return AutoConfig.for_model(model_type, **keys)


def build_meta(cfg, dtype=torch.bfloat16, device: str = "meta"):
    with torch.device(device), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoModelForCausalLM.from_config(cfg, dtype=dtype).eval()


def state_dict_count(model) -> int:
    """state_dict elements, tied tensors once, persistent buffers included."""
    unique = sum(p.numel() for p in model.parameters())
    names = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    buffers = sum(v.numel() for k, v in model.state_dict().items() if k not in names)
    return unique + buffers


@dataclass
class CacheCount:
    """Elements the cache of an L-token forward holds."""

    kv: int = 0                 # keys + values, every attention layer
    window_layers: int = 0      # layers whose cache layer is a sliding-window one
    state: int = 0              # conv + recurrent states
    index: int = 0              # DSA indexer keys (DeepSeek-V3.2 ``DynamicIndexedLayer.indexer_keys``)


def _tensor_elements(value) -> int:
    """Elements of the tensors in ``value`` (a tensor, or lists / tuples of them, nested)."""
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_elements(v) for v in value)
    return 0


#: models whose forward builds a cache it does not return and keeps its recurrent state on its modules:
#: RecurrentGemmaModel.forward makes a DynamicCache for the attention layers (passed in here, so it can be
#: read) and each RecurrentGemmaRecurrentBlock holds ``conv1d_state``, its RG-LRU ``recurrent_states``
OWN_STATE = ("recurrent_gemma",)


def meta_cache(model, length: int = L) -> CacheCount:
    """Element counts of the cache after one forward of ``length`` tokens on the meta device."""
    own = getattr(model.config, "model_type", None) in OWN_STATE
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids = torch.zeros((1, length), dtype=torch.long, device=next(model.parameters()).device)
        if own:
            from transformers import DynamicCache
            given = DynamicCache(config=model.config)
            result = model(ids, use_cache=True, cache=given)
        else:
            result = model(ids, use_cache=True)
    out = CacheCount()
    if own:
        out.state += sum(_tensor_elements(getattr(mod, attr, None)) for mod in model.modules()
                         for attr in ("conv1d_state", "recurrent_states"))
    # transformers 5.24 returns the cache as ``cache`` (``past_key_values`` deprecated); RWKV as ``state``
    cache = given if own else getattr(result, "cache", None) or getattr(result, "past_key_values", None)
    out.state += _tensor_elements(getattr(result, "state", None))
    # states a model keeps beside the per-layer cache (MiniMax's lightning-attention ``linear_cache``)
    out.state += sum(_tensor_elements(v) for k, v in vars(cache).items() if k != "layers") if cache is not None else 0
    for layer in getattr(cache, "layers", ()):
        keys = getattr(layer, "keys", None)
        if isinstance(keys, torch.Tensor):
            out.kv += layer.keys.numel() + layer.values.numel()
            out.window_layers += "SlidingWindow" in type(layer).__name__
        out.index += _tensor_elements(getattr(layer, "indexer_keys", None))
        for attr in ("conv_states", "recurrent_states"):
            states = getattr(layer, attr, None) or {}
            values = states.values() if isinstance(states, dict) else states
            out.state += sum(t.numel() for t in values if isinstance(t, torch.Tensor))
    return out


# ---------------------------------------------------------------------- one comparison per model_type
import yaml  # noqa: E402
from importlib import resources  # noqa: E402

from inferbound.model import count_params, kv_bytes_for_context, load_model, state_bytes_per_sequence  # noqa: E402
from inferbound.model.kv import kv_values_per_token_layer  # noqa: E402
from inferbound.model.validate import ConfigError  # noqa: E402

WRAPPER_NOTE = "a multimodal checkpoint: parameter counts are the language model's"  # model/towers.py NOTE_PREFIX
#: a small copy whose real forward (CPU, float32) gives the cache where the meta forward cannot run
#: (an expert loop over torch.nonzero, which has no meta kernel); compared with the copy's own spec
SMALL_FORWARD: dict[str, dict] = {
    "dbrx": dict(d_model=64, n_heads=4, n_layers=2, vocab_size=128, max_seq_len=64,
                 attn_config=dict(kv_n_heads=2, rope_theta=10000, clip_qkv=8),
                 ffn_config=dict(ffn_hidden_size=32, moe_num_experts=4, moe_top_k=2)),
    # BioGptModel.forward builds its own attention mask of ones, which the SDPA mask check reads with .item()
    "biogpt": dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=128,
                   vocab_size=128, max_position_embeddings=64),
    # the Gemma 4 wrappers' forward finds packed sequences from position_ids with .item(): a small copy with
    # local (head_dim 16) and global (32) layers, KV sharing in the last two, per-layer embeddings
    "gemma4": dict(text_config=dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                    global_head_dim=32, intermediate_size=128, num_hidden_layers=8, vocab_size=128,
                                    vocab_size_per_layer_input=128, hidden_size_per_layer_input=8, sliding_window=16,
                                    num_kv_shared_layers=2, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # LongcatFlashExperts loops over torch.nonzero hits: 2 blocks (4 MLA cache layers), 4 real + 2 identity experts
    "longcat_flash": dict(hidden_size=64, num_attention_heads=4, num_layers=2, vocab_size=128, ffn_hidden_size=64,
                          expert_ffn_hidden_size=32, n_routed_experts=4, zero_expert_num=2, moe_topk=2,
                          q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8,
                          head_dim=8),  # the rotary embedding reads head_dim (the class default 64 = its rope dim)
    # JetMoE's expert dispatch copies routing counts out with .tolist(): 2 layers, 4 experts, top 2, 2 KV heads
    "jetmoe": dict(hidden_size=64, num_hidden_layers=2, num_key_value_heads=2, kv_channels=16, intermediate_size=32,
                   num_local_experts=4, num_experts_per_tok=2, vocab_size=128, max_position_embeddings=64),
    "gemma4_unified": dict(text_config=dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                            global_head_dim=32, intermediate_size=128, num_hidden_layers=8,
                                            vocab_size=128, sliding_window=16, num_kv_shared_layers=2, pad_token_id=0,
                                            bos_token_id=1, eos_token_id=2)),
}
#: tensors transformers allocates and never reads, absent from the checkpoint and the engines' weights:
#: subtracted from the state_dict count, each with why. LongcatFlashExperts' gate_up_proj has E + Z rows
#: (torch.empty(total_experts, 2·I, d)) but only the first E run (expert_idx >= num_routed_experts is the
#: identity); meituan-longcat/LongCat-Flash-Chat and vLLM's FusedMoE hold E (model/longcat.py)
NEVER_READ = {
    "longcat_flash": lambda c: c.num_layers * (c.zero_expert_num or 0) * 2 * c.expert_ffn_hidden_size * c.hidden_size,
}
#: keys set on top of a class default that transformers cannot build or run as it stands, each with why
DEFAULT_KEYS: dict[str, dict] = {
    # head_dim defaults to None and the attention computes None ** -0.5; 128 = Hunyuan-7B's 4096 / 32
    "hunyuan_v1_dense": dict(head_dim=128),
    # and num_experts defaults to 1 (a single expert): Hunyuan-A13B's config.json has 64 experts, top 8
    "hunyuan_v1_moe": dict(head_dim=128, num_experts=64, moe_topk=8),
    # 15 of the default 35 layers share KV; at the shrunk depth of 8 transformers' kv_sharing_modes needs a
    # producer of each layer type before the first sharing layer: 3 sharing layers (5-7, all sliding)
    "gemma3n_text": dict(num_kv_shared_layers=3),
    # 96 heads do not divide 4096 with head_dim None: GLM-4.5-Air's config.json sets head_dim 128
    "glm4_moe": dict(head_dim=128),
    # num_experts_per_tok defaults to None (the router cannot run): DeepSeek-V2's config.json has 6
    # and moe_intermediate_size 1407 has no bf16 grouped-matmul kernel (rows of 16 bytes): its config.json has 1536
    "deepseek_v2": dict(num_experts_per_tok=6, moe_intermediate_size=1536),
    # n_routed_experts / n_shared_experts default to None (no MoE can be built): dots.llm1's config.json
    "dots1": dict(n_routed_experts=128, n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1),
    # num_key_value_heads defaults to None and the attention divides by it: Minitron-8B's config.json has 8
    "nemotron": dict(num_key_value_heads=8),
    # attn_layer_indices defaults to None (every layer Mamba-2: no attention layer for the forward's mask);
    # Bamba-9B's config.json has attention at [9, 18, 27]: here two of eight layers
    "bamba": dict(attn_layer_indices=[1, 5]),
    # DbrxAttentionConfig has no rope_theta and the rotary embedding reads it: DBRX-Instruct's attn_config
    "dbrx": dict(attn_config=dict(kv_n_heads=8, rope_theta=500000, clip_qkv=8)),
    # head_dim None: Ministral-8B's config.json sets 128
    "ministral": dict(head_dim=128),
    # the default layer_types are all mamba, and transformers' forward needs one attention layer
    "granitemoehybrid": dict(num_hidden_layers=4, layer_types=["mamba", "attention", "mamba", "mamba"]),
    # the class default has every layer attention (full_attn_idxs None) and no short-conv layer to check;
    # LFM2-1.2B's config.json has attention at [2, 5, 8, 10, 12, 14]: here layers 2 and 5 of eight
    "lfm2": dict(layer_types=["conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv"]),
    # layer_types defaults to None and the decoder layers index it: LFM2-8B-A1B's pattern, cut to 8 layers
    # (dense layers 0-1 conv, MoE layers of both kinds)
    "lfm2_moe": dict(layer_types=["conv", "conv", "full_attention", "conv", "conv", "conv", "full_attention", "conv"]),
}


def refused_table() -> dict[str, tuple[str, str]]:
    """model_type -> (reason group, detail) from data/refused_families.yaml."""
    text = (resources.files("inferbound") / "data" / "refused_families.yaml").read_text("utf-8")
    return {t: (group, detail or "") for group, rows in yaml.safe_load(text).items() for t, detail in rows.items()}


@dataclass
class Outcome:
    """``status``: exact | refused (listed, said why) | wrong (a printed number differs) | unlisted-refusal |
    listed-accepted | no-config (transformers cannot build the class default)."""

    model_type: str
    status: str
    detail: str = ""
    family: str = ""
    params: int = 0

    @property
    def ok(self) -> bool:
        return self.status in ("exact", "refused")


def _reference(cfg, spec):
    """The PyTorch model the count claims: the language model alone where the loader says so."""
    if any(WRAPPER_NOTE in w for w in spec.warnings) and getattr(cfg, "text_config", None) is not None:
        text = cfg.text_config
        keys = {k: v for k, v in text.to_dict().items() if k != "model_type"}
        return build_meta(AutoConfig.for_model(text.model_type, **keys))
    return build_meta(cfg)


def check(model_type: str, refused: dict[str, tuple[str, str]] | None = None) -> Outcome:
    """Class default (shrunk) -> inferbound vs PyTorch: parameters, KV at L tokens (and past every
    window), recurrent state; or the listed refusal."""
    refused = refused_table() if refused is None else refused
    try:
        cfg = default_config(model_type, **DEFAULT_KEYS.get(model_type, {}))
    except Exception as e:  # noqa: BLE001 - transformers' own validation of its class default
        why = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        if model_type in refused:  # refused anyway; transformers cannot even build the class default
            return Outcome(model_type, "refused", f"{refused[model_type][0]} (class default: {why})")
        return Outcome(model_type, "no-config", why)
    raw = cfg.to_dict()
    try:
        spec = load_model(raw)
    except ConfigError as e:
        msg = str(e)
        if model_type not in refused:
            return Outcome(model_type, "unlisted-refusal", msg[:300])
        if "is refused" not in msg or "\n" in msg:
            return Outcome(model_type, "wrong", f"listed as refused but the error does not say why: {msg[:200]}")
        return Outcome(model_type, "refused", msg.split("is refused: ", 1)[-1].split(" (data/refused")[0])
    if model_type in refused:
        return Outcome(model_type, "listed-accepted", f"read as {spec.family}; listed as {refused[model_type][0]}")
    try:
        model = _reference(cfg, spec)
    except Exception as e:  # noqa: BLE001 - transformers cannot build its own class default
        return Outcome(model_type, "no-config", f"{type(e).__name__}: {str(e).splitlines()[0][:160]}")
    want = state_dict_count(model) - NEVER_READ.get(model_type, lambda c: 0)(cfg)
    got = count_params(spec).total
    out = Outcome(model_type, "exact", family=spec.family, params=want)
    if got != want:
        out.status, out.detail = "wrong", f"parameters {got:,} vs PyTorch {want:,} ({(got - want) / want:+.3%})"
        return out
    if model_type in SMALL_FORWARD:  # the cache of a small copy's real forward, against its own spec
        cfg = AutoConfig.for_model(model_type, **SMALL_FORWARD[model_type])
        spec = load_model(cfg.to_dict())
        torch.manual_seed(0)
        model = build_meta(cfg, torch.float32, "cpu")
    try:
        hf = meta_cache(model)
    except Exception as e:  # noqa: BLE001
        out.status, out.detail = "wrong", f"parameters exact; the meta forward fails: {type(e).__name__}: {str(e)[:120]}"
        return out
    # the DSA indexer's keys are in the engines' fp8 format (model/sparse_attn.py): compared as elements apart
    kv = kv_bytes_for_context(spec.model_copy(update={"indexer": None}), L, "fp32") / 4
    state = state_bytes_per_sequence(spec, "fp32", ssm_dtype="fp32", full_conv_window=True) / 4
    windows = [g for g in spec.layers if g.has_attention and g.attention != "full"]
    # Gemma 3n's KV-sharing window layers keep no cache layer of their own (model/kv_sharing.py)
    n_win = sum(g.count for g in windows) - sum(c for a, _, c in (spec.gemma3n.kv_shared if spec.gemma3n else ())
                                                if a != "full")
    # and neither do Gemma 4's (model/geometry.py kv_shared)
    n_win -= sum(g.count for g in windows if g.attn is not None and g.attn.kv_shared)
    problems = []
    index = L * spec.num_attention_layers * spec.indexer.head_dim if spec.indexer is not None else 0
    if index != hf.index:
        problems.append(f"indexer keys at {L} tokens {index:,} vs {hf.index:,} values")
    if kv != hf.kv:
        problems.append(f"KV at {L} tokens {kv:,.0f} vs {hf.kv:,} values")
    if state != hf.state:
        problems.append(f"state {state:,.0f} vs {hf.state:,} values")
    if n_win != hf.window_layers:
        problems.append(f"{n_win} window layers vs {hf.window_layers}")
    if windows and not problems:
        # past every window: transformers keeps W - 1 tokens in a window layer, inferbound W (the token
        # being decoded, what engines allocate): one token per window layer apart
        length = max(g.window for g in windows) + 3
        long = meta_cache(model, length)
        ib = kv_bytes_for_context(spec, length, "fp32") / 4
        # one token per window layer, of that layer's own KV heads and head dims (model/geometry.py)
        one_each = (n_win * kv_values_per_token_layer(spec) if all(g.attn is None for g in windows)
                    else sum(g.count * kv_values_per_token_layer(spec, g) for g in windows))
        if ib != long.kv + one_each:
            problems.append(f"KV at {length} tokens {ib:,.0f} vs {long.kv:,} + {n_win} window layers")
    if problems:
        out.status, out.detail = "wrong", "; ".join(problems)
    return out


#: boolean config keys that change which tensors a model stores (biases, norms, tying, layouts)
SWITCH = re.compile(r"bias|norm|tie_word|qk_|shared|parallel|affine|cross_attention|multi_query|new_decoder|"
                    r"use_qkv|layernorm|sinks|gate")
#: sizes a class default leaves at 0 (a part switched off), set here so the part is built and counted
VARIANT_KEYS: dict[str, list[dict]] = {
    "granitemoeshared": [dict(shared_intermediate_size=1024)],
    "granitemoe_swa": [dict(shared_intermediate_size=1024)],
    # an explicit per-layer MLP list with a dense layer (the class default has every layer sparse)
    "mellum": [dict(mlp_layer_types=["dense"] + ["sparse"] * (MAX_LAYERS - 1))],
    "ernie4_5_moe": [dict(moe_layer_interval=2, moe_layer_start_index=0)],
    "bamba": [dict(attn_layer_indices=[0, 3, 7], mamba_proj_bias=True)],
    # LFM2's MLP width rule: no adjustment, and a multiplier whose product the rounding changes
    "lfm2": [dict(block_auto_adjust_ff_dim=False), dict(block_ffn_dim_multiplier=1.3)],
    # a dense prefix of its own width and two shared experts (the class default has neither)
    "cohere2_moe": [dict(num_shared_experts=2, prefix_dense_intermediate_size=1024,
                         mlp_layer_types=["dense"] * 2 + ["sparse"] * (MAX_LAYERS - 2))],
}


def check_switches(model_type: str) -> list[str]:
    """Parameters exact with every boolean switch of the class default flipped, one at a time (where
    transformers builds the flipped config), and with the VARIANT_KEYS sizes: the list of mismatches."""
    base = DEFAULT_KEYS.get(model_type, {})
    raw = default_config(model_type, **base).to_dict()
    flips = [{k: not v} for k, v in sorted(raw.items()) if isinstance(v, bool) and SWITCH.search(k)]
    problems = []
    variants = VARIANT_KEYS.get(model_type, [])
    for keys in flips + variants:
        try:
            cfg = default_config(model_type, **{**base, **keys})
            model = build_meta(cfg)
        except Exception as e:  # noqa: BLE001 - transformers refuses the flipped combination itself
            if keys in variants:  # a variant chosen here must build
                problems.append(f"{keys}: transformers cannot build it ({type(e).__name__})")
            continue
        try:
            spec = load_model(cfg.to_dict())
        except ConfigError as e:
            if "is not counted" not in str(e):  # a switch refused in one line saying so is not a wrong number
                problems.append(f"{keys}: refused ({str(e)[:120]})")
            continue
        if any(WRAPPER_NOTE in w for w in spec.warnings):
            continue
        want = state_dict_count(model) - NEVER_READ.get(model_type, lambda c: 0)(cfg)
        got = count_params(spec).total
        if got != want:
            problems.append(f"{keys}: parameters {got:,} vs PyTorch {want:,}")
    return problems
