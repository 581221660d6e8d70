"""Output paths (cli/output.py): every command checks the files it will write before its work starts, and
a write that still fails after the work prints the result first, then one error line (exit code 2).

An unwritable path is one in ``/proc`` (a pseudo file system: ``os.access`` says a root user may write
there, creating a file says otherwise) or, for a user other than root, in a folder without write
permission. "No work" is checked by replacing each command's work (the search, the simulation, the
comparison, the predictions, the fit, the measurements) with a failure. A write that fails after the work
is a file linked to ``/dev/full`` (every write: ENOSPC, disk full) or a plot function replaced by one
raising the same error.
"""
from __future__ import annotations

import csv
import errno
import io
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound.cli import app
from inferbound.cli.output import Writes, check_file, check_folder
from inferbound.validation.dataset import HEADER

PROC = Path("/proc")
needs_proc = pytest.mark.skipif(not (PROC / "self").exists(), reason="needs Linux /proc")
needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
SEARCH = ["search", "llama-3.1-8b", "--gpus", "h100_sxm", "--max-gpus", "1", "--output", "128"]
COMPARE_DOC = "workload: {batch: 8}\ndeployments:\n  - {model: llama-3.1-8b}\n  - {model: llama-3.1-8b, gpu: l40s}\n"

ROW = {"case": "c1", "source": "test", "model": "llama-3.1-8b", "gpu": "h100_sxm", "num_gpus": "1", "tp": "1",
       "pp": "1", "ep": "1", "weight_dtype": "bf16", "act_dtype": "bf16", "kv_dtype": "bf16", "framework": "vllm",
       "scenario": "max_throughput", "num_requests": "1000", "input_len": "1024", "output_len": "256",
       "metric": "output_tok_s", "value": "9000"}  # one measured row (docs/accuracy.md schema)

runner = CliRunner()


def _rows_csv() -> str:
    cols = list(dict.fromkeys([*HEADER, *ROW]))
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerow({k: ROW.get(k, "") for k in cols})
    return out.getvalue()


