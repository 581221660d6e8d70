"""Closed loops as the benchmarks run them (issue 19, item 2): think time in the simulator (sim/sources.py)
and the analytic wave model of back-to-back clients (workloads/closed_loop.py, through serving.py)."""
from __future__ import annotations

import numpy as np
import pytest

from inferbound import make_deployment
from inferbound.sim import simulate
from inferbound.sim.config import sim_config
from inferbound.sim.event_loop import simulate_run
from inferbound.sim.sources import ClosedLoop as Clients
from inferbound.step.contract import uniform
from inferbound.workloads.closed_loop import ClosedLoop, first_wave, group_size
from inferbound.workloads.requests import poisson
from inferbound.workloads.serving import _Replica, serving
from inferbound.workloads.steady_state import as_mix


@pytest.fixture(scope="module")
def dep():
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm")


# --- think time in the simulator ------------------------------------------------------------------

def test_more_think_time_lowers_the_load_and_ttft(dep):
    """Before the fix a fixed think time kept the clients in lockstep: every round found the engine idle
    and TTFT was the same for every Z > 0. Exponential think times spread the arrivals: the longer the
    mean think time, the fewer clients in service, the lower (or equal) TTFT and the fewer requests/s.
    (Not a law for every Z: a think time far below the cycle keeps the load but takes arrivals off the step
    boundaries that back-to-back clients land on; at 64 clients, 1024/256, TTFT goes 185 → 376 ms from Z = 0
    to 0.1 s before it falls, 86 ms at 1 s. At 16 clients the spread already wins at 0.1 s.)"""
    ttft, rps = [], []
    for z in (0.0, 0.1, 1.0, 30.0):
        s = simulate(dep, concurrency=16, think_time=z, requests=400, input_len=1024, output_len=256, seed=0)
        ttft.append(s["ttft_ms_mean"])
        rps.append(s["requests_per_s"])
    assert all(b <= a for a, b in zip(ttft, ttft[1:])), ttft
    assert all(b < a for a, b in zip(rps, rps[1:])), rps
    assert ttft[-1] < 0.5 * ttft[0]  # at 30 s of thought a prompt mostly finds the engine decoding alone


def _run(dep, think: float, seed: int):
    src = Clients(4, think, seed)
    run = simulate_run(dep, poisson(np.inf, 40, 256, 32, 0), sim_config(dep), None, src)
    return src, run


def test_think_times_are_drawn_per_client_from_the_seed(dep):
    src, run = _run(dep, 1.0, seed=3)
    gaps = src.think_gaps
    assert len(gaps) == 4 and sum(len(g) for g in gaps) == 40 - 4  # every request after a client's first
    assert gaps[0][:3] != gaps[1][:3]  # two clients think differently
    # each client's own generator, numpy default_rng((seed, client)), exponential of mean Z = 1 s
    for c in range(4):
        assert gaps[c] == pytest.approx(list(np.random.default_rng((3, c)).exponential(1.0, len(gaps[c]))))
    again, run2 = _run(dep, 1.0, seed=3)
    assert again.think_gaps == gaps and run2.ledger.first_s == run.ledger.first_s  # same seed, same run
    other, _ = _run(dep, 1.0, seed=4)
    assert other.think_gaps[0][:3] != gaps[0][:3]


def test_all_clients_start_at_once_and_send_after_thinking(dep):
    """vllm bench serve --max-concurrency: N requests at t = 0; a client's next request leaves its last
    token plus its think time later."""
    src, run = _run(dep, 0.5, seed=1)
    led = run.ledger
    assert led.arrival[:4] == [0.0] * 4
    for c in range(4):
        mine = [rid for rid in range(len(led)) if src.client_of[rid] == c]
        sent = [led.arrival[r] - led.finish_s[p] for p, r in zip(mine, mine[1:])]
        assert sent == pytest.approx(src.think_gaps[c][:len(sent)])
    zero, run0 = _run(dep, 0.0, seed=1)  # Z = 0: back to back, nothing drawn
    assert zero.think_gaps == [[], [], [], []] and zero.mean_think() == 0.0


# --- the wave model, by hand -----------------------------------------------------------------------

