"""The towers a multimodal wrapper carries beside its language model, named (and where the layout is
known, counted) for the one-line warning the loader adds: inferbound counts the language model only.

A wrapper config (``llava``, ``gemma3``, ``llama4``, ``mistral3``, ...) holds the language model under
``text_config`` and each other tower under its own ``*_config`` object (``vision_config``,
``audio_config``). Counted exactly, as transformers 5.24 builds them (``models/clip/modeling_clip.py``,
``models/siglip/modeling_siglip.py``, the wrappers' ``*MultiModalProjector``), for:

- CLIP vision (``clip_vision_model``, LLaVA), width d, MLP ff, L layers, patch p, image s, C channels:
  class token d + patch conv C·p²·d (no bias) + positions ((s/p)² + 1)·d + pre/post LayerNorm 2·2d
  + L·(4d² + 4d + 2·2d + 2·d·ff + ff + d);
- SigLIP vision (``siglip_vision_model``, Gemma 3): patch conv C·p²·d + d, positions (s/p)²·d, the same
  layers, post LayerNorm 2d, and with ``vision_use_head`` the pooling head
  d (probe) + 4d² + 4d (attention) + 2d + 2·d·ff + ff + d;
- projectors: LLaVA ``linear_1`` (d_v·F → d_t, F vision feature layers) and ``linear_2`` (d_t → d_t),
  biases with ``multimodal_projector_bias`` (default true); Gemma 3 ``mm_input_projection_weight``
  d_v × d_t and ``mm_soft_emb_norm`` d_v.

Other towers (Pixtral, Llama 4's vision encoder, audio encoders) are named without a count, and so are
the towers a catalog file lists in ``_towers_left_out`` (its checkpoint's towers, not in the file).
"""
from __future__ import annotations

from typing import Any

from .validate import ConfigError, Reader

#: wrapper keys that are not towers
_NOT_TOWERS = {"text_config", "quantization_config", "rope_scaling", "rope_parameters", "_variant"}
#: towers of a config whose language-model fields sit at the top level (no text_config)
_TOP_LEVEL_TOWERS = ("vision_config", "audio_config")


def _vit_layers(d: int, ff: int, n: int) -> int:
    """n encoder layers: q/k/v/out with biases, 2 LayerNorms, fc1/fc2 with biases."""
    return n * (4 * d * d + 4 * d + 2 * 2 * d + 2 * d * ff + ff + d)


def vision_params(v: Reader) -> int | None:
    """Parameters of a CLIP or SigLIP vision tower config, None for another layout."""
    kind = v.str("model_type")
    if kind not in ("clip_vision_model", "siglip_vision_model"):
        return None
    d = v.int("hidden_size", default=768)
    ff = v.int("intermediate_size", default=3072)
    n = v.int("num_hidden_layers", default=12, kind="layers")
    p = v.int("patch_size", default=32 if kind == "clip_vision_model" else 16)
    s = v.int("image_size", default=224)
    c = v.int("num_channels", default=3, kind="small")
    patches = (s // p) ** 2
    layers = _vit_layers(d, ff, n)
    if kind == "clip_vision_model":
        return d + c * p * p * d + (patches + 1) * d + 2 * 2 * d + layers
    head = (d + 4 * d * d + 4 * d + 2 * d + 2 * d * ff + ff + d) if v.bool("vision_use_head", True) else 0
    return c * p * p * d + d + patches * d + layers + 2 * d + head


def projector_params(wrapper: str, raw: dict, v: Reader, text_hidden: Any) -> int | None:
    """The wrapper's vision-to-text projector, None when its layout is not known here."""
    if not isinstance(text_hidden, int) or isinstance(text_hidden, bool):
        return None
    dv = v.int("hidden_size", default=768)
    if wrapper == "llava":
        layers = raw.get("vision_feature_layer", -2)
        f = len(layers) if isinstance(layers, list) else 1
        bias = raw.get("multimodal_projector_bias", True) is not False
        return dv * f * text_hidden + text_hidden * bias + text_hidden * text_hidden + text_hidden * bias
    if wrapper == "gemma3":
        return dv * text_hidden + dv
    return None


def towers_note(raw: dict, name: str) -> str | None:
    """One line naming the towers of a multimodal wrapper ``raw`` (and their count where known) that the
    language-model count leaves out; None when ``raw`` has no tower besides ``text_config``. A catalog file
    that holds a checkpoint's text config alone (Llama 4) names its towers in ``_towers_left_out``."""
    wrapped = isinstance(raw.get("text_config"), dict)
    towers = {k: v for k, v in raw.items() if isinstance(v, dict) and (
        k in _TOP_LEVEL_TOWERS or (wrapped and k.endswith("_config") and k not in _NOT_TOWERS))}
    text = raw.get("text_config") if wrapped else {}
    named = [t for t in (raw.get("_towers_left_out") or text.get("_towers_left_out") or [])  # a file's own list
             if isinstance(t, str)]
    if not towers and not named:
        return None
    wrapper = str(raw.get("model_type") or "")
    parts, total, exact = [], 0, True
    for key, cfg in towers.items():
        v = Reader(cfg, f"{name} {key}")
        kind = cfg.get("model_type") or key.removesuffix("_config")
        try:  # a tower field that does not read is not counted; it does not refuse the language model
            count = vision_params(v) if key == "vision_config" else None
            proj = projector_params(wrapper, raw, v, text.get("hidden_size")) if count is not None else None
        except ConfigError:
            count = proj = None
        if count is None or proj is None:
            exact = False
            parts.append(f"{key} ({kind}, not counted here)")
            continue
        total += count + proj
        parts.append(f"{key} ({kind}: {count / 1e6:.1f}M parameters + projector {proj / 1e6:.1f}M)")
    parts += named
    exact = exact and not named
    size = f"; left out: {total / 1e9:.3f}B parameters" if exact else ""
    return (f"a multimodal checkpoint: only its language model (text_config) is counted, in parameters, "
            f"memory and compute; towers left out: {', '.join(parts)}{size}")