@pytest.fixture
def inputs(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text(_rows_csv())
    cmp = tmp_path / "cmp.yaml"
    cmp.write_text(COMPARE_DOC)
    return {"rows": str(rows), "cmp": str(cmp)}


def _no_work(monkeypatch):
    """Every command's work replaced by a failure: a check that comes after it would show as exit 1."""
    import inferbound.calibration.fit
    import inferbound.faces.compare
    import inferbound.probe
    import inferbound.search
    import inferbound.sim
    import inferbound.validation

    def refuse(*a, **k):
        raise AssertionError("the work started before the output path was checked")
    for module, name in ((inferbound.search, "search"), (inferbound.sim, "simulate"),
                         (inferbound.faces.compare, "compare"), (inferbound.validation, "predict_rows"),
                         (inferbound.calibration.fit, "fit"), (inferbound.probe, "probe")):
        monkeypatch.setattr(module, name, refuse)


def _commands(bad: str, inputs: dict) -> list[tuple[list[str], str, str]]:
    """(arguments, option, path) of every command's every output option, the path ``bad`` + its suffix."""
    return [
        (SEARCH + ["--csv", f"{bad}.csv"], "--csv", f"{bad}.csv"),
        (SEARCH + ["--plot", f"{bad}.png"], "--plot", f"{bad}.png"),
        (SEARCH + ["--html", f"{bad}.html"], "--html", f"{bad}.html"),
        (["simulate", "--requests", "5", "--plot", f"{bad}.png"], "--plot", f"{bad}.png"),
        (["compare", inputs["cmp"], "--csv", f"{bad}.csv"], "--csv", f"{bad}.csv"),
        (["compare", inputs["cmp"], "--plot", f"{bad}.png"], "--plot", f"{bad}.png"),
        (["validate", inputs["rows"], "--out", f"{bad}.csv"], "--out", f"{bad}.csv"),
        (["validate", inputs["rows"], "--plot", f"{bad}.png"], "--plot", f"{bad}.png"),
        (["calibrate", inputs["rows"], "--out", f"{bad}.yaml"], "--out", f"{bad}.yaml"),
        (["probe", "--out", bad], "--out", bad),
    ]


@needs_proc
@pytest.mark.parametrize("i", range(10))
def test_an_unwritable_path_is_refused_before_the_work(monkeypatch, inputs, i):
    if i == 9:
        pytest.importorskip("torch")  # probe needs PyTorch before it reads its arguments
    _no_work(monkeypatch)
    args, option, path = _commands("/proc/inferbound-x", inputs)[i]
    r = runner.invoke(app, args)
    assert_one_line_error(r, f"{option}={path!r}", "cannot be written")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write into a read-only folder")
@pytest.mark.parametrize("i", range(10))
def test_a_folder_without_write_permission_is_refused_before_the_work(monkeypatch, inputs, tmp_path, i):
    if i == 9:
        pytest.importorskip("torch")
    _no_work(monkeypatch)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        args, option, path = _commands(str(ro / "x"), inputs)[i]
        assert_one_line_error(runner.invoke(app, args), option, path)
    finally:
        ro.chmod(0o755)


@needs_proc
def test_check_file_creates_nothing_and_leaves_an_existing_file_as_it_is(tmp_path):
    new = tmp_path / "new.csv"
    assert check_file(new, "--csv", ".csv") == new and not new.exists()  # created and removed again
    old = tmp_path / "old.csv"
    old.write_text("kept\n")
    assert check_file(old, "--csv", ".csv") == old and old.read_text() == "kept\n"  # not truncated
    assert check_file(None, "--csv", ".csv") is None
    assert check_file(tmp_path / "c.YML", "--out", (".yaml", ".yml")) == tmp_path / "c.YML"
    with pytest.raises(ValueError, match=r"--out='c.txt' must end in .yaml or .yml"):
        check_file("c.txt", "--out", (".yaml", ".yml"))
    with pytest.raises(ValueError, match=r"is a folder"):
        check_file(tmp_path, "--csv")
    with pytest.raises(ValueError, match=r"--csv='/proc/x.csv' cannot be written: .*folder '/proc'"):
        check_file("/proc/x.csv", "--csv", ".csv")


def test_check_folder_creates_nothing(tmp_path):
    deep = tmp_path / "a" / "b"
    assert check_folder(deep, "--out") == deep
    assert not (tmp_path / "a").exists() and list(tmp_path.iterdir()) == []  # the scratch file is gone too
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match=r"--out='.*f' is a file"):
        check_folder(tmp_path / "f", "--out")
    with pytest.raises(ValueError, match=r"'.*f' is a file, not a folder"):
        check_folder(tmp_path / "f" / "sub", "--out")


def test_writes_keep_a_failure_for_after_the_result(tmp_path):
    files = Writes()

    def full(p):
        raise OSError(errno.ENOSPC, "No space left on device", str(p))
    assert files.write("--plot", tmp_path / "a.png", full) is None
    assert files.write("--csv", tmp_path / "b.csv", lambda p: p.write_text("x")) == tmp_path / "b.csv"
    assert files.write("--html", None, full) is None  # not asked for: not written, not failed
    assert files.written == [tmp_path / "b.csv"]
    assert files.failed == [f"--plot={str(tmp_path / 'a.png')!r}: No space left on device"]


# ---------- a write that fails after the work: the result, then one error line ----------

def _full_link(tmp_path: Path, name: str) -> Path:
    """A file path whose every write fails as on a full disk (a link to /dev/full)."""
    p = tmp_path / name
    p.symlink_to("/dev/full")
    return p


