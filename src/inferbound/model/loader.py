"""Read a HuggingFace ``config.json`` into a :class:`ModelSpec`.

Accepts a path to the file or its folder, a HuggingFace id (``meta-llama/Llama-3.1-70B``) found in
the bundled catalog or the local HuggingFace cache (never the network), or a short alias
(``llama-3.1-70b``). Family-specific conventions (HF ``transformers`` defaults) live in the tables
below; a config that lacks a field the arithmetic needs raises :class:`ConfigError` naming it.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .spec import MLA, LayerGroup, ModelSpec, MoE

#: families whose MLP is gated (gate, up, down) — SwiGLU/GeGLU in transformers' modeling files
GATED = {"llama", "llama4_text", "llama4", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
         "qwen3_moe", "phi3", "gemma", "gemma2", "gemma3_text", "gpt_oss", "deepseek_v2", "deepseek_v3",
         "olmo2", "granite"}
#: families with LayerNorm (weight + bias) rather than RMSNorm
LAYERNORM = {"gpt2", "gptj", "opt", "falcon", "gpt_neox", "phi"}
#: tie_word_embeddings when the key is absent: the family's config-class default (transformers)
TIE_DEFAULT = {"llama": False, "mistral": False, "mixtral": False, "qwen2": False, "qwen3": False,
               "qwen3_moe": False, "phi3": False, "gptj": False, "deepseek_v3": False,
               "gpt_oss": False, "llama4_text": False}
KNOWN = GATED | LAYERNORM


class ConfigError(ValueError):
    """A config.json the loader cannot interpret; the message names the missing or bad fields."""


def _data_dir() -> Path:
    return Path(str(resources.files("inferbound") / "data" / "models"))


@lru_cache(maxsize=1)
def catalog_files() -> dict[str, Path]:
    """HF id (``org/name``) -> bundled config file."""
    out = {}
    for p in sorted(_data_dir().glob("*.json")):
        stem = p.name.removesuffix(".json").removesuffix(".derived")
        out[stem.replace("--", "/", 1)] = p
    return out


def alias_of(hf_id: str) -> str:
    """Short alias of an HF id: the name part, lower-cased (``meta-llama/Llama-3.1-70B`` -> ``llama-3.1-70b``)."""
    return hf_id.split("/", 1)[-1].lower()


def resolve(source: str) -> tuple[str, dict[str, Any]]:
    """Find the config for ``source`` (path, HF id or alias); return (name, raw config dict)."""
    path = Path(source).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        return path.parent.name if path.name == "config.json" else path.stem, _read(path)
    files = catalog_files()
    if source in files:
        return source, _read(files[source])
    by_alias = {alias_of(k): k for k in files}
    if source.lower() in by_alias:
        hf_id = by_alias[source.lower()]
        return hf_id, _read(files[hf_id])
    cached = _hf_cache_config(source)
    if cached is not None:
        return source, _read(cached)
    raise ConfigError(
        f"model={source!r} is not a config file, a folder with config.json, a catalog id or alias; "
        f"known aliases: {', '.join(sorted(by_alias))} (models are never downloaded)")


def _hf_cache_config(hf_id: str) -> Path | None:
    if "/" not in hf_id:
        return None
    home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
    snaps = home / "hub" / f"models--{hf_id.replace('/', '--')}" / "snapshots"
    found = sorted(snaps.glob("*/config.json")) if snaps.is_dir() else []
    return found[-1] if found else None


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"config {path}: not valid JSON ({e})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path}: expected a JSON object")
    return raw


def load_model(source: str | dict, overrides: dict[str, Any] | None = None) -> ModelSpec:
    """Load a model from a path, HF id, alias or an already-parsed config dict.

    ``overrides`` set config.json keys (``num_hidden_layers``) or ModelSpec fields (``gated_mlp``)
    before interpretation, so any field can be changed or a missing one supplied.
    """
    if isinstance(source, dict):
        name, raw = str(source.get("_name_or_path") or source.get("model_type") or "custom"), dict(source)
        return parse_config(raw, name=name, overrides=overrides)
    if not overrides and not Path(source).expanduser().exists():
        return _load_catalog_model(source)  # catalog ids and aliases never change: cache them
    name, raw = resolve(source)
    return parse_config(raw, name=name, overrides=overrides)


@lru_cache(maxsize=128)
def _load_catalog_model(source: str) -> ModelSpec:
    name, raw = resolve(source)
    return parse_config(raw, name=name)


def parse_config(raw: dict[str, Any], name: str = "custom",
                 overrides: dict[str, Any] | None = None) -> ModelSpec:
    """Interpret a HF config dict (text config of multimodal checkpoints is unwrapped)."""
    if "text_config" in raw and "hidden_size" not in raw:
        raw = {**raw["text_config"], "architectures": raw.get("architectures")}
    raw = dict(raw)
    spec_overrides = {}
    for key, value in (overrides or {}).items():
        if key in ModelSpec.model_fields and key not in raw:
            spec_overrides[key] = value
        else:
            raw[key] = value
    fields = _interpret(raw, name)
    fields.update(spec_overrides)
    try:
        return ModelSpec(**fields)
    except ValueError as e:
        raise ConfigError(f"model {name}: {_first_error(e)}") from None


def _first_error(e: Exception) -> str:
    errs = getattr(e, "errors", None)
    if callable(errs):
        err = errs()[0]
        loc = ".".join(str(x) for x in err.get("loc", ())) or "config"
        return f"{loc}={err.get('input')!r}: {err.get('msg')}"
    return str(e)


def _get(raw: dict, *keys: str, default: Any = KeyError) -> Any:
    for k in keys:
        if raw.get(k) is not None:
            return raw[k]
    if default is KeyError:
        raise KeyError(keys[0])
    return default


def _interpret(raw: dict[str, Any], name: str) -> dict[str, Any]:
    family = str(raw.get("model_type", "")).lower()
    missing = [k[0] for k in (("num_hidden_layers", "n_layer", "num_layers"),
                              ("hidden_size", "n_embd", "d_model"),
                              ("num_attention_heads", "n_head"), ("vocab_size",))
               if all(raw.get(x) is None for x in k)]
    if missing:
        raise ConfigError(f"model {name}: config.json lacks {', '.join(missing)} "
                          f"(set them with --set KEY=VALUE / overrides)")
    n_layers = int(_get(raw, "num_hidden_layers", "n_layer", "num_layers"))
    d = int(_get(raw, "hidden_size", "n_embd", "d_model"))
    heads = int(_get(raw, "num_attention_heads", "n_head"))
    kv_heads = _kv_heads(raw, family, heads)
    head_dim = int(_get(raw, "head_dim", default=d // heads))
    ff = int(_get(raw, "intermediate_size", "ffn_dim", "n_inner", default=4 * d))
    if family == "llama4_text":
        ff = int(_get(raw, "intermediate_size_mlp", default=ff))
    mla = _mla(raw)
    if mla is not None:
        kv_heads, head_dim = heads, mla.qk_nope_head_dim + mla.qk_rope_head_dim
    moe, moe_layer = _moe(raw, family, n_layers)
    windows = _windows(raw, family, n_layers)
    layers = _group([(w[0], w[1], moe_layer(i)) for i, w in enumerate(windows)])
    bias = bool(raw.get("bias", False))  # falcon
    attn_bias = bool(raw.get("attention_bias", False))
    fields = dict(
        name=name, family=family or "unknown", hidden_size=d, num_heads=heads, num_kv_heads=kv_heads,
        head_dim=head_dim, vocab_size=int(raw["vocab_size"]), intermediate_size=ff,
        gated_mlp=family in GATED or family not in KNOWN,
        qkv_bias={"qwen2": True, "qwen2_moe": True, "gpt2": True, "opt": bool(raw.get("enable_bias", True)),
                  "falcon": bias, "gptj": False}.get(family, attn_bias),
        out_bias={"gpt2": True, "opt": bool(raw.get("enable_bias", True)), "falcon": bias,
                  "qwen2": False, "qwen2_moe": False, "gptj": False}.get(family, attn_bias),
        mlp_bias={"gpt2": True, "opt": bool(raw.get("enable_bias", True)), "gptj": True,
                  "falcon": bias}.get(family, bool(raw.get("mlp_bias", False))),
        layernorm_bias=family in LAYERNORM,
        norms_per_layer=_norms_per_layer(raw, family),
        learned_positions={"gpt2": int(_get(raw, "n_positions", default=1024)),
                           "opt": int(_get(raw, "max_position_embeddings", default=2048)) + 2
                           }.get(family, 0),
        tie_embeddings=bool(raw.get("tie_word_embeddings", TIE_DEFAULT.get(family, True))),
        lm_head_bias=family == "gptj",  # GPTJForCausalLM: nn.Linear(n_embd, vocab_size) with bias
        parallel_attention=bool(raw.get("parallel_attn", family == "gptj")),
        layers=layers, moe=moe, mla=mla,
        mtp_layers=int(raw.get("num_nextn_predict_layers") or 0),
        max_position_embeddings=_get(raw, "max_position_embeddings", "n_positions", default=None),
    )
    if family and family not in KNOWN:
        import warnings
        warnings.warn(f"model_type={family!r} is not a known family; assuming a Llama-like layout "
                      f"(gated MLP, RMSNorm); override gated_mlp/layernorm_bias if wrong", stacklevel=3)
    return fields


def _kv_heads(raw: dict, family: str, heads: int) -> int:
    if family == "falcon":
        if raw.get("new_decoder_architecture"):
            return int(_get(raw, "num_kv_heads", default=heads))
        return 1 if raw.get("multi_query", True) else heads
    return int(_get(raw, "num_key_value_heads", "num_kv_heads", default=heads))


def _norms_per_layer(raw: dict, family: str) -> int:
    if family == "gptj" or (family == "falcon" and not raw.get("new_decoder_architecture")):
        return 1
    if family in ("gemma2", "gemma3_text"):
        return 4
    return 2


def _mla(raw: dict) -> MLA | None:
    if raw.get("kv_lora_rank") is None:
        return None
    try:
        return MLA(q_lora_rank=raw.get("q_lora_rank"), kv_lora_rank=raw["kv_lora_rank"],
                   qk_nope_head_dim=raw["qk_nope_head_dim"], qk_rope_head_dim=raw["qk_rope_head_dim"],
                   v_head_dim=raw["v_head_dim"])
    except KeyError as e:
        raise ConfigError(f"MLA config (kv_lora_rank set) lacks {e.args[0]}") from None


def _moe(raw: dict, family: str, n_layers: int):
    n_exp = _get(raw, "n_routed_experts", "num_local_experts", "num_experts", default=0) or 0
    if n_exp <= 1:
        return None, lambda i: False
    k = _get(raw, "num_experts_per_tok", "experts_per_token", "moe_topk", default=None)
    if k is None:
        raise ConfigError(f"MoE config with {n_exp} experts lacks num_experts_per_tok")
    ff_e = int(_get(raw, "moe_intermediate_size", "intermediate_size"))
    shared_n, shared_ff = 0, 0
    if family in ("deepseek_v2", "deepseek_v3"):
        shared_n, shared_ff = int(raw.get("n_shared_experts") or 0), ff_e
        first_dense, freq = int(raw.get("first_k_dense_replace", 0)), int(raw.get("moe_layer_freq", 1))
        is_moe = lambda i: i >= first_dense and i % freq == 0  # noqa: E731
    elif family in ("llama4_text", "llama4"):
        shared_n, shared_ff = 1, int(raw["intermediate_size"])
        step = int(raw.get("interleave_moe_layer_step", 1))
        if raw.get("moe_layers") is not None:  # explicit list wins (transformers Llama4TextConfig)
            listed = {int(i) for i in raw["moe_layers"]}
            is_moe = lambda i: i in listed  # noqa: E731
        else:
            is_moe = lambda i: (i + 1) % step == 0  # noqa: E731
    elif family in ("qwen2_moe", "qwen3_moe"):
        if raw.get("shared_expert_intermediate_size"):
            shared_n, shared_ff = 1, int(raw["shared_expert_intermediate_size"])
        step, dense_only = int(raw.get("decoder_sparse_step", 1)), set(raw.get("mlp_only_layers") or [])
        is_moe = lambda i: i not in dense_only and (i + 1) % step == 0  # noqa: E731
    else:
        is_moe = lambda i: True  # noqa: E731
    moe = MoE(num_experts=int(n_exp), top_k=int(k), expert_intermediate_size=ff_e,
              num_shared_experts=shared_n, shared_intermediate_size=shared_ff,
              expert_bias=family == "gpt_oss", router_bias=family in ("gpt_oss", "deepseek_v3"))
    return moe, is_moe


def _windows(raw: dict, family: str, n: int) -> list[tuple[str, int | None]]:
    """(attention kind, window) per layer."""
    sw = raw.get("sliding_window")
    if raw.get("layer_types"):
        kinds = {"full_attention": "full", "sliding_attention": "window", "chunked_attention": "chunked"}
        types = raw["layer_types"]
        if len(types) != n:
            raise ConfigError(f"layer_types has {len(types)} entries, num_hidden_layers={n}")
        unknown = sorted(set(types) - kinds.keys())
        if unknown:
            raise ConfigError(f"layer_types={unknown[0]!r} unknown; allowed: {', '.join(kinds)}")
        chunk = raw.get("attention_chunk_size")
        return [(kinds[t], None if t == "full_attention" else
                 (chunk if t == "chunked_attention" else sw)) for t in types]
    if family in ("llama4_text", "llama4") and raw.get("attention_chunk_size"):
        # transformers' Llama4TextConfig: no_rope_layers[i] = 1 marks a RoPE layer (chunked attention),
        # 0 a NoPE layer (full attention); absent or empty, every no_rope_layer_interval-th layer
        # (default 4) is NoPE: int((i + 1) % interval != 0)
        interval = int(raw.get("no_rope_layer_interval") or 4)
        rope = raw.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n)]
        if len(rope) != n:
            raise ConfigError(f"no_rope_layers has {len(rope)} entries, num_hidden_layers={n}")
        return [("chunked", int(raw["attention_chunk_size"])) if rope[i] else ("full", None) for i in range(n)]
    if family in ("gemma2", "gemma3_text") and sw:
        return [("window", int(sw)) if i % 2 == 0 else ("full", None) for i in range(n)]
    if family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        if raw.get("use_sliding_window") and sw:
            first = int(raw.get("max_window_layers", n))
            return [("window", int(sw)) if i >= first else ("full", None) for i in range(n)]
        return [("full", None)] * n
    if sw and family in ("mistral", "phi3", "mixtral", "starcoder2"):
        return [("window", int(sw))] * n
    return [("full", None)] * n


def _group(per_layer: list[tuple[str, int | None, bool]]) -> tuple[LayerGroup, ...]:
    """Run-length encode per-layer descriptors into ordered groups."""
    groups: list[list] = []
    for desc in per_layer:
        if groups and groups[-1][0] == desc:
            groups[-1][1] += 1
        else:
            groups.append([desc, 1])
    return tuple(LayerGroup(count=c, attention=a, window=w, moe=m) for (a, w, m), c in groups)
