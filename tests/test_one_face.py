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


# ---------- "Untie the core", item 4: every option declared once, typed ----------

import inspect  # noqa: E402
import typing  # noqa: E402

import click  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from typer.main import get_command  # noqa: E402

from inferbound.cli import COMMANDS  # noqa: E402
from inferbound.cli.params import declaration_of  # noqa: E402
from inferbound.deploy import config as deploy_config, offload, runtime  # noqa: E402
from inferbound.search import backends, emit, metrics  # noqa: E402
from inferbound.validation import dataset  # noqa: E402

PKG = Path(opts.__file__).resolve().parents[1]
#: each CLI command that has a JSON form, and its request schema
API_OF = {"estimate": schemas.EstimateIn, "roofline": schemas.WorkloadIn, "memory": schemas.WorkloadIn,
          "simulate": schemas.SimulateIn, "search": schemas.SearchIn}
FAST = {"search": ["--gpus", "h100_sxm", "--max-gpus", "1"], "simulate": ["--requests", "5"]}  # if a case ran


def _cli():
    """(click group, context, {command name: the function typer registered}) with every command loaded."""
    group = get_command(app)
    ctx = click.Context(group)
    group.list_commands(ctx)  # loads every command module
    return group, ctx, {info.name or info.callback.__name__: info.callback for info in app.registered_commands}


def _options_py_objects() -> set[int]:
    """Every Opt options.py holds: its declarations, and the per-command overrides of its groups."""
    found = list(opts.DECLARED.values())
    for v in vars(opts).values():
        if isinstance(v, opts.Opt):
            found.append(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, opts.Opt) for x in v):
            found += v
    return {id(o) for o in found}


def _cli_options(command: str) -> dict[str, opts.Opt]:
    """{click parameter name: the declaration its annotation carries} of one command."""
    _, _, callbacks = _cli()
    return {p.name: declaration_of(p.annotation) for p in inspect.signature(callbacks[command]).parameters.values()}


def test_every_command_takes_every_option_from_options_py():
    group, ctx, callbacks = _cli()
    assert set(COMMANDS) == set(callbacks)  # the 12 commands, validate/calibrate/probe/serve/models/gpus included
    known = _options_py_objects()
    for name in COMMANDS:
        params = inspect.signature(callbacks[name]).parameters
        clicked = {p.name: p for p in group.get_command(ctx, name).params}
        assert set(clicked) == set(params), name  # nothing typer sees outside the declarations
        for pname, p in params.items():
            o = declaration_of(p.annotation)
            assert o is not None, (name, pname)
            assert id(o) in known, (name, pname)  # declared, or overridden, in options.py: nowhere else
            assert o.declaration is opts.DECLARED[o.name], (name, pname)
            assert p.default is o.default or p.default == o.default, (name, pname)
            assert clicked[pname].required == (o.default is opts.REQUIRED), (name, pname)
            assert (clicked[pname].help or "").startswith(o.help), (name, pname)
            if not o.argument:
                assert [f for f in clicked[pname].opts + clicked[pname].secondary_opts] == \
                    [part for f in o.cli_flags for part in f.split("/")], (name, pname)


