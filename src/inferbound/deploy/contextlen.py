"""A request longer than the model's context window: refused, or a warning when the user allows it.

    tokens = input_len + output_len        (the longest sequence one request holds: prompt + every generated token)
    limit  = max_position_embeddings       (``n_positions`` in GPT-2-style configs; model/loader.py)

``max_position_embeddings`` is the context the checkpoint was trained (or RoPE-scaled) for, as its
config.json states it (transformers, models/llama/configuration_llama.py docstring: "The maximum
sequence length that this model might ever be used with"); a learned position table ends there, and
rotary models past it are out of distribution. ``tokens > limit`` is refused naming the field, unless the user sets
``allow_long_context`` (CLI ``--allow-long-context``): then the figures are computed and a warning says
they describe a context the model was not built for. A model whose config states no limit is not
checked.
"""
from __future__ import annotations

from ..model import ModelSpec


def context_note(model: ModelSpec, input_len: int | None, output_len: int | None, allow: bool,
                 flag: str = "--allow-long-context") -> str | None:
    """None when the request fits the model's context (or either length or the limit is unknown); the
    warning to print when it does not and ``allow``; else a one-line ValueError naming ``input_len``
    and ``max_position_embeddings`` (``flag``: how the user allows it on this face)."""
    limit = model.max_position_embeddings
    if not limit or input_len is None or output_len is None:
        return None
    tokens = int(input_len) + int(output_len)
    if tokens <= limit:
        return None
    if not allow:
        raise ValueError(f"input_len={input_len} + output_len={output_len} = {tokens:,} tokens exceeds "
                         f"max_position_embeddings={limit:,} of {model.name}; allowed: input_len + output_len "
                         f"<= {limit:,}, or {flag} to estimate past the model's context anyway")
    return (f"input_len + output_len = {tokens:,} tokens exceeds max_position_embeddings={limit:,} of "
            f"{model.name} ({flag}): the model was not trained for this context; the figures assume it runs")
