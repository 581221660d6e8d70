"""Family host fits by engine name or by one profile key (calibration/fit.py ``in_family``,
``family_host_parameters``) and benchmarks/fit_family_host.py's refusal to cross-validate by source a family
whose rows come from one source (it says so and fits nothing)."""
from __future__ import annotations

import csv
import dataclasses
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from inferbound.calibration import Calibration
from inferbound.calibration import fit as F
from inferbound.pricing.kernel_pricing import host_cost
from inferbound.validation import predict_rows, read_csv

ROOT = Path(__file__).resolve().parents[1]
SETUPS = [(1, 128, 128), (1, 2048, 64), (4, 1024, 128), (8, 128, 512), (32, 256, 256), (64, 512, 64),
          (128, 128, 128), (256, 128, 32)]


def _csv(path: Path, source: str = "synthetic") -> Path:
    """Eight static-batch Llama-3.1-8B setups (two metrics each) on h100_sxm, all from one ``source``; framework
    "test" names no profile, so the rows run the default engine (vllm@0.33.0, engines.yaml default)."""
    base = dict(source=source, model="meta-llama/Llama-3.1-8B", gpu="h100_sxm", num_gpus="1", tp="1", pp="1",
                weight_dtype="bf16", framework="test", scenario="static_batch", value="100")
    raw = [dict(base, case=f"c{b}_{s}_{n}_{m}", batch_size=str(b), input_len=str(s), output_len=str(n), metric=m)
           for b, s, n in SETUPS for m in ("ttft_ms", "output_tok_s_per_gpu")]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(raw[0]))
        w.writeheader()
        w.writerows(raw)
    return path


def test_in_family_matches_a_name_or_exactly_one_profile_key():
    assert F.in_family("sglang@0.4.3", "sglang") and F.in_family("sglang@0.5.9", "sglang")
    assert F.in_family("sglang@0.4.3", "sglang@0.4.3")
    assert not F.in_family("sglang@0.5.9", "sglang@0.4.3")
    assert not F.in_family("vllm@0.6.3", "sglang")
    assert not F.in_family("trtllm@0.17", "trtllm@0.1")  # a key, not a prefix


def test_a_profile_key_fits_that_version_only(tmp_path):
    rows, bad = read_csv(_csv(tmp_path / "rows.csv"))
    assert not bad and len(rows) == 16
    params = F.family_host_parameters(rows, "vllm@0.33.0")
    assert [p.name for p in params] == ["engines.vllm@0.33.0.step_s", "engines.vllm@0.33.0.seq_s"]
    assert params[0].prior == host_cost("vllm@0.33.0")[0]
    assert F.family_host_parameters(rows, "vllm@0.6.3") == []  # no row runs that version


def test_one_source_family_is_not_cross_validated_by_source(tmp_path):
    path = _csv(tmp_path / "rows.csv", source="only_one")
    script = [sys.executable, str(ROOT / "benchmarks" / "fit_family_host.py"), "vllm", "--csv", str(path),
              "--scenarios", "static_batch"]
    res = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1
    assert "all 16 rows come from one source (only_one)" in res.stderr
    assert "leave-one-source-out is impossible; nothing fitted" in res.stderr
    assert res.stdout == ""  # no fit printed


def test_grid_prices_each_step_value_and_recovers_the_true_one(tmp_path):
    """TTFT rows whose measured values are the predictions with the vLLM family at step_s = 2 ms (seq_s at
    its engines.yaml prior): the grid's 2 ms column has zero error in every group, the 1 ms column does not
    (the prefill step, 1 ms cheaper, gives a shorter TTFT: signed median below 0)."""
    spec = importlib.util.spec_from_file_location("ffh", ROOT / "benchmarks" / "fit_family_host.py")
    ffh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ffh)
    rows, _ = read_csv(_csv(tmp_path / "rows.csv"))
    prior_seq = host_cost("vllm")[1]
    true = Calibration(engines={"vllm": {"step_s": 0.002, "seq_s": prior_seq}})
    rows = [dataclasses.replace(p.row, value=p.predicted) for p in predict_rows(rows, calibration=true)
            if p.row.metric == "ttft_ms"]
    params = F.family_host_parameters(rows, "vllm")
    out = ffh.grid(rows, params, [0.001, 0.002], Calibration())
    assert set(out) == {"0.001", "0.002"} and list(out["0.002"]) == ["synthetic"]
    assert out["0.002"]["synthetic"]["n"] == 8
    assert out["0.002"]["synthetic"]["mape"] == pytest.approx(0.0, abs=1e-9)
    assert out["0.001"]["synthetic"]["bias"] < 0 < out["0.001"]["synthetic"]["mape"]