def test_no_option_name_is_declared_twice():
    # options.py re-exports the declarations of its group modules (faces/options_*.py)
    here = Path(opts.__file__).parent
    names = [node.args[0].value for f in [here / "options.py", *sorted(here.glob("options_*.py"))]
             for node in ast.walk(ast.parse(f.read_text("utf-8")))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_o"]
    assert sorted({n for n in names if names.count(n) > 1}) == []
    assert set(names) == set(opts.DECLARED)
    with pytest.raises(RuntimeError, match="declared twice"):
        opts._o("batch", "int", 1, "a second batch")
    # no module builds an option of its own (faces/opt.py's Opt class is the only maker, through _o and .but)
    for path in PKG.rglob("*.py"):
        if path.name in ("options.py", "opt.py") and path.parent.name == "faces":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                assert (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) != "Opt", path


def test_the_names_once_declared_twice_differ_only_where_a_command_states_it():
    g = {name: opts.by_name(grp) for name, grp in (("static", opts.STATIC), ("estimate", opts.ESTIMATE),
                                                    ("serving", opts.SERVING), ("search", opts.SEARCH),
                                                    ("deployment", opts.DEPLOYMENT), ("probe", opts.PROBE))}
    twice = ("model", "input_len", "output_len", "rate", "concurrency", "think_time", "requests", "slo_ttft_ms",
             "slo_tpot_ms", "slo_e2e_ms", "gpu_scale", "calibration")
    for name in twice:
        users = [grp[name] for grp in g.values() if name in grp]
        assert len(users) >= 2, name
        assert all(o.declaration is opts.DECLARED[name] for o in users), name
    # the differences each command states (hand-worked from what each library call needs or caps)
    assert g["static"]["output_len"].ge == 1 and g["search"]["output_len"].ge == 2  # a TPOT needs a 2nd token
    assert g["serving"]["output_len"].api_le == 131_072 and g["static"]["output_len"].api_le == 1_000_000
    assert (g["estimate"]["requests"].default, g["serving"]["requests"].default) == (10_000, 1000)
    assert g["estimate"]["rate"].le == 1e9 and g["serving"]["rate"].le is None  # simulate: any rate, or inf
    assert g["search"]["input_len"] is g["static"]["input_len"] is g["serving"]["input_len"]
    assert g["probe"]["model"].default == "smollm2-135m" and g["deployment"]["model"].default == "llama-3.1-8b"


def _literal(annotation) -> tuple:
    """The allowed values of a pydantic field annotation (Literal, Optional Literal, list of Literal)."""
    for arg in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(arg) is typing.Literal:
            return typing.get_args(arg)
        if typing.get_origin(arg) is list:
            return _literal(typing.get_args(arg)[0])
    raise AssertionError(annotation)


def test_allowed_value_lists_are_one_object():
    cases = [  # (CLI command, option, the one tuple, the lowest layer that defines it)
        ("estimate", "collective_algo", deploy_config.COLLECTIVE_ALGOS),
        ("estimate", "preemption", runtime.PREEMPTIONS),
        ("estimate", "kv_reservation", runtime.RESERVATIONS),
        ("estimate", "kv_offload", offload.MODES),
        ("estimate", "weight_dtype", opts.DTYPES),
        ("estimate", "scenario", opts.SCENARIOS),
        ("search", "objective", metrics.OBJECTIVES),
        ("search", "emit", emit.ENGINES),
        ("search", "dtypes", opts.SEARCH_DTYPES),
        ("search", "backend", backends.BACKENDS),
        ("validate", "scenario", dataset.SCENARIOS),
    ]
    for command, name, values in cases:
        assert _cli_options(command)[name].choices is values, (command, name)
        if command in API_OF and name in API_OF[command].model_fields:
            assert _literal(API_OF[command].model_fields[name].annotation) == values, (command, name)
    # the web's collective algorithm: the deploy tuple, in the OpenAPI schema and /api/meta too
    schema = schemas.DeploymentIn.model_json_schema()["properties"]["collective_algo"]
    assert schema["enum"] == list(deploy_config.COLLECTIVE_ALGOS)
    assert opts.by_name(opts.DEPLOYMENT)["collective_algo"].choices is deploy_config.COLLECTIVE_ALGOS
    from inferbound.web.routes_catalog import meta
    m = meta()
    assert m["collective_algos"] == list(deploy_config.COLLECTIVE_ALGOS) and m["scenarios"] == list(opts.SCENARIOS)
    assert m["kv_offload"] == list(offload.MODES)
    assert schemas.Objective.__args__ == metrics.OBJECTIVES and schemas.Metric.__args__ == tuple(metrics.SENSE)
    # the search dtypes are data/search.yaml's combinations, nothing else
    from inferbound.search.space import dtype_combos
    assert opts.SEARCH_DTYPES == tuple(c.name for c in dtype_combos()) == ("bf16", "fp8", "int4", "fp4")


def _string_lists(path: Path):
    """Every tuple, list or Literal[...] of two or more string constants in a module."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else None
        if elts and len(elts) >= 2 and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
            yield node.lineno, frozenset(e.value for e in elts)


def test_no_face_writes_an_allowed_value_list_again():
    """The CLI, the web and options.py name every allowed-value list by its constant: none of their modules
    spells one of the lists out again (the issue found collective algorithms x5, objectives x3)."""
    lists = {"collective algorithms": deploy_config.COLLECTIVE_ALGOS, "objectives": metrics.OBJECTIVES,
             "preemption": runtime.PREEMPTIONS, "reservation": runtime.RESERVATIONS, "dtypes": opts.DTYPES,
             "scenarios": opts.SCENARIOS, "row scenarios": dataset.SCENARIOS, "search dtypes": opts.SEARCH_DTYPES,
             "engines": emit.ENGINES, "backends": backends.BACKENDS, "kv offload": offload.MODES,
             "metrics": tuple(metrics.SENSE)}
    wanted = {frozenset(v): k for k, v in lists.items()}
    copies = []
    for folder in ("cli", "web", "faces"):
        for path in (PKG / folder).rglob("*.py"):
            for line, values in _string_lists(path):
                if values in wanted and not (path.name == "options_workload.py" and wanted[values] == "scenarios"):
                    copies.append(f"{folder}/{path.name}:{line} {wanted[values]}")
    assert not copies, copies


def test_preemption_list_is_what_the_engines_do():
    """SGLang's 'retract' puts a request back in the queue with its KV freed: it resolves to recompute;
    TensorRT-LLM's GUARANTEED_NO_EVICT never preempts: none (data/engines.yaml, runtime.resolve)."""
    import inferbound as ib
    assert runtime.PREEMPTIONS == ("recompute", "swap", "none")
    assert ib.make_deployment(engine="sglang").runtime.preemption == "recompute"
    assert ib.make_deployment(engine="trtllm").runtime.preemption == "none"
    r = runner.invoke(app, ["memory", "--preemption", "none", "--kv-reservation", "max", "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["memory", "--preemption", "retract"])
    assert r.exit_code == 2 and "recompute, swap, none" in r.stderr


def test_web_simulate_defaults_are_the_clis():
    """The issue: the web's simulate took rate 2.0 and 200 requests where the CLI takes 1.0 and 1,000."""
    group, ctx, _ = _cli()
    cli = {p.name: p.default for p in group.get_command(ctx, "simulate").params}
    api = schemas.SimulateIn(model="llama-3.1-8b")
    assert (cli["rate"], cli["requests"]) == (1.0, 1000) == (api.rate, api.requests)
    search = {p.name: p.default for p in group.get_command(ctx, "search").params}
    assert search["max_gpus"] == schemas.SearchIn(model="llama-3.1-8b").max_gpus == 8  # data/search.yaml


def _api_bounds(prop: dict) -> dict:
    for sub in (prop, *prop.get("anyOf", [])):
        b = {k: sub[k] for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum") if k in sub}
        if b:
            return b
    return {}


@pytest.mark.parametrize("command", sorted(API_OF))
def test_every_shared_option_has_the_same_default_and_bounds_on_both_faces(command):
    group, ctx, _ = _cli()
    schema = API_OF[command]
    props = schema.model_json_schema()["properties"]
    clicked = {p.name: p for p in group.get_command(ctx, command).params}
    # shared: the options both faces offer as declared; the API takes model and calibration in its own form
    # (schemas._SKIP: a catalog name or a pasted config; 'default' or 'none', never a server file)
    shared = [(n, o) for n, o in _cli_options(command).items() if o.api and n not in schemas._SKIP]
    assert len(shared) >= 30 and all(n in schema.model_fields for n, _ in shared), [n for n, _ in shared]
    for name, o in shared:
        field = schema.model_fields[name]
        assert field.default == clicked[name].default == o.default, name
        if o.kind == "rate":  # float or 'inf': its range is a validator's (schemas._SimulateBase._rate), below
            continue
        api = _api_bounds(props[name])
        assert api.get("minimum") == o.ge and api.get("exclusiveMinimum") == o.gt, (name, api)
        cli_max = o.le if o.le is not None else o.lt
        top = api.get("maximum", api.get("exclusiveMaximum"))
        if cli_max is not None:
            assert top is not None and top <= cli_max, (name, api)  # a work cap only ever tightens
        if top is not None:
            assert top in (o.le, o.lt, o.api_le), (name, api)  # and is a declared one


@pytest.mark.parametrize("command", sorted(API_OF))
def test_a_value_below_a_shared_lower_bound_is_refused_by_both_faces(command):
    schema = API_OF[command]
    for name, o in _cli_options(command).items():
        shared = o.api and name not in schemas._SKIP
        if not shared or o.kind not in ("int", "float", "rate") or (o.ge, o.gt) == (None, None):
            continue
        bad = o.gt if o.gt is not None else o.ge - 1
        shown = str(int(bad)) if o.kind == "int" else str(bad)
        r = runner.invoke(app, [command, *FAST.get(command, []), o.cli_flags[0], shown])  # the last value wins
        assert r.exit_code == 2 and name in r.stderr, (command, name, r.output)
        with pytest.raises(ValidationError) as e:
            schema.model_validate({"model": "llama-3.1-8b", name: int(bad) if o.kind == "int" else bad})
        assert any(name in err["loc"] for err in e.value.errors()), (command, name)


def test_the_page_starts_from_the_cli_defaults():
    """The page's form opens on the declared defaults (faces/options.py), as the CLI and the API do: the
    simulate load (rate 1 req/s, 1,000 requests), the static batch and the lengths."""
    import re
    from pathlib import Path

    import inferbound.web as web_pkg
    from inferbound.faces import options as o

    static = Path(web_pkg.__file__).parent / "static"
    html, js = (static / "index.html").read_text(), (static / "app.js").read_text()
    declared = {**o.by_name(o.SERVING), **o.by_name(o.STATIC)}
    for name in ("rate", "requests", "think_time", "input_len", "output_len", "batch"):
        value = re.search(rf'id="{name}"[^>]*value="([^"]*)"', html).group(1)
        initial = re.search(rf'\b{name}: "([^"]*)"', js).group(1)
        assert float(value) == float(initial) == float(declared[name].default), name
