"""Request lengths of a workload: fixed, a distribution, a trace, or a named dataset profile.

The steady states (steady_state.py) need more than mean lengths: decode steps are taken in proportion
to each request's O − 1, attention pairs grow with I², and the KV a sequence holds depends on its own
I and O. A workload is therefore a mix of length classes (weight w_c, prompt I_c, output O_c; weights
sum to 1, by request count):

- fixed lengths: one class;
- a distribution spec (``normal:MEAN:STD``, ``uniform:LO:HI``, ``exponential[:MEAN]``, as the simulator
  draws them, workloads/requests.py) or a trace: the requests' (I, O) pairs grouped into ``classes`` equal-count
  classes by O (then I), each class at its members' mean lengths. A distribution is represented by
  ``sample`` draws with a fixed seed, so the same spec always gives the same mix;
- a dataset profile (data/datasets.yaml: ShareGPT as vLLM's benchmark filters it, ShareGPT multi-turn as
  Sarathi-Serve ships it, the Azure 2023 traces, arXiv summarization, ...), named case-insensitively: its measured length classes where the
  profile has them (grouped from a published per-request table as ``from_pairs`` groups a trace), else
  its published mean lengths, one class, with a note that the spread is not modelled. Only profiles with both means published are offered
  (``dataset_names``); the others stay in the file for measured rows that state their own lengths.

``mean_input``, ``mean_output`` and ``notes`` describe the mix; every steady-state sum is over classes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..base.datafiles import data_yaml
from .requests import draw_lengths_raised, read_trace

SAMPLE = 20_000  # draws that represent a distribution spec
CLASSES = 16     # length classes a distribution or trace is grouped into


@dataclass(frozen=True)
class Mix:
    """Length classes of a workload: request shares ``weights`` (sum 1), prompt and output lengths."""

    weights: tuple[float, ...]
    inputs: tuple[float, ...]
    outputs: tuple[float, ...]
    label: str = "fixed"
    notes: tuple[str, ...] = field(default=())
    images: int = 0  # images per request: their tokens are in ``inputs``, their encoder pass priced (workloads/images.py)

    @property
    def mean_input(self) -> float:
        return float(np.dot(self.weights, self.inputs))

    @property
    def mean_output(self) -> float:
        return float(np.dot(self.weights, self.outputs))

    def arrays(self):
        return (np.asarray(self.weights, dtype=float), np.asarray(self.inputs, dtype=float),
                np.asarray(self.outputs, dtype=float))


def fixed(input_len: float, output_len: float) -> Mix:
    if not input_len >= 1 or not output_len >= 2:
        raise ValueError(f"input_len={input_len}, output_len={output_len}: need input_len >= 1 and output_len >= 2")
    return Mix((1.0,), (float(input_len),), (float(output_len),), f"{input_len:g} in / {output_len:g} out")


def from_pairs(inputs, outputs, label: str, classes: int = CLASSES) -> Mix:
    """Requests' (I, O) grouped into equal-count classes by O then I, each at its members' means."""
    i, o = np.asarray(inputs, dtype=float), np.asarray(outputs, dtype=float)
    if i.size == 0:
        raise ValueError(f"{label}: no requests")
    if np.any(o < 2):
        raise ValueError(f"{label}: every request needs output_len >= 2 for a steady state (found {o.min():g})")
    order = np.lexsort((i, o))
    parts = [p for p in np.array_split(order, min(classes, i.size)) if p.size]
    return Mix(tuple(p.size / i.size for p in parts), tuple(float(i[p].mean()) for p in parts),
               tuple(float(o[p].mean()) for p in parts), label)


def from_spec(input_len: int, output_len: int, input_dist: str | None, output_dist: str | None,
              seed: int = 0) -> Mix:
    """The mix of a distribution spec, drawn as the simulator draws it (requests.draw_lengths_raised: draws
    below 1 set to 1); outputs below 2 are then set to 2 (O − 1 >= 1 decode steps). Each raise is a note:
    k of ``SAMPLE`` draws, k / SAMPLE of the distribution's mass (:func:`_raised_notes`)."""
    if not input_dist and not output_dist:
        return fixed(input_len, output_len)
    rng = np.random.default_rng(seed)
    ins, low_in = draw_lengths_raised(input_dist, input_len, SAMPLE, rng, "input")
    outs, _ = draw_lengths_raised(output_dist, output_len, SAMPLE, rng, "output")
    low_out = int(np.sum(outs < 2))  # those drawn below 1 are already 1: every one below 2 is raised
    mix = from_pairs(ins, np.maximum(outs, 2), f"input {input_dist or input_len}, output {output_dist or output_len}")
    return replace(mix, notes=_raised_notes(low_in, low_out, f"input_dist={input_dist}", f"output_dist={output_dist}"))


