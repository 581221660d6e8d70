"""Prefix caching (prefix.py, sim/prefix.py; docs/features/prefix-caching.md): cached tokens per prompt,
the steady-state loads and caps, the simulator's hits, residency and eviction, trace prefix ids, and bad
input. Expected values are hand computations written out here."""
from __future__ import annotations

import pytest

from inferbound.deploy import prefix
from inferbound.deploy.deployment import make_deployment
from inferbound.sim import Request, simulate
from inferbound.workloads import steady_state
from inferbound.workloads.features import Features
from inferbound.workloads.lengths import fixed


def dep8(**opts):
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options=opts or None)


def test_cached_tokens_by_hand():
    rt = dep8(prefix_hit_rate=0.5).runtime
    assert float(prefix.cached_tokens(rt, 4096)) == 2048          # h·I
    rt1 = dep8(prefix_hit_rate=1.0).runtime
    # at least one prompt token is computed, and only whole 16-token blocks hit (vLLM hashes full blocks):
    assert float(prefix.cached_tokens(rt1, 4096)) == 4080         # floor(4095/16)·16 = 255·16
    rs = dep8(shared_prefix_len=1000).runtime                     # vLLM block 16: whole blocks only
    assert float(prefix.cached_tokens(rs, 4096)) == 992           # floor(1000/16)·16 = 62·16
    assert float(prefix.cached_tokens(rs, 500)) == 496            # floor(min(1000, 499)/16)·16 = 31·16
    assert float(prefix.cached_tokens(dep8().runtime, 4096)) == 0  # no hits stated


def test_steady_state_prefills_the_uncached_part():
    dep = dep8(prefix_hit_rate=0.5)
    mix = fixed(4096, 257)                                      # p = 1/(O − 1) = 1/256
    fx = Features(dep, dep.runtime, mix)
    load = steady_state.load(dep.model, 10.0, mix, fx=fx)
    # T = D + D·p·(I − P) = 10 + (10/256)·2048 = 90 tokens
    assert float(load.tokens) == pytest.approx(90.0)
    # a prompt's 2048 new tokens after 2048 cached: pairs 2048·2048 + 2048·2049/2 = 6,292,480, × 10/256 prompts
    _, pre, _ = load.attention[("full", None)]
    assert float(pre) == pytest.approx(6_292_480 * 10 / 256)
    # token-budget cap: D·(1 + p·Ñ) <= B  ->  8192 / (1 + 2048/256) = 8192 / 9 = 910.2 -> 910
    caps, _, _ = steady_state.caps(dep, mix, None, dep.runtime)
    assert caps["token budget"] == 910


def test_shared_prefix_is_held_once():
    mix = fixed(4096, 257)
    plain, shared = dep8(), dep8(shared_prefix_len=2048)
    per0, cap0 = steady_state.kv_per_decoder(plain, mix, plain.runtime)
    per1, cap1 = steady_state.kv_per_decoder(shared, mix, shared.runtime)
    tok = 2 * 32 * 8 * 128 * 2                     # Llama-3.1-8B KV per token at bf16: 131,072 B
    p = 1 / 256
    # vLLM holds I + O/2 (current reservation) rounded to 16-token blocks: 4096 + 128.5 -> 4240 tokens; with
    # the shared prefix 2048 + 128.5 -> 2192 tokens per sequence; decoders and their D·p prompts
    assert per0 == pytest.approx((1 + p) * 4240 * tok, rel=1e-12)
    assert per1 == pytest.approx((1 + p) * 2192 * tok, rel=1e-12)
    assert cap0 - cap1 == pytest.approx(2048 * tok, rel=1e-12)  # one copy of the prefix
    assert steady_state.caps(shared, mix, None, shared.runtime)[0]["kv-cache"] > \
        steady_state.caps(plain, mix, None, plain.runtime)[0]["kv-cache"]


def test_simulated_ttft_drops_by_more_than_a_quarter_at_half_hits():
    """Done when: a 50 % prefix hit rate cuts mean TTFT of 4096-token prompts by more than a quarter."""
    kw = dict(rate=2, requests=120, input_len=4096, output_len=64, seed=0)
    base = simulate(dep8(), **kw).summary
    half = simulate(dep8(prefix_hit_rate=0.5), **kw).summary
    assert half["ttft_ms_mean"] < 0.75 * base["ttft_ms_mean"]
    # every request after the first finds 2048 of its 4096 tokens: (119·2048)/(120·4096) = 0.4958
    assert half["prefix_hit_rate"] == pytest.approx(119 * 2048 / (120 * 4096), rel=1e-9)
    assert base["prefix_hit_rate"] == 0.0


