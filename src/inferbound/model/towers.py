"""The towers a multimodal checkpoint carries beside its language model, counted exactly: parameters (they
are in memory), the tokens one image adds to the prompt and the FLOPs one image costs the tower.

A wrapper config (``llava``, ``gemma3``, ``llama4``, ``mistral3``, ``qwen2_5_vl``) holds the language
model under ``text_config`` and each tower under its own ``*_config`` object. Counted as transformers
5.24.0 builds them (``models/<family>/modeling_<family>.py``; a field the file omits takes its config
class's default), with width d, MLP width ff, L layers, patch p, image side s, C channels, text width t:

- CLIP vision (``clip_vision_model``, LLaVA): class token d + patch conv C·p²·d + positions (n+1)·d
  (n = (s/p)²) + pre/post LayerNorm 4d + L·(4d² + 4d + 2·2d + 2·d·ff + ff + d); projector ``linear_1``
  d·F·t (F vision feature layers) and ``linear_2`` t·t, each + t with ``multimodal_projector_bias``;
  tokens per image n (``vision_feature_select_strategy`` default drops the class token; ``full`` n+1);
- SigLIP (``siglip_vision_model``, Gemma 3): patch conv C·p²·d + d, positions n·d, the same layers, post
  LayerNorm 2d, with ``vision_use_head`` the pooling head d + 4d² + 4d + 2d + 2·d·ff + ff + d; projector
  ``mm_input_projection_weight`` d·t + ``mm_soft_emb_norm`` d; tokens per image ``mm_tokens_per_image``;
- Llama 4 (``llama4_vision_model``): class token d, positions (n+1)·d, patch linear C·p²·d, pre/post
  LayerNorm 4d, the same layers, pixel-shuffle adapter fc1 ff·P_in + fc2 P_out·P_out (no biases);
  projector vision_output_dim·t; tokens per tile n·r² (r ``pixel_shuffle_ratio``), tiles from data;
- Pixtral (``pixtral``, Mistral 3): patch conv C·p²·d, ``ln_pre`` d, L·(4·d·h·hd + 2d + 3·d·ff) (RMSNorms,
  gated MLP, no biases); projector norm d + patch merger d·m²·d + ``linear_1`` d·F·t + ``linear_2`` t·t
  (+ t each with bias); an image of side S is cut into c = ceil(S/(p·m)) cells a side: c² image tokens
  plus c row-break/end tokens, (c·m)² encoder patches;
- Qwen2.5-VL (``qwen2_5_vl``, its ``vision_config``): patch conv C·T·p²·d (T ``temporal_patch_size``),
  L·(2d + 3d² + 3d + d² + d + 3·d·ff + 2ff + d) (RMSNorms, qkv and proj biased, gated MLP biased); merger
  ``ln_q`` d + (d·m²)² + d·m² + d·m²·out + out; an image of side S is resized to c = round(S/(p·m)) cells
  a side (``smart_resize``): c² tokens, (c·m)² patches.

FLOPs per image (one forward of the tower over its N encoder positions, E image embeddings out):
``2·linear·N + 4·N·N_att·D·L + 2·proj·E`` with ``linear`` the encoder's linear layers and patch
embedding (weights and biases: a bias is counted as 2 FLOPs per row, < 0.1 %), D = heads·head_dim, N_att
the positions each attends (N; Qwen2.5-VL's windowed layers (window_size/p)², full attention only in
``fullatt_block_indexes``), ``proj`` the projector's linear weights. Norms, activations and the
pixel-shuffle/merge reshapes add no FLOPs here.

Memory (deploy/memory_terms.py): the linear layers of encoder and projector are split over TP as vLLM
builds them; patch embeddings, position tables and norms are replicated (data/towers.yaml, cited there).

Special tokens around an image (Gemma 3's begin/end of image, Qwen's vision start/end: 2 per image) are
not among the tokens per image. A tower of another layout (audio encoders, other vision families) is
named in the note and not counted, and so are the towers a catalog file lists in ``_towers_left_out``.
"""
# (no `from __future__ import annotations`: pydantic reads these annotations as objects; quant.py says why)

import math

from pydantic import BaseModel, ConfigDict, Field

from ..base.datafiles import data_yaml
from .validate import ConfigError, Reader

#: wrapper keys that are not towers
_NOT_TOWERS = {"text_config", "quantization_config", "rope_scaling", "rope_parameters", "_variant"}
#: how every note on a multimodal checkpoint begins
NOTE_PREFIX = "a multimodal checkpoint: parameter counts are the language model's (text_config)"
#: towers of a config whose language-model fields sit at the top level (no text_config)
_TOP_LEVEL_TOWERS = ("vision_config", "audio_config")


