"""Read a HuggingFace ``config.json`` into a :class:`ModelSpec`.

Accepts a path to the file or its folder, a HuggingFace id (``meta-llama/Llama-3.1-70B``, any case) found
in the bundled catalog or the local HuggingFace cache (never the network), a short alias (``llama-3.1-70b``,
``llama-3.3-70b``: ``variants.aliases``), or a variant id of a catalog model
(``meta-llama/Llama-3.1-8B-Instruct``, ``nvidia/...-FP8``: rules in data/model_variants.yaml, the implied
weight dtype noted in ``ModelSpec.quantization`` and ``ModelSpec.warnings``). A miss is refused with the
closest ids and aliases (``variants.suggest``). A multimodal wrapper is read as its ``text_config``; its
towers are counted apart (``ModelSpec.towers``, ``towers.py``: in memory, priced per image) and named in a note.

Interpretation is per family (``families.py``, ``hybrids.py``, every family in ``SUPPORTED``); every field
is validated before use (``validate.py``): a bad value is a one-line :class:`ConfigError` naming the
field, the value and what is allowed. A missing or unsupported ``model_type`` is refused, naming it and
the supported families, unless ``assume_family`` names the family to read it as (recorded as a
warning). Guesses the user should see (sizes taken from a config class default) are collected in
``ModelSpec.warnings``.
"""
from __future__ import annotations

import dataclasses
import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..base.datafiles import data_yaml
from .family_table import ALIASES, SUPPORTED, builders
from .fields import sized
from .quant import implied_by_id, parse_quantization, published
from .spec import ModelSpec
from .towers import read_towers
from .validate import ConfigError, Reader
from .variants import Variant, aliases, resolve_variant, suggest

__all__ = ["ConfigError", "SUPPORTED", "alias_of", "catalog_files", "load_model", "parse_config", "refusal_reason",
           "resolve"]

_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "fp8"}
#: wrappers whose own ``tie_word_embeddings`` ties the LM head, not the text config's (transformers 5.24.0
#: modeling_utils.py ``PreTrainedModel.tie_weights`` reads the model's config: Gemma4ForConditionalGeneration's
#: is the wrapper's)
_OUTER_TIE = ("gemma4", "gemma4_unified")


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
    """Find the config for ``source`` (path, HF id, alias or variant id); return (name, raw config).

    A variant id's raw config is its catalog base's with a ``_variant`` entry (the typed id, the base,
    the implied dtype; plain JSON, so the config can be written out and read back as the same model).
    """
    path = Path(source).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        return path.parent.name if path.name == "config.json" else path.stem, _read(path)
    files = catalog_files()
    if source in files:
        return source, _read(files[source])
    # the lower-cased names and ids first: the same answer as the full table below for those keys (a short
    # name never replaces a name there), without reducing every catalog name (a cold estimate, issue 18)
    by_alias = {**{alias_of(k): k for k in sorted(files)}, **{k.lower(): k for k in files}}
    if source.lower() not in by_alias:
        by_alias = {**aliases(sorted(files)), **{k.lower(): k for k in files}}  # short aliases, ids any case
    if source.lower() in by_alias:
        hf_id = by_alias[source.lower()]
        return hf_id, _read(files[hf_id])
    cached = _hf_cache_config(source)
    if cached is not None:
        return source, _read(cached)
    found = resolve_variant(source, sorted(files))
    if isinstance(found, Variant):
        return source, {**_read(files[found.base]), "_variant": dataclasses.asdict(found)}
    if isinstance(found, tuple):
        raise ConfigError(f"model={source!r} matches several catalog models ({', '.join(found)}); "
                          f"name one of them")
    near = suggest(source, sorted(files))
    hint = f"did you mean {', '.join(near)}? " if near else ""
    raise ConfigError(
        f"model={source!r} is not a config file, a folder with config.json, a catalog id, alias or a "
        f"variant of one (models are never downloaded); {hint}the catalog: `inferbound models`")


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
        raise ConfigError(f"config {path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"config {path}: cannot be read ({type(e).__name__})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path}: expected a JSON object, got a {type(raw).__name__}")
    return raw


def load_model(source: str | dict, overrides: dict[str, Any] | None = None,
               assume_family: str | None = None) -> ModelSpec:
    """Load a model from a path, HF id, alias, variant id or an already-parsed config dict.

    ``overrides`` set config.json keys (``num_hidden_layers``) or ModelSpec fields (``gated_mlp``)
    before interpretation, so any field can be changed or a missing one supplied; an override that is
    neither a ModelSpec field nor a key this family reads is refused. ``assume_family``: the family to
    read a config with a missing or unsupported ``model_type`` as.
    """
    if isinstance(source, dict):
        name = source.get("_name_or_path") or source.get("model_type") or "custom"
        return parse_config(dict(source), name=str(name), overrides=overrides, assume_family=assume_family)
    if not overrides and assume_family is None and not Path(source).expanduser().exists():
        return _load_catalog_model(source)  # catalog ids, aliases and variants never change: cache them
    name, raw = resolve(source)
    return parse_config(raw, name=name, overrides=overrides, assume_family=assume_family)