def _raised_notes(low_in: int, low_out: int, in_what: str, out_what: str) -> tuple[str, ...]:
    """A note per length field whose ``SAMPLE`` draws had some raised: prompts below 1 to 1 (a request has a
    token), outputs below 2 to 2 (the steady state takes O − 1 >= 1 decode steps), as a count and a share."""
    notes = []
    for k, what, floor, src in ((low_in, "prompt", 1, in_what), (low_out, "output", 2, out_what)):
        if k:
            notes.append(f"{k} of {SAMPLE} {what} lengths drawn ({k / SAMPLE:.2%}, {src}) were below {floor} and "
                         f"set to {floor} for the estimate's length mix")
    return tuple(notes)


def _complete(p: dict) -> bool:
    return p.get("input_mean") is not None and p.get("output_mean") is not None


def dataset_names() -> tuple[str, ...]:
    """The profiles ``--dataset`` offers: those whose source publishes both mean lengths. A profile
    without them (data/datasets.yaml keeps it for measured rows that state their own lengths) is not
    listed rather than listed broken."""
    return tuple(n for n, p in data_yaml("datasets.yaml")["datasets"].items() if _complete(p))


def profile_names() -> tuple[str, ...]:
    """Every profile of data/datasets.yaml, listed or not (validation rows may name any)."""
    return tuple(data_yaml("datasets.yaml")["datasets"])


def dataset_profile(name: str) -> tuple[str, dict]:
    """(canonical name, profile) of a dataset name, matched case-insensitively (``ShareGPT``)."""
    profiles = data_yaml("datasets.yaml")["datasets"]
    key = str(name).strip().lower()
    if key not in profiles:
        raise ValueError(f"dataset={name!r} unknown; allowed: {', '.join(dataset_names())}")
    return key, profiles[key]


def from_dataset(name: str, input_len: float | None = None, output_len: float | None = None) -> Mix:
    """A dataset profile of data/datasets.yaml at its published means; ``input_len``/``output_len``
    (a row's stated means) take the place of the profile's where given."""
    name, p = dataset_profile(name)
    i = input_len if input_len is not None else p.get("input_mean")
    o = output_len if output_len is not None else p.get("output_mean")
    missing = [k for k, v in (("input_len", i), ("output_len", o)) if v is None]
    if missing:
        raise ValueError(f"dataset={name!r}: its mean {' and '.join(missing)} is not published ({p['source']}), "
                         f"so it is not offered; allowed: {', '.join(dataset_names())}")
    if p.get("classes") and input_len is None and output_len is None:
        return from_classes(name, p["classes"])
    if p.get("input_std") is None or p.get("output_std") is None:
        note = (f"dataset {name}: the spread of its lengths is not published; modelled at the mean lengths "
                f"{i:g} in / {o:g} out",)
        return Mix((1.0,), (float(i),), (float(o),), name, note)
    return from_row_moments(float(i), float(o), p["input_std"], p["output_std"])


