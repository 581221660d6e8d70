"""``inferbound bench``: a benchmark's own command lines (serve command + load tool), predicted (inferbound.bench).

    inferbound bench --gpu h100_sxm --serve "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 256" \\
      -- vllm bench serve --model meta-llama/Llama-3.1-8B --random-input-len 1024 --random-output-len 1024 \\
         --max-concurrency 64 --num-prompts 640 --ignore-eos

Prints the tool's own text block (``--json``: its result JSON on stdout, the notes and warnings on stderr),
then what was assumed (``note:``) and the flags not read (``warning:``).
"""
from __future__ import annotations

from typing import Annotated

import typer

from ..faces.options import BENCH
from .common import console, err_console, labelled, print_json, warn
from .params import command

_LOAD = next(o for o in BENCH if o.name == "load_command")
_LOAD_ARG = (_LOAD.name, Annotated[list[str], typer.Argument(help=_LOAD.help, metavar="-- LOAD_COMMAND...",
                                                             show_default=False), _LOAD], _LOAD.default)


@command("bench", "The benchmark people run, predicted: the deployment as its launch command (--serve), the load as "
                  "the load tool's own command line after --; replayed in the simulator with the tool's protocol and "
                  "printed in the tool's own output.", tuple(o for o in BENCH if o is not _LOAD), extra=[_LOAD_ARG])
def bench(o: dict) -> None:
    from ..bench import run_bench
    r = run_bench(o["serve_command"], list(o["load_command"] or []), gpu=o["gpu"], engine=o["engine"])
    to = err_console if o["json"] else console
    if o["json"]:
        print_json(r.result)
    else:
        console.print(r.text, markup=False, highlight=False, soft_wrap=True)
    for n in r.notes:
        to.print(labelled("note:", "cyan", n), highlight=False, soft_wrap=True)
    for w in r.warnings:
        warn(w, to)
