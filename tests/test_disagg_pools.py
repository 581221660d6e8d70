"""Disaggregated pools with their own layouts (deploy/pools.py), the analytic pair (workloads/disagg.py) and the
simulator's KV link queue (sim/transfers.py, sim/event_loop.py), against figures worked out by hand.

Llama-3.1-8B (config.json): 32 layers, 8 KV heads of 128, bf16 KV: one token's KV is
32 x 2 (K, V) x 8 x 128 x 2 bytes = 131,072 B; a 1,000-token prompt 131,072,000 B on one TP1 GPU.
H100 SXM: 400 Gb/s NIC per GPU = 50e9 B/s (data/hardware.yaml), network efficiency 0.85 and step latency
8 us (data/links.yaml): 42.5e9 B/s effective; the prompt alone takes 131,072,000 / 42.5e9 + 8e-6 s.
"""
from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from cli_helpers import assert_one_line_error
from inferbound import make_deployment
from inferbound.cli import app
from inferbound.deploy.pools import parse_layout, pool_deployment
from inferbound.deploy.topology import link_defaults
from inferbound.sim import simulate
from inferbound.sim.transfers import Transfers
from inferbound.step import contract as C
from inferbound.workloads.disagg import disaggregated, transfer

KV_1000 = 1000 * 32 * 2 * 8 * 128 * 2  # bytes of a 1,000-token prompt of Llama-3.1-8B at bf16
BW = 50e9 * 0.85  # H100 NIC line rate x data/links.yaml network efficiency


@pytest.fixture(scope="module")
def dep8b():
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm")


def test_hand_constants_match_the_data_files(dep8b):
    net = link_defaults()["network"]
    assert dep8b.gpu.scaleout_bw == 50e9 and net["efficiency"] == 0.85 and net["latency_s"] == 8e-6
    assert KV_1000 == 131_072_000


# -- layouts --------------------------------------------------------------------------------------------------

def test_parse_layout_and_its_errors():
    assert parse_layout("tp=1,dp=32,ep=32,attention_dp=1,nodes=4,redundant_experts=32") == dict(
        tp=1, dp=32, ep=32, attention_dp=True, nodes=4, redundant_experts=32)
    assert parse_layout(None) == {} and parse_layout({"tp": "2"}) == {"tp": 2}
    for bad, words in (("tp", ["'tp'", "KEY=VALUE"]), ("foo=1", ["'foo'", "tp, pp, ep"]),
                       ("tp=1.5", ["tp='1.5'", "integer"]), ("attention_dp=maybe", ["attention_dp", "1/0"])):
        with pytest.raises(ValueError) as e:
            parse_layout(bad, "decode_layout")
        assert "\n" not in str(e.value) and "decode_layout" in str(e.value)
        for w in words:
            assert w in str(e.value), str(e.value)


def test_a_pool_is_the_deployment_under_its_own_layout(dep8b):
    """The pool equals make_deployment with that layout: same weights per GPU, KV room and step prices."""
    pool = pool_deployment(dep8b, "tp=2", "prefill_layout")
    direct = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2)
    assert pool.par == direct.par and pool.weight_bytes_per_gpu == direct.weight_bytes_per_gpu
    assert pool.kv_capacity_bytes == direct.kv_capacity_bytes
    with pytest.raises(ValueError, match="^decode_layout: tp=3 must divide num_heads=32"):
        pool_deployment(dep8b, "tp=3", "decode_layout")


