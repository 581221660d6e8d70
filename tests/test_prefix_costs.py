"""What a prefix hit still costs (deploy/prefix.py, workloads/features.py, workloads/prefix_stream.py;
docs/features/prefix-caching.md): whole blocks only (the partial last block recomputed), the attention of
the new tokens over the cached ones, the block hashing and lookup, the hit share from the workload under
LRU (prefix groups), and no internal table limit reaching a user. Expected values are hand computations
written out here; published points are cited where they are compared."""
from __future__ import annotations

import pytest

from inferbound.deploy import prefix
from inferbound.deploy.deployment import make_deployment
from inferbound.step.table import StepModel
from inferbound.workloads import steady_state
from inferbound.workloads.features import Features
from inferbound.workloads.lengths import fixed
from inferbound.workloads.prefix_stream import single_ttft, stream_rate


def dep8(**opts):
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options=opts or None)


def test_hits_are_whole_blocks_rounded_down():
    """vLLM hashes full blocks only (vllm/v1/core/kv_cache_utils.py hash_request_tokens) and computes at least
    the last prompt token (kv_cache_manager.get_computed_blocks: max_cache_hit_length = prompt length − 1)."""
    rt = dep8(prefix_hit_rate=0.9).runtime
    assert float(prefix.hit_tokens(rt, 4096)) == 3680       # 0.9·4096 = 3686.4 -> ⌊3686.4/16⌋·16 = 230·16
    assert float(prefix.hit_tokens(rt, 100)) == 80          # 90 -> 5·16
    rs = dep8(shared_prefix_len=3600).runtime
    assert float(prefix.hit_tokens(rs, 8192)) == 3600       # 225 whole blocks
    assert float(prefix.hit_tokens(rs, 1000)) == 992        # min(3600, 999) = 999 -> 62·16
    assert float(prefix.hit_tokens(rs, 10)) == 0            # less than one block
    sg = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="sglang",
                         engine_options={"prefix_hit_rate": 0.9}).runtime
    assert float(prefix.hit_tokens(sg, 4096)) == prefix.whole_blocks(3686.4, sg.block_size)


def test_new_tokens_attend_to_the_whole_cached_prefix():
    dep = dep8(prefix_hit_rate=0.9)
    mix = fixed(4096, 257)
    fx = Features(dep, dep.runtime, mix)
    assert fx.cached == [3680.0] and fx.new == [416.0]
    load = steady_state.load(dep.model, 10.0, mix, fx=fx)
    # each of the 416 new tokens sees the 3680 cached ones and the new ones before it (causal):
    # 416·3680 + 416·417/2 = 1,530,880 + 86,736 = 1,617,616 pairs, × D·p = 10/256 prompts
    _, pre, _ = load.attention[("full", None)]
    assert float(pre) == pytest.approx(1_617_616 * 10 / 256)
    # T = D + D·p·N = 10 + (10/256)·416 = 26.25 tokens (the cached ones are not in the token budget)
    assert float(load.tokens) == pytest.approx(10 + 10 / 256 * 416)


def test_block_lookup_costs_host_time_per_prompt():
    rt = dep8(prefix_hit_rate=0.5).runtime
    # ⌊4096/16⌋ = 256 full blocks hashed and looked up at 2 µs each (data/features.yaml) = 0.512 ms
    assert float(prefix.lookup_seconds(rt, 4096)) == pytest.approx(256 * 2e-6)
    assert float(prefix.lookup_seconds(rt, 4100)) == pytest.approx(256 * 2e-6)  # the partial block is not hashed
    dep = dep8(prefix_hit_rate=0.5)
    sm = StepModel(dep, dep.runtime.token_budget + 1)
    st = steady_state.steps(sm, dep.runtime, 64.0, fixed(4096, 257))
    # λ = D·p = 64/256 = 0.25 prompts per decode step -> 0.25 · 0.512 ms = 0.128 ms of overhead per decode step
    look = st.costs[-1]
    assert float(look.time) == pytest.approx(0.25 * 256 * 2e-6)
    assert float(look.split["overhead"]) == pytest.approx(float(look.time))


def test_lru_device_and_host_shares_by_hand():
    # a request hits on the device when one of the C others in flight holds its prefix: 1 − (1 − 1/G)^C
    assert prefix.device_share(4, 2) == pytest.approx(1 - 0.75 ** 2)         # 0.4375
    assert prefix.device_share(1, 5) == 1.0
    assert prefix.device_share(1000, 0) == 0.0
    # the host tier keeps H evicted prefixes of the G − R not resident: min(G − R, H)/G
    assert prefix.host_share(10, 0.3, 5) == pytest.approx(0.5)
    assert prefix.host_share(10, 0.3, 100) == pytest.approx(0.7)              # capped by the 7 not resident
    assert prefix.host_share(10, 1.0, 100) == 0.0


