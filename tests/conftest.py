"""Shared fixtures: an environment that cannot leak into the tests, and small helpers.

- No user hardware files from the environment, and an empty HuggingFace cache, so results depend on
  the bundled data only.
- INFERBOUND_CALIBRATION=none: unit tests check formulas against the catalog's datasheet figures and
  efficiency priors written out by hand; tests of the calibration pass theirs explicitly.
"""
from __future__ import annotations

import os

import pytest

# Module- and session-scoped fixtures are built before any function-scoped monkeypatch runs, so the
# calibration choice is also set for the whole process here.
os.environ["INFERBOUND_CALIBRATION"] = "none"


#: test modules whose every test is marked ``slow`` and whose collection alone is slow: schemathesis
#: builds all coverage-phase cases of test_api_fuzz.py when it collects the module (about 12 s)
SLOW_TO_COLLECT = {"test_api_fuzz.py"}


def pytest_ignore_collect(collection_path, config):
    """Under ``-m`` expressions that deselect ``slow`` (``-m "not slow"``: quick local runs), do not import
    the SLOW_TO_COLLECT modules at all; their tests would all be deselected anyway. CI passes no ``-m``
    and collects and runs everything."""
    expr = config.getoption("markexpr", "")
    if not expr or collection_path.name not in SLOW_TO_COLLECT:
        return None
    try:
        from _pytest.mark.expression import Expression
        selected = Expression.compile(expr).evaluate(lambda name, **kwargs: name == "slow")
    except Exception:   # a pytest without this helper: collect as usual
        return None
    return True if not selected else None


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("INFERBOUND_HARDWARE_PATH", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_home_empty")))
    monkeypatch.setenv("INFERBOUND_CALIBRATION", "none")
    # the parsed-data disk cache (datafiles.py) stays out of the user's ~/.cache; its own tests turn it on
    monkeypatch.setenv("INFERBOUND_NO_DISK_CACHE", "1")
