"""Serving simulator: low-load latencies equal the step model's, Little's law, no request lost under
overload and preemption, determinism, traces, disaggregated prefill/decode, energy, cost, CLI.

Expected values are computed here: step times straight from ``StepModel.step`` (the simulator's only
price list), bytes and block counts from the model's shapes written out by hand.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import inferbound.cli.simulate_cmd  # noqa: F401  (registers `simulate` on the app)
from inferbound.cli import app
from inferbound.deploy.deployment import make_deployment
from inferbound.deploy.memory import weight_bytes_per_gpu
from inferbound.step.table import StepModel
from inferbound.deploy.topology import link_defaults
from inferbound.sim import Request, poisson, read_trace, simulate
from inferbound.sim.blocks import BlockManager, blocks_for, kv_capacity_blocks

REL = 1e-9


@pytest.fixture(scope="module")
def dep8b():
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm")


@pytest.fixture(scope="module")
def sm8b(dep8b):
    return StepModel(dep8b, 8192)


def t_step(sm, dec=(), chunks=()):
    return sm.step(np.asarray(dec, dtype=float), list(chunks))[0]


# -- (a) low load: one request at a time ---------------------------------------------------------------

LOW_SEED = 2  # with this seed the 20 arrivals at 0.01 req/s are >= 7 s apart (checked below)


@pytest.fixture(scope="module")
def low_load(dep8b):
    return simulate(dep8b, rate=0.01, requests=20, input_len=512, output_len=32, seed=LOW_SEED)


def test_low_load_ttft_and_itl_equal_single_request_steps(low_load, sm8b):
    P, O = 512, 32
    req = low_load.requests()
    assert np.diff(req["arrival_s"]).min() > 10 * req["e2e_s"].max()  # really one request at a time
    ttft = t_step(sm8b, chunks=[(0, P)])  # one prefill step of the whole prompt (512 <= 8192 budget)
    itl = np.array([t_step(sm8b, dec=[P + j]) for j in range(O - 1)])  # decode with P+j cached tokens
    np.testing.assert_allclose(req["ttft_s"], ttft, rtol=REL)
    np.testing.assert_allclose(req["tpot_s"], itl.mean(), rtol=REL)
    np.testing.assert_allclose(req["e2e_s"], ttft + itl.sum(), rtol=REL)
    gaps = np.sort(low_load.run.ledger.gap_values())
    np.testing.assert_allclose(gaps, np.sort(np.tile(itl, 20)), rtol=REL)
    s = low_load.summary
    assert s["completed"] == 20 and s["preemptions"] == 0 and s["max_waiting"] == 0
    assert s["ttft_ms_p99"] == pytest.approx(ttft * 1e3, rel=REL)
    assert s["itl_ms_mean"] == pytest.approx(itl.mean() * 1e3, rel=REL)


def test_long_prompt_is_chunked_under_the_token_budget(dep8b):
    """3000-token prompts with a 1024-token budget: TTFT = three chunk steps (1024, 1024, 952)."""
    sm = StepModel(dep8b, 1024)
    r = simulate(dep8b, rate=0.01, requests=5, input_len=3000, output_len=4, seed=LOW_SEED,
                 max_num_batched_tokens=1024, max_num_seqs=64)
    ttft = t_step(sm, chunks=[(0, 1024)]) + t_step(sm, chunks=[(1024, 1024)]) + t_step(sm, chunks=[(2048, 952)])
    np.testing.assert_allclose(r.requests()["ttft_s"], ttft, rtol=REL)
    assert r["steps"] == 5 * (3 + 3)  # three prefill chunks and three decode steps each


def test_energy_and_cost_at_low_load(low_load, sm8b, dep8b):
    P, O, n = 512, 32, 20
    steps = [sm8b.step(np.zeros(0), [(0, P)])] + [sm8b.step(np.array([P + j], dtype=float), []) for j in range(O - 1)]
    busy_j = n * sum(t * w for t, w in steps)  # one GPU
    busy_s = n * sum(t for t, _ in steps)
    s = low_load.summary
    D = s["duration_s"]
    assert s["busy_energy_j"] == pytest.approx(busy_j, rel=1e-9)
    assert s["idle_energy_j"] == pytest.approx(dep8b.gpu.power.idle_w * (D - busy_s), rel=1e-9)
    assert s["joules_per_output_token"] == pytest.approx(s["energy_j"] / (n * O), rel=1e-12)
    assert s["output_tokens_per_joule"] == pytest.approx(n * O / s["energy_j"], rel=1e-12)
    assert s["average_power_w"] == pytest.approx(s["energy_j"] / D, rel=1e-12)
    price = dep8b.gpu.price_per_hour / 3600  # $/s of one GPU
    assert s["usd_per_million_output_tokens"] == pytest.approx(price * D / (n * O) * 1e6, rel=1e-9)
    assert s["usd_per_million_input_tokens"] == pytest.approx(price * n * steps[0][0] / (n * P) * 1e6, rel=1e-9)


def test_energy_per_output_token_falls_with_load(dep8b):
    """Memory-bound decode: a bigger batch reads the same weights for more tokens."""
    lo = simulate(dep8b, rate=1, requests=200, input_len=512, output_len=128, seed=1)
    hi = simulate(dep8b, rate=20, requests=200, input_len=512, output_len=128, seed=1)
    assert hi["mean_running"] > 3 * lo["mean_running"]
    assert hi["joules_per_output_token"] < 0.7 * lo["joules_per_output_token"]
    assert hi["busy_energy_j"] / hi["output_tokens"] < lo["busy_energy_j"] / lo["output_tokens"]


# -- KV pool size --------------------------------------------------------------------------------------

def test_kv_capacity_blocks_by_hand(dep8b):
    """The default engine (engines.yaml: vLLM 0.33.0 on an H100, 85,045,477,376 B as CUDA reports it): block 16, token budget 8192,
    max_num_seqs 1024, gpu_memory_utilization 0.92 of all memory."""
    # Llama-3.1-8B: 32 layers, 8 KV heads of 128, bf16 -> K and V: 2*8*128*2 B = 4096 B per token and layer
    block = 16 * 2 * 8 * 128 * 2 * 32
    # activations of an 8192-token step: T*(4d + 2ff + (h + 2kv)*hd)*2 B + 1024 logits rows of fp32 vocab
    act = 8192 * (4 * 4096 + 2 * 14336 + (32 + 16) * 128) * 2 + 1024 * 128256 * 4
    free = 85_045_477_376 * 0.92 - weight_bytes_per_gpu(dep8b.model, dep8b.dtypes, dep8b.par) - act - 1e9
    rt = dep8b.runtime
    assert (rt.block_size, rt.token_budget, rt.max_num_seqs, rt.memory_fraction) == (16, 8192, 1024, 0.92)
    assert kv_capacity_blocks(dep8b, rt) == math.floor(free / block)


def test_block_manager():
    assert [blocks_for(t, 16) for t in (0, 1, 16, 17, 32, 33)] == [0, 1, 1, 2, 2, 3]
    pool = BlockManager(10, 16)
    pool.allocate(7)
    assert pool.free == 3 and pool.used() == 7
    with pytest.raises(RuntimeError):
        pool.allocate(4)
    pool.release(7)
    with pytest.raises(RuntimeError):
        pool.release(1)
    with pytest.raises(ValueError, match="block_size=0"):
        BlockManager(10, 0)


# -- (b) Little's law ------------------------------------------------------------------------------------

def test_littles_law_on_the_simulated_system(dep8b):
    r = simulate(dep8b, rate=12, requests=4000, input_len=256, output_len=128, seed=3)
    req = r.requests()
    a, f = req["arrival_s"], req["finish_s"]
    assert r["mean_running"] > 5  # a loaded system, not one request at a time
    # steady-state window: the middle 60% of the arrival span
    T1, T2 = np.quantile(a, 0.2), np.quantile(a, 0.8)
    L = np.clip(np.minimum(f, T2) - np.maximum(a, T1), 0, None).sum() / (T2 - T1)  # ∫ N(t) dt / window
    inside = (a >= T1) & (a < T2)
    lam = inside.sum() / (T2 - T1)
    W = (f - a)[inside].mean()
    assert L == pytest.approx(lam * W, rel=0.02)
    # the event loop's own integral of requests in system equals the per-request sojourns
    D = f.max() - a.min()
    assert r["little_L"] == pytest.approx((f - a).sum() / D, rel=1e-9)
    assert r["little_ratio"] == pytest.approx(1.0, rel=1e-9)


# -- (c) overload and preemption -------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["recompute", "swap"])
def test_overload_with_tiny_kv_pool_loses_nothing(dep8b, policy):
    P, O, n = 64, 256, 30
    need = blocks_for(P + O - 1, 16)  # 20 blocks for one request alone; 6 prompts of 4 blocks fill 24
    r = simulate(dep8b, rate=math.inf, requests=n, input_len=P, output_len=O, num_blocks=need + 4,
                 preemption=policy)
    s = r.summary
    assert s["submitted"] == s["completed"] == n and s["in_flight"] == 0
    assert s["preemptions"] > 0
    assert s["max_kv_blocks_used"] <= need + 4
    req = r.requests()
    assert np.all(req["arrival_s"] <= req["first_token_s"]) and np.all(req["first_token_s"] <= req["finish_s"])
    # every token after the first is emitted exactly once: no duplicates from recomputation
    assert r.run.ledger.gap_values().size == n * (O - 1)
    assert np.all(r.run.ledger.gap_values() > 0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["recompute", "swap"]),
       disagg=st.booleans(), spare=st.integers(0, 30), rate=st.sampled_from([5.0, 50.0, math.inf]))
def test_property_every_request_leaves_with_all_its_tokens(dep8b, seed, policy, disagg, spare, rate):
    """Random lengths, tiny pools, both policies, both modes: all finish, each token once, pool respected."""
    reqs = poisson(rate, 25, 40, 30, seed=seed, input_dist="uniform:1:120", output_dist="uniform:1:60")
    need = max(blocks_for(r.input_len + r.output_len - 1, 16) for r in reqs)
    kw = dict(prefill_replicas=1, decode_replicas=2) if disagg else {}
    r = simulate(dep8b, trace=reqs, num_blocks=need + spare, preemption=policy, max_num_batched_tokens=128,
                 max_num_seqs=16, **kw)
    ledger = r.run.ledger
    assert r["completed"] == r["submitted"] == 25 and r["in_flight"] == 0
    assert ledger.generated == ledger.output  # every request produced all its tokens
    assert ledger.gap_values().size == sum(o - 1 for o in ledger.output)  # ...each exactly once
    assert r["max_kv_blocks_used"] <= need + spare
    assert all(p.pool.used() == 0 for p in r.run.replicas)  # every block returned
    assert r["little_ratio"] == pytest.approx(1.0, rel=1e-9)


def test_swap_and_recompute_cost_differently(dep8b):
    kw = dict(rate=math.inf, requests=30, input_len=64, output_len=256, num_blocks=24)
    rec, swp = simulate(dep8b, preemption="recompute", **kw), simulate(dep8b, preemption="swap", **kw)
    # recompute redoes prompt+output tokens as prefill; swap only copies blocks: more prefill tokens
    pre = lambda r: r.timeline()["prefill_tokens"].sum()  # noqa: E731
    assert pre(rec) > pre(swp) == 30 * 64
    assert swp["preemptions"] > 0 and swp["e2e_ms_mean"] != rec["e2e_ms_mean"]


def test_multiple_replicas_split_the_load(dep8b):
    one = simulate(dep8b, rate=math.inf, requests=40, input_len=256, output_len=32)
    two = simulate(dep8b, rate=math.inf, requests=80, input_len=256, output_len=32, replicas=2)
    # fewest-outstanding dispatch alternates, so each of two replicas runs exactly the 40-request batch
    assert two["duration_s"] == pytest.approx(one["duration_s"], rel=1e-12)
    assert two["num_gpus"] == 2 and two["completed"] == 80


# -- (d) determinism ---------------------------------------------------------------------------------------

def test_same_seed_same_result_other_seed_other_arrivals(dep8b):
    kw = dict(rate=8, requests=150, input_len=200, output_len=40, input_dist="uniform:50:400",
              output_dist="exponential")
    a, b, c = simulate(dep8b, seed=7, **kw), simulate(dep8b, seed=7, **kw), simulate(dep8b, seed=8, **kw)
    assert a.to_dict() == b.to_dict()
    assert not np.array_equal(a.requests()["arrival_s"], c.requests()["arrival_s"])
    assert a.to_dict() != c.to_dict()


def test_poisson_generator():
    reqs = poisson(4.0, 20000, 100, 10, seed=1)
    gaps = np.diff([0.0] + [r.arrival_s for r in reqs])
    assert gaps.mean() == pytest.approx(0.25, rel=0.03)  # exponential gaps of mean 1/rate
    assert gaps.std() == pytest.approx(0.25, rel=0.03)
    assert all(r.arrival_s == 0 for r in poisson(math.inf, 5, 10, 10))
    u = poisson(1.0, 5000, 0 + 1, 1, seed=0, input_dist="uniform:10:20")
    lens = np.array([r.input_len for r in u])
    assert lens.min() == 10 and lens.max() == 20
    e = np.array([r.output_len for r in poisson(1.0, 20000, 1, 300, seed=0, output_dist="exponential")])
    assert e.min() >= 1 and e.mean() == pytest.approx(300.5, rel=0.03)  # ceil adds ~1/2


@pytest.mark.parametrize("kw, words", [
    (dict(rate=0), ["rate=0.0"]), (dict(requests=0), ["requests=0"]), (dict(input_len=0), ["input=0"]),
    (dict(input_dist="gamma:2"), ["input_dist='gamma:2'", "allowed"]),
    (dict(output_dist="uniform:5:1"), ["output_dist='uniform:5:1'"]),
])
def test_generator_errors_name_the_field(kw, words):
    args = dict(rate=1.0, n=5, input_len=10, output_len=10) | {("n" if k == "requests" else k): v for k, v in kw.items()}
    with pytest.raises(ValueError) as e:
        poisson(**args)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize("kw, word", [
    (dict(preemption="foo"), "preemption='foo'"), (dict(max_num_seqs=300, max_num_batched_tokens=256), "max_num_seqs=300"),
    (dict(prefill_replicas=1), "decode_replicas=0"), (dict(block_size=0), "block_size=0"),
    (dict(slo_ttft_ms=-1), "slo_ttft_ms=-1"), (dict(num_blocks=3, input_len=100), "needs 7 KV blocks"),
])
def test_simulate_errors_are_one_line(dep8b, kw, word):
    with pytest.raises(ValueError) as e:
        simulate(dep8b, **({"rate": 1, "requests": 3, "input_len": 10, "output_len": 5} | kw))
    assert word in str(e.value) and "\n" not in str(e.value)


# -- (e) traces ---------------------------------------------------------------------------------------------

def test_trace_csv_and_jsonl_round_trip(tmp_path, dep8b):
    rows = [(0.0, 100, 10), (0.5, 300, 20), (0.25, 50, 5)]
    csv_path = tmp_path / "t.csv"
    csv_path.write_text("arrival_s,input_len,output_len\n" + "".join(f"{a},{i},{o}\n" for a, i, o in rows))
    jl_path = tmp_path / "t.jsonl"
    jl_path.write_text("".join(json.dumps({"timestamp": a, "input_len": i, "output_len": o}) + "\n" for a, i, o in rows))
    expected = [Request(k, *r) for k, r in enumerate(rows)]
    assert read_trace(csv_path) == expected == read_trace(jl_path)
    res = simulate(dep8b, trace=csv_path)
    req = res.requests()
    assert res["completed"] == 3 and res["input_tokens"] == 450 and res["output_tokens"] == 35
    assert list(req["id"]) == [0, 2, 1]  # served in arrival order, ids kept
    assert simulate(dep8b, trace=jl_path).to_dict() == res.to_dict()


@pytest.mark.parametrize("text, name, words", [
    ("arrival_s,input_len,output_len\n0,10,5\n1,abc,5\n", "bad.csv", ["line 3", "input_len='abc'"]),
    ("arrival_s,input_len,output_len\n-1,10,5\n", "neg.csv", ["line 2", "arrival_s='-1'"]),
    ("time,input_len,output_len\n0,10,5\n", "hdr.csv", ["line 1", "header"]),
    ('{"arrival_s": 0, "input_len": 5, "output_len": 2}\n{"arrival_s": 1, "input_len": 5}\n', "bad.jsonl",
     ["line 2", "output_len is missing"]),
    ('{"arrival_s": 0, "input_len": 5, "output_len": 0}\n', "zero.jsonl", ["line 1", "output_len=0"]),
])
def test_bad_trace_line_names_line_and_field(tmp_path, text, name, words):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ValueError) as e:
        read_trace(p)
    for w in words:
        assert w in str(e.value)


# -- (f) disaggregated prefill/decode ------------------------------------------------------------------------

def test_disaggregated_low_load_first_gap_carries_the_kv_transfer(dep8b, sm8b):
    P, O, n = 1000, 8, 10
    r = simulate(dep8b, rate=0.01, requests=n, input_len=P, output_len=O, seed=LOW_SEED,
                 prefill_replicas=1, decode_replicas=1)
    net = link_defaults()["network"]
    kv_bytes = P * 2 * 8 * 128 * 2 * 32  # prompt KV of Llama-3.1-8B at bf16, TP1: whole cache on one GPU
    transfer = kv_bytes / (dep8b.gpu.scaleout_bw * net["efficiency"]) + net["latency_s"]
    ttft = t_step(sm8b, chunks=[(0, P)])  # first token comes from the prefill replica: no transfer in it
    itl = [transfer + t_step(sm8b, dec=[P])] + [t_step(sm8b, dec=[P + j]) for j in range(1, O - 1)]
    req = r.requests()
    np.testing.assert_allclose(req["ttft_s"], ttft, rtol=REL)
    np.testing.assert_allclose(np.sort(r.run.ledger.gap_values()), np.sort(np.tile(itl, n)), rtol=REL)
    np.testing.assert_allclose(req["e2e_s"], ttft + sum(itl), rtol=REL)
    assert r["kv_transfer_ms_mean"] == pytest.approx(transfer * 1e3, rel=REL)
    assert r["mode"] == "disaggregated" and r["num_gpus"] == 2 and r["completed"] == n


def test_disaggregated_overload_loses_nothing(dep8b):
    r = simulate(dep8b, rate=math.inf, requests=40, input_len=64, output_len=256, prefill_replicas=2,
                 decode_replicas=1, num_blocks=40)
    assert r["completed"] == 40 and r["preemptions"] > 0 and r["kv_transfers"] == 40
    assert r.run.ledger.gap_values().size == 40 * 255


# -- goodput, progress ------------------------------------------------------------------------------------------

def test_goodput_counts_requests_meeting_every_slo(dep8b):
    r = simulate(dep8b, rate=math.inf, requests=60, input_len=512, output_len=32, max_num_batched_tokens=2048,
                 slo_ttft_ms=100, slo_e2e_ms=800)
    req = r.requests()
    ok = (req["ttft_s"] <= 0.1) & (req["e2e_s"] <= 0.8)
    assert 0 < ok.sum() < 60  # the SLOs split this run
    assert r["slo_met"] == ok.sum()
    assert r["goodput_rps"] == pytest.approx(ok.sum() / r["duration_s"], rel=1e-12)


def test_progress_callback_reaches_total(dep8b):
    seen = []
    simulate(dep8b, rate=50, requests=400, input_len=64, output_len=8, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (400, 400) and len(seen) > 10
    assert all(b[0] >= a[0] for a, b in zip(seen, seen[1:]))


def test_plot_writes_png(tmp_path, low_load):
    from inferbound.sim.plot import plot_run
    p = plot_run(low_load, tmp_path / "sim.png")
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- (g) CLI -------------------------------------------------------------------------------------------------------

def test_cli_simulate_json():
    r = CliRunner().invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100_sxm", "--rate", "2", "--requests", "50",
                                 "--input", "256", "--output", "64", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["completed"] == 50 and d["ttft_ms_p99"] > 0 and d["itl_ms_p50"] > 0
    assert "timeline" not in d


def test_cli_simulate_table_and_plot(tmp_path):
    png = tmp_path / "p.png"
    r = CliRunner().invoke(app, ["simulate", "--rate", "inf", "--requests", "20", "--input", "128", "--output", "16",
                                 "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert "TTFT" in r.output and "Little" in r.output and png.stat().st_size > 1000


@pytest.mark.parametrize("args, word", [(["--preemption", "foo"], "preemption='foo'"),
                                        (["--plot", "x.svg"], "--plot='x.svg'"),
                                        (["--trace", "/nonexistent.csv"], "trace=")])
def test_cli_simulate_errors_one_line(args, word):
    r = CliRunner().invoke(app, ["simulate", "--requests", "5", *args])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and word in lines[0], r.stderr


def test_prefill_swapped_out_one_token_short_is_not_a_resumed_decode(dep8b):
    """A prompt swapped out with all but one of its tokens cached (total - cached = 1) looks like a
    resumed decode by its counts; it has emitted no token yet, so it must prefill its last token and emit
    its first token then, not enter the decode batch and record a gap from a first token it never had.
    The case below (found by the property test above) swaps such a prompt out and back in."""
    reqs = poisson(math.inf, 25, 40, 30, seed=10000, input_dist="uniform:1:120", output_dist="uniform:1:60")
    need = max(blocks_for(r.input_len + r.output_len - 1, 16) for r in reqs)
    r = simulate(dep8b, trace=reqs, num_blocks=need + 8, preemption="swap", max_num_batched_tokens=128,
                 max_num_seqs=16)
    ledger = r.run.ledger
    assert r.summary["preemptions"] > 0
    gaps = ledger.gap_values()
    assert gaps.size == sum(o - 1 for o in ledger.output) and np.all(np.isfinite(gaps)) and np.all(gaps > 0)


def test_events_pop_by_time_then_push_order():
    """The event loop's heap holds named events (StepEnd, KVArrival) ordered as tuples: by time, then by
    push order, so the replica and the payload are never compared."""
    import heapq

    from inferbound.sim.event_loop import KVArrival, StepEnd
    events = [StepEnd(1.0, 2, None, [], []), KVArrival(1.0, 1, None, 4, 3), StepEnd(0.5, 3, None, [7], [])]
    heap: list = []
    for e in events:
        heapq.heappush(heap, e)
    popped = [heapq.heappop(heap) for _ in events]
    assert [(e.t, e.seq) for e in popped] == [(0.5, 3), (1.0, 1), (1.0, 2)]
    assert type(popped[1]) is KVArrival and (popped[1].rid, popped[1].blocks) == (4, 3)
    assert popped[0].finished == [7]
