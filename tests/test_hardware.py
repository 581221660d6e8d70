"""Hardware catalog: unit conversion, link flags, dtype resolution, user files, overrides, data hygiene.

Expected values are datasheet figures from data/hardware.yaml converted by hand in the test.
"""
from __future__ import annotations

import csv
import re
from importlib import resources
from pathlib import Path

import pytest
import yaml

from inferbound.hardware import get_gpu, gpu_table, load_catalog, peak_flops, resolve_compute_dtype, skipped_gpus

SHARED = Path("/work/shared")
DATA = resources.files("inferbound").joinpath("data")


def _eff_yaml() -> dict:
    return yaml.safe_load(DATA.joinpath("efficiency.yaml").read_text("utf-8"))


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("INFERBOUND_HARDWARE_PATH", raising=False)


# ------------------------------------------------------------------ unit conversion
def test_h100_sxm_units_by_hand():
    g = get_gpu("h100_sxm")
    # datasheet: 989 TFLOP/s bf16 dense, 1979 fp8, 67 fp32; 80 GB; 3.35 TB/s; NVLink 450 GB/s/dir x 8;
    # 400 Gb/s NIC per GPU; PCIe gen5 x16 ~ 64 GB/s per direction; 700 W
    assert g.peak_flops["bf16"] == pytest.approx(989 * 10**12)
    assert g.peak_flops["fp8"] == pytest.approx(1979 * 10**12)
    assert g.peak_flops["fp32"] == pytest.approx(67 * 10**12)
    assert "fp4" not in g.peak_flops
    assert g.hbm_bw == pytest.approx(3.35 * 10**12)
    # memory: the datasheet's 80 GB, and the device total CUDA reports, which engines size by
    # (deviceQuery "81106 MBytes (85045477376 bytes)", thamada/nvidia-smi gls/H100SXMx8_deviceQuery.py)
    assert g.hbm_datasheet_bytes == pytest.approx(80 * 10**9)
    assert g.hbm_bytes == 85045477376
    assert g.scaleup_bw == pytest.approx(450 * 10**9)
    assert g.scaleup_domain == 8
    assert g.scaleout_bw == pytest.approx(400 * 10**9 / 8)   # 50 GB/s
    assert g.pcie_bw == pytest.approx(64 * 10**9)
    assert g.power.tdp_w == 700
    assert g.price_per_hour == pytest.approx(3.90)   # hardware.yaml h100_sxm price: Crusoe on-demand, 2026-09-20
    assert g.nvlink and g.nvls


def test_power_is_fractions_of_tdp():
    p = _eff_yaml()["defaults"]["power"]
    g = get_gpu("a100_80gb_sxm")          # 400 W, no per-GPU power override
    assert g.power.idle_w == pytest.approx(p["idle_fraction_of_tdp"] * 400)
    assert g.power.compute_w == pytest.approx(p["compute_fraction"] * 400)
    assert g.power.memory_w == pytest.approx(p["memory_fraction"] * 400)


def test_gib_entries_and_pcie_generations():
    assert get_gpu("tpu_v4").hbm_bytes == pytest.approx(32 * 2**30)     # Google lists 32 GiB
    assert get_gpu("a100_80gb_sxm").pcie_bw == pytest.approx(32 * 10**9)  # gen4 x16
    assert get_gpu("b300_hgx").pcie_bw == pytest.approx(128 * 10**9)      # gen6 x16
    assert get_gpu("b200_hgx").peak_flops["fp4"] == pytest.approx(9000 * 10**12)


def test_link_flags():
    l40s = get_gpu("l40s")
    assert l40s.nvlink is False and l40s.nvls is False
    for pcie_only in ("l4", "rtx_4090", "gh200"):
        assert get_gpu(pcie_only).nvlink is False
    assert get_gpu("a100_80gb_sxm").nvlink and not get_gpu("a100_80gb_sxm").nvls   # NVSwitch gen2
    assert get_gpu("a100_40gb_pcie").nvlink        # NVLink bridge pair, domain 2
    for nvls in ("h200_sxm", "b200_hgx", "gb200_nvl72", "gb300_nvl72"):
        assert get_gpu(nvls).nvls
    assert not get_gpu("mi300x").nvls


def test_per_gpu_efficiency_from_mamf():
    h100 = get_gpu("h100_sxm")
    assert h100.efficiency.compute == pytest.approx(0.803)       # 794.5 / 989 (ml-engineering MAMF)
    assert h100.efficiency.compute_for("fp8") == pytest.approx(0.709)
    assert h100.efficiency.compute_for("bf16") == pytest.approx(0.803)
    defaults = _eff_yaml()["defaults"]
    l40s = get_gpu("l40s")                                        # no MAMF figure -> defaults
    assert l40s.efficiency.compute == defaults["compute"]
    assert l40s.efficiency.memory == defaults["memory"]


# ------------------------------------------------------------------ skipped entries, unknown ids
def test_skipped_entries_have_reasons():
    skipped = skipped_gpus()
    assert "a10g" in skipped and "bf16" in skipped["a10g"]
    assert "tpu_v5e" in skipped and "tdp" in skipped["tpu_v5e"]
    assert not set(skipped) & set(load_catalog())
    with pytest.raises(ValueError, match="a10g.*skipped"):
        get_gpu("a10g")


