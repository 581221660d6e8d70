"""One prompt's TTFT pays the host's hashing and lookup of its full blocks (prefix.lookup_seconds) on every
path: vLLM V1 hashes each arriving prompt's full blocks (kv_cache_utils.hash_block_tokens) hit or miss."""
import pytest

from inferbound.deploy import prefix
from inferbound.deploy.deployment import make_deployment


def test_64k_prompt_hashes_4096_blocks():
    dep = make_deployment(model="Qwen/Qwen3-30B-A3B", gpu="h20")
    # hand-worked: 65,536 tokens / 16-token blocks = 4,096 full blocks × 2 µs (features.yaml) = 8.192 ms
    assert dep.runtime.block_size == 16
    assert float(prefix.lookup_seconds(dep.runtime, 65536)) == pytest.approx(4096 * 2.0e-6)
    # 1,000 tokens: ⌊1000/16⌋ = 62 full blocks (the trailing 8 tokens are not hashed) = 124 µs
    assert float(prefix.lookup_seconds(dep.runtime, 1000)) == pytest.approx(62 * 2.0e-6)


def test_single_ttft_carries_the_lookup_on_every_path():
    """single_ttft = the isolated step's price + ⌊I/16⌋ × 2 µs: a miss of 65,536 tokens is its priced step +
    8.192 ms (the step priced here directly, the lookup written out by hand)."""
    from inferbound.step.contract import price, uniform
    from inferbound.workloads.prefix_stream import single_ttft
    dep = make_deployment(model="Qwen/Qwen3-30B-A3B", gpu="h20")
    step = float(price(dep, uniform(dep.model, prompts=1.0, new=65536.0), "isolated").time)
    assert single_ttft(dep, 65536, "miss") == pytest.approx(step + 4096 * 2.0e-6, rel=1e-12)
    assert single_ttft(dep, 1024, "miss") - float(price(dep, uniform(dep.model, prompts=1.0, new=1024.0),
                                                        "isolated").time) == pytest.approx(64 * 2.0e-6)
