"""The offline fit scripts stay importable without the `fit` extra (their imports broke once when the package moved
to layer folders and nothing noticed): every module of benchmarks/kernel_fit imports, and fit_kernels.py --help runs."""
import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_kernel_fit_modules_import():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        names = sorted(p.stem for p in (ROOT / "benchmarks" / "kernel_fit").glob("*.py") if p.stem != "__init__")
        assert len(names) >= 5
        for n in names:
            importlib.import_module(f"kernel_fit.{n}")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_fit_kernels_help_runs():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fit_kernels.py"), "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--write" in r.stdout
