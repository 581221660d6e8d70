"""Closed-loop waves (workloads/closed_loop.py) against max-throughput (workloads/max_throughput.py) at pp 1, 2, 4.

The bound: for one deployment, fixed lengths and the same requests in flight, the closed loop cannot serve more
tokens/s than max-throughput. It used to fail at few clients, not for the pipeline: max-throughput's decode grid was
whole (D = 1..⌊D_max⌋), so a stated concurrency C = 16 at 128/128 gave D = ⌊16·127/128⌋ = 15, in flight
15·128/127 = 15.12 of the 16 slots (5.5 % of them idle), while the waves keep all 16 clients, a mean
16·127/128 = 15.875 decoding. The sweep now prices the running-sequence cap's own mean D = C/(1 + p)
(max_throughput.decode_batches), so the bound holds at 16 clients too.
"""
from __future__ import annotations

import math

import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.step.table import StepModel
from inferbound.workloads.closed_loop import ClosedLoop
from inferbound.workloads.max_throughput import MAX_THROUGHPUT_GRID, max_throughput
from inferbound.workloads.serving import serving

LAYOUTS = {1: 4, 2: 2, 4: 1}  # pp -> tp on 4 GPUs (one replica)


def _dep(pp):
    return make_deployment(model="llama-3.1-70b", gpu="h100_sxm", num_gpus=4, tp=LAYOUTS[pp], pp=pp)


@pytest.mark.parametrize("pp", [1, 2, 4])
@pytest.mark.parametrize("clients", [16, 64, 256])
def test_closed_loop_within_max_throughput(pp, clients):
    dep = _dep(pp)
    s = serving(dep, concurrency=clients, input_len=128, output_len=128)
    m = max_throughput(dep, input_len=128, output_len=128, concurrency=clients)
    assert s.output_tok_s <= m.output_tok_s * (1 + 1e-9), (pp, clients, s.output_tok_s, m.output_tok_s)


def test_max_throughput_fills_every_stated_slot():
    """By hand: 16 slots at 128/128 decode D = 16/(1 + p) = 16·127/128 = 15.875 on average (p = 1/(O − 1) =
    1/127 prompts per decode), all 16 in flight; the whole grid alone stops at ⌊15.875⌋ = 15."""
    m = max_throughput(_dep(2), input_len=128, output_len=128, concurrency=16)
    assert m.decode_batch == pytest.approx(16 * 127 / 128, rel=1e-12)
    assert m.concurrency == pytest.approx(16.0, rel=1e-12)               # D·(1 + p)
    assert m.limited_by == "max_num_seqs"
    assert math.floor(m.decode_batch) == 15


def test_pp2_wave_cycle_by_hand():
    """256 clients, 1024/256, budget B = 8192 (vLLM V1 serving), TP2 PP2: g* = min(256, ⌊(8192 − 256)/1023⌋) = 7,
    G = ⌈256/7⌉ = 37 groups, the last r = 256 − 36·7 = 4; the cycle P = 36·t_7 + t_4 + (256 − 37)·t_d, a prompt's
    own step TTFT_∞ = (36·7·t_7 + 4·t_4)/256 and TPOT = (P − TTFT_∞)/255, each t priced by the pp-stream step."""
    dep = _dep(2)
    rt = dep.runtime
    assert rt.token_budget * dep.par.attention_groups == 8192
    g = dep.par.attention_groups
    cl = ClosedLoop(StepModel(dep, rt.token_budget * g + g, grid_points=MAX_THROUGHPUT_GRID), rt, 1024, 256)
    w = cl.waves(256, 1000)
    assert w.groups == (7, 37, 4)
    ctx = 1024 + (256 - 2) / 2  # c̄ = I + (O − 2)/2
    t7 = cl.step(256 - 7, ctx, prompts=7)[1]
    t4 = cl.step(256 - 4, ctx, prompts=4)[1]
    td = cl.step(256, ctx)[1]
    cycle = 36 * t7 + t4 + 219 * td
    own = (36 * 7 * t7 + 4 * t4) / 256
    assert w.tpot == pytest.approx((cycle - own) / 255, rel=1e-12)
    assert w.ttft_steady == pytest.approx(own, rel=1e-12)
