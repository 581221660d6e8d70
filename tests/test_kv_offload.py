"""KV offload to host memory (offload.py; docs/features/kv-offload.md): the host tier from the catalog, its
pool, the step it costs, the concurrency it lifts (max throughput, static batch, simulator) and bad input.
Expected values are hand computations written out here."""
from __future__ import annotations

import pytest

from inferbound.deploy import offload
from inferbound.deploy.deployment import make_deployment
from inferbound.hardware import get_gpu
from inferbound.deploy.runtime import kv_capacity_bytes
from inferbound.workloads import max_throughput


def gh200(**opts):
    # fp8 weights (fp8 compute on GH200, checkpoint.py), a bf16 KV cache: the figures below are bf16 KV bytes
    return make_deployment(model="llama-3.1-70b", gpu="gh200", weight_dtype="fp8", kv_dtype="bf16",
                           engine_options=opts or None)


def test_host_links_from_the_catalog():
    # GH200: NVLink-C2C 900 GB/s both ways -> 450 GB/s per direction, 480 GB LPDDR5X, one GPU per Grace
    name, bw, eff, mem = offload.host_link(get_gpu("gh200"))
    assert (name, bw, eff, mem) == ("NVLink-C2C", 450e9, 0.8, 480e9)
    # GB200: one Grace (480 GB, 900 GB/s C2C) for two GPUs -> 225 GB/s and 240 GB each
    name, bw, eff, mem = offload.host_link(get_gpu("gb200_nvl72"))
    assert (name, bw, mem) == ("NVLink-C2C", 225e9, 240e9)
    # H100 SXM in an 8-GPU server: its PCIe Gen5 x16 (64 GB/s per direction, links.yaml efficiency 0.7),
    # 2 TB of host memory shared by 8 GPUs -> 256 GB
    name, bw, eff, mem = offload.host_link(get_gpu("h100_sxm"))
    assert (name, bw, eff, mem) == ("PCIe", 64e9, 0.7, 256e9)


def test_default_pool_is_twice_the_device_cache_capped_by_host_memory():
    dep = gh200(kv_offload="host")
    k_dev = kv_capacity_bytes(dep, dep.runtime)
    tier = offload.tier_of(dep)
    assert tier.capacity_bytes == pytest.approx(min(2.0 * k_dev, 480e9))   # SGLang hicache_ratio 2
    given = offload.tier_of(gh200(kv_offload="host", kv_offload_gb=100))
    assert given.capacity_bytes == 100e9


def test_host_reads_cost_by_hand():
    tier = offload.tier_of(gh200(kv_offload="host"))
    # 36 GB per GPU beyond the device pool over 450·0.8 = 360 GB/s: 0.1 s; a 50 ms step hides 50 ms of it
    assert float(offload.read_seconds(tier, 36e9)) == pytest.approx(0.1)
    assert float(offload.added_seconds(tier, 36e9, 0.05)) == pytest.approx(0.05)
    assert float(offload.added_seconds(tier, 9e9, 0.05)) == 0.0          # 25 ms of reads inside a 50 ms step


def test_offload_lifts_max_throughput_concurrency_on_gh200():
    """Done when: KV offload on GH200 raises the max-throughput concurrency of Llama-3.1-70B at 8192 in /
    1024 out."""
    plain = max_throughput(gh200(), input_len=8192, output_len=1024)
    host = max_throughput(gh200(kv_offload="host"), input_len=8192, output_len=1024)
    assert plain.limited_by == "kv-cache"
    assert host.concurrency > plain.concurrency
    assert host.output_tok_s > plain.output_tok_s
    # the KV cap counts both pools: C_kv = K_total / bytes per request in flight
    assert host.kv_limit_concurrency == pytest.approx(
        plain.kv_limit_concurrency * (host.kv_capacity_bytes_per_gpu + host.kv_host_capacity_bytes_per_gpu)
        / plain.kv_capacity_bytes_per_gpu, rel=1e-9)
    assert host.kv_limit_concurrency_device == pytest.approx(plain.kv_limit_concurrency, rel=1e-12)
    # past the device pool the host reads cost step time
    assert host.decode_batch > plain.kv_limit_concurrency
    assert host.host_read_ms_per_step >= 0.0 and host.step_time_s > plain.step_time_s


def test_static_batch_fits_with_the_host_tier():
    from inferbound.workloads.static import estimate
    plain = estimate(gh200(), batch=8, input_len=8192, output_len=1024)
    host = estimate(gh200(kv_offload="host"), batch=8, input_len=8192, output_len=1024)
    assert not plain.fits and host.fits
    f = host.features["kv_offload"]
    # the last decode step (estimate.decode_contexts: 32 midpoints over 1023 steps) holds 8 sequences of
    # c + 1 tokens at 2·80·8·128·2 = 327,680 B per token (TP1, bf16 KV); what exceeds the device pool is in host
    c_last = 8192 + 31.5 * 1023 / 32 - 0.5
    assert f["host_kv_bytes_per_gpu"] == pytest.approx(8 * 327_680 * (c_last + 1) - host.memory.kv_capacity,
                                                       rel=1e-9)
    assert host.tpot_s >= plain.tpot_s  # the same batch; reads that outlast a step lengthen it


def test_simulator_runs_more_sequences_with_the_host_tier():
    from inferbound.sim import simulate
    kw = dict(rate=float("inf"), requests=30, input_len=8192, output_len=128)
    plain = simulate(gh200(), **kw).summary
    host = simulate(gh200(kv_offload="host"), **kw).summary
    assert host["kv_host_blocks"] > 0
    assert host["mean_running"] > 1.5 * plain["mean_running"]
    assert host["output_tok_s"] > plain["output_tok_s"]


@pytest.mark.parametrize("gpu, opts, words", [
    ("tpu_v4", {"kv_offload": "host"}, ("kv_offload='host'", "tpu_v4", "no host tier")),
    ("h100_sxm", {"kv_offload": "disk"}, ("kv_offload='disk'", "none, host")),
    ("h100_sxm", {"kv_offload_gb": 10}, ("kv_offload_gb=10", "without kv_offload='host'")),
])
def test_bad_values_name_the_field(gpu, opts, words):
    model = "llama-3.1-8b"
    with pytest.raises(ValueError) as e:
        make_deployment(model=model, gpu=gpu, engine_options=opts)
    assert "\n" not in str(e.value)
    for w in words:
        assert w in str(e.value)


def test_pool_larger_than_host_memory_is_refused():
    with pytest.raises(ValueError, match="kv_offload_gb=500 exceeds the 480 GB of host memory per GPU"):
        offload.tier_of(gh200(kv_offload="host", kv_offload_gb=500))


def test_cli_offload_on_a_gpu_without_host_tier():
    from typer.testing import CliRunner

    from cli_helpers import assert_one_line_error
    from inferbound.cli import app
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "tpu_v4", "--kv-offload", "host"])
    assert_one_line_error(r, "kv_offload", "tpu_v4")
