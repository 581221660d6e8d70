"""One declared option set and one engine line for every face (the "one step engine" issue, items 4-5).

- Every declared option a face offers is a CLI flag of the command and a field of its JSON request
  schema, with the same name (options.py builds both); the options the issue found missing on one face
  (CLI --sliding-window / --kv-reservation, web estimate block_size / memory_fraction, web search
  both_modes) are on both.
- ``--engine`` is an option of estimate, memory, simulate, search and validate, and their --help names
  the default engine; every table output opens with the engine line, and it follows --engine.
- No web module imports a CLI module (the report layer is shared, not borrowed from the CLI).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

import inferbound.web as web_pkg
from inferbound.faces import options as opts
from inferbound.cli import app
from inferbound.web import schemas

runner = CliRunner()
DEFAULT_ENGINE = opts._default_engine()  # "vllm@<version>", as data/engines.yaml names it


def _help(command: str) -> str:
    r = runner.invoke(app, [command, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())  # rich wraps help text: compare it as one line


@pytest.mark.parametrize("command, groups, schema", [
    ("estimate", (opts.DEPLOYMENT, opts.ENGINE, opts.STATIC, opts.ESTIMATE, opts.LENGTHS), schemas.EstimateIn),
    ("simulate", (opts.DEPLOYMENT, opts.ENGINE, opts.SERVING), schemas.SimulateIn),
    ("search", (opts.SEARCH, opts.LENGTHS, opts.ENGINE), schemas.SearchIn),
])
def test_every_declared_option_is_on_both_faces(command, groups, schema):
    text = _help(command)
    fields = set(schema.model_fields)
    for o in (o for g in groups for o in g):
        if o.cli and not o.argument:
            spellings = [part for f in o.cli_flags for part in f.split("/")]  # --x/--no-x: both spellings
            assert any(f + " " in text or f + "," in text for f in spellings), (command, o.cli_flags)
        if o.api:
            assert o.name in fields, (schema.__name__, o.name)


def test_the_options_once_missing_on_one_face_are_on_both():
    est = _help("estimate")
    assert "--sliding-window" in est and "--kv-reservation" in est
    assert {"block_size", "memory_fraction", "sliding_window", "kv_reservation"} <= set(schemas.EstimateIn.model_fields)
    assert "both_modes" in schemas.SearchIn.model_fields and "--both-modes" in _help("search")


@pytest.mark.parametrize("command", ["estimate", "memory", "simulate", "search", "validate"])
def test_engine_option_and_its_default_in_help(command):
    text = _help(command)
    assert "--engine" in text
    assert DEFAULT_ENGINE in text or "engines.yaml default" in text, text


@pytest.mark.parametrize("args", [
    ["estimate"],
    ["memory"],
    ["simulate", "--requests", "20", "--rate", "5"],
    ["search", "meta-llama/Llama-3.1-8B", "--gpus", "h100_sxm", "--max-gpus", "1"],
])
def test_every_output_opens_with_the_engine_line(args):
    default = runner.invoke(app, args, terminal_width=200)
    assert default.exit_code == 0, default.output
    assert default.output.lstrip().startswith("engine: vLLM"), default.output[:200]
    other = runner.invoke(app, args + ["--engine", "sglang"], terminal_width=200)
    assert other.exit_code == 0, other.output
    assert other.output.lstrip().startswith("engine: SGLang"), other.output[:200]


def test_no_web_module_imports_a_cli_module():
    for path in Path(web_pkg.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert not (name.startswith("..cli") or name.startswith("inferbound.cli")), (path.name, name)