class Tower(BaseModel):
    """One counted tower of a multimodal checkpoint (module docstring for every formula)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(description="the wrapper's key, e.g. vision_config")
    kind: str = Field(description="the tower's model_type")
    encoder: int = Field(ge=0, description="encoder parameters")
    projector: int = Field(ge=0, description="parameters of the projector into the language model")
    sharded: int = Field(ge=0, description="of encoder + projector, the linear-layer parameters split over TP")
    positions: int = Field(ge=1, description="encoder positions per image (N)")
    embeddings: int = Field(ge=1, description="image embeddings the projector emits per image (E)")
    tokens_per_image: int = Field(ge=1, description="prompt tokens one image adds (E plus row breaks)")
    flops_per_image: float = Field(gt=0)
    attention_flops_per_image: float = Field(ge=0, description="of flops_per_image, the attention's 4·N·N_att·D·L")
    width: int = Field(ge=1, description="encoder width d")
    attention_width: int = Field(ge=1, description="D = heads·head_dim")
    mlp: int = Field(ge=1, description="encoder MLP width ff")
    layers: int = Field(ge=1)
    image: str = Field(description="the image the token count is for, e.g. '336x336 (the config's image_size)'")

    @property
    def params(self) -> int:
        return self.encoder + self.projector


def _layer(d: int, ff: int) -> tuple[int, int]:
    """(params, linear params) of one CLIP/SigLIP/Llama-4 encoder layer: q/k/v/out with biases, two
    LayerNorms, fc1/fc2 with biases."""
    linear = 4 * d * d + 4 * d + 2 * d * ff + ff + d
    return linear + 2 * 2 * d, linear


def _cfg(v: Reader, kind: str) -> tuple[int, int, int, int, int, int]:
    """(d, ff, L, p, s, C) with the config class's defaults (transformers 5.24.0 configuration files)."""
    defaults = {"clip_vision_model": (768, 3072, 12, 32, 224), "siglip_vision_model": (768, 3072, 12, 16, 224),
                "llama4_vision_model": (768, 5632, 34, 14, 448), "pixtral": (1024, 4096, 24, 16, 1024),
                "qwen2_5_vl": (3584, 3420, 32, 14, 0)}[kind]
    d = v.int("hidden_size", default=defaults[0])
    ff = v.int("intermediate_size", default=defaults[1])
    n = v.int("num_hidden_layers", "depth", default=defaults[2], kind="layers")
    p = v.int("patch_size", default=defaults[3])
    s = v.int("image_size", default=defaults[4], kind="small") if defaults[4] else 0
    c = v.int("num_channels", "in_channels", default=3, kind="small")
    return d, ff, n, p, s, c


def _flops(linear: int, positions: int, attended, width: int, proj_linear: int, embeddings: int) -> dict:
    """Tower fields of 2·linear·N + Σ_layers 4·N·N_att·D + 2·proj·E (module docstring); ``attended``: N_att
    per layer."""
    att = sum(4.0 * positions * a * width for a in attended)
    return {"flops_per_image": 2.0 * linear * positions + att + 2.0 * proj_linear * embeddings,
            "attention_flops_per_image": att, "attention_width": width, "layers": len(attended)}


def _projector_2(raw: dict, dv: int, t: int, merge_in: int = 0) -> tuple[int, int]:
    """LLaVA / Mistral 3 projector: (params, linear params) of linear_1 (dv·F → t) and linear_2 (t → t)
    with biases per ``multimodal_projector_bias`` (LLaVA default true, Mistral 3 false); ``merge_in``:
    Mistral 3's RMSNorm d and patch merger d·m²·d (0 for LLaVA)."""
    layers = raw.get("vision_feature_layer", -2 if merge_in == 0 else -1)
    f = len(layers) if isinstance(layers, list) else 1
    bias = raw.get("multimodal_projector_bias", merge_in == 0) is True
    linear = dv * f * t + t * bias + t * t + t * bias
    return linear + merge_in, linear + max(merge_in - dv, 0)