def _after(r, option: str, path: Path) -> list[str]:
    """Exit 2, the one error line last on stderr naming the option, the path and the disk-full reason; the
    other stderr lines (none expected)."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("error: could not write") and f"{option}={str(path)!r}" in line, line
    assert "No space left on device" in line and "the result above is complete" in line
    return lines


def _no_space(monkeypatch, module, name):
    def fail(res, path, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(module, name, fail)


@needs_dev_full
def test_search_prints_its_table_before_a_failed_write(tmp_path):
    bad, good = _full_link(tmp_path, "t.csv"), tmp_path / "f.html"
    r = runner.invoke(app, SEARCH + ["--csv", str(bad), "--html", str(good)])
    _after(r, "--csv", bad)
    assert "Why:" in r.stdout and "Pareto frontier" in r.stdout  # the whole result
    assert f"wrote {good}" in " ".join(r.stdout.split()) and good.stat().st_size > 0
    assert "wrote " + str(bad) not in r.stdout


@needs_dev_full
def test_search_json_is_printed_before_a_failed_write(tmp_path):
    bad = _full_link(tmp_path, "t.csv")
    r = runner.invoke(app, SEARCH + ["--json", "--csv", str(bad)])
    _after(r, "--csv", bad)
    out = json.loads(r.stdout)
    assert out["table"] and out["files"] == []


def test_search_plot_failing_after_the_sweep(monkeypatch, tmp_path):
    import inferbound.search.plot
    _no_space(monkeypatch, inferbound.search.plot, "plot_png")
    png = tmp_path / "f.png"
    r = runner.invoke(app, SEARCH + ["--plot", str(png)])
    _after(r, "--plot", png)
    assert "Why:" in r.stdout


def test_simulate_prints_its_figures_before_a_failed_plot(monkeypatch, tmp_path):
    import inferbound.sim.plot
    _no_space(monkeypatch, inferbound.sim.plot, "plot_run")
    png = tmp_path / "s.png"
    r = runner.invoke(app, ["simulate", "--requests", "5", "--plot", str(png)])
    _after(r, "--plot", png)
    assert "Simulated serving" in r.stdout and "plot written" not in r.stdout
    r = runner.invoke(app, ["simulate", "--requests", "5", "--plot", str(png), "--json"])
    _after(r, "--plot", png)
    assert json.loads(r.stdout)["completed"] == 5


@needs_dev_full
def test_compare_prints_its_rows_before_a_failed_write(monkeypatch, inputs, tmp_path):
    bad = _full_link(tmp_path, "c.csv")
    r = runner.invoke(app, ["compare", inputs["cmp"], "--csv", str(bad)])
    _after(r, "--csv", bad)
    assert "ratios: each figure / the first deployment's" in r.stdout and "l40s" in r.stdout
    import inferbound.faces.compare
    _no_space(monkeypatch, inferbound.faces.compare, "plot")
    png, csv = tmp_path / "c.png", tmp_path / "ok.csv"
    r = runner.invoke(app, ["compare", inputs["cmp"], "--plot", str(png), "--csv", str(csv), "--json"])
    _after(r, "--plot", png)
    assert len(json.loads(r.stdout)["rows"]) == 2 and json.loads(r.stdout)["files"] == [str(csv)]
    assert csv.read_text().count("\n") == 3  # header + 2 rows: the other file is written


@needs_dev_full
def test_validate_prints_its_summary_before_a_failed_write(inputs, tmp_path):
    bad = _full_link(tmp_path, "v.csv")
    r = runner.invoke(app, ["validate", inputs["rows"], "--out", str(bad)])
    _after(r, "--out", bad)
    assert "Error per source, scenario and metric" in r.stdout


@needs_dev_full
def test_calibrate_prints_its_fit_before_a_failed_write(inputs, tmp_path):
    bad = _full_link(tmp_path, "cal.yaml")
    r = runner.invoke(app, ["calibrate", inputs["rows"], "--out", str(bad), "--max-evals", "1", "--cv", "none"])
    _after(r, "--out", bad)
    assert "Fitted factors (not written)" in " ".join(r.stdout.split())


def test_probe_write_failing_after_the_measurements_is_one_line(monkeypatch, tmp_path):
    """The probe scores its predictions from the files it wrote: nothing to print, one line naming --out."""
    pytest.importorskip("torch")
    import inferbound.probe
    out = tmp_path / "p"

    def full(**kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(Path(kw["out_dir"]) / "local_gpu.yaml"))
    monkeypatch.setattr(inferbound.probe, "probe", full)
    assert_one_line_error(runner.invoke(app, ["probe", "--out", str(out)]), f"--out={str(out)!r}", "local_gpu.yaml",
                          "No space left on device")
