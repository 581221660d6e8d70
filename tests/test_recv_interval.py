"""SGLang's receive interval (--scheduler-recv-interval k): engine option (deploy/engine_modes.py), the simulator's
counter (sim/scheduler.py, sim/decode_run.py) and the analytic wait (workloads/recv.py).

The rule, from SGLang python/sglang/srt/managers/scheduler_recv_skipper.py (SchedulerRecvSkipper.handle): each
scheduler pass adds the weight of the last forward mode to a counter (DECODE 1, any other mode 1000) and new
requests are received when the counter reaches k, which then restarts at 0. Analytic mean wait while decoding,
a uniform counter phase over 0..k - 1: W = (k - 1)/2 decode steps.
"""
from __future__ import annotations

from collections import deque

import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.sim import simulate
from inferbound.sim.scheduler import RECV_EXTEND, Replica
from inferbound.workloads.lengths import from_spec
from inferbound.workloads.recv import receive_wait
from inferbound.workloads.serving import serving

SPREAD = dict(input_len=921, output_len=921, input_dist="uniform:819:1024", output_dist="uniform:819:1024")


def _dep(k, engine="sglang@0.5.9"):
    return make_deployment(model="llama-3.1-8b", gpu="h100_sxm", engine=engine, engine_options={"recv_interval": k})


def test_option_is_read_where_the_engine_has_it():
    assert _dep(30).runtime.recv_interval == 30
    assert make_deployment(model="llama-3.1-8b", engine="sglang@0.5.9").runtime.recv_interval == 1  # SGLang default
    assert any("--scheduler-recv-interval 30" in n for n in _dep(30).runtime.notes)
    with pytest.raises(ValueError, match=r"recv_interval=30: engine='vllm@.*' has no --scheduler-recv-interval"):
        _dep(30, "vllm")
    with pytest.raises(ValueError, match=r"recv_interval=30: engine='sglang@0.4.10' has no"):
        _dep(30, "sglang@0.4.10")
    with pytest.raises(ValueError, match=r"recv_interval=0 must be an integer >= 1"):
        _dep(0)


class _Stub:
    """The receive counter of a Replica without its step machinery."""
    recv_k = 10
    arrive, _receive, recv_cap, _holds_work = Replica.arrive, Replica._receive, Replica.recv_cap, Replica._holds_work

    def __init__(self):
        self.recv_counter, self.inbox, self.waiting = self.recv_k, deque(), deque()
        self.busy, self.dec, self.prefilling = False, type("D", (), {"n": 0})(), []


def test_counter_by_hand():
    r = _Stub()
    r.arrive(1)                       # idle: queued at once
    assert list(r.waiting) == [1] and not r.inbox
    r._receive()                      # the first pass receives (the counter starts at k) and restarts it
    assert r.recv_counter == 0
    r.busy = True
    r.arrive(2)                       # busy: held
    assert list(r.inbox) == [2] and r.recv_cap() == 10
    r.recv_counter += 7               # 7 decode passes: not yet
    r._receive()
    assert list(r.inbox) == [2] and r.recv_cap() == 3
    r.recv_counter += 3               # the 10th: received at the next pass
    r._receive()
    assert list(r.waiting) == [1, 2] and not r.inbox and r.recv_counter == 0
    r.arrive(3)
    r.recv_counter += RECV_EXTEND     # a prefill pass (weight 1000): the next pass receives
    r._receive()
    assert 3 in r.waiting and r.recv_cap() is None


def test_analytic_wait_by_hand():
    rt = _dep(30).runtime
    assert receive_wait(rt, 0.008) == pytest.approx(29 / 2 * 0.008)          # 116 ms at an 8 ms step
    assert receive_wait(rt, 0.008, busy=0.5) == pytest.approx(0.5 * 29 / 2 * 0.008)
    assert receive_wait(make_deployment(model="llama-3.1-8b", engine="sglang@0.5.9").runtime, 0.008) == 0.0


@pytest.mark.parametrize("clients", [4, 16])
def test_simulator_and_analytic_agree(clients):
    """Both add about (k - 1)/2 decode steps to TTFT at spread lengths (the simulator somewhat less: a prefill pass
    makes the next pass receive); one client lands on an idle engine and waits nothing."""
    base, held = _dep(1), _dep(30)
    mix = from_spec(921, 921, "uniform:819:1024", "uniform:819:1024")
    sim = [simulate(d, concurrency=clients, requests=clients * 10, **SPREAD).to_dict()["ttft_ms_mean"]
           for d in (base, held)]
    ana = [serving(d, concurrency=clients, lengths=mix, requests=clients * 10) for d in (base, held)]
    added_sim = sim[1] - sim[0]
    added_ana = (ana[1].ttft_s["mean"] - ana[0].ttft_s["mean"]) * 1e3
    steps = 29 / 2 * ana[1].step_time_s * 1e3
    assert added_ana == pytest.approx(steps, rel=0.15)
    assert 0.6 * added_ana < added_sim < 1.2 * added_ana
    one = [simulate(d, concurrency=1, requests=10, **SPREAD).to_dict()["ttft_ms_mean"] for d in (base, held)]
    assert one[1] == pytest.approx(one[0], rel=1e-9)


def test_an_open_loop_at_low_rate_loses_no_request():
    """A request held while the last running sequence finishes is received by the now idle scheduler (its empty
    passes reach k at once), so none is left in the inbox: 200 Poisson requests at 2 req/s all complete."""
    r = simulate(_dep(30), rate=2.0, requests=200, input_len=512, output_len=64).to_dict()
    assert r["completed"] == 200


def test_idle_scheduler_receives_the_inbox():
    r = _Stub()
    r.recv_counter = 3
    r.inbox.append(7)                  # held during a step whose sequences all finished
    r._receive()                       # nothing to run: received although the counter is below k
    assert list(r.waiting) == [7] and r.recv_counter == 0