def _trace(n, prefixes, plen=2048, gap=0.5, input_len=4096):
    return [Request(i, i * gap, input_len, 32, prefix_id=i % prefixes, prefix_len=plen) for i in range(n)]


def test_hits_need_the_prefix_resident_and_eviction_frees_it():
    dep = dep8()
    big = simulate(dep, trace=_trace(40, 4)).summary
    # 4 prefixes, each missed once: 36 of 40 requests hit 2048 tokens
    assert big["prefix_hit_rate"] == pytest.approx(36 * 2048 / (40 * 4096), rel=1e-9)
    # a pool of 300 blocks (4800 tokens) holds one running request (4096 + 32 tokens = 258 blocks) and few
    # cached blocks: the next request's prefix (another id) evicts the previous one's, so it never hits
    small = simulate(dep, trace=_trace(40, 4), num_blocks=300).summary
    assert small["prefix_hit_rate"] == 0.0
    assert small["completed"] == 40 and small["preemptions"] == 0
    # one prefix shared by all: it stays resident (referenced by the running request) and hits
    one = simulate(dep, trace=_trace(40, 1), num_blocks=300).summary
    assert one["prefix_hit_rate"] == pytest.approx(39 * 2048 / (40 * 4096), rel=1e-9)


def test_engine_without_prefix_caching_has_no_hits():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.6.3")
    assert not dep.runtime.prefix_caching                         # vLLM 0.6.3: enable_prefix_caching False
    r = simulate(dep, trace=_trace(10, 1, plen=512, input_len=1024)).summary  # no chunked prefill there
    assert r["prefix_hit_rate"] is None and any("without prefix caching" in n for n in r["notes"])
    on = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="vllm@0.6.3",
                         engine_options={"prefix_hit_rate": 0.5})
    assert on.runtime.prefix_caching and any("prefix caching turned on" in n for n in on.warnings)


def test_trace_prefix_columns(tmp_path):
    from inferbound.sim import read_trace
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,input_len,output_len,prefix_id,prefix_len\n0,100,10,3,50\n1,100,10,,\n")
    a, b = read_trace(f)
    assert (a.prefix_id, a.prefix_len) == (3, 50) and (b.prefix_id, b.prefix_len) == (-1, 0)
    bad = tmp_path / "b.csv"
    bad.write_text("arrival_s,input_len,output_len,prefix_id,prefix_len\n0,100,10,3,500\n")
    with pytest.raises(ValueError, match="line 2: prefix_len=500 must be <= input_len=100"):
        read_trace(bad)
    half = tmp_path / "h.csv"
    half.write_text("arrival_s,input_len,output_len,prefix_id\n0,100,10,3\n")
    with pytest.raises(ValueError, match="prefix_len is missing"):
        read_trace(half)


@pytest.mark.parametrize("opts, words", [
    ({"prefix_hit_rate": 1.5}, ("prefix_hit_rate=1.5", "[0, 1]")),
    ({"prefix_hit_rate": -0.1}, ("prefix_hit_rate=-0.1",)),
    ({"shared_prefix_len": 10.5}, ("shared_prefix_len=10.5", "integer")),
    ({"prefix_hit_rate": 0.5, "shared_prefix_len": 100}, ("given together",)),
])
def test_bad_values_name_the_field(opts, words):
    with pytest.raises(ValueError) as e:
        dep8(**opts)
    assert "\n" not in str(e.value)
    for w in words:
        assert w in str(e.value)


def test_cli_rejects_a_hit_rate_above_one():
    from typer.testing import CliRunner

    from cli_helpers import assert_one_line_error
    from inferbound.cli import app
    assert_one_line_error(CliRunner().invoke(app, ["simulate", "llama-3.1-8b", "--prefix-hit-rate", "1.5"]),
                          "prefix_hit_rate", "<= 1")


def test_no_block_leaks_under_pressure_and_preemption():
    """Every block ends free or in the cache: run with a tight pool (preemptions, evictions) and check
    free + cached == pool size on every replica."""
    dep = dep8(prefix_hit_rate=0.5)
    res = simulate(dep, rate=float("inf"), requests=40, input_len=2048, output_len=256, num_blocks=700, seed=1)
    assert res.summary["completed"] == 40 and res.summary["preemptions"] > 0
    for rep in res.run.replicas:
        assert rep.pool.free + sum(rep.cache.blocks.values()) == rep.pool.num_blocks
        assert not any(rep.cache.users.get(p) for p in rep.cache.users)   # nobody references a prefix at the end