def test_unknown_gpu_lists_known_ids():
    with pytest.raises(ValueError) as err:
        get_gpu("xyz")
    msg = str(err.value)
    assert msg.startswith("gpu='xyz' is not in the catalog; known: a100_40gb_pcie, a100_40gb_sxm, ")
    assert "h100_sxm" in msg and "l40s" in msg and "\n" not in msg


def test_measured_csv_gpus_load():
    path = SHARED / "validation" / "measured.csv"
    if not path.exists():
        pytest.skip("shared validation data not present")
    with path.open() as f:
        ids = {row["gpu"] for row in csv.DictReader(f)}
    assert {"h100_sxm", "h200_sxm", "a100_80gb_sxm", "l40s", "gh200", "rtx_4090"} <= ids
    catalog = load_catalog()
    assert ids <= set(catalog), ids - set(catalog)


# ------------------------------------------------------------------ dtype resolution
def test_fp8_activations_on_a100_need_emulate_but_weight_only_fp8_runs():
    a100 = get_gpu("a100_80gb_sxm")
    with pytest.raises(ValueError, match=r"weight_dtype='fp8' with act_dtype='fp8' needs fp8 tensor cores, which "
                                         r"a100_80gb_sxm lacks"):
        resolve_compute_dtype(a100, "fp8", "fp8")
    assert resolve_compute_dtype(a100, "fp8", "fp8", emulate=True) == "bf16"
    assert resolve_compute_dtype(a100, "fp8", "bf16") == "bf16"      # FP8 Marlin: W8A16 on Ampere
    assert resolve_compute_dtype(get_gpu("h100_sxm"), "fp4", "bf16") == "bf16"   # MXFP4 weight-only on Hopper


def test_weight_only_and_native_paths():
    a100, h100, b200 = get_gpu("a100_80gb_sxm"), get_gpu("h100_sxm"), get_gpu("b200_hgx")
    assert resolve_compute_dtype(a100, "int4", "bf16") == "bf16"     # GPTQ/AWQ weight-only
    assert resolve_compute_dtype(a100, "int8", "fp16") == "fp16"     # W8A16
    assert resolve_compute_dtype(a100, "int8", "int8") == "int8"     # W8A8, A100 has int8 peak
    assert resolve_compute_dtype(h100, "fp8", "fp8") == "fp8"
    assert resolve_compute_dtype(h100, "fp8", "bf16") == "bf16"      # fp8 weight-only
    assert resolve_compute_dtype(b200, "fp4", "fp4") == "fp4"
    with pytest.raises(ValueError, match="weight_dtype='fp4'.*h100_sxm"):
        resolve_compute_dtype(h100, "fp4", "fp4")
    with pytest.raises(ValueError, match="act_dtype='fp4'.*h100_sxm"):
        resolve_compute_dtype(h100, "int4", "fp4")
    with pytest.raises(ValueError, match="act_dtype='int4'"):
        resolve_compute_dtype(h100, "int4", "int4")
    with pytest.raises(ValueError, match="weight_dtype='fp6'"):
        resolve_compute_dtype(h100, "fp6", "bf16")


def test_peak_flops():
    assert peak_flops(get_gpu("h100_sxm"), "fp8") == pytest.approx(1979 * 10**12)
    with pytest.raises(ValueError, match="compute_dtype='fp8' has no peak on a100_80gb_sxm"):
        peak_flops(get_gpu("a100_80gb_sxm"), "fp8")


# ------------------------------------------------------------------ overrides
def test_overrides_set_fields():
    g = get_gpu("h100_sxm", overrides={"hbm_bw": 3.0e12, "efficiency.compute": 0.5,
                                       "power.idle_w": 90.0, "peak_flops.fp4": 1.0e15})
    assert g.hbm_bw == 3.0e12 and g.efficiency.compute == 0.5 and g.power.idle_w == 90.0
    assert g.supports("fp4")
    assert get_gpu("h100_sxm").efficiency.compute == pytest.approx(0.803)   # cache not mutated


def test_override_errors_name_the_field():
    with pytest.raises(ValueError, match=r"efficiency\.compute=1\.5 is invalid: .*less than or equal to 1"):
        get_gpu("h100_sxm", overrides={"efficiency.compute": 1.5})
    with pytest.raises(ValueError, match="override 'hbm_speed' is not a GPU field"):
        get_gpu("h100_sxm", overrides={"hbm_speed": 1})
    with pytest.raises(ValueError, match="'compute_fraction' is not a power field"):
        get_gpu("h100_sxm", overrides={"power.compute_fraction": 0.5})
    with pytest.raises(ValueError, match="hbm_bw=-1"):
        get_gpu("h100_sxm", overrides={"hbm_bw": -1})


