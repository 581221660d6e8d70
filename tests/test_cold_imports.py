"""Cold start (issue 18): what ``inferbound estimate`` imports. Declaring the options (faces/options.py, which
every command's parameters are built from) and the root package must not load the search package or the serving
simulator under it; ``inferbound.search`` stays the callable search package however it is first imported."""
import subprocess
import sys

import pytest


def _fresh(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing imported yet) and return its stdout."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("module", ["inferbound", "inferbound.faces.options", "inferbound.cli.estimate_cmds"])
def test_estimate_path_leaves_search_and_sim_unloaded(module):
    out = _fresh(f"import sys, {module}; print(sorted(m for m in sys.modules "
                 "if m.split('.')[:2] in (['inferbound', 'search'], ['inferbound', 'sim'])))")
    assert out == "[]", f"{module} loads {out}"


def test_search_callable_when_a_submodule_is_imported_first():
    # the import system sets inferbound.search on the root as it imports the submodule (no __getattr__ involved)
    out = _fresh("import inferbound.search.space, inferbound; print(callable(inferbound.search), "
                 "inferbound.search.search.__module__)")
    assert out == "True inferbound.search"


def test_search_callable_on_first_attribute_access():
    out = _fresh("import inferbound as ib, sys; a = 'inferbound.search' in sys.modules; s = ib.search; "
                 "print(a, callable(s), s is sys.modules['inferbound.search'])")
    assert out == "False True True"


def test_option_choices_read_search_yaml_as_the_search_does():
    # faces/options_search.py reads data/search.yaml itself; search/space.py reads the same file
    from inferbound.faces import options
    from inferbound.search.space import dtype_combos, search_defaults
    assert options.SEARCH_DTYPES == tuple(c.name for c in dtype_combos())
    assert options.by_name(options.SEARCH)["max_gpus"].default == search_defaults()["space"]["max_gpus"]


def test_choice_names_have_one_definition():
    from inferbound.base import choices
    from inferbound.search import backends, emit, metrics
    assert metrics.OBJECTIVES is choices.OBJECTIVES and metrics.SENSE is choices.SENSE
    assert emit.ENGINES is choices.ENGINES and backends.BACKENDS is choices.BACKENDS
    assert set(choices.OBJECTIVES) <= set(choices.SENSE)  # every objective has a sense to rank by


#: what a cold ``inferbound estimate`` (the default static batch, printed as a table) must not load: the other
#: commands and the packages only they run, the optional extras, and PyYAML (the package's data comes from the
#: parse kept on disk, base/datafiles.py)
ESTIMATE_NEVER_LOADS = ("yaml", "inferbound.search", "inferbound.sim", "inferbound.fleet", "inferbound.bench",
                        "inferbound.web", "inferbound.probe", "inferbound.calibration", "inferbound.validation.predict",
                        "inferbound.validation.metrics", "inferbound.workloads.serving", "inferbound.workloads.disagg",
                        "inferbound.faces.compare", "inferbound.faces.api", "inferbound.cli.search_cmd",
                        "inferbound.cli.simulate_cmd", "inferbound.cli.fleet_cmd", "inferbound.cli.validate_cmds",
                        "inferbound.cli.serve_cmd", "inferbound.cli.probe_cmd", "fastapi", "uvicorn", "matplotlib",
                        "torch", "ray", "multiprocessing", "numpy.ma")  # numpy.ma: np.unique's first call loads it


def _cli_in_fresh_process(args: list[str], cache_home, names) -> dict[str, bool]:
    """Run ``inferbound ARGS`` in a new interpreter (the console script's path: cli.main) and say which of
    ``names`` it loaded."""
    import os
    code = (f"import sys; sys.argv = ['inferbound', *{args!r}]; import inferbound.cli\n"
            "try:\n    inferbound.cli.main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            f"print('LOADED', [n for n in {list(names)!r} if n in sys.modules])")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    env.pop("INFERBOUND_NO_DISK_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("LOADED "))
    loaded = set(eval(line.removeprefix("LOADED ")))  # noqa: S307  (a list of names this test printed)
    return {n: n in loaded for n in names}


@pytest.mark.parametrize("args", [["estimate"], ["estimate", "--json"]])
def test_cold_estimate_loads_only_what_it_runs(tmp_path, args):
    _cli_in_fresh_process(args, tmp_path, ESTIMATE_NEVER_LOADS)  # the first run parses the data and keeps it
    loaded = _cli_in_fresh_process(args, tmp_path, ESTIMATE_NEVER_LOADS)
    assert [n for n, hit in loaded.items() if hit] == []


def test_the_check_sees_a_loaded_module(tmp_path):
    """The check can fail: a command that does load one of the names is reported (search loads the search package)."""
    loaded = _cli_in_fresh_process(["estimate", "--scenario", "serving", "--rate", "1"], tmp_path,
                                   ("inferbound.workloads.serving", "inferbound.search"))
    assert loaded == {"inferbound.workloads.serving": True, "inferbound.search": False}


def test_help_lists_every_command_with_its_help():
    """Commands load on first use, yet ``inferbound --help`` names every one, in COMMANDS order, each with the
    first words of the help its module registers."""
    import re

    from typer.main import get_command

    from inferbound.cli import COMMANDS, app
    out = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['inferbound', '--help']; "
                          "from inferbound.cli import main; main()"], capture_output=True, text=True,
                         env={**__import__("os").environ, "COLUMNS": "200"}).stdout
    listed = re.findall(r"^\s{2}(\w+)\s{2,}(\S.*)$", out.split("Commands:", 1)[1], flags=re.M)
    assert [name for name, _ in listed] == list(COMMANDS)
    group = get_command(app)
    import click
    ctx = click.Context(group)
    for name, shown in listed:
        words = " ".join((group.get_command(ctx, name).help or "").split()[:3])
        assert shown.startswith(words), (name, shown, words)


def _parsed(command_name: str, args: list[str], shortcut: bool) -> dict:
    """The values typer parses for ``args`` of one command: through the group (unset options skip coercion,
    cli/__init__.py) or with typer's own parameters only."""
    import click
    from typer.main import get_command, get_command_from_info

    from inferbound import cli
    group = get_command(cli.app)
    ctx = click.Context(group)
    if shortcut:
        command = group.get_command(ctx, command_name)
    else:
        group.get_command(ctx, command_name)  # registers it
        info = next(i for i in cli.app.registered_commands if (i.name or i.callback.__name__) == command_name)
        command = get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)
    # the group's parameters carry the shortcut, typer's own do not
    assert any("process_value" in vars(p) for p in command.params) == shortcut
    return command.make_context(command_name, list(args), parent=ctx, resilient_parsing=True).params


@pytest.mark.parametrize("command_name, args", [
    ("estimate", []), ("estimate", ["llama-3.1-70b", "--tp", "4", "--rate", "2", "--scenario", "serving",
                                    "--max-num-seqs", "64", "--set", "num_hidden_layers=4"]),
    ("memory", []), ("roofline", ["--batch", "3"]), ("simulate", ["--requests", "7"]), ("search", []),
    ("compare", ["x.yaml"]), ("validate", ["rows.csv"]), ("fleet", ["f.yaml"])])
def test_unset_options_parse_as_typer_parses_them(command_name, args):
    fast, typer_own = _parsed(command_name, args, True), _parsed(command_name, args, False)
    assert fast == typer_own
    assert {k: type(v) for k, v in fast.items()} == {k: type(v) for k, v in typer_own.items()}
    assert any(v is None for v in fast.values())  # the case the shortcut takes is there