def count_tower(wrapper: str, raw: dict, key: str, cfg: dict, t: int, name: str) -> Tower | None:
    """The tower ``raw[key]`` of wrapper ``wrapper`` with text width ``t``; None for a layout not known here."""
    kind = cfg.get("model_type") or {"qwen2_5_vl": "qwen2_5_vl"}.get(wrapper, "")
    if kind == "qwen2_5_vl_vision" or (wrapper == "qwen2_5_vl" and key == "vision_config"):
        kind = "qwen2_5_vl"
    known = {("llava", "clip_vision_model"), ("gemma3", "siglip_vision_model"), ("llama4", "llama4_vision_model"),
             ("mistral3", "pixtral"), ("qwen2_5_vl", "qwen2_5_vl")}
    if key != "vision_config" or (wrapper, kind) not in known:
        return None
    v = Reader(cfg, f"{name} {key}")
    d, ff, n_layers, p, s, c = _cfg(v, kind)
    towers = data_yaml("towers.yaml")
    side = int(towers["image_side_px"])
    if kind == "clip_vision_model":
        per, lin = _layer(d, ff)
        n = (s // p) ** 2
        encoder = d + c * p * p * d + (n + 1) * d + 2 * 2 * d + n_layers * per
        linear = n_layers * lin + c * p * p * d
        full = raw.get("vision_feature_select_strategy", "default") == "full"
        e = n + 1 if full else n
        proj, proj_lin = _projector_2(raw, d, t)
        image = f"{s}x{s} (the config's image_size), {e} tokens"
        return Tower(key=key, kind=kind, encoder=encoder, projector=proj, sharded=n_layers * lin + proj_lin,
                     positions=n + 1, embeddings=e, tokens_per_image=e, image=image,
                     mlp=ff, width=d, **_flops(linear, n + 1, [n + 1] * n_layers, d, proj_lin, e))
    if kind == "siglip_vision_model":
        per, lin = _layer(d, ff)
        n = (s // p) ** 2
        head_lin = 4 * d * d + 4 * d + 2 * d * ff + ff + d
        head = (d + head_lin + 2 * d) if v.bool("vision_use_head", True) else 0
        encoder = c * p * p * d + d + n * d + n_layers * per + 2 * d + head
        e = raw.get("mm_tokens_per_image", 256)
        if isinstance(e, bool) or not isinstance(e, int) or e < 1:
            raise Reader(raw, name).error("mm_tokens_per_image", e, "is not a positive integer", "e.g. 256")
        linear = n_layers * lin + c * p * p * d + d
        return Tower(key=key, kind=kind, encoder=encoder, projector=d * t + d,
                     sharded=n_layers * lin + (head_lin if head else 0) + d * t, positions=n, embeddings=e,
                     tokens_per_image=e, image=f"{s}x{s} (the config's image_size), mm_tokens_per_image {e}",
                     mlp=ff, width=d, **_flops(linear, n, [n] * n_layers, d, d * t, e))
    if kind == "llama4_vision_model":
        per, lin = _layer(d, ff)
        n = (s // p) ** 2
        r = v.number("pixel_shuffle_ratio", default=0.5, lo=0.0)
        p_in = v.int("projector_input_dim", default=4096)
        p_out = v.int("projector_output_dim", default=4096)
        out = v.int("vision_output_dim", default=7680)
        adapter = ff * p_in + p_out * p_out
        encoder = d + (n + 1) * d + c * p * p * d + 2 * 2 * d + n_layers * per + adapter
        tiles = int(towers["llama4_tiles"])
        e = round(n * r * r)
        image = f"{tiles} tile of {s}x{s} (data/towers.yaml llama4_tiles), {e} tokens a tile"
        linear = n_layers * lin + c * p * p * d
        one = _flops(linear, n + 1, [n + 1] * n_layers, d, adapter + out * t, e)
        flops = {**one, "flops_per_image": tiles * one["flops_per_image"],
                 "attention_flops_per_image": tiles * one["attention_flops_per_image"]}
        return Tower(key=key, kind=kind, encoder=encoder, projector=out * t, sharded=n_layers * lin + adapter + out * t,
                     positions=tiles * (n + 1), embeddings=tiles * e, tokens_per_image=tiles * e, image=image,
                     mlp=ff, width=d, **flops)
    if kind == "pixtral":
        heads = v.int("num_attention_heads", default=16, kind="heads")
        hd = v.int("head_dim", default=d // heads)
        m = raw.get("spatial_merge_size", 2)
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise Reader(raw, name).error("spatial_merge_size", m, "is not a positive integer", "e.g. 2")
        lin = 4 * d * heads * hd + 3 * d * ff
        encoder = c * p * p * d + d + n_layers * (lin + 2 * d)
        proj, proj_lin = _projector_2(raw, d, t, merge_in=d + d * m * m * d)
        cells = math.ceil(min(side, s) / (p * m))
        n, e = (cells * m) ** 2, cells * cells
        image = f"{side}x{side} (data/towers.yaml image_side_px), {cells}x{cells} cells + {cells} row breaks"
        return Tower(key=key, kind=kind, encoder=encoder, projector=proj, sharded=n_layers * lin + proj_lin,
                     positions=n, embeddings=e, tokens_per_image=e + cells, image=image,
                     mlp=ff, width=d, **_flops(n_layers * lin + c * p * p * d, n, [n] * n_layers, heads * hd, proj_lin, e))
    # qwen2_5_vl
    m = v.int("spatial_merge_size", default=2, kind="small", lo=1)
    tp_ = v.int("temporal_patch_size", default=2, kind="small", lo=1)
    out = v.int("out_hidden_size", default=3584)
    window = v.int("window_size", default=112, kind="small", lo=1)
    full_layers = v.int_list("fullatt_block_indexes", 0, 4096) or []
    full_layers = [7, 15, 23, 31] if "fullatt_block_indexes" not in cfg else full_layers
    lin = 3 * d * d + 3 * d + d * d + d + 3 * d * ff + 2 * ff + d
    wide = d * m * m
    merger_lin = wide * wide + wide + wide * out + out
    encoder = c * tp_ * p * p * d + n_layers * (lin + 2 * d)
    cells = round(side / (p * m))
    n, e = (cells * m) ** 2, cells * cells
    win = min((window // p) ** 2, n)
    attended = [n if i in full_layers else win for i in range(n_layers)]
    image = f"{side}x{side} (data/towers.yaml image_side_px) resized to {cells * p * m}x{cells * p * m}, {e} tokens"
    return Tower(key=key, kind=kind, encoder=encoder, projector=d + merger_lin, sharded=n_layers * lin + merger_lin,
                 positions=n, embeddings=e, tokens_per_image=e, image=image,
                 mlp=ff, width=d, **_flops(n_layers * lin + c * tp_ * p * p * d, n, attended, d, merger_lin, e))


def read_towers(raw: dict, name: str) -> tuple[tuple[Tower, ...], str | None]:
    """(the counted towers of wrapper ``raw``, one line naming every tower and what was counted); ((), None)
    when ``raw`` has no tower besides ``text_config``. A catalog file that holds a checkpoint's text config
    alone (Llama 4) names its towers in ``_towers_left_out``."""
    wrapped = isinstance(raw.get("text_config"), dict)
    towers = {k: v for k, v in raw.items() if isinstance(v, dict) and (
        k in _TOP_LEVEL_TOWERS or (wrapped and k.endswith("_config") and k not in _NOT_TOWERS))}
    text = raw.get("text_config") if wrapped else raw
    named = [t for t in (raw.get("_towers_left_out") or (text or {}).get("_towers_left_out") or [])
             if isinstance(t, str)]
    if not towers and not named:
        return (), None
    wrapper = str(raw.get("model_type") or "")
    t = (text or {}).get("hidden_size")
    counted, parts, left = [], [], []
    for key, cfg in towers.items():
        kind = cfg.get("model_type") or key.removesuffix("_config")
        try:  # a tower field that does not read is not counted; it does not refuse the language model
            tower = count_tower(wrapper, raw, key, cfg, t, name) if isinstance(t, int) and not isinstance(t, bool) else None
        except ConfigError as e:
            left.append(f"{key} ({kind}: {e})")
            continue
        if tower is None:
            left.append(f"{key} ({kind}, a layout not counted here)")
            continue
        counted.append(tower)
        parts.append(f"{key} ({kind}: {tower.encoder / 1e6:.1f}M + projector {tower.projector / 1e6:.1f}M "
                     f"parameters; an image: {tower.image})")
    left += named
    said = [NOTE_PREFIX]
    if counted:
        said.append(f"towers counted in memory and priced per image (--images): {', '.join(parts)}")
    if left:
        said.append(f"towers not counted (not in memory, compute or parameters): {', '.join(left)}")
    return tuple(counted), "; ".join(said)


def tower_bytes_per_gpu(towers: tuple[Tower, ...], bytes_per_weight: float, tp: int) -> float:
    """Bytes of the towers' weights on one GPU of a TP group of ``tp``: the linear layers (``sharded``) split
    tp ways where data/towers.yaml says engines shard them (vLLM's default mm_encoder_tp_mode "weights"),
    the rest (patch embedding, positions, norms) replicated, all at ``bytes_per_weight`` (the checkpoint's
    16-bit format, assumed: llm-compressor's multimodal examples quantize the language model only, with
    ``ignore: ["re:vision_tower.*", "re:multi_modal_projector.*"]``)."""
    ways = tp if data_yaml("towers.yaml").get("tp_sharded") else 1
    return float(sum((t.sharded / ways + (t.params - t.sharded)) * bytes_per_weight for t in towers))
