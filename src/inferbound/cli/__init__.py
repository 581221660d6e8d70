"""``inferbound`` command line (typer). Each command lives in its own module.

Every error is one line on stderr, exit code 2, no traceback: a command body's ValueError
(common.run) and typer/click's own usage errors (missing argument, a value that is not an integer,
an unknown option) alike, the latter through :class:`OneLineGroup`. Ctrl-C (KeyboardInterrupt), in any
phase of any command, is one line too, ``error: interrupted``, with exit code 130 (128 + SIGINT, as a shell
reports it).

Commands load on first use: :data:`COMMANDS` names the module that registers each one, and the group
imports (and builds the click command of) only the command being run; ``--help``, a typo's
suggestions and shell completion load them all, listed in :data:`COMMANDS` order.
"""
from __future__ import annotations

import importlib
import sys

import typer
from typer.core import TyperGroup

#: command name -> the module of this package that registers it, in ``inferbound --help`` order
COMMANDS = {"models": "catalog_cmds", "gpus": "catalog_cmds", "bench": "bench_cmd", "compare": "compare_cmd",
            "estimate": "estimate_cmds", "roofline": "estimate_cmds", "memory": "estimate_cmds", "fleet": "fleet_cmd",
            "probe": "probe_cmd", "search": "search_cmd", "serve": "serve_cmd", "simulate": "simulate_cmd",
            "validate": "validate_cmds", "calibrate": "validate_cmds"}

#: click's base exception class, wherever this typer takes click from (vendored in typer >= 0.2x)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

#: exit code of a command stopped by Ctrl-C: 128 + SIGINT (2), what a shell reports for it
INTERRUPTED = 130
INTERRUPTED_LINE = "interrupted (Ctrl-C): the command stopped before it finished"


def _interrupted() -> None:
    from .common import err_console, labelled
    err_console.print(labelled("error:", "red", INTERRUPTED_LINE), highlight=False, soft_wrap=True)
    sys.exit(INTERRUPTED)


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


def _unset_skips_coercion(param) -> None:
    """An option left unset (None) goes straight to typer's missing-value check and callback, without the
    pydantic ``TypeAdapter`` typer builds for each parameter it processes: typer's coercion gives a single
    value of None back as None without using it (typer 0.29 ``_coercion.RuntimeParam.coerce``), and building
    the ~40 adapters of estimate's unset options is ~15 ms of a cold run (issue 18). Every given value, a
    required option and a multi-valued one go through typer's own ``process_value`` unchanged."""
    if (getattr(param, "type_descriptor", None) is None or param.multiple or param.nargs != 1 or param.required
            or "process_value" in vars(param)):
        return
    coerce = param.process_value

    def process_value(ctx, value):
        if value is not None:
            return coerce(ctx, value)
        return param.callback(ctx, param, value) if param.callback is not None else value
    param.process_value = process_value


class OneLineGroup(TyperGroup):
    """Typer's group with click's usage errors printed as one ``error:`` line (exit code 2), its commands
    loaded on first use (:data:`COMMANDS`), their unset options parsed without coercion
    (:func:`_unset_skips_coercion`)."""

    def _load(self, names) -> None:
        """Import the modules registering ``names`` and add those commands (every registered command the
        group lacks when ``names`` is all of :data:`COMMANDS`)."""
        from typer.main import get_command_from_info, get_command_name
        for module in dict.fromkeys(COMMANDS[n] for n in names if n in COMMANDS):
            importlib.import_module(f"{__name__}.{module}")
        every = names is COMMANDS
        for info in app.registered_commands:
            name = info.name or get_command_name(info.callback.__name__)
            if name not in self.commands and (every or name in names):
                self.add_command(get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                                       rich_markup_mode=app.rich_markup_mode), name)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for command in self.commands.values():  # those registered before the group was built
            for param in command.params:
                _unset_skips_coercion(param)

    def add_command(self, cmd, name=None) -> None:
        for param in cmd.params:
            _unset_skips_coercion(param)
        super().add_command(cmd, name)

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands:
            self._load([cmd_name])
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx) -> list[str]:
        self._load(COMMANDS)
        order = {n: i for i, n in enumerate(COMMANDS)}
        return sorted(self.commands, key=lambda n: order.get(n, len(order)))

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # before click turns it into Abort (which would print an empty line first)
            _interrupted()

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in COMMANDS:  # a typo: suggest from all
            self._load(COMMANDS)
        return super().resolve_command(ctx, args)

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
        except typer.Abort as e:
            if isinstance(e.__cause__, KeyboardInterrupt):  # Ctrl-C while click parsed the arguments
                _interrupted()
            err_console.print(labelled("error:", "red", "aborted"), highlight=False, soft_wrap=True)
            sys.exit(1)
        except KeyboardInterrupt:
            _interrupted()
        sys.exit(rv if isinstance(rv, int) else 0)


def _group() -> None:
    """(The group's callback: it makes typer build a group before any command is registered.)"""


app = typer.Typer(cls=OneLineGroup, add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                  callback=_group,
                  help="Inference arithmetic for LLM deployments: fit, latency, throughput, energy, cost.")


def main() -> None:
    app()
