"""``inferbound`` command line (typer). Each command lives in its own module.

Every error is one line on stderr, exit code 2, no traceback: a command body's ValueError
(common.run) and typer/click's own usage errors (missing argument, a value that is not an integer,
an unknown option) alike, the latter through :class:`OneLineGroup`.
"""
from __future__ import annotations

import sys

import typer
from typer.core import TyperGroup

#: click's base exception class, wherever this typer takes click from (vendored in typer >= 0.2x)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def usage_error_line(e: Exception) -> str:
    """One line for a click usage error: the option or argument, the value given, what is allowed."""
    msg = e.format_message() if hasattr(e, "format_message") else str(e)
    param, cause = getattr(e, "param", None), e.__cause__
    errors = getattr(cause, "errors", None)
    if param is not None and callable(errors):  # typer coerces through pydantic: the value is in the error
        err = errors()[0]
        flag = (getattr(param, "opts", None) or [param.name])[0]
        if not flag.startswith("-"):
            flag = flag.upper()
        msg = f"{flag}={err.get('input')!r}: {str(err.get('msg', '')).removeprefix('Value error, ')}"
    ctx = getattr(e, "ctx", None)
    hint = f" (see `{ctx.command_path} --help`)" if ctx is not None and getattr(ctx, "command_path", None) else ""
    return " ".join(f"{msg}{hint}".split())


class OneLineGroup(TyperGroup):
    """Typer's group with click's usage errors printed as one ``error:`` line (exit code 2)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode: bool = True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        from .common import err_console, labelled
        try:
            rv = super().main(args, prog_name or "inferbound", complete_var, standalone_mode=False, **extra)
        except _CLICK_ERROR as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as click prints it
                e.show()
                sys.exit(e.exit_code)
            err_console.print(labelled("error:", "red", usage_error_line(e)), highlight=False, soft_wrap=True)
            sys.exit(e.exit_code)
        except typer.Abort:
            err_console.print(labelled("error:", "red", "aborted"), highlight=False, soft_wrap=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(cls=OneLineGroup, add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                  help="Inference arithmetic for LLM deployments: fit, latency, throughput, energy, cost.")

from . import (catalog_cmds, compare_cmd, estimate_cmds, probe_cmd, search_cmd, serve_cmd,  # noqa: E402,F401
               simulate_cmd, validate_cmds)  # (register commands)


def main() -> None:
    app()