def test_pools_with_different_tp_price_different_steps():
    """Llama-3.1-70B, prefill pool TP8, decode pool TP4, I = 2000, O = 200. Prefill: k = floor(8192/2000) = 4
    prompts per step (vLLM's 8192-token budget), X_p = 4·2000/t_p; decode at 32 sequences and context
    2000 + 199/2 = 2099.5, X_d = 32/t_d. Each pool's step is the contract's price on its own layout."""
    base = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=8)
    r = disaggregated(base, "tp=8", "tp=4", 2000, 200, decode_batch=32)
    tp8 = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=8)
    tp4 = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4)
    assert tp8.runtime.token_budget == 8192
    t_p8 = float(C.price(tp8, C.uniform(tp8.model, prompts=4, new=2000), "stream").time)
    t_p4 = float(C.price(tp4, C.uniform(tp4.model, prompts=4, new=2000), "stream").time)
    t_d4 = float(C.price(tp4, C.uniform(tp4.model, decode=32, context=2099.5), "stream").time)
    t_d8 = float(C.price(tp8, C.uniform(tp8.model, decode=32, context=2099.5), "stream").time)
    assert r.prefill.batch == 4 and r.prefill.step_s == pytest.approx(t_p8, rel=1e-12)
    assert r.decode.step_s == pytest.approx(t_d4, rel=1e-12)
    assert t_p4 > 1.5 * t_p8 and t_d8 < t_d4  # the layouts price differently: TP8 splits the work 8 ways
    assert r.prefill.tok_s == pytest.approx(4 * 2000 / t_p8, rel=1e-12)
    assert r.decode.tok_s == pytest.approx(32 / t_d4, rel=1e-12)
    assert (r.prefill.gpus, r.decode.gpus) == (8, 4)
    cap = min(4 * 2000 / t_p8 / 2000, 32 / t_d4 / 199, r.transfer.max_rate)
    assert r.max_rate == pytest.approx(cap, rel=1e-12) and r.rate == r.max_rate


def test_decode_pool_with_redundant_experts_expresses_ep72():
    base = make_deployment(model="deepseek-v3", gpu="h100_sxm", tp=8, engine="sglang")
    r = disaggregated(base, "tp=1,dp=32,ep=32,attention_dp=1,nodes=4",
                      "tp=1,dp=72,ep=72,attention_dp=1,nodes=9,redundant_experts=32", 2000, 100,
                      prefill_tokens=16384, decode_batch=256, decode_context=2000)
    assert r.prefill.batch == 32 * 16384 // 2000  # 262 prompts of 2000 tokens per step over 32 ranks
    assert r.decode.batch == 72 * 256 and r.decode.nodes == 9
    assert r.decode.tok_s_per_node == pytest.approx(72 * 256 / r.decode.step_s / 9, rel=1e-12)
    with pytest.raises(ValueError, match="decode_layout: ep=72 must divide"):
        disaggregated(base, None, "tp=1,dp=72,ep=72,attention_dp=1,nodes=9", 2000, 100)


# -- KV transfers that contend ------------------------------------------------------------------------------

def test_two_concurrent_transfers_on_one_lane_each_take_twice_as_long():
    """Fair share: n transfers on a lane each move at bw/n. Two of 1 s (at full rate) started together end at
    2 s. Staggered: A (1 s) at 0, B (1 s) at 0.5: A alone until 0.5 (0.5 s of work left), both at half rate
    until A's work is done at 0.5 + 0.5/0.5 = 1.5; B then has 1 − 0.5 = 0.5 left, alone: done at 2.0."""
    links = Transfers({0: 1, 1: 1})
    links.start(0.0, 10, 0, 1, 3, 1.0, 0.0)
    links.start(0.0, 11, 0, 1, 3, 1.0, 0.0)
    assert links.next_done() == pytest.approx(2.0)
    assert sorted(x[0] for x in links.finish(2.0)) == [10, 11] and not links.active

    links = Transfers({0: 1, 1: 1})
    links.start(0.0, 1, 0, 1, 1, 1.0, 0.0)
    links.start(0.5, 2, 0, 1, 1, 1.0, 0.0)
    assert links.next_done() == pytest.approx(1.5)
    assert [x[0] for x in links.finish(1.5)] == [1]
    assert links.next_done() == pytest.approx(2.0)
    assert [x[0] for x in links.finish(2.0)] == [2]


def test_lanes_bound_the_share():
    """A replica with 2 lanes (two attention-DP ranks) carries two transfers at full rate; a third makes each
    2/3 of a lane: three 1 s transfers together end at 1.5 s."""
    links = Transfers({0: 2, 1: 2})
    links.start(0.0, 1, 0, 1, 1, 1.0, 0.0)
    links.start(0.0, 2, 0, 1, 1, 1.0, 0.0)
    assert links.next_done() == pytest.approx(1.0)
    links.start(0.0, 3, 0, 1, 1, 1.0, 0.0)
    assert links.next_done() == pytest.approx(1.5)


