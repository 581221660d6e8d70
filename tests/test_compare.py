"""``inferbound compare`` (compare.py): one row per deployment, figures equal to the scenario's own
function, ratios to the first, keys checked against the declared options, CSV/PNG/JSON outputs."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferbound.faces import compare as cmp
from inferbound import make_deployment
from inferbound.cli import app
from inferbound.workloads.static import estimate
from inferbound.workloads.serving import serving

DOC = """
workload: {scenario: serving, concurrency: 8, input: 1024, output: 256}
deployments:
  - {model: llama-3.1-8b, gpu: h100_sxm}
  - {model: llama-3.1-8b, gpu: l40s, weight-dtype: fp8, act_dtype: fp8, label: "L40S fp8"}
"""


def test_rows_equal_the_scenario_functions_and_ratios_divide(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(DOC)
    workload, deps = cmp.load(f)
    assert workload == {"scenario": "serving", "concurrency": 8, "input_len": 1024, "output_len": 256}
    rows = cmp.compare(workload, deps)
    # unlabelled rows name what differs: the formats (llama-3.1-8b ships bf16; the L40S row is fp8)
    assert [r.label for r in rows] == ["1x h100_sxm TP1, bf16", "L40S fp8"]
    s = serving(make_deployment(model="llama-3.1-8b", gpu="l40s", weight_dtype="fp8", act_dtype="fp8"),
                concurrency=8, input_len=1024, output_len=256)
    assert rows[1].metrics["tpot_ms"] == pytest.approx(s.tpot_s * 1e3, rel=1e-12)
    assert rows[1].metrics["tok_s_per_gpu"] == pytest.approx(s.output_tok_s_per_gpu, rel=1e-12)
    for m in cmp.METRICS:
        a, b = rows[0].metrics[m], rows[1].metrics[m]
        if a is not None and b is not None:
            assert rows[1].ratio[m] == pytest.approx(b / a, rel=1e-12)
            assert rows[0].ratio[m] == 1.0
        else:  # a figure one side lacks (no price) has no ratio
            assert rows[1].ratio[m] is None


def test_static_workload_and_fit():
    w, deps = cmp.parse({"workload": {"batch": 4}, "deployments": [
        {"model": "llama-3.1-8b"}, {"model": "llama-3.1-405b", "gpu": "h100_sxm", "tp": 8, "weight_dtype": "bf16",
                                   "act_dtype": "bf16"}]})
    rows = cmp.compare(w, deps)
    e = estimate(make_deployment(model="llama-3.1-8b"), batch=4, input_len=1024, output_len=256)
    assert rows[0].metrics["ttft_ms"] == pytest.approx(e.ttft_s * 1e3, rel=1e-12)
    assert rows[0].fits and not rows[1].fits


@pytest.mark.parametrize("doc, text", [
    ({"deployments": [{"model": "llama-3.1-8b", "gpuu": "h100_sxm"}]}, "deployments[0] key 'gpuu' unknown; allowed:"),
    ({"workload": {"inputlen": 5}, "deployments": [{"model": "llama-3.1-8b"}]}, "workload key 'inputlen' unknown"),
    ({"deployments": []}, "deployments must be a non-empty list"),
    ({"deployments": [{"model": "llama-3.1-8b"}], "extra": 1}, "key 'extra' unknown; allowed: workload, deployments"),
    ({"workload": {"batch": 0}, "deployments": [{"model": "llama-3.1-8b"}]}, "batch=0 must be an integer >= 1"),
])
def test_bad_files_are_refused_by_name(doc, text):
    with pytest.raises(ValueError) as e:
        cmp.parse(doc)
    assert text in str(e.value)


def test_cli_prints_one_row_per_deployment_and_writes_files(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(DOC)
    csv_path, png = tmp_path / "c.csv", tmp_path / "c.png"
    r = CliRunner().invoke(app, ["compare", str(f), "--csv", str(csv_path), "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert "1x h100_sxm TP1" in r.output and "L40S fp8" in r.output
    assert len(csv_path.read_text().strip().splitlines()) == 3 and png.stat().st_size > 5000
    j = CliRunner().invoke(app, ["compare", str(f), "--json"])
    assert len(json.loads(j.output)["rows"]) == 2


def test_cli_bad_file_is_one_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("deployments: [{model: llama-3.1-8b, tpp: 2}]")
    r = CliRunner().invoke(app, ["compare", str(f)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "'tpp' unknown" in r.output
    missing = CliRunner().invoke(app, ["compare", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
