"""KV tiers as engines ship them (deploy/offload.py, workloads/features.py, workloads/prefix_stream.py;
docs/features/kv-offload.md): the host tier holds evicted prefixes and loads them back on reuse; it does
not extend the running batch's KV. Host links and memory from the catalog, the pool, reload bytes over the
link's bandwidth, the LRU shares the tier adds, what the steady state pays, and the published points of
the vLLM offloading-connector blog. Expected values are hand computations written out here."""
from __future__ import annotations

import re
from importlib import resources

import pytest

from inferbound.base.datafiles import data_yaml
from inferbound.deploy import offload, prefix
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.runtime import kv_capacity_bytes
from inferbound.hardware import get_gpu
from inferbound.workloads import max_throughput
from inferbound.workloads.features import Features
from inferbound.workloads.lengths import fixed
from inferbound.workloads.prefix_stream import single_ttft, stream_rate

KV_TOKEN_8B = 2 * 32 * 8 * 128 * 2  # Llama-3.1-8B KV bytes per token at bf16: 2 (K,V) · layers · kv heads · dim · 2 B


def dep8(**opts):
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options=opts or None)


def gh200(**opts):
    return make_deployment(model="llama-3.1-70b", gpu="gh200", weight_dtype="fp8", kv_dtype="bf16",
                           engine_options=opts or None)


# -- the tier from the catalog ----------------------------------------------------------------------------
def test_host_links_from_the_catalog():
    # GB200 NVL72: 900 GB/s C2C bidirectional per superchip, half per direction, 2 GPUs share it -> 225 GB/s;
    # 480 GB of Grace memory / 2 GPUs -> 240 GB. GB300 NVL72 the same superchip figures.
    for g in ("gb200_nvl72", "gb300_nvl72"):
        name, bw, eff, mem = offload.host_link(get_gpu(g))
        assert (name, bw, mem) == ("NVLink-C2C", 225e9, 240e9)
        assert eff == 0.8
    # H100 SXM: PCIe Gen5 x16, 64 GB/s per direction, 0.78 achievable (vLLM blog: ~50 GB/s H2D), 2 TB / 8 GPUs
    assert offload.host_link(get_gpu("h100_sxm")) == ("PCIe", 64e9, 0.78, 256e9)
    # DGX B200: 2 TB for 8 GPUs; Azure ND MI300X v5: 1850 GiB -> 1986 GB for 8 GPUs
    assert offload.host_link(get_gpu("b200_hgx"))[3] == 256e9
    assert offload.host_link(get_gpu("mi300x"))[3] == pytest.approx(1986e9 / 8)


def test_every_server_with_a_host_link_has_a_cited_host_memory():
    """Every catalog entry with a PCIe or C2C link (TPUs aside: no engine here ships a host tier on them) has
    cpu_memory_gb, and every figure in host_tier.yaml carries a comment naming its source."""
    text = resources.files("inferbound").joinpath("data/host_tier.yaml").read_text()
    for line in text.splitlines():
        if re.match(r"\s+cpu_memory_gb:", line):
            assert "#" in line and len(line.split("#", 1)[1].strip()) > 20, line
    missing = []
    for e in data_yaml("hardware.yaml")["accelerators"]:
        if e.get("vendor", "").lower() == "google" or not (e.get("pcie_gen") or e.get("cpu_gpu_link_gbps_bidir")):
            continue
        if offload._entry(e["id"]).get("cpu_memory_gb") is None:
            missing.append(e["id"])
    assert not missing


def test_default_pool_is_twice_the_device_cache_capped_by_host_memory():
    dep = gh200(kv_offload="host")
    k_dev = kv_capacity_bytes(dep, dep.runtime)
    tier = offload.tier_of(dep)
    assert tier.pool_bytes == pytest.approx(min(2.0 * k_dev, 480e9))   # SGLang hicache_ratio 2
    assert offload.tier_of(gh200(kv_offload="host", kv_offload_gb=100)).pool_bytes == 100e9
    assert tier.capacity_bytes == 0.0  # the room it adds to a running batch


