"""The request's model as a :class:`ModelSpec`, without ever reading a file the client names.

``inferbound.load_model`` accepts paths and looks in the local HuggingFace cache; a web client must
not reach either. Here a model is either

- a catalog name: an alias (``llama-3.1-8b``, case-insensitive), a bundled HF id
  (``meta-llama/Llama-3.1-8B``), or a variant id of one (``meta-llama/Llama-3.1-8B-Instruct``,
  ``...-FP8``), resolved as ``model.loader.resolve`` resolves them (the catalog, then
  ``model.variants.resolve_variant`` over it) but without its two file lookups (a local path, the
  HuggingFace cache): a client's name never reaches the file system, or
- a pasted config.json object, interpreted by ``parse_config`` (numbers checked in schemas.py, the
  layer count capped here before the loader builds per-layer tables).

Then the request's lengths are checked against the model's context (contextlen.py): ``input_len +
output_len`` beyond ``max_position_embeddings`` is a 422 on ``input_len`` unless the request sets
``allow_long_context``, when the warning joins the model's warnings (and so the response's).

Errors are :class:`ApiError` with the field they concern, turned into 422 by errors.py.
"""
from __future__ import annotations

import dataclasses
import json
import re
from functools import lru_cache

from ..deploy.contextlen import context_note
from ..model import ModelSpec, alias_of, catalog_files, parse_config
from ..model.variants import Variant, aliases, resolve_variant
from .errors import ApiError
from .schemas import MAX_CONFIG_LAYERS, ModelIn

LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")


@lru_cache(maxsize=1)
def catalog_names() -> dict[str, str]:
    """Accepted name (HF id or lower-case alias) -> HF id of the bundled catalog."""
    files = catalog_files()
    out = {hf_id: hf_id for hf_id in files}
    out.update({**aliases(sorted(files)), **{hf_id.lower(): hf_id for hf_id in files}})  # as model.loader.resolve
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


def catalog_source(name: str) -> tuple[str, dict] | None:
    """(name, raw config) of a catalog id, alias or variant id (``_variant`` entry as the loader's
    resolve writes it), None when it is none of these; ApiError when it matches several models."""
    hf_id = catalog_id(name)
    if hf_id is not None:
        return hf_id, json.loads(_catalog_raw(hf_id))
    found = resolve_variant(name, sorted(catalog_files()))
    if isinstance(found, tuple):
        raise ApiError("model", f"model={name!r} matches several catalog models ({', '.join(found)}); name one")
    if isinstance(found, Variant):
        return name, {**json.loads(_catalog_raw(found.base)), "_variant": dataclasses.asdict(found)}
    return None


@lru_cache(maxsize=64)
def variant_spec(name: str) -> ModelSpec:
    """The ModelSpec of a variant id (a catalog name that is not an id or alias); cached like catalog_spec."""
    found = catalog_source(name)
    assert found is not None
    return parse_config(found[1], name=found[0])


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
    """The ModelSpec of the request (see module docstring), its lengths checked against its context;
    ApiError naming 'model', 'config', 'model_overrides' or 'input_len'."""
    return context_checked(_spec(req), req)


def model_spec(req: ModelIn) -> ModelSpec:
    """The request's ModelSpec without the context check (a comparison checks each deployment's model
    against its one workload: ``context_checked(model_spec(d), workload)``)."""
    return _spec(req)


def _spec(req: ModelIn) -> ModelSpec:
    overrides = dict(req.model_overrides or {})
    family = getattr(req, "assume_family", None)
    if req.model is not None:
        found = catalog_source(req.model)
        if found is None:
            known = ", ".join(sorted(alias_of(k) for k in catalog_files()))
            raise ApiError("model", f"model={req.model!r} is not in the catalog or a variant of a catalog model "
                                    f"(the web API reads no files; paste a config.json as 'config' instead); "
                                    f"known: {known}")
        if not overrides and family is None:
            hf_id = catalog_id(req.model)
            return catalog_spec(hf_id) if hf_id is not None else variant_spec(req.model)
        (name, raw), field = found, "model_overrides"
    else:
        raw = dict(req.config or {})
        name = str(raw.get("_name_or_path") or raw.get("model_type") or "custom")[:200]
        field = "config"
    _check_layers(raw, overrides)
    try:
        return parse_config(raw, name=name, overrides=overrides or None, assume_family=family)
    except (ValueError, TypeError, KeyError, ArithmeticError, AttributeError) as e:
        # A pasted config is the client's input: any failure to interpret it is a bad request.
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, KeyError):
            msg = f"config.json lacks {msg!r}"
        msg = str(msg) or type(e).__name__
        if family is not None and msg.startswith("assume_family="):
            field = "assume_family"
        elif _blames_override(msg, overrides):
            field = "model_overrides"
        raise ApiError(field, msg) from None


def _blames_override(msg: str, overrides: dict) -> bool:
    """Whether the loader's message is about an override ('override k=...', or 'k=...' for an overridden k)."""
    if not overrides:
        return False
    if "override " in msg:
        return True
    return any(re.search(rf"(^|[\s.:]){re.escape(str(k))}=", msg) for k in overrides)


def context_checked(spec: ModelSpec, req) -> ModelSpec:
    """``spec``, or with the long-context warning among its warnings (allow_long_context); ApiError on
    ``input_len`` when the request's input_len + output_len exceeds the model's context. Requests
    without fixed lengths (a distribution, a dataset profile) are not checked here."""
    if getattr(req, "dataset", None) is not None or \
            any(getattr(req, k, None) not in (None, "fixed") for k in ("input_dist", "output_dist")):
        return spec
    try:
        note = context_note(spec, getattr(req, "input_len", None), getattr(req, "output_len", None),
                            bool(getattr(req, "allow_long_context", False)), flag="allow_long_context: true")
    except ValueError as e:
        raise ApiError("input_len", str(e)) from None
    return spec if note is None else spec.model_copy(update={"warnings": (*spec.warnings, note)})
