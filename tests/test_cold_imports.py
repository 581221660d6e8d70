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