def test_first_wave_by_hand():
    """N = 4 prompts of 1000 tokens, budget 2048, chunked: step 1 takes prompts 0 and 1 whole and 48
    tokens of prompt 2 (0 decodes); step 2 has 2 decodes, so 2046 tokens left: prompt 2's other 952
    (after its 48) and prompt 3's 1000. Prompts 0, 1 get their first token in step 1, prompts 2, 3 in
    step 2. Without chunked prefill step 1 takes ⌊2048/1000⌋ = 2 whole prompts, step 2 ⌊2046/1000⌋ = 2."""
    steps, k = first_wave(2048, 4, 1000, chunked=True)
    assert steps == [(0, [(1000, 0), (1000, 0), (48, 0)], 2), (2, [(952, 48), (1000, 0)], 2)]
    assert k.tolist() == [1, 1, 2, 2]
    steps, k = first_wave(2048, 4, 1000, chunked=False)
    assert steps == [(0, [(1000, 0), (1000, 0)], 2), (2, [(1000, 0), (1000, 0)], 2)]
    assert k.tolist() == [1, 1, 2, 2]


def test_group_size_by_hand():
    # g* = min(m, ⌊(B − m)/(I − 1)⌋): 4 clients, B = 2048, I = 1000: ⌊2044/999⌋ = 2
    assert group_size(2048, 4, 1000) == 2
    # 64 clients of 1024 tokens in 8192: ⌊8128/1023⌋ = 7 (7·1024 + 57 = 7225 <= 8192; 8·1024 + 56 > 8192)
    assert group_size(8192, 64, 1024) == 7
    assert group_size(8192, 16, 128) == 16  # the whole wave fits one step


def test_wave_formulas_by_hand():
    """The tiny case: 4 clients, prompts of 1000, 16 output tokens, budget 2048, a run of 10 prompts.
    First wave: TTFT = t1 for prompts 0, 1 and t1 + t2 for 2, 3 (test_first_wave_by_hand), mean t1 + t2/2.
    Cycle: g* = 2 → G = 2 groups of 2 per cycle of O = 16 steps: 2 steps of (2 decodes + 2 prompts), 14
    of 4 decodes; TTFT_∞ = t_g, TPOT = (P − t_g)/15. g0 = ⌊2048/1000⌋ = 2 = g*: no transition. W = 10/4
    = 2.5 waves: mean TTFT = (TTFT_1 + 1.5·TTFT_∞)/2.5; X = 4/(TTFT + 15·TPOT)."""
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options={"token_budget": 2048})
    rep = _Replica(d, as_mix(1000, 16), True, 4, 0.0)
    m, sm = d.model, rep.sm
    ctx = 1000 + (16 - 2) / 2

    def t(load):
        return float(sm.price(load).time)
    t1 = t(uniform(m, prompts=2.0, new=1000.0) + uniform(m, prompts=1.0, new=48.0))
    t2 = t(uniform(m, decode=2.0, context=1000.0) + uniform(m, prompts=1.0, new=952.0, past=48.0)
           + uniform(m, prompts=1.0, new=1000.0))
    t_g = t(uniform(m, decode=2.0, context=ctx) + uniform(m, prompts=2.0, new=1000.0))
    t_d = t(uniform(m, decode=4.0, context=ctx))
    cycle = 2 * t_g + 14 * t_d
    tpot = (cycle - t_g) / 15
    w = ClosedLoop(sm, d.runtime, 1000, 16).waves(4, 10)
    assert w.regime == "waves" and w.groups == (2, 2, 2) and w.first_steps == 2
    assert w.ttft_first == pytest.approx(t1 + t2 / 2, rel=1e-9)
    assert w.ttft_steady == pytest.approx(t_g, rel=1e-9)
    assert w.tpot == pytest.approx(tpot, rel=1e-9)
    ttft = (t1 + t2 / 2 + 1.5 * t_g) / 2.5
    assert w.ttft_mean == pytest.approx(ttft, rel=1e-9)
    assert w.requests_per_s == pytest.approx(4 / (ttft + 15 * tpot), rel=1e-9)


def test_transition_shares_by_hand():
    # W = 3.5 waves, G_1 = 4 first-wave groups: waves 2, 3 whole and half of wave 4, s_w = (w − 1)/4
    assert ClosedLoop.shares(3.5, 4) == [(1.0, 0.25), (1.0, 0.5), (0.5, 0.75)]
    assert ClosedLoop.shares(3.0, 0) == [(1.0, 1.0), (1.0, 1.0)]  # no transition
    assert ClosedLoop.shares(1.0, 4) == []