def test_simulated_prompts_that_leave_together_share_the_nic(dep8b):
    """Two 1,000-token prompts arrive at t = 0 and are prefilled in one step (2000 < 8192 tokens); their KV then
    leaves one GPU's NIC together: each takes 2 x 131,072,000 / 42.5e9 + 8 us = 6.176 ms (3.092 ms alone)."""
    alone = KV_1000 / BW + 8e-6
    both = 2 * KV_1000 / BW + 8e-6
    assert both == pytest.approx(6.176e-3, abs=1e-6) and alone == pytest.approx(3.092e-3, abs=1e-6)
    r = simulate(dep8b, rate=math.inf, requests=2, input_len=1000, output_len=4, prefill_replicas=1,
                 decode_replicas=2)
    assert r.run.transfer_s == pytest.approx([both, both], rel=1e-9)
    one = simulate(dep8b, rate=math.inf, requests=1, input_len=1000, output_len=4, prefill_replicas=1,
                   decode_replicas=1)
    assert one.run.transfer_s == pytest.approx([alone], rel=1e-9)


def test_analytic_link_utilization_and_queueing(dep8b):
    """One lane each side, S = 3.092 ms: at λ = 0.5/S the lane is busy ρ = 0.5 and a transfer's mean time is
    S/(1 − ρ) = 2S (M/G/1 processor sharing); the lanes carry at most 1/S requests/s."""
    s = KV_1000 / BW + 8e-6
    tr = transfer(dep8b, dep8b, 1000, 0.5 / s)
    assert tr.alone_s == pytest.approx(s, rel=1e-12) and tr.rho == pytest.approx(0.5, rel=1e-12)
    assert tr.sojourn_s == pytest.approx(2 * s, rel=1e-12)
    assert tr.max_rate == pytest.approx(1 / s, rel=1e-12)
    over = transfer(dep8b, dep8b, 1000, 2 / s)
    assert over.rho == pytest.approx(2.0) and over.sojourn_s == math.inf


def test_pair_at_a_rate_past_its_capacity_says_so(dep8b):
    r = disaggregated(dep8b, "tp=1", "tp=1", 1000, 64, rate=1e6)
    assert any("exceeds the pair's capacity" in n for n in r.notes)
    assert r.prefill_busy > 1


# -- the simulator with pools of their own layouts -------------------------------------------------------------

def test_simulated_pools_run_their_own_layouts(dep8b):
    """Prefill TP2, decode TP1: 3 GPUs in all; one request at low load decodes at the TP1 step time (the decode
    pool's own step model), slower than a TP2 decode pool."""
    kw = dict(rate=0.01, requests=3, input_len=500, output_len=6, prefill_replicas=1, decode_replicas=1)
    r1 = simulate(dep8b, prefill_layout="tp=2", decode_layout="tp=1", **kw)
    r2 = simulate(dep8b, prefill_layout="tp=2", decode_layout="tp=2", **kw)
    assert r1["num_gpus"] == 3 and r2["num_gpus"] == 4
    assert r1["decode_layout"].startswith("1x h100_sxm TP1") and r1["prefill_layout"].startswith("2x h100_sxm TP2")
    assert r1["ttft_ms_mean"] == pytest.approx(r2["ttft_ms_mean"], rel=1e-9)  # same prefill pool
    assert r1["tpot_ms_mean"] > 1.2 * r2["tpot_ms_mean"]
    # TP2's receiving GPU holds half the KV: 500 x 131,072 / 2 bytes; the sender's TP2 shard is the same
    assert r2["kv_transfer_ms_mean"] == pytest.approx((500 * 131_072 / 2 / BW + 8e-6) * 1e3, rel=1e-9)


def test_cli_pool_layouts():
    r = CliRunner().invoke(app, ["simulate", "--requests", "5", "--prefill-replicas", "1", "--decode-replicas", "1",
                                 "--decode-layout", "tp=3"])
    assert_one_line_error(r, "decode_layout", "tp=3")
    r = CliRunner().invoke(app, ["simulate", "--requests", "5", "--decode-layout", "tp=1"])
    assert_one_line_error(r, "decode_layout", "prefill_replicas")
    r = CliRunner().invoke(app, ["simulate", "--requests", "5", "--input", "256", "--output", "8", "--prefill-replicas",
                                 "1", "--decode-replicas", "1", "--prefill-layout", "tp=2", "--json"])
    assert r.exit_code == 0, r.output


# -- DeepEP's normal all-to-all: once per remote node ------------------------------------------------------------

