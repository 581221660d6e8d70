"""The request's model as a :class:`ModelSpec`, without ever reading a file the client names.

``inferbound.load_model`` accepts paths and looks in the local HuggingFace cache; a web client must
not reach either. Here a model is either

- a catalog name: an alias (``llama-3.1-8b``, case-insensitive) or a bundled HF id
  (``meta-llama/Llama-3.1-8B``), mapped to the packaged config file by the catalog itself, or
- a pasted config.json object, interpreted by ``parse_config`` (numbers checked in schemas.py, the
  layer count capped here before the loader builds per-layer tables).

Errors are :class:`ApiError` with the field they concern, turned into 422 by errors.py.
"""
from __future__ import annotations

import json
from functools import lru_cache

from ..model import ModelSpec, alias_of, catalog_files, parse_config
from .errors import ApiError
from .schemas import MAX_CONFIG_LAYERS, ModelIn

LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")


@lru_cache(maxsize=1)
def catalog_names() -> dict[str, str]:
    """Accepted name (HF id or lower-case alias) -> HF id of the bundled catalog."""
    files = catalog_files()
    out = {hf_id: hf_id for hf_id in files}
    out.update({alias_of(hf_id): hf_id for hf_id in files})
    return out


def catalog_id(name: str) -> str | None:
    """The catalog HF id that ``name`` denotes (exact id or alias, case-insensitive), else None."""
    names = catalog_names()
    return names.get(name) or names.get(name.lower())


@lru_cache(maxsize=64)
def _catalog_raw(hf_id: str) -> str:
    return catalog_files()[hf_id].read_text()


@lru_cache(maxsize=64)
def catalog_spec(hf_id: str) -> ModelSpec:
    return parse_config(json.loads(_catalog_raw(hf_id)), name=hf_id)


def _check_layers(raw: dict, overrides: dict) -> None:
    """Cap the layer count the loader would expand into per-layer tables."""
    for where, d in (("config", raw), ("config.text_config", raw.get("text_config"))):
        if not isinstance(d, dict):
            continue
        for key in LAYER_KEYS:
            v = overrides.get(key, d.get(key)) if where == "config" else d.get(key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or not 1 <= v <= MAX_CONFIG_LAYERS:
                field = "model_overrides" if key in overrides else where
                raise ApiError(field, f"{key}={v!r} must be an integer in 1..{MAX_CONFIG_LAYERS}")


def resolve_model(req: ModelIn) -> ModelSpec:
    """The ModelSpec of the request (see module docstring); ApiError naming 'model' or 'config'."""
    overrides = dict(req.model_overrides or {})
    if req.model is not None:
        hf_id = catalog_id(req.model)
        if hf_id is None:
            known = ", ".join(sorted(alias_of(k) for k in catalog_files()))
            raise ApiError("model", f"model={req.model!r} is not in the catalog (the web API reads no files; "
                                    f"paste a config.json as 'config' instead); known: {known}")
        if not overrides:
            return catalog_spec(hf_id)
        raw, name, field = json.loads(_catalog_raw(hf_id)), hf_id, "model_overrides"
    else:
        raw = dict(req.config or {})
        name = str(raw.get("_name_or_path") or raw.get("model_type") or "custom")[:200]
        field = "config"
    _check_layers(raw, overrides)
    try:
        return parse_config(raw, name=name, overrides=overrides or None)
    except (ValueError, TypeError, KeyError, ArithmeticError, AttributeError) as e:
        # A pasted config is the client's input: any failure to interpret it is a bad request.
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, KeyError):
            msg = f"config.json lacks {msg!r}"
        raise ApiError(field, str(msg) or type(e).__name__) from None