def test_clients_past_max_num_seqs_wait_a_full_request_time():
    """64 clients, max_num_seqs 8: 8 run in waves exactly as 8 clients would over the same 640 prompts, and
    the other 56 wait (N − m)/X in the queue (Little): TTFT_64 = TTFT_8 + 56/X_8, X the same."""
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options={"max_num_seqs": 8})
    eight = serving(d, concurrency=8, input_len=1024, output_len=1024, requests=640)
    many = serving(d, concurrency=64, input_len=1024, output_len=1024, requests=640)
    assert many.limited_by == "max_num_seqs" and many.in_service == 8 and many.queued == 56
    assert many.requests_per_s == pytest.approx(eight.requests_per_s, rel=1e-9)
    assert many.ttft_s["mean"] == pytest.approx(eight.ttft_s["mean"] + 56 / eight.requests_per_s, rel=1e-9)
    assert many.littles_law == pytest.approx(1.0, rel=1e-9)
    assert any("max_num_seqs holds 8 of 64" in n for n in many.notes)
    sim = simulate(d, concurrency=64, requests=320, input_len=1024, output_len=128, seed=0)
    assert sim["ttft_ms_mean"] > 5 * simulate(d, concurrency=8, requests=320, input_len=1024, output_len=128,
                                               seed=0)["ttft_ms_mean"]  # the simulator queues them too


# --- the wave model against the simulator replaying the same protocol ------------------------------

@pytest.mark.parametrize("i, o, n", [(128, 128, 256), (1024, 1024, 64), (2048, 128, 16), (1024, 1024, 4)])
def test_analytic_waves_agree_with_the_simulator(dep, i, o, n):
    """R = max(50, 5 N) prompts on both sides, nothing excluded (benchmarks/closed_loop_grid.py's rule)."""
    r = max(50, 5 * n)
    a = serving(dep, concurrency=n, input_len=i, output_len=o, requests=r)
    s = simulate(dep, concurrency=n, requests=r, input_len=i, output_len=o, seed=0)
    assert a.ttft_s["mean"] * 1e3 == pytest.approx(s["ttft_ms_mean"], rel=0.10)
    assert a.tpot_s * 1e3 == pytest.approx(s["tpot_ms_mean"], rel=0.10)
    assert a.output_tok_s == pytest.approx(s["output_tok_s"], rel=0.10)
    assert a.notes[0].startswith("closed loop, back-to-back clients")


def test_ttft_rises_with_concurrency(dep):
    """The issue's check: at 1024/1024 on one H100, TTFT at 256 clients is several times that at 4 (the
    old steady state predicted it flat: 61–115 ms at every concurrency)."""
    four = serving(dep, concurrency=4, input_len=1024, output_len=1024)
    many = serving(dep, concurrency=256, input_len=1024, output_len=1024)
    assert many.ttft_s["mean"] > 5 * four.ttft_s["mean"]


def test_notes_say_when_the_waves_do_not_apply(dep):
    s = serving(dep, concurrency=16, think_time=2.0, input_len=1024, output_len=256)
    assert "think time 2 s" in s.notes[0] and "random" in s.notes[0]
    from inferbound.workloads.lengths import Mix
    mix = Mix(weights=(0.5, 0.5), inputs=(512.0, 1536.0), outputs=(256.0, 256.0), notes=(), label="two")
    s = serving(dep, concurrency=16, lengths=mix)
    assert s.notes[0].startswith("lengths spread")
    kv = serving(dep, concurrency=512, input_len=1024, output_len=1024)
    assert kv.limited_by == "kv-cache" and any("preempts" in n for n in kv.notes)


