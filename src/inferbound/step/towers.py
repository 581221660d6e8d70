"""The prefill work a request's images add (model/towers.py, operators/tower_ops.py): the towers' encoder
pass priced as its own operators at the checkpoint's 16-bit format, run in the same engine step as the
language model's prefill (vLLM V1 vllm/v1/worker/gpu_model_runner.py ``_execute_mm_encoder``, called in
execute_model before the forward), so no second step overhead. The image tokens themselves join the prompt (``image_tokens``).
The static batch (workloads/static.py) and the steady states (workloads/images.py) call these."""
from __future__ import annotations

from ..operators.tower_ops import tower_ops
from ..pricing.collectives import comm_pricer_of
from ..pricing.roofline import StepCost, price_ops


def image_tokens(m, images: int) -> int:
    """Prompt tokens ``images`` images add to one request: images · Σ tokens_per_image of the counted towers.
    A model without a counted tower refuses images > 0 in one line."""
    if images < 0 or int(images) != images:
        raise ValueError(f"images={images!r} must be an integer >= 0")
    if images and not m.towers:
        raise ValueError(f"images={images} needs a multimodal checkpoint with a counted vision tower; {m.name} has "
                         f"none; allowed: images=0, or a model with a vision_config (llava, gemma3, llama4, mistral3, "
                         f"qwen2_5_vl)")
    return int(images) * sum(t.tokens_per_image for t in m.towers)


def tower_prefill(dep, images_in_step: float) -> StepCost | None:
    """The towers' priced encoder pass for ``images_in_step`` images (None: no towers or no images); an array
    of counts (each > 0) prices one pass per entry, as the steady states' step kinds need
    (workloads/images.py)."""
    ops = tower_ops(dep.model, dep.dtypes, dep.par, images_in_step)
    if not ops:
        return None
    w = price_ops(ops, dep.gpu, dep.dtypes.high_precision, dep.dtypes.kv_dtype, comm_pricer_of(dep))
    return StepCost(w.ops, w.time, w.split["overhead"], dict(w.split), dict(w.comm_kinds), w.flops, w.bytes)


def images_note(m, images: int, input_len: int) -> str:
    """One line: what ``images`` images per request add (tokens and the tower's FLOPs per image)."""
    parts = ", ".join(f"{t.kind} {t.tokens_per_image} tokens and {t.flops_per_image / 1e12:.3g} TFLOP an image "
                      f"({t.image})" for t in m.towers)
    total = input_len + image_tokens(m, images)
    return (f"images={images} per request: {parts}; prompt {input_len} text + {total - input_len} image tokens = "
            f"{total} tokens (the few special tokens around an image not counted), the encoder pass priced in the prefill")
