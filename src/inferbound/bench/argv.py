"""Command lines as the tools read them: shell splitting, argparse without exiting, unknown flags kept.

Every tool mirrored here parses its flags with Python's argparse (vLLM, SGLang, genai-perf) or click
(trtllm-serve), so the mirror is an ``argparse.ArgumentParser`` with the tool's flag names and defaults
(data/bench.yaml). Two departures, both printed: a flag the mirror does not know is kept and named in one
warning line (the tool would accept or refuse it, but it does not change what inferbound models); a value
argparse refuses is one ``ValueError`` line naming the tool, the flag and the value (the CLI's exit 2).
"""
from __future__ import annotations

import argparse
import shlex

from ..base.datafiles import data_yaml


def bench_data() -> dict:
    return data_yaml("bench.yaml")


def check_count(tool: str, flag: str, n: int) -> int:
    """``n`` requests, refused past data/bench.yaml ``max_requests`` (what one replay may hold)."""
    cap = int(bench_data()["max_requests"])
    if n > cap:
        raise ValueError(f"{tool}: {flag} {n} requests; allowed: at most {cap:,} (inferbound's replay limit)")
    return n


def split(command: str | list[str] | tuple[str, ...]) -> list[str]:
    """The words of a command line (shell quoting as POSIX sh reads it)."""
    if isinstance(command, (list, tuple)):
        return [str(w) for w in command]
    try:
        return shlex.split(command)
    except ValueError as e:
        raise ValueError(f"command {command!r} cannot be split into words: {e}") from None


class ToolParser(argparse.ArgumentParser):
    """argparse that raises one-line ValueErrors (``tool: message``) instead of printing usage and exiting."""

    def __init__(self, tool: str, **kw):
        super().__init__(prog=tool, add_help=False, **kw)
        self.tool = tool

    def error(self, message: str):  # argparse's hook for every parse error
        raise ValueError(f"{self.tool}: {message}")


def parse(parser: ToolParser, words: list[str], underscores_as_dashes: bool = False):
    """(namespace, unknown flags) of ``words``. ``underscores_as_dashes``: read ``--a_b`` as ``--a-b``
    (vLLM's FlexibleArgumentParser does so for every flag)."""
    if underscores_as_dashes:
        words = [_dashes(w) for w in words]
    ns, rest = parser.parse_known_args(words)
    unknown = [w.split("=", 1)[0] for w in rest if w.startswith("-") and len(w) > 1 and not _number(w)]
    stray = [w for w in rest if not w.startswith("-") or _number(w)]
    if stray and not unknown:  # a positional argparse would refuse: state it
        raise ValueError(f"{parser.tool}: unrecognized arguments: {' '.join(stray)}")
    return ns, unknown


def unknown_warning(tool: str, unknown: list[str]) -> list[str]:
    """The one warning line naming the flags the mirror of ``tool`` does not read (none: no line)."""
    if not unknown:
        return []
    flags = ", ".join(dict.fromkeys(unknown))
    return [f"{tool}: flags inferbound does not read (the prediction ignores them): {flags}"]


def _dashes(word: str) -> str:
    if not word.startswith("--"):
        return word
    name, eq, value = word.partition("=")
    return name.replace("_", "-") + eq + value


def _number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False