def test_prefill_first_waves_by_hand():
    """SGLang's prefill-first steps (mixed_batches false), 4 clients, prompts of 1000, 16 output tokens,
    budget 2048: the first wave's prompts take two prompt-only steps (step 1: prompts 0, 1 and 48 tokens of 2;
    step 2: the other 952 of 2 and prompt 3), then all 4 decode together and finish in the same step, so
    every wave repeats it: TTFT = t1 + t2/2 in every wave, P = t1 + t2 + 15·t_d, TPOT = (P − TTFT)/15."""
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine="sglang", engine_options={"token_budget": 2048})
    assert not d.runtime.mixed_batches
    rep = _Replica(d, as_mix(1000, 16), True, 4, 0.0)
    m, sm = d.model, rep.sm

    def t(load):
        return float(sm.price(load).time)
    t1 = t(uniform(m, prompts=2.0, new=1000.0) + uniform(m, prompts=1.0, new=48.0))
    t2 = t(uniform(m, prompts=1.0, new=952.0, past=48.0) + uniform(m, prompts=1.0, new=1000.0))
    t_d = t(uniform(m, decode=4.0, context=1000 + (16 - 2) / 2))
    w = ClosedLoop(sm, d.runtime, 1000, 16).waves(4, 12)
    ttft = t1 + t2 / 2
    assert w.ttft_mean == pytest.approx(ttft, rel=1e-9) and w.ttft_first == pytest.approx(ttft, rel=1e-9)
    assert w.tpot == pytest.approx((t1 + t2 + 15 * t_d - ttft) / 15, rel=1e-9)
    assert w.requests_per_s == pytest.approx(4 / (t1 + t2 + 15 * t_d), rel=1e-9)  # every E2E is the cycle


@pytest.mark.parametrize("engine, i, o, n", [("sglang", 1024, 1024, 64), ("trtllm", 2048, 128, 64)])
def test_other_engines_agree_with_the_simulator(engine, i, o, n):
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine=engine)
    r = max(50, 5 * n)
    a = serving(d, concurrency=n, input_len=i, output_len=o, requests=r)
    s = simulate(d, concurrency=n, requests=r, input_len=i, output_len=o, seed=0)
    assert a.ttft_s["mean"] * 1e3 == pytest.approx(s["ttft_ms_mean"], rel=0.10)
    assert a.tpot_s * 1e3 == pytest.approx(s["tpot_ms_mean"], rel=0.10)


def test_one_prompt_at_a_time_by_hand():
    """2 clients, prompts of 3000 > budget 2048, 16 output tokens, a run of 6 prompts (W = 3). g* = ⌊2046/2999⌋
    = 0, so a prompt takes n_c = ⌈3000/2047⌉ = 2 steps beside the other client's decode: chunks of 2047 and 953;
    (m − 1)·n_c = 2 <= 15, one prompt at a time: S = t(1 dec, 2047) + t(1 dec, 953 after 2047),
    P = 2·S + 13·t_d, TPOT = (P − S)/15. First wave: step 1 = 2048 of prompt 0; step 2 = its other 952 and
    1096 of prompt 1 (0 decodes); step 3 = 1 decode and prompt 1's other 1904. TTFT_1 = t1 + t2 + t3/2,
    mean TTFT = (TTFT_1 + 2·S)/3."""
    d = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine_options={"token_budget": 2048})
    rep = _Replica(d, as_mix(3000, 16), True, 2, 0.0)
    m, sm = d.model, rep.sm
    ctx = 3000 + (16 - 2) / 2

    def t(load):
        return float(sm.price(load).time)
    s = (t(uniform(m, decode=1.0, context=ctx) + uniform(m, prompts=1.0, new=2047.0))
         + t(uniform(m, decode=1.0, context=ctx) + uniform(m, prompts=1.0, new=953.0, past=2047.0)))
    t_d = t(uniform(m, decode=2.0, context=ctx))
    t1 = t(uniform(m, prompts=1.0, new=2048.0))
    t2 = t(uniform(m, prompts=1.0, new=952.0, past=2048.0) + uniform(m, prompts=1.0, new=1096.0))
    t3 = t(uniform(m, decode=1.0, context=3000.0) + uniform(m, prompts=1.0, new=1904.0, past=1096.0))
    w = ClosedLoop(sm, d.runtime, 3000, 16).waves(2, 6)
    assert w.regime == "one prompt at a time"
    assert w.ttft_first == pytest.approx(t1 + t2 + t3 / 2, rel=1e-9)
    assert w.tpot == pytest.approx((2 * s + 13 * t_d - s) / 15, rel=1e-9)
    assert w.ttft_mean == pytest.approx((t1 + t2 + t3 / 2 + 2 * s) / 3, rel=1e-9)