@lru_cache(maxsize=128)
def _load_catalog_model(source: str) -> ModelSpec:
    name, raw = resolve(source)
    return parse_config(raw, name=name)


def _family_tables(family: str) -> tuple[dict, dict]:
    row = data_yaml("model_families.yaml").get(family) or {}
    return dict(row.get("defaults") or {}), dict(row.get("size_defaults") or {})


def refusal_reason(model_type: str) -> str | None:
    """Why a model_type is refused by choice (data/refused_families.yaml: ``<group>: {<type>: <reason>}``),
    or None when it is not listed."""
    for group, rows in (data_yaml("refused_families.yaml") or {}).items():
        if model_type in (rows or {}):
            detail = rows[model_type]
            return f"{group}" + (f": {detail}" if detail else "")
    return None


def _refuse_listed(name: str, model_type) -> None:
    """A model_type listed in data/refused_families.yaml is refused in one line saying why."""
    reason = refusal_reason(model_type) if isinstance(model_type, str) and model_type else None
    if reason is not None:
        raise ConfigError(f"model {name}: model_type={model_type!r} is refused: {reason} (data/refused_families.yaml;"
                          f" to read it as a supported family anyway, pass assume_family / --assume-family NAME)")


def _family(r: Reader, raw: dict, assume_family: str | None) -> str:
    if assume_family is not None and assume_family not in SUPPORTED:
        raise ConfigError(f"assume_family={assume_family!r} is not a supported family; allowed: "
                          f"{', '.join(SUPPORTED)}")
    mt = raw.get("model_type")
    if mt is not None and not isinstance(mt, str):
        raise r.error("model_type", mt, "is not a string", "a model_type string such as 'llama'")
    family = ALIASES.get(mt, mt) if mt else None
    if family in SUPPORTED:
        return family
    if assume_family is None:
        _refuse_listed(r.name, mt)
        what = "model_type is missing" if not mt else f"model_type={mt!r} is not a supported family"
        raise ConfigError(f"model {r.name}: {what}; supported: {', '.join(SUPPORTED)} "
                          f"(to read it as one of them, pass assume_family / --assume-family NAME)")
    r.warn(f"model_type {mt!r} is not supported: read as {assume_family!r} (assume_family); "
           f"parameter counts are exact only if the checkpoint has that family's layout")
    return assume_family


def _unwrap(r: Reader, raw: dict) -> dict:
    """The text config of a multimodal wrapper (Llama 4, Gemma 3, Mistral 3), keeping the wrapper's
    quantization_config and dtype; the wrapper's model_type names the family when the text config has none."""
    if "text_config" not in raw:
        towers, note = read_towers(raw, r.name)  # a vision_config beside top-level text fields, or a file's own list
        return {**raw, "_towers_note": note, "_towers": towers} if note else raw
    text = raw["text_config"]
    if not isinstance(text, dict):
        raise r.error("text_config", text, "is not an object", "a JSON object (the language model's config)")
    if "hidden_size" in raw and raw.get("hidden_size") is not None:
        towers, note = read_towers(raw, r.name)
        return {**raw, "_towers_note": note, "_towers": towers} if note else raw
    inner = dict(text)
    for key in ("quantization_config", "torch_dtype", "dtype", "_variant"):
        if key in raw and key not in inner:
            inner[key] = raw[key]
    if isinstance(raw.get("tie_word_embeddings"), bool) and raw.get("model_type") in _OUTER_TIE:
        inner["tie_word_embeddings"] = raw["tie_word_embeddings"]
    if not inner.get("model_type") and isinstance(raw.get("model_type"), str):
        inner["model_type"] = ALIASES.get(raw["model_type"], raw["model_type"])
    towers, note = read_towers(raw, r.name)  # the vision / audio towers (towers.py), said in one line
    if note:
        inner["_towers_note"], inner["_towers"] = note, towers
    return inner


