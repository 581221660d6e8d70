"""One memory view and one step bound for a steady state on every face (issue 18, item 3).

The memory per GPU and time split of a max-throughput or serving point come from one module
(workloads/scenario_view.py): the CLI's ``--json`` carries the same ``view`` as the JSON API, and the
view's ``bound`` is the bound of the decode-side step that the result's own ``bound`` (and its error
bands, keyed by the decode phase's bound) reads. Long prompts make the blended split (prefill chunks
included) compute-heavy while the decode step alone stays HBM-bound: the case where two answers
could differ, so it is tested here.
"""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import inferbound as ib
from inferbound.cli import app
from inferbound.step.explain import bound_of
from inferbound.web import create_app
from inferbound.workloads.max_throughput import max_throughput
from inferbound.workloads.scenario_view import max_throughput_view, serving_view
from inferbound.workloads.serving import serving
from inferbound.workloads.steady_state import as_mix

LONG_PROMPTS = (2048, 128)


@pytest.fixture(scope="module")
def dep():
    return ib.make_deployment("llama-3.1-8b", "h100_sxm")


@pytest.mark.parametrize("lengths", [LONG_PROMPTS, (128, 2048)])
def test_view_bound_is_the_results_bound(dep, lengths):
    i, o = lengths
    r = max_throughput(dep, input_len=i, output_len=o)
    v = max_throughput_view(dep, r, as_mix(i, o))["step"]
    assert v["bound"] == r.bound
    assert v["largest_share"] == bound_of(v["split_s"])  # the blend's largest share is named apart
    s = serving(dep, rate=2.0, input_len=i, output_len=o)
    assert serving_view(dep, s, as_mix(i, o))["step"]["bound"] == s.bound


def test_long_prompts_blend_differs_from_the_decode_step_and_both_are_said(dep):
    i, o = LONG_PROMPTS
    r = max_throughput(dep, input_len=i, output_len=o)
    v = max_throughput_view(dep, r, as_mix(i, o))["step"]
    # at 2,048-token prompts and 128 outputs a step carries 16x more prompt tokens than decodes: the
    # blended split's largest part is compute, while the decode step alone reads weights and KV
    assert v["largest_share"] == "compute" and v["bound"] == "memory"
    assert "compute-bound" in v["explanation"] and "the decode step alone: HBM-bound" in v["explanation"]


@pytest.mark.parametrize("scenario,extra", [("max-throughput", []), ("serving", ["--concurrency", "16"])])
def test_cli_json_view_equals_the_api_view(scenario, extra):
    i, o = LONG_PROMPTS
    res = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100_sxm", "--scenario", scenario,
                                   "--input", str(i), "--output", str(o), "--json", *extra])
    assert res.exit_code == 0, res.output
    cli_view = json.loads(res.stdout)["view"]
    body = {"model": "llama-3.1-8b", "gpu": "h100_sxm", "scenario": scenario, "input_len": i, "output_len": o}
    if extra:
        body["concurrency"] = 16
    api = TestClient(create_app()).post("/api/estimate", json=body)
    assert api.status_code == 200, api.text
    assert cli_view["memory"] == pytest.approx(api.json()["view"]["memory"])
    assert cli_view["step"]["bound"] == api.json()["view"]["step"]["bound"] == api.json()["bound"]
    assert cli_view["step"]["time_s"] == pytest.approx(api.json()["view"]["step"]["time_s"])


def test_cli_table_prints_the_view():
    i, o = LONG_PROMPTS
    res = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--scenario", "max-throughput", "--input", str(i),
                                   "--output", str(o)])
    assert res.exit_code == 0, res.output
    assert "memory per GPU at this point:" in res.stdout and "max-throughput point" in res.stdout
    assert "the decode step alone: HBM-bound" in res.stdout
