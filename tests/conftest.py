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


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("INFERBOUND_HARDWARE_PATH", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_home_empty")))
    monkeypatch.setenv("INFERBOUND_CALIBRATION", "none")
    # the parsed-data disk cache (datafiles.py) stays out of the user's ~/.cache; its own tests turn it on
    monkeypatch.setenv("INFERBOUND_NO_DISK_CACHE", "1")
