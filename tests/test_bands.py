"""One error band per question on every face (deploy/bands.py).

The CLI (``estimate --json``), the JSON API (the body the page renders its ``±`` from: app.js reads
``error_bands``) and the Python API give the same band for the same question; ``error_band`` is the
``throughput`` entry of ``error_bands``; serving outputs (analytic and simulated) carry bands.

Expected values are worked out by hand from the packaged calibration file's numbers (base band of the
scenario and metric kind, times the factors of the ways the deployment leaves the fit), read here with
PyYAML, not through the package's lookup.
"""
from __future__ import annotations

import ast
import json
import re
import warnings
from importlib import resources
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

with warnings.catch_warnings():  # starlette's TestClient warns about httpx; not ours to fix
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

import inferbound as ib
from inferbound.cli import app
from inferbound.deploy import bands as run_bands
from inferbound.hardware import load_catalog
from inferbound.pricing.kernels import curves_for
from inferbound.sim import simulate
from inferbound.web import create_app
from inferbound.workloads.serving import serving

PKG = Path(ib.__file__).resolve().parent
MODEL = "llama-3.1-8b"
SHORT = ["--input", "512", "--output", "64"]  # a small max-throughput sweep (CLI flags)
SHORT_BODY = {"input_len": 512, "output_len": 64}
CAL = "default"  # the packaged calibration, named on every face (the tests' environment says none)


def dep(gpu: str, calibration: str = CAL):
    return ib.make_deployment(model=MODEL, gpu=gpu, calibration=calibration)


@pytest.fixture(autouse=True)
def _server_calibration(_isolated_env, monkeypatch):
    """The API's 'default' is the server's calibration ($INFERBOUND_CALIBRATION, which conftest sets to
    none): the packaged one here, as a server run without the variable has it."""
    monkeypatch.setenv("INFERBOUND_CALIBRATION", "default")


@pytest.fixture(scope="module")
def cal_doc() -> dict:
    """data/calibration.yaml's bands, read as plain YAML."""
    return yaml.safe_load((resources.files("inferbound") / "data" / "calibration.yaml").read_text())["bands"]


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def post(client, path, body):
    r = client.post(path, json={"model": MODEL, "calibration": CAL, **body})
    assert r.status_code == 200, r.text
    return r.json()


