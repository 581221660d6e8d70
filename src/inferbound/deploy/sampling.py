"""What sampling costs beyond the plain path: top-p and repetition penalties as the engine runs them.

Requests that sample with ``top_p`` < 1 or set a repetition penalty make the engine do more per step than
the plain path (fp32 cast, temperature, softmax, exponential race, argmax; or an argmax for greedy
requests), which the fitted host term and the LM head already hold. The extra is memory-bound work over
the step's fp32 logits, B rows of V each, priced as one ``sampler`` operator after the head
(operators/layers.head_ops):

    bytes = B · V · (β_top_p(B) + β_pen)
    β_top_p = data/features.yaml sampling.top_p_sort (218 B per logit below 128 rows, 238 from 128: the
              PyTorch sort PyTorch picks for that many segments, then softmax, cumsum, mask and scatter back)
              or sampling.top_p_sort_free (12 B: FlashInfer's rejection sampler), by the engine version's
              default (sampling.top_p_path), when top_p < 1; else 0
    β_pen   = sampling.penalties per engine (vLLM 85 B: apply_penalties' bin counts, masks and three logits
              passes; SGLang 66 B: its persistent (B, V) penalty tensor applied, filtered and merged) when
              repetition_penalty != 1; else 0

The path is read from the engines' sources per engine profile and GPU vendor (sampling.top_p_path: vLLM sorts
in V0 and in the 0.15.1 profile, 0.11-0.20, and takes FlashInfer where V1 defaulted to it on CUDA; SGLang
samples with FlashInfer on NVIDIA and sorts with its pytorch backend on ROCm), with a note where the profile's
range holds releases that differ; TensorRT-LLM's and ATOM's samplers are not read, so the options are refused
there.
The byte counts enter as (β below 128 rows, β from 128 rows), the Runtime's ``sampler_bytes``.
"""
from __future__ import annotations

from ..base.datafiles import data_yaml

MODES = ("top_p", "repetition_penalty")
ROWS_SPLIT = 128  # PyTorch launch_stable_sort_kernel: full sort below 128 segments, cub segmented sort from 128


def defaults() -> dict:
    return data_yaml("features.yaml")["sampling"]


def engines_read() -> tuple[str, ...]:
    """The engines whose samplers were read (data/features.yaml sampling.top_p_path)."""
    return tuple(sorted(defaults()["top_p_path"]))


def _version(v: str) -> tuple[int, ...]:
    out = []
    for part in v.strip().lstrip("vV").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


def top_p_path(engine: str, vendor: str = "NVIDIA") -> tuple[str, str | None]:
    """(path, note) of the first sampling.top_p_path rule of ``engine`` (the profile's name@version) whose
    ``below`` is above its version; on an AMD GPU the rule's ``path_amd`` / ``note_amd`` where it has them."""
    name, _, version = engine.partition("@")
    rules = defaults()["top_p_path"][name]
    v = _version(version) if version else None
    rule = next((r for r in rules if r["below"] is None or (v is not None and v < _version(str(r["below"])))),
                rules[-1])
    if vendor.upper().startswith("AMD") and "path_amd" in rule:
        return rule["path_amd"], rule.get("note_amd")
    return rule["path"], rule.get("note")


def _check(name: str, v, low: float, high: float | None, low_open: bool) -> float:
    bad = isinstance(v, bool) or not isinstance(v, (int, float)) or v != v
    if not bad:
        bad = (v <= low if low_open else v < low) or (high is not None and v > high)
    if bad:
        rng = f"in ({low:g}, {high:g}]" if high is not None else f"> {low:g}"
        raise ValueError(f"{name}={v!r} must be a number {rng}")
    return float(v)


def settings(engine: str, given: dict, vendor: str = "NVIDIA") -> tuple[dict, tuple[str, ...]]:
    """({top_p, repetition_penalty, sampler_bytes} or {}, notes) for the options in ``given`` on ``engine``
    (the profile's name@version) on a GPU of ``vendor``; one-line errors naming the field."""
    p, r = given.get("top_p"), given.get("repetition_penalty")
    if p is None and r is None:
        return {}, ()
    top_p = 1.0 if p is None else _check("top_p", p, 0.0, 1.0, True)
    rep = 1.0 if r is None else _check("repetition_penalty", r, 0.0, None, True)
    name = engine.partition("@")[0]
    d, notes = defaults(), []
    read = engines_read()
    if (top_p < 1.0 or rep != 1.0) and name not in read:
        field = "top_p" if top_p < 1.0 else "repetition_penalty"
        raise ValueError(f"{field}: the sampler of engine={engine!r} is not read from its sources; allowed: an "
                         f"engine of {', '.join(read)}, or top_p=1 and repetition_penalty=1")
    small = large = 0.0
    if top_p < 1.0:
        path, note = top_p_path(engine, vendor)
        if path == "sort":
            small, large = float(d["top_p_sort"]["below_128_rows"]), float(d["top_p_sort"]["from_128_rows"])
        else:
            small = large = float(d["top_p_sort_free"]["bytes_per_logit"])
        if note:
            notes.append(note)
    if rep != 1.0:
        pen = float(d["penalties"][name]["bytes_per_logit"])
        small, large = small + pen, large + pen
    return {"top_p": top_p, "repetition_penalty": rep, "sampler_bytes": (small, large)}, tuple(notes)


def describe(top_p: float, repetition_penalty: float) -> str:
    """', top_p 0.95, repetition penalty 1.1' (empty for the plain path)."""
    out = ""
    if top_p < 1.0:
        out += f", top_p {top_p:g}"
    if repetition_penalty != 1.0:
        out += f", repetition penalty {repetition_penalty:g}"
    return out