def from_classes(name: str, classes) -> Mix:
    """A profile's measured length classes ([share, prompt, output] rows of data/datasets.yaml): shares
    divided by their sum (they are printed rounded), each class at its stated mean lengths."""
    rows = np.asarray(classes, dtype=float)
    if rows.ndim != 2 or rows.shape[1] != 3 or np.any(rows[:, 0] <= 0) or np.any(rows[:, 2] < 2):
        raise ValueError(f"dataset={name!r}: classes must be [share > 0, input_len, output_len >= 2] rows")
    w = rows[:, 0] / rows[:, 0].sum()
    return Mix(tuple(float(x) for x in w), tuple(float(x) for x in rows[:, 1]), tuple(float(x) for x in rows[:, 2]),
               name)


def from_row_moments(input_mean: float, output_mean: float, input_std: float | None, output_std: float | None) -> Mix:
    """A validation row's lengths: means (non-integers allowed), spreads as normal distributions, rounded;
    prompts below 1 set to 1 and outputs below 2 set to 2, each raise a note (:func:`_raised_notes`)."""
    if not input_std and not output_std:
        return fixed(input_mean, output_mean)
    rng = np.random.default_rng(0)
    ins = np.rint(rng.normal(input_mean, input_std or 0.0, SAMPLE))
    outs = np.rint(rng.normal(output_mean, output_std or 0.0, SAMPLE))
    mix = from_pairs(np.maximum(ins, 1), np.maximum(outs, 2),
                     f"{input_mean:g}±{input_std or 0:g} in / {output_mean:g}±{output_std or 0:g} out")
    return replace(mix, notes=_raised_notes(int(np.sum(ins < 1)), int(np.sum(outs < 2)),
                                            f"normal {input_mean:g}±{input_std or 0:g}",
                                            f"normal {output_mean:g}±{output_std or 0:g}"))


def describe(mix: Mix) -> str:
    if len(mix.weights) == 1:
        return mix.label
    return f"{mix.label}: {len(mix.weights)} classes, means {mix.mean_input:,.0f} in / {mix.mean_output:,.0f} out"




def from_trace(path) -> Mix:
    """The length classes of a trace file's requests (requests.read_trace: CSV or JSONL)."""
    reqs = read_trace(path)
    return from_pairs([r.input_len for r in reqs], [r.output_len for r in reqs], f"trace {path}")


#: the options that make lengths other than fixed (declared as faces/options.LENGTHS)
LENGTH_OPTIONS = ("input_dist", "output_dist", "trace", "dataset")


def from_options(values: dict) -> Mix | None:
    """The Mix of parsed option values (``LENGTH_OPTIONS`` beside input_len/output_len: faces/options.LENGTHS
    declares them), or None for fixed lengths."""
    if not any(values.get(name) for name in LENGTH_OPTIONS):
        return None
    trace = values.get("trace")
    if trace is not None and not Path(trace).is_file():
        raise ValueError(f"trace={str(trace)!r} is not a file; allowed: a CSV or JSONL trace file")
    return workload_mix(values["input_len"], values["output_len"], values.get("input_dist"),
                        values.get("output_dist"), values.get("dataset"), trace)


def workload_mix(input_len: float, output_len: float, input_dist: str | None = None, output_dist: str | None = None,
                 dataset: str | None = None, trace=None, seed: int = 0) -> Mix:
    """The Mix a command's length options describe: a trace, else a dataset profile, else distribution
    specs around ``input_len``/``output_len``, else fixed lengths. Two sources at once are refused."""
    given = [n for n, v in (("trace", trace), ("dataset", dataset)) if v]
    if len(given) > 1 or (given and (input_dist or output_dist)):
        both = given + [n for n, v in (("input_dist", input_dist), ("output_dist", output_dist)) if v]
        raise ValueError(f"{' and '.join(both)} given together; allowed: one of trace, dataset, or "
                         f"input_dist/output_dist")
    if trace:
        return from_trace(trace)
    if dataset:
        return from_dataset(dataset)
    return from_spec(input_len, output_len, input_dist, output_dist, seed)


__all__ = ["Mix", "fixed", "from_pairs", "from_spec", "from_dataset", "dataset_names", "profile_names",
           "dataset_profile", "from_classes", "from_row_moments",
           "from_trace", "workload_mix", "from_options", "describe"]