# -- reload cost --------------------------------------------------------------------------------------------
def test_reload_seconds_by_hand():
    tier = offload.tier_of(dep8(kv_offload="host"))
    # a full hit of a 32,768-token prompt: ⌊32767/16⌋·16 = 32,752 tokens · 131,072 B = 4,292,870,144 B over
    # 64e9·0.78 = 49.92e9 B/s -> 85.996 ms (the vLLM blog's ~50 GB/s would give 85.86 ms)
    p = float(prefix.whole_blocks(32767, 16))
    assert p == 32752
    assert float(offload.load_seconds(tier, p * KV_TOKEN_8B)) == pytest.approx(32752 * 131072 / 49.92e9)
    assert float(offload.load_seconds(tier, p * KV_TOKEN_8B)) == pytest.approx(0.085995, rel=1e-4)
    # vLLM waits for the whole load before the request's first forward (request_overlap 0) ...
    assert float(offload.request_wait(tier, 4.992e9, 0.05)) == pytest.approx(0.1)
    # ... SGLang HiCache loads layer by layer under its prefill: 100 ms of load behind 50 ms of prefill -> 50 ms
    sg = offload.tier_of(make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="sglang",
                                         engine_options={"kv_offload": "host"}))
    assert float(offload.request_wait(sg, 4.992e9, 0.05)) == pytest.approx(0.05)
    # in a step the copies run beside the compute: 100 ms of loads in a 60 ms step add 40 ms, in 150 ms none
    assert float(offload.added_seconds(tier, 4.992e9, 0.06)) == pytest.approx(0.04)
    assert float(offload.added_seconds(tier, 4.992e9, 0.15)) == 0.0


def test_host_tier_does_not_extend_the_running_batch():
    """The old model let a batch's KV spill to host memory and read it every step; no engine ships that."""
    from inferbound.workloads.static import estimate
    plain = estimate(gh200(), batch=8, input_len=8192, output_len=1024)
    host = estimate(gh200(kv_offload="host"), batch=8, input_len=8192, output_len=1024)
    assert not plain.fits and not host.fits
    assert host.tpot_s == pytest.approx(plain.tpot_s, rel=1e-12)
    a = max_throughput(gh200(), input_len=8192, output_len=1024)
    b = max_throughput(gh200(kv_offload="host"), input_len=8192, output_len=1024)
    assert b.concurrency == pytest.approx(a.concurrency, rel=1e-12)
    assert b.output_tok_s == pytest.approx(a.output_tok_s, rel=1e-12)
    assert any("evicted prefixes" in n for n in gh200(kv_offload="host").warnings)


# -- what the tier adds: hits on evicted prefixes --------------------------------------------------------
def test_host_share_raises_the_hit_rate_by_hand():
    mix = fixed(2560, 257)
    dev = dep8(shared_prefix_len=2048, prefix_groups=2000)
    hst = dep8(shared_prefix_len=2048, prefix_groups=2000, kv_offload="host")
    a, b = Features(dev, dev.runtime, mix), Features(hst, hst.runtime, mix)
    c = a.in_flight_at_cap()
    s_dev = 1 - (1 - 1 / 2000) ** (c - 1)
    assert a.s_dev == pytest.approx(s_dev) and a.s_host == 0.0
    # host pool: min(2·K_dev, 256 GB); a prefix is 2048 tokens · 131,072 B = 268,435,456 B
    pool = min(2 * kv_capacity_bytes(hst, hst.runtime), 256e9)
    h = pool // (2048 * KV_TOKEN_8B)
    assert b.s_dev == pytest.approx(s_dev)
    assert b.s_host == pytest.approx(min(2000 - 2000 * s_dev, h) / 2000)
    # mean cached tokens: (s_dev + s_host)·2048; the host part is loaded, not recomputed
    assert b.cached[0] == pytest.approx(2048 * (b.s_dev + b.s_host))
    assert b.host_tokens[0] == pytest.approx(2048 * b.s_host)
    assert b.load_bytes_per_prompt() == pytest.approx(2048 * b.s_host * KV_TOKEN_8B)
    # and the operating point gains from it
    t_dev = max_throughput(dev, input_len=2560, output_len=257).output_tok_s
    t_host = max_throughput(hst, input_len=2560, output_len=257).output_tok_s
    assert t_host > t_dev


