"""What a request's images add to a steady state (max throughput, serving): their tokens join its prompt,
the towers' encoder pass joins the prefill work.

A request with N images on a multimodal checkpoint (model/towers.py) carries, per length class c,

    I_c' = I_c + N·Σ_towers tokens_per_image          (step/towers.image_tokens)

prompt tokens: the image placeholders are prompt tokens to the engine, so the KV a sequence holds, the
attention of its prompt and decode steps and the token budget all see I_c' (every formula of
steady_state.py runs on the mix ``with_images`` returns; ``Mix.images`` keeps N).

The towers run once per image. vLLM V1 schedules an image's encoder pass in the step whose prompt chunk
first covers its placeholder tokens and keeps the output in the encoder cache for the later chunks
(vllm/v1/core/sched/scheduler.py ``Scheduler._try_schedule_encoder_inputs``: an encoder input is scheduled
when its placeholder range overlaps the step's tokens and "it is not already computed and stored in the
encoder cache"; vllm/v1/worker/gpu_model_runner.py runs ``_execute_mm_encoder`` before the forward of the
same step). Priced, with t_tower(n) the towers' pass for n images in one step (step/towers.tower_prefill,
operators/tower_ops.py):

- the step kinds (steady_state.steps): λ_s = D·τ·p new prompts per decode step bring λ_s·N images; the
  kind that carries prompt chunks (a share f of the steps with mixed batches, n_pre prefill steps per
  decode step prefill-first) adds t_tower(λ_s·N/f) (resp. t_tower(λ_s·N/n_pre)) to each of its steps
  (step.contract.add_work: one step, no second overhead). Its FLOPs per decode step are
  λ_s·N·F/ways whatever f (F: the towers' FLOPs per image, ways: the TP split of data/towers.yaml);
- a prompt's own steps (steady_state.prefill_seconds, hence TTFT): + t_tower(N), its N images' pass;
- the encoder budget: vLLM caps the encoder embeddings one step schedules at
  ``SchedulerConfig.max_num_encoder_input_tokens`` (vllm/config/scheduler.py: "Multimodal encoder compute
  budget, only used in V1", set to max_num_batched_tokens, raised to the largest item). An image's
  embeddings are no more than its placeholder prompt tokens, which the token budget already holds to B per
  step, so that cap adds no limit of its own here and is not priced apart.

A prefix-cache hit that covers an image's placeholders would skip its encoder pass; every image is
priced (``images_notes`` says so where prefix caching is on).
"""
from __future__ import annotations

from dataclasses import replace

from ..deploy import prefix
from ..step.contract import StepCost, add_work
from ..step.towers import image_tokens, images_note, tower_prefill
from .lengths import Mix


def with_images(m, mix: Mix, images: int) -> Mix:
    """``mix`` with ``images`` images per request: every class's prompt + image_tokens(m, images), the count
    kept as ``Mix.images`` (module docstring); ``mix`` itself for images=0. A model without a counted tower
    refuses images > 0 in one line (image_tokens)."""
    extra = image_tokens(m, images)
    if not images:
        return mix
    if mix.images:
        raise ValueError(f"images={images}: the length mix already carries {mix.images} images per request")
    return replace(mix, inputs=tuple(i + extra for i in mix.inputs), images=int(images),
                   label=f"{mix.label} (+{extra} image tokens a prompt: {images} image{'s' if images != 1 else ''})")


def with_towers(dep, cost: StepCost, mix: Mix, images_in_step) -> StepCost:
    """``cost`` with the towers' pass for ``images_in_step`` images (arrays allowed, each > 0) run in the same
    step; ``cost`` unchanged when the mix carries no images."""
    if not mix.images:
        return cost
    return add_work(cost, tower_prefill(dep, images_in_step))


def prompt_tower_seconds(dep, mix: Mix) -> float:
    """t_tower(N): the towers' pass for one request's N images (0 without images), which its prompt's steps
    carry."""
    if not mix.images:
        return 0.0
    return float(tower_prefill(dep, mix.images).time)


def images_notes(dep, mix: Mix, text_input: float) -> list[str]:
    """The note of a steady state whose requests carry images (step/towers.images_note, at the mean text
    prompt), and where prefix caching is on, that every image is encoded."""
    if not mix.images:
        return []
    out = [images_note(dep.model, mix.images, round(text_input)) + " (steady state: each request's tower pass "
           "in its first prompt chunk's step, workloads/images.py)"]
    if prefix.active(dep.runtime):
        out.append("images with prefix caching: every image is encoded (a hit that covers an image's placeholders "
                   "would skip its encoder pass; not modelled)")
    return out
