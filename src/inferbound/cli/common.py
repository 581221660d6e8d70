"""Options shared by the commands, the one-line error path, and output helpers."""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Callable

import numpy as np
import typer
from rich.console import Console

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

Model = Annotated[str, typer.Argument(help="catalog alias, HF id, config.json path or folder")]
Gpu = Annotated[str, typer.Option("--gpu", help="GPU id from `inferbound gpus`")]
NumGpus = Annotated[int | None, typer.Option("--num-gpus", help="GPUs of the deployment (default tp·pp·dp)")]
Tp = Annotated[int | None, typer.Option("--tp", help="tensor-parallel size (default: --num-gpus or 1)")]
Pp = Annotated[int, typer.Option("--pp", help="pipeline-parallel stages")]
Ep = Annotated[int, typer.Option("--ep", help="expert-parallel size (MoE)")]
Dp = Annotated[int, typer.Option("--dp", help="data-parallel replicas")]
Nodes = Annotated[int, typer.Option("--nodes", help="machines the GPUs are spread over")]
AttentionDp = Annotated[bool, typer.Option("--attention-dp", help="attention data parallel beside EP (MoE)")]
SequenceParallel = Annotated[bool, typer.Option("--sequence-parallel", help="reduce-scatter + all-gather, not all-reduce")]
PpSplit = Annotated[str | None, typer.Option("--pp-split", help="layers per stage, e.g. 20,20,20,20")]
Microbatches = Annotated[int | None, typer.Option("--microbatches", help="pipeline micro-batches (default min(batch, pp))")]
CollectiveAlgo = Annotated[str, typer.Option("--collective-algo", help="auto ring tree oneshot twoshot nvls")]
CommOverlap = Annotated[float, typer.Option("--comm-overlap", help="share of collective time hidden behind compute (0-1)")]
Scenario = Annotated[str, typer.Option("--scenario", help="static (one batch) or max-throughput (offline, in-flight batching)")]
Requests = Annotated[int, typer.Option("--requests", help="requests issued (max-throughput)")]
BlockSize = Annotated[int | None, typer.Option("--block-size", help="paged KV block tokens (max-throughput; default 16)")]
KvFraction = Annotated[float | None, typer.Option("--kv-fraction", help="share of free memory for the KV cache (max-throughput; default 0.9)")]
TokenBudget = Annotated[int | None, typer.Option("--token-budget", help="tokens per step, chunked prefill (max-throughput; default 8192)")]
Batch = Annotated[int, typer.Option("--batch", help="sequences in the static batch")]
Input = Annotated[int, typer.Option("--input", help="prompt tokens per request")]
Output = Annotated[int, typer.Option("--output", help="generated tokens per request")]
WeightDtype = Annotated[str, typer.Option("--weight-dtype", help="bf16 fp16 fp8 int8 int4 fp4")]
ActDtype = Annotated[str, typer.Option("--act-dtype", help="compute/activation dtype: bf16 fp16 fp8 int8 fp4")]
KvDtype = Annotated[str | None, typer.Option("--kv-dtype", help="KV-cache dtype (default: as activations)")]
Emulate = Annotated[bool, typer.Option("--emulate", help="allow dtypes the GPU lacks (weight-only emulation)")]
Set = Annotated[list[str] | None, typer.Option("--set", help="override a model config field, KEY=VALUE")]
GpuSet = Annotated[list[str] | None, typer.Option("--gpu-set", help="override a GPU field, KEY=VALUE (SI)")]
GpuFile = Annotated[list[Path] | None, typer.Option("--gpu-file", help="extra hardware YAML file(s)")]
Calibration = Annotated[str | None, typer.Option(
    "--calibration", help="calibration YAML, 'default' (packaged fit) or 'none' (catalog priors)")]
Json = Annotated[bool, typer.Option("--json", help="print JSON instead of tables")]


def parse_sets(items: list[str] | None, field: str) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; values parsed as JSON when they are (numbers, true/false, null, lists)."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"{field}={item!r} must look like KEY=VALUE")
        key, value = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ValueError(f"{field}={item!r} has no KEY; allowed: KEY=VALUE")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        if (isinstance(parsed, float) and not math.isfinite(parsed)) or \
                value.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
            raise ValueError(f"{field} {key}={value!r} is not a finite number; allowed: a finite number")
        out[key] = parsed
    return out


def labelled(label: str, style: str, text: str):
    """A styled label followed by plain text: user text (model names, config values) is never read
    as terminal markup."""
    from rich.text import Text
    return Text.assemble((label, style), " ", str(text))


def warn(text: str, to=None) -> None:
    (to or console).print(labelled("warning:", "yellow", text), highlight=False, soft_wrap=True)


def error_line(e: BaseException) -> str:
    """The one-line message of an input error: its text, or for an operating-system error (a file that
    cannot be read or written) the file and the system's reason, never a bare errno."""
    if isinstance(e, OSError) and e.strerror:
        where = f"file={str(e.filename)!r}: " if e.filename is not None else ""
        msg = f"{where}{e.strerror}"
    else:
        msg = str(e.args[0]) if e.args else type(e).__name__
    return " ".join(msg.split())


def fail(msg: str) -> None:
    """Print one ``error:`` line on stderr and exit with code 2."""
    err_console.print(labelled("error:", "red", " ".join(str(msg).split())), highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def run(fn: Callable[[], None]) -> None:
    """Run a command body: a ValueError (or a file that cannot be read or written) becomes one line on
    stderr and exit code 2 (no traceback)."""
    try:
        fn()
    except (ValueError, KeyError, OSError) as e:
        fail(error_line(e))


def writable_file(path: Path | None, field: str, suffix: str | None = None) -> Path | None:
    """Check an output file before the work that fills it: the suffix, an existing folder to write
    into, not a folder itself; ValueError naming ``field`` otherwise."""
    if path is None:
        return None
    path = Path(path)
    shown = f"{field}={str(path)!r}"
    if suffix is not None and path.suffix.lower() != suffix:
        raise ValueError(f"{shown} must end in {suffix}")
    if path.is_dir():
        raise ValueError(f"{shown} is a folder; allowed: a file path in an existing folder")
    parent = path.expanduser().parent
    if not parent.is_dir():
        raise ValueError(f"{shown}: folder {str(parent)!r} does not exist; allowed: a file in an existing folder")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{shown}: folder {str(parent)!r} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{shown} exists and is not writable")
    return path


def to_jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")


def gb(x: float) -> str:
    return f"{x / 1e9:,.2f} GB"


def ms(x: float) -> str:
    return f"{x * 1e3:,.2f} ms"