# -- published points: vLLM blog 2025-12-29 (Llama-3.1-8B-Instruct, H100, 512-token prompts) ---------------
def test_full_cpu_hits_raise_prefill_throughput_about_9x():
    """vLLM blog figure 2: 10,000 prefill requests of 512 tokens, GPU prefix caching off, "throughput
    increases by up to X9" with the CPU hit rate. Within ±25 % of 9 at a 100 % host hit rate."""
    dep = dep8(kv_offload="host")
    base = stream_rate(dep, 512)["rate"]
    full = stream_rate(dep, 512, s_host=1.0)
    assert 0.75 * 9 <= full["rate"] / base <= 1.25 * 9
    # at a full hit the link binds: 512 prompts per step (8192 budget / 16 new tokens) each load
    # 496 · 131,072 B over 49.92 GB/s; the rate is then the link's, 49.92e9 / (496 · 131,072) = 767.9 /s
    assert full["prompts_per_step"] == pytest.approx(8192 / 16)
    assert full["load_s"] > full["step_s"]
    assert full["rate"] == pytest.approx(49.92e9 / (496 * KV_TOKEN_8B), rel=1e-9)


def test_cpu_hit_ttft_is_2x_to_22x_faster_than_recompute():
    """vLLM blog figure 1: "loading KV values from the CPU reduces TTFT by X2-X22, depending on the prompt
    size"; at 512 tokens "TTFT for this prompt size only decreased by X2". Within ±25 % of 2 at 512 tokens,
    and the ratio rises with the prompt to the tens at 90K (the blog's largest prompt) but stays below 22·1.25."""
    dep = dep8(kv_offload="host")
    r512 = single_ttft(dep, 512) / single_ttft(dep, 512, "host")
    assert 0.75 * 2 <= r512 <= 1.25 * 2
    r90k = single_ttft(dep, 90_000) / single_ttft(dep, 90_000, "host")
    assert 10 <= r90k <= 1.25 * 22
    # the reload of a 90K full hit alone: ⌊89999/16⌋·16 = 89,984 tokens · 131,072 B / 49.92e9 B/s = 236.3 ms
    tier = offload.tier_of(dep)
    assert float(offload.load_seconds(tier, 89_984 * KV_TOKEN_8B)) == pytest.approx(0.23627, rel=1e-4)


# -- bad input ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gpu, opts, words", [
    ("tpu_v4", {"kv_offload": "host"}, ("kv_offload='host'", "tpu_v4", "no host tier")),
    ("h100_sxm", {"kv_offload": "disk"}, ("kv_offload='disk'", "none, host")),
    ("h100_sxm", {"kv_offload_gb": 10}, ("kv_offload_gb=10", "without kv_offload='host'")),
    ("h100_sxm", {"prefix_groups": 4}, ("prefix_groups=4", "shared_prefix_len")),
])
def test_bad_values_name_the_field(gpu, opts, words):
    with pytest.raises(ValueError) as e:
        make_deployment(model="llama-3.1-8b", gpu=gpu, engine_options=opts)
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


def test_cli_prints_device_and_host_kv_apart():
    from typer.testing import CliRunner

    from inferbound.cli import app
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100_sxm", "--scenario", "serving",
                                 "--concurrency", "16", "--kv-offload", "host"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "KV on GPU" in out and "host tier" in out and "of the engine's" not in out


def test_cli_prints_the_hit_shares_of_each_tier():
    from typer.testing import CliRunner

    from inferbound.cli import app
    r = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "h100_sxm", "--scenario", "max-throughput",
                                 "--input", "2560", "--output", "257", "--shared-prefix-len", "2048",
                                 "--prefix-groups", "2000", "--kv-offload", "host"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "prefix hits:" in out and "from the host tier" in out and "host tier" in out