def test_remote_node_share_by_hand():
    """DeepSeek-V3 at EP32 over 4 nodes: 256 experts, 64 per node, top-8. A token misses a given node with
    P = (192·191·…·185)/(256·255·…·249) = 0.09645; it reaches 3·(1 − P) = 2.7107 remote nodes on average,
    2.7107/8 = 0.3388 of its 8 copies' bytes (pairwise: 24/32 = 0.75 of them)."""
    from inferbound.pricing.comm import remote_node_share
    p = 1.0
    for a, b in zip(range(192, 184, -1), range(256, 248, -1)):
        p *= a / b
    assert p == pytest.approx(0.09645, abs=1e-5)
    assert 3 * (1 - p) / 8 == pytest.approx(0.3388, abs=1e-4)
    assert remote_node_share(256, 8, 4) == pytest.approx(3 * (1 - p) / 8, rel=1e-12)
    assert remote_node_share(256, 8, 1) == 0.0  # one node: nothing crosses the network
    assert remote_node_share(8, 2, 8) == pytest.approx(7 * (1 - (7 / 8) * (6 / 7)) / 2)  # E/N = 1 expert a node


def test_deepep_dispatch_priced_once_per_remote_node():
    """EP32 attention-DP32 over 4 H100 nodes, 16,384 tokens per GPU: S = 16,384·8·7,168·2 B (bf16 values) =
    1,879,048,192 B per GPU. Network leg: 0.3388·S / 42.5e9 + 3·8 us; pairwise: 24/32·S / 42.5e9 + 3·8 us."""
    from inferbound.pricing.collectives import comm_pricer_of
    from inferbound.pricing.comm import remote_node_share
    kw = dict(model="deepseek-v3", gpu="h100_sxm", tp=1, dp=32, ep=32, attention_dp=True, nodes=4, engine="sglang")
    S = 16384 * 8 * 7168 * 2
    assert S == 1_879_048_192
    for a2a, share in (("deepep", remote_node_share(256, 8, 4)), ("pairwise", 24 / 32)):
        dep = make_deployment(ep_a2a=a2a, **kw)
        from inferbound.operators import body_ops
        ops = body_ops(dep.model, dep.dtypes, dep.par, 32 * 16384.0, list(dep.model.layers), True, True, 1.2)
        op = next(o for o in ops if o.name == "moe_dispatch_all_to_all")
        assert op.comm["bytes"] == pytest.approx(S, rel=1e-12)
        t, how = comm_pricer_of(dep)(op)
        assert float(t) == pytest.approx(share * S / 42.5e9 + 3 * 8e-6, rel=1e-9), how
    with pytest.raises(ValueError, match="ep_a2a='nccl' unknown; allowed: pairwise, deepep"):
        make_deployment(ep_a2a="nccl", **kw)


def test_published_disaggregated_points_within_25_percent():
    """benchmarks/disagg_dsv3.py: the configurations their authors ran (LMSYS 2025-05-05, 96 H100: prefill
    57,674 / 54,543 / 50,302 input tok/s per node at 1K/2K/4K prompts, decode 22,282 output tok/s per node;
    LMSYS 2025-06-16, GB200 NVL72 decode: 7,583 output tok/s per GPU) predicted within ±25 %."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "disagg_dsv3.py"
    spec = importlib.util.spec_from_file_location("disagg_dsv3", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ran = [r for r in mod.rows() if r["ran"]]
    published = sorted(r["published"] for r in ran)
    assert published == [7583.0, 22282.0, 50302.0, 54543.0, 57674.0]
    for r in ran:
        assert 0.75 <= r["predicted"] / r["published"] <= 1.25, r


def test_decode_batch_at_a_rate_is_littles(dep8b):
    """At λ = 5 req/s with O = 64, a decode replica holds D = λ·(O − 1)·t_d(D) sequences (each decodes 63
    steps); TPOT is the step at that D (context 1000 + 63/2), and the load λ/(X_d/(O − 1)) uses the capped X_d."""
    r = disaggregated(dep8b, "tp=1", "tp=1", 1000, 64, rate=5.0)
    D = r.decode.batch
    t = float(C.price(dep8b, C.uniform(dep8b.model, decode=D, context=1031.5), "stream").time)
    assert r.decode.step_s == pytest.approx(t, rel=1e-12)
    assert D == pytest.approx(5.0 * 63 * t, rel=1e-6)
    assert r.decode_busy == pytest.approx(5.0 * 63 / r.decode_capacity_tok_s, rel=1e-12)
    assert r.decode.cap == "Little's law at the rate" and r.decode_capacity_tok_s > r.decode.tok_s
