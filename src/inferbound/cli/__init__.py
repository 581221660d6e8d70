"""``inferbound`` command line (typer). Each command lives in its own module."""
from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                  help="Inference arithmetic for LLM deployments: fit, latency, throughput, energy, cost.")

from . import catalog_cmds, estimate_cmds, probe_cmd, search_cmd, serve_cmd, simulate_cmd, validate_cmds  # noqa: E402,F401  (register commands)


def main() -> None:
    app()