def test_prefix_groups_lower_the_hit_share_at_the_operating_point():
    mix = fixed(2560, 257)
    one = dep8(shared_prefix_len=2048)
    many = dep8(shared_prefix_len=2048, prefix_groups=2000)
    a, b = Features(one, one.runtime, mix), Features(many, many.runtime, mix)
    assert (a.s_dev, a.s_host) == (1.0, 0.0) and a.cached == [2048.0]
    c = b.in_flight_at_cap()
    assert b.s_dev == pytest.approx(1 - (1 - 1 / 2000) ** (c - 1))
    assert 0 < b.s_dev < 1 and b.cached[0] == pytest.approx(2048 * b.s_dev)
    # G > 1: the prefix is counted per sequence (which request shares which prefix is a draw)
    assert float(prefix.shared_held_tokens(many.runtime, 2560)) == 0.0 and prefix.pool_tokens(many.runtime) == 0.0


def test_hit_throughput_stays_below_the_ideal():
    """Prefill-only 512-token prompts (the vLLM blog's stream): at a 90 % hit rate the ideal 1/(1 − h) = 10×
    ignores the recomputed partial block, the attention over the cached tokens and the per-prompt work."""
    dep = dep8()
    base = stream_rate(dep, 512)
    hit = stream_rate(dep, 512, s_dev=0.9)
    # the budget of 8192 tokens carries 8192 / (0.1·512 + 0.9·(512 − 496)) = 8192 / 65.6 prompts per step,
    # not the ideal 8192 / 51.2 = 160: the 16 tokens of each hit's last block are computed again
    assert hit["prompts_per_step"] == pytest.approx(8192 / 65.6)
    assert base["prompts_per_step"] == pytest.approx(16.0)
    ratio = hit["rate"] / base["rate"]
    assert 1.0 < ratio < 8192 / 65.6 / 16 < 10.0
    # a device hit's TTFT: 16 tokens after 496 cached, less than the recompute of 512
    assert single_ttft(dep, 512, "gpu") < single_ttft(dep, 512)


@pytest.mark.parametrize("flag", [["--prefix-hit-rate", "0.9"], ["--shared-prefix-len", "3600"]])
def test_search_with_prefix_hits_has_no_table_limit(flag):
    """issue 20: `search ... --prefix-hit-rate 0.9 --top 3` exited 2 "steps of up to 8275 tokens exceed the
    tabulated max_tokens=8193": the row explanation priced every prompt token, cached ones included."""
    from typer.testing import CliRunner

    from inferbound.cli import app
    r = CliRunner().invoke(app, ["search", "llama-3.1-8b", "--gpus", "h100_sxm", "--input", "4096", "--top", "3",
                                 *flag])
    assert r.exit_code == 0, r.output
    assert "exceed the tabulated" not in r.output


def test_bad_prefix_groups_name_the_field():
    for opts, words in (({"prefix_groups": 0, "shared_prefix_len": 100}, "prefix_groups=0"),
                        ({"prefix_groups": 3}, "needs shared_prefix_len")):
        with pytest.raises(ValueError) as e:
            dep8(**opts)
        assert words in str(e.value) and "\n" not in str(e.value)


def test_simulated_lru_hits_follow_the_residency_formula():
    """The simulator (sim/prefix.py: per-request prefixes, LRU eviction under pressure) against
    s_dev = 1 − (1 − 1/G)^(C − 1): with the simulator's own mean running count C the formula holds within
    5 %; the analytic C (every sequence holding its whole prompt) is lower, so its share is a lower bound."""
    from inferbound.sim import simulate
    mix = fixed(2560, 256)
    for g in (50, 200):
        dep = dep8(shared_prefix_len=2048, prefix_groups=g)
        s = simulate(dep, rate=float("inf"), requests=1500, input_len=2560, output_len=256).summary
        hits = s["prefix_hit_rate"] * 2560 / 2048          # cached prompt tokens -> share of requests that hit
        c = s["mean_running"]
        assert hits == pytest.approx(1 - (1 - 1 / g) ** (c - 1), rel=0.05)
        fx = Features(dep, dep.runtime, mix)
        assert fx.s_dev <= hits * 1.02