# ------------------------------------------------------------------ user hardware files
USER_GPU = """
id: acme_x1
name: ACME X1
vendor: ACME
arch: Hypothetical
bf16_dense_tflops: 500
fp8_dense_tflops: 1000
hbm_gb: 96
hbm_tbps: 4.0
scaleup_tech: ACME-Link + switch
scaleup_bw_gbps_unidir: 400
scaleup_domain: 16
scaleout_gbps_per_gpu: 800
pcie_gen: 5
tdp_w: 800
price_usd_per_gpu_hr_approx: 3.0
efficiency:
  compute: 0.7
  compute_by_dtype: {fp8: 0.6}
power:
  idle_w: 100
"""


def test_user_file_adds_gpu(tmp_path):
    f = tmp_path / "acme.yaml"
    f.write_text(USER_GPU)
    g = get_gpu("acme_x1", extra_paths=[f])
    assert g.peak_flops["bf16"] == pytest.approx(500 * 10**12)
    assert g.hbm_bytes == pytest.approx(96 * 10**9)
    assert g.scaleup_bw == pytest.approx(400 * 10**9)
    assert g.scaleout_bw == pytest.approx(800 * 10**9 / 8)
    assert g.efficiency.compute == 0.7 and g.efficiency.compute_for("fp8") == 0.6
    assert g.power.idle_w == 100                                    # absolute watts win
    fraction = _eff_yaml()["defaults"]["power"]["compute_fraction"]
    assert g.power.compute_w == pytest.approx(fraction * 800)
    assert g.nvlink and not g.nvls
    assert g.efficiency.memory == _eff_yaml()["defaults"]["memory"]
    assert "acme_x1" not in load_catalog()                          # only with the extra path


def test_env_var_directory_and_amending_builtin(tmp_path, monkeypatch):
    (tmp_path / "tpu.yaml").write_text("accelerators:\n  - id: tpu_v5e\n    tdp_w: 200\n"
                                       "  - id: h100_sxm\n    efficiency: {memory: 0.9}\n")
    monkeypatch.setenv("INFERBOUND_HARDWARE_PATH", str(tmp_path))
    tpu = get_gpu("tpu_v5e")
    assert tpu.power.tdp_w == 200 and tpu.peak_flops["bf16"] == pytest.approx(197 * 10**12)
    h100 = get_gpu("h100_sxm")
    assert h100.efficiency.memory == 0.9 and h100.efficiency.compute == pytest.approx(0.803)
    assert "tpu_v5e" not in skipped_gpus()


def test_user_file_errors(tmp_path):
    bad_key = tmp_path / "bad_key.yaml"
    bad_key.write_text("id: x2\nbf16_tflops: 100\n")
    with pytest.raises(ValueError, match="'bf16_tflops' is not a hardware.yaml field"):
        load_catalog([bad_key])
    bad_eff = tmp_path / "bad_eff.yaml"
    bad_eff.write_text(USER_GPU.replace("compute: 0.7", "compute: 1.5"))
    with pytest.raises(ValueError, match=r"bad_eff.yaml, gpu 'acme_x1': efficiency\.compute=1\.5 is invalid"):
        load_catalog([bad_eff])
    incomplete = tmp_path / "incomplete.yaml"
    incomplete.write_text("id: x3\nbf16_dense_tflops: 100\n")
    with pytest.raises(ValueError, match="gpu 'x3': hbm_gb or hbm_tbps is null"):
        load_catalog([incomplete])
    with pytest.raises(ValueError, match="extra_paths entry .* does not exist"):
        load_catalog([tmp_path / "missing.yaml"])


# ------------------------------------------------------------------ table and data hygiene
def test_gpu_table_rows_in_vendor_units():
    row = next(r for r in gpu_table() if r["id"] == "h100_sxm")
    assert row["bf16_tflops"] == 989 and row["fp8_tflops"] == 1979 and row["fp4_tflops"] is None
    assert row["hbm_gb"] == 80 and row["hbm_tb_s"] == 3.35
    assert row["hbm_device_gib"] == round(85045477376 / 2**30, 3)   # 79.205 GiB
    assert row["scaleup_gb_s"] == 450 and row["scaleup_domain"] == 8 and row["scaleout_gbit_s"] == 400
    assert row["tdp_w"] == 700 and row["eff_compute"] == pytest.approx(0.803)


def test_every_efficiency_number_has_a_comment():
    text = DATA.joinpath("efficiency.yaml").read_text("utf-8")
    number_line = re.compile(r"^\s*[\w.-]+:\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*(#.*)?$")
    numeric_lines = [ln for ln in text.splitlines() if number_line.match(ln)]
    uncommented = [ln for ln in numeric_lines if "#" not in ln and not ln.lstrip().startswith("schema_version")]
    assert not uncommented, uncommented

    def leaves(node):
        if isinstance(node, dict):
            return sum(leaves(v) for v in node.values())
        return int(isinstance(node, (int, float)) and not isinstance(node, bool))

    # every parsed number sits on its own `key: number` line (no flow-style numbers escape the check)
    assert leaves(yaml.safe_load(text)) == len(numeric_lines)


def test_hardware_yaml_is_verbatim_reference():
    ref = SHARED / "reference" / "hardware.yaml"
    if not ref.exists():
        pytest.skip("shared reference not present")
    assert DATA.joinpath("hardware.yaml").read_text("utf-8") == ref.read_text("utf-8")
