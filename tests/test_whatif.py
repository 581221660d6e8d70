"""What-if hardware (hardware/whatif.py, ``--gpu-scale``): scaled figures, the derived GPU's name and note,
the effect through the step contract, search beside catalog GPUs, and bad scales refused by name."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferbound import estimate
from inferbound import make_deployment
from inferbound.cli import app
from inferbound.hardware import get_gpu
from inferbound.hardware.whatif import parse_scales, scale_gpu

M70 = "llama-3.1-70b"


def test_scaled_figures_by_hand():
    base = get_gpu("h100_sxm")
    g = scale_gpu(base, parse_scales("hbm_bw=2,flops=1.5,hbm_gb=2,link_bw=2"))
    assert g.hbm_bw == 2 * base.hbm_bw and g.hbm_bytes == 2 * base.hbm_bytes
    assert g.peak_flops["bf16"] == 1.5 * base.peak_flops["bf16"] and g.peak_flops["fp8"] == 1.5 * base.peak_flops["fp8"]
    assert (g.scaleup_bw, g.scaleout_bw, g.pcie_bw) == (2 * base.scaleup_bw, 2 * base.scaleout_bw, 2 * base.pcie_bw)
    assert g.efficiency == base.efficiency and g.power == base.power  # the base's fractions and power model
    assert g.id == "h100_sxm+hbm_bw*2+flops*1.5+hbm_gb*2+link_bw*2" and g.derived_from == "h100_sxm"
    assert "what-if" in g.name


def test_scaling_twice_multiplies_and_keeps_the_base():
    g = scale_gpu(scale_gpu(get_gpu("h100_sxm"), {"hbm_bw": 2.0}), {"hbm_bw": 1.5})
    assert g.scales == {"hbm_bw": 3.0} and g.derived_from == "h100_sxm" and g.id == "h100_sxm+hbm_bw*3"


def test_twice_the_bandwidth_halves_the_weight_read_of_a_decode_step():
    """Batch-1 decode of Llama-3.1-70B TP4 is HBM-bound. Under the scalar roofline (kernel curves off) the
    time spent reading weights is bytes/(bw·e), so doubling bw halves it exactly. Under the measured GEMM
    curves (kernels/gemm.py) each GEMM's memory side is L + bytes/(bw·e_m): the fixed latency L of its
    ~320 GEMMs (about 1.5 µs each on H100) does not scale, so the weight read falls to just over half.
    The step as a whole gets faster by less (overheads, collectives)."""
    off = {"efficiency.kernel_curves": False}
    for overrides in (off, None):
        a = estimate(make_deployment(model=M70, gpu="h100_sxm", tp=4, gpu_overrides=overrides), batch=1,
                     input_len=1024, output_len=256)
        b = estimate(make_deployment(model=M70, gpu="h100_sxm", tp=4, gpu_scale={"hbm_bw": 2},
                                     gpu_overrides=overrides), batch=1, input_len=1024, output_len=256)
        wa, wb = a.decode.split["weights"], b.decode.split["weights"]
        if overrides is off:
            assert wb == pytest.approx(wa / 2, rel=1e-9)
        else:
            assert wa / 2 < wb < 0.55 * wa
        assert a.tpot_s / 2 < b.tpot_s < a.tpot_s
        assert b.gpu == "h100_sxm+hbm_bw*2"
    assert any("what-if GPU h100_sxm+hbm_bw*2" in w and "extrapolated" in w for w in b.warnings)


def test_more_hbm_fits_what_did_not():
    kw = dict(model="llama-3.1-405b", gpu="h100_sxm", tp=8, weight_dtype="bf16", act_dtype="bf16")
    assert not estimate(make_deployment(**kw), batch=1).fits              # 810 GB of weights on 640 GB
    assert estimate(make_deployment(**kw, gpu_scale="hbm_gb=2"), batch=1).fits


def test_search_ranks_what_if_copies_beside_catalog_gpus():
    from inferbound.search import search
    res = search("llama-3.1-8b", gpus=["l40s"], max_gpus=1, dtypes=["fp8"], gpu_scale="hbm_bw=2")
    gpus = {r.gpu for r in res.table}
    assert gpus == {"l40s", "l40s+hbm_bw*2"}
    by = {r.gpu: r.metrics["tok_s_per_gpu"] for r in res.table}
    assert by["l40s+hbm_bw*2"] > by["l40s"]


@pytest.mark.parametrize("spec, text", [("hbm=2", "gpu_scale 'hbm' unknown; allowed: hbm_bw"),
                                        ("hbm_bw=0", "must be a finite factor > 0"),
                                        ("hbm_bw=-1", "must be a finite factor > 0"),
                                        ("hbm_bw=fast", "must be a factor > 0"),
                                        ("hbm_bw", "must look like NAME=FACTOR")])
def test_bad_scales_are_refused_by_name(spec, text):
    with pytest.raises(ValueError, match=text):
        parse_scales(spec)


def test_cli_names_the_derived_gpu():
    r = CliRunner().invoke(app, ["estimate", M70, "--tp", "4", "--gpu-scale", "hbm_bw=2,flops=1.5", "--json"])
    assert r.exit_code == 0, r.output
    assert '"gpu": "h100_sxm+hbm_bw*2+flops*1.5"' in r.output
    bad = CliRunner().invoke(app, ["estimate", M70, "--gpu-scale", "hbm_bw=-2"])
    assert bad.exit_code == 2 and "hbm_bw=" in bad.output and len(bad.output.strip().splitlines()) == 1
