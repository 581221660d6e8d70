"""fleet/startup.py: a new replica's startup = weight bytes per GPU / storage bandwidth + the engine's init.

Worked by hand from the figures data/fleet.yaml cites (bandwidths in GB/s = 1e9 bytes/s).
"""
from __future__ import annotations

import pytest

from inferbound import make_deployment
from inferbound.fleet.startup import sources, startup_s

# Llama-3.1-8B: 8,030,261,248 parameters (its config: 32 layers, hidden 4096, MLP 14336, vocabulary
# 128,256, untied embeddings); bf16 = 2 bytes each -> 16,060,522,496 bytes = 16.060522496 GB on one GPU
W_8B = 8_030_261_248 * 2


def test_weights_over_object_store_plus_vllm_init():
    dep = make_deployment("llama-3.1-8b", "h100_sxm")
    assert dep.weight_bytes_per_gpu == W_8B
    s, note = startup_s(dep)  # default source: object_store, 12.5 GB/s per 8-GPU node = 1.5625 GB/s per GPU
    # 16.060522496 / 1.5625 = 10.2787344 s; + vLLM's logged init 34.11 s = 44.3887344 s
    assert s == pytest.approx(16.060522496 / 1.5625 + 34.11)
    assert s == pytest.approx(44.3887344, abs=1e-6)
    assert "16.06 GB weights per GPU / 1.5625 GB/s (object store)" in note and "34.11 s vllm init" in note


def test_each_source_and_engine():
    dep = make_deployment("llama-3.1-8b", "h100_sxm")
    # local NVMe 6.6 GB/s: 16.060522496 / 6.6 = 2.43341 s + 34.11 = 36.54341 s
    assert startup_s(dep, "local_nvme")[0] == pytest.approx(2.4334125 + 34.11, abs=1e-6)
    # network file system 1.7 GiB/s = 1.7 * 2**30 / 1e9 = 1.825 GB/s (rounded in the data): 8.80029 s + 34.11
    assert startup_s(dep, "network_fs")[0] == pytest.approx(16.060522496 / 1.825 + 34.11)
    sg = make_deployment("llama-3.1-8b", "h100_sxm", engine="sglang")
    # SGLang's CUDA-graph capture 11.39 s: 10.2787344 + 11.39 = 21.6687344 s
    assert startup_s(sg)[0] == pytest.approx(21.6687344, abs=1e-6)
    assert set(sources()) == {"local_nvme", "network_fs", "object_store"}


def test_tensor_parallel_shards_load_at_once():
    one = make_deployment("llama-3.1-8b", "h100_sxm")
    two = make_deployment("llama-3.1-8b", "h100_sxm", tp=2)
    # each GPU reads its own shard; the load part shrinks with the shard (replicated norms aside)
    load1 = startup_s(one)[0] - 34.11
    load2 = startup_s(two)[0] - 34.11
    assert load2 == pytest.approx(two.weight_bytes_per_gpu / 1e9 / 1.5625)
    assert 0.5 * load1 <= load2 < 0.51 * load1


def test_unknown_source_and_uncited_engine_are_one_line_errors():
    dep = make_deployment("llama-3.1-8b", "h100_sxm")
    with pytest.raises(ValueError, match=r"^autoscale.source='tape' unknown; allowed: local_nvme, network_fs, object_store$"):
        startup_s(dep, "tape")
    trt = make_deployment("llama-3.1-8b", "h100_sxm", engine="trtllm")
    with pytest.raises(ValueError, match=r"^engine='trtllm': no cited init time .*allowed: .*autoscale.startup in seconds$"):
        startup_s(trt)