def parse_config(raw: dict[str, Any], name: str = "custom", overrides: dict[str, Any] | None = None,
                 assume_family: str | None = None) -> ModelSpec:
    """Interpret a HF config dict (text config of multimodal checkpoints is unwrapped)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"model {name}: config is a {type(raw).__name__}, expected a JSON object")
    outer = raw.get("model_type")
    if assume_family is None and ALIASES.get(outer, outer) not in SUPPORTED:
        _refuse_listed(name, outer)  # a wrapper refused as a whole, before its text_config is read
    raw = _unwrap(Reader(raw, name), raw)
    raw = dict(raw)
    variant = raw.pop("_variant", None)
    towers = raw.pop("_towers_note", None)
    counted_towers = raw.pop("_towers", ())
    spec_overrides, config_overrides = {}, {}
    for key, value in (overrides or {}).items():
        if key in ModelSpec.model_fields and key not in raw:
            spec_overrides[key] = value
        else:
            config_overrides[key] = value
    raw.update(config_overrides)
    r = Reader(raw, name)
    if isinstance(towers, str):
        r.warn(towers)
    family = _family(r, raw, assume_family)
    defaults, size_defaults = _family_tables(family)
    fields = builders()[family](r, family, defaults, size_defaults)
    fields.update(name=name, family=family, max_position_embeddings=_context_length(r, family, defaults, size_defaults))
    width = fields["hidden_size"]
    fields["quantization"] = parse_quantization(r, raw.get("quantization_config"), width)
    dt = raw.get("torch_dtype") or raw.get("dtype")
    fields["checkpoint_dtype"] = _DTYPES.get(dt) if isinstance(dt, str) else None
    fields["towers"] = tuple(counted_towers)
    if isinstance(variant, dict):
        _apply_variant(r, fields, Variant(**{k: variant.get(k) for k in ("typed", "base", "dtype", "note")},
                                          dropped=tuple(variant.get("dropped") or ())))
    unused = sorted(k for k in config_overrides if k not in r.raw.seen)
    if unused:
        import difflib
        near = difflib.get_close_matches(unused[0], sorted({*r.raw.seen, *ModelSpec.model_fields}), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ConfigError(f"model {name}: override {unused[0]}={config_overrides[unused[0]]!r} has no effect "
                          f"(a typo?){hint}; allowed: a config.json key model_type {family!r} reads, or a ModelSpec "
                          f"field")
    fields.update(spec_overrides)
    fields["warnings"] = tuple(dict.fromkeys(r.warnings))
    try:  # strict: an override "no" for a boolean field is refused, not read as False
        return ModelSpec.model_validate(fields, strict=True)
    except ValueError as e:
        raise ConfigError(f"model {name}: {_first_error(e)}") from None


def _context_length(r: Reader, family: str, defaults: dict, size_defaults: dict) -> int | None:
    """The context length the engine reads (vLLM's max_model_len from the config object): the config's
    ``max_position_embeddings`` (or ``n_positions``); where absent, the config class's default as transformers
    fills it, silently where it is the family's own (``defaults``: Gemma 3's 131072, OPT's 2048), said where it
    is one published model's (``size_defaults``: FalconConfig's 2048, which Falcon-40B's config.json relies on,
    data/model_families.yaml); None where the class has none (no context check)."""
    keys = ("max_position_embeddings", "n_positions")
    stated = r.opt_int(*keys, kind="tokens")
    if stated is not None:
        return stated
    if not any(k in defaults or k in size_defaults for k in keys):
        return None
    return sized(r, family, defaults, size_defaults, *keys, kind="tokens")


def _apply_variant(r: Reader, fields: dict, v: Variant) -> None:
    fields["base_model"] = v.base
    implied = f"; {v.note}" if v.note else ""
    dropped = f" (id tokens {', '.join(v.dropped)} dropped)" if v.dropped else ""
    r.warn(f"{v.typed!r} is not in the catalog: sized as {v.base!r}, the same architecture{dropped}{implied}")
    base_q = fields.get("quantization")
    shipped = published(r, v.typed, fields["hidden_size"])  # the checkpoint's layout, where data records it
    if shipped is not None:
        fields["quantization"] = shipped
    elif v.dtype is not None and (base_q is None or base_q.weight_dtype != v.dtype):
        # the base's quantization_config describes the base's checkpoint, not this one: the id's format wins
        fields["quantization"] = implied_by_id(v.dtype, f"implied by the id: {v.note}")
        if base_q is not None:
            r.warn(f"{v.typed!r}: the id names {v.dtype} weights, so the base's quantization_config "
                   f"({base_q.method}: {base_q.weight_dtype} weights) is not used")


def _first_error(e: Exception) -> str:
    errs = getattr(e, "errors", None)
    if callable(errs):
        err = errs()[0]
        loc = ".".join(str(x) for x in err.get("loc", ())) or "config"
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        value = err.get("input")
        shown = value if not isinstance(value, (dict, list, tuple)) else f"<{type(value).__name__}>"
        return " ".join(f"{loc}={shown!r}: {msg}".split())
    return " ".join(str(e).split())