def cli_json(*args) -> dict:
    res = CliRunner().invoke(app, ["estimate", MODEL, "--calibration", CAL, *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def factor(cal_doc, gpu: str) -> float:
    """The widening of llama-3.1-8b (bf16) under the default engine (vLLM) on ``gpu``, by hand: the fit's
    coverage has the llama family and bf16 but no vLLM source (engine factor); h100_sxm is in the fit with
    measured kernels; mi300x is absent from the fit (gpu factor) and its kernel curves are a prior derived
    from NVIDIA's h100_sxm (another vendor: cross_vendor factor)."""
    cov, ext = cal_doc["coverage"], cal_doc["extrapolation"]
    assert "llama" in cov["families"] and "bf16" in cov["dtypes"]
    assert not any(e.startswith("vllm") for e in cov["engines"])
    if gpu == "h100_sxm":
        assert gpu in cov["gpus"]
        return ext["engine"]
    assert gpu == "mi300x" and gpu not in cov["gpus"]
    return ext["gpu"] * ext["cross_vendor"] * ext["engine"]


def by_hand(cal_doc, key: str, gpu: str) -> float:
    return round(cal_doc[key] * factor(cal_doc, gpu), 4)


def test_the_facts_the_hand_figures_rest_on():
    """kernels.yaml: h100_sxm has measured curves, mi300x a prior from h100_sxm; the vendors differ."""
    text = (resources.files("inferbound") / "data" / "kernels.yaml").read_text()
    gpus_part = text.split("\ngpus:\n", 1)[1].split("\npriors:\n", 1)[0]
    assert re.search(r"^  h100_sxm:$", gpus_part, re.M) and not re.search(r"^  mi300x:$", gpus_part, re.M)
    priors = yaml.safe_load("priors:\n" + text.split("\npriors:\n", 1)[1])["priors"]
    assert priors["mi300x"]["derived_from"] == "h100_sxm"
    cat = load_catalog()
    assert cat["h100_sxm"].vendor.split()[0].lower() != cat["mi300x"].vendor.split()[0].lower()


# --- max throughput: CLI, API and page agree (the page's ± comes from the body's error_bands) ----------

@pytest.mark.parametrize("gpu", ["h100_sxm", "mi300x"])
def test_max_throughput_band_is_one_figure_on_every_face(client, cal_doc, gpu):
    want = by_hand(cal_doc, "max_throughput/throughput", gpu)
    cli = cli_json("--gpu", gpu, "--scenario", "max-throughput", *SHORT)
    api = post(client, "/api/estimate", {"gpu": gpu, "scenario": "max-throughput", **SHORT_BODY})
    for body in (cli, api):
        assert body["error_band"] == pytest.approx(want, abs=1e-12)
        assert body["error_bands"] == {"throughput": body["error_band"], "tpot": body["error_band"]}
    assert api["error_bands"] == cli["error_bands"] and api["error_band"] == cli["error_band"]


def test_the_reported_regression_is_gone(client):
    """Before: one body said error_band 0.2418 and error_bands.throughput 0.174 (the unwidened base)."""
    api = post(client, "/api/estimate", {"scenario": "max-throughput", **SHORT_BODY})
    assert api["error_band"] == api["error_bands"]["throughput"] == api["error_bands"]["tpot"]


# --- static batch ------------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu", ["h100_sxm", "mi300x"])
def test_static_bands_agree_with_the_hand_figures_on_every_face(client, cal_doc, gpu):
    want = {"throughput": by_hand(cal_doc, "static_batch/throughput", gpu),
            "tpot": by_hand(cal_doc, "static_batch/throughput", gpu),
            "ttft": by_hand(cal_doc, "static_batch/latency", gpu)}
    cli = cli_json("--gpu", gpu)
    api = post(client, "/api/estimate", {"gpu": gpu})
    lib = ib.estimate(dep(gpu)).bands
    for got in (cli["error_bands"], api["error_bands"], lib):
        assert got == pytest.approx(want, abs=1e-12)
    assert cli["error_bands"] == api["error_bands"] == lib


# --- serving: the analytic steady state and the simulator carry bands, the same ones ------------------

@pytest.mark.parametrize("gpu", ["h100_sxm", "mi300x"])
def test_serving_outputs_carry_bands(client, cal_doc, gpu):
    thr, lat = by_hand(cal_doc, "serving/throughput", gpu), by_hand(cal_doc, "serving/latency", gpu)
    want = {"throughput": thr, "ttft": lat, "tpot": lat, "itl": lat, "e2e": lat}
    cli = cli_json("--gpu", gpu, "--scenario", "serving", "--rate", "2", *SHORT)
    api = post(client, "/api/estimate", {"gpu": gpu, "scenario": "serving", "rate": 2, **SHORT_BODY})
    lib = serving(dep(gpu), rate=2, input_len=512, output_len=64).error_bands
    for got in (cli["error_bands"], api["error_bands"], lib):
        assert got == pytest.approx(want, abs=1e-12)
    assert cli["error_bands"] == api["error_bands"] == lib


def test_simulate_results_carry_the_serving_bands(client, cal_doc):
    lat, thr = by_hand(cal_doc, "serving/latency", "h100_sxm"), by_hand(cal_doc, "serving/throughput", "h100_sxm")
    body = {"gpu": "h100_sxm", "rate": 2, "requests": 12, "input_len": 128, "output_len": 16}
    api = post(client, "/api/simulate", body)["error_bands"]
    lib = simulate(dep("h100_sxm"), rate=2, requests=12, input_len=128, output_len=16).to_dict()["error_bands"]
    assert api == lib
    assert api == pytest.approx({"throughput": thr, "ttft": lat, "tpot": lat, "itl": lat, "e2e": lat,
                                 "latency": lat}, abs=1e-12)
    analytic = serving(dep("h100_sxm"), rate=2, input_len=512, output_len=64)
    assert {k: api[k] for k in analytic.error_bands} == analytic.error_bands  # one band per figure


def test_without_a_calibration_no_face_shows_a_band(client):
    api = post(client, "/api/estimate", {"scenario": "max-throughput", "calibration": "none",
                                         **SHORT_BODY})
    assert api["error_band"] is None and api["error_bands"] == {}
    res = CliRunner().invoke(app, ["estimate", MODEL, "--scenario", "max-throughput", "--calibration", "none",
                                   *SHORT, "--json"])
    cli = json.loads(res.stdout)
    assert cli["error_band"] is None and cli["error_bands"] == {}


# --- the lookup is one function, in the deploy layer --------------------------------------------------

def test_curve_source_matches_the_kernel_curves_for_every_catalog_gpu():
    ids = list(load_catalog())
    assert len(ids) > 10
    for g in ids:
        c = curves_for(g)
        want = None if c is None else ("prior", c.derived_from) if c.extrapolated else ("measured", None)
        assert run_bands.curve_source(g) == want, g


def test_the_band_lookup_imports_only_lower_layers():
    tree = ast.parse((PKG / "deploy" / "bands.py").read_text())
    mods = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert mods and all(m.split(".")[0] in ("base", "model", "hardware", "deploy") for m in mods), mods
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,)) and
                any(isinstance(x, (ast.Import, ast.ImportFrom)) for x in ast.walk(n))]


def test_no_other_module_reads_a_base_band():
    """Calibration.band (the unwidened base band) is read by deploy/bands.py alone; the faces go through it."""
    hits = [str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if re.search(r"\.band\(", p.read_text())
            and p.relative_to(PKG).as_posix() not in ("deploy/bands.py", "deploy/calibration.py")]
    assert hits == []


def test_the_page_renders_the_bodys_bands():
    """The page computes no band: every ± on it is an entry of the body's error_bands (the cards' ``b``)."""
    js = "\n".join(p.read_text() for p in (PKG / "web" / "static").glob("*.js"))
    assert re.findall(r"const b = (\w+)\.error_bands", js) == ["est", "s"]
    assert set(re.findall(r"band\((\w+)[.)]", js)) == {"b"}  # band(b.ttft), band(b.throughput), ...
    assert not re.search(r"extrapolation|coverage|calibration", js, re.I)
