"""Device memory (data/device_memory.yaml): a GPU's hbm_bytes is the total CUDA / HIP report, which the
engines size their KV cache by, where one is cited; the datasheet's hbm_gb x 1e9 otherwise."""
from __future__ import annotations

from importlib import resources

import pytest
import yaml

from inferbound.hardware.catalog import gpu_table, load_catalog


def _device_memory() -> dict:
    text = resources.files("inferbound").joinpath("data", "device_memory.yaml").read_text("utf-8")
    return yaml.safe_load(text)["gpus"]


def test_every_entry_is_a_catalog_gpu_with_a_source():
    catalog = load_catalog()
    for gid, e in _device_memory().items():
        assert gid in catalog, gid
        assert len(str(e["source"])) > 20, gid
        assert catalog[gid].hbm_bytes == float(e["bytes"])


def test_device_totals_by_hand():
    c = load_catalog()
    # CUDA deviceQuery "81106 MBytes (85045477376 bytes)" (thamada/nvidia-smi gls/H100SXMx8_deviceQuery.py)
    assert c["h100_sxm"].hbm_bytes == 85_045_477_376
    assert c["h100_sxm"].hbm_datasheet_bytes == 80e9
    # rocm-smi "VRAM Total Memory (B): 206141652992" (ROCm/legacy-rocm-build issue #4750) = 196592 MiB
    assert c["mi300x"].hbm_bytes == 196_592 * 2**20
    # B200: CUDA totalGlobalMem 178.35 GiB (pytorch/ao PR #4002), not the datasheet's 180e9 B
    assert c["b200_hgx"].hbm_bytes / 2**30 == pytest.approx(178.35, abs=0.005)
    # no cited total: the datasheet figure in decimal GB, no datasheet field beside it
    assert c["h20"].hbm_bytes == 96e9 and c["h20"].hbm_datasheet_bytes is None


def test_device_totals_sit_just_below_the_binary_reading_of_the_datasheet():
    """Memory parts are binary sizes: the device total is the datasheet figure read as GiB less what the driver
    keeps (HBM: 0.4-1.5 %; GDDR cards with ECC on keep more: L4 23,570,219,008 / 24 GiB = 0.915), so a typo or
    a figure entered in the wrong unit (GB for GiB: 1.074; MiB as GB: ~1e-3) falls outside [0.90, 1.0]."""
    c = load_catalog()
    for gid in _device_memory():
        g = c[gid]
        ratio = g.hbm_bytes / (g.hbm_datasheet_bytes / 1e9 * 2**30)
        assert 0.90 <= ratio <= 1.0, (gid, ratio)


def test_gpus_table_prints_datasheet_gb_and_device_gib():
    row = next(r for r in gpu_table() if r["id"] == "h100_sxm")
    assert row["hbm_gb"] == 80 and row["hbm_device_gib"] == round(85_045_477_376 / 2**30, 3)


def test_a_user_file_hbm_gb_replaces_the_builtin_device_total(tmp_path):
    f = tmp_path / "h100_120.yaml"
    f.write_text("accelerators:\n  - id: h100_sxm\n    hbm_gb: 120\n", "utf-8")
    assert load_catalog([f])["h100_sxm"].hbm_bytes == 120e9
    g = tmp_path / "h100_dev.yaml"
    g.write_text("accelerators:\n  - id: h100_sxm\n    hbm_device_bytes: 90000000000\n", "utf-8")
    assert load_catalog([g])["h100_sxm"].hbm_bytes == 90e9
