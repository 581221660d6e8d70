"""Disaggregated search with pools of their own layouts (search/evaluate.py pool_pairs, _disaggregated):
the prefill pool may take another layout than the decode pool; a case where they should differ does.

Why they should differ here: Llama-3.1-8B on H100, 2000-token prompts, 200-token outputs, TPOT ≤ 6 ms.
Only TP4 decodes under 6 ms per token; prefill is compute-bound, so one GPU without all-reduces prefills
the most prompts per GPU (TP1), and a TP4 prefill pool spends 4 GPUs per replica on work TP1 does on one."""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.bench.serve import parse_serve
from inferbound.deploy.deployment import make_deployment
from inferbound.search import emit_command, search
from inferbound.search.evaluate import Workload, evaluate_layout, pool_pairs, prefill_rate_per_gpu

KW = dict(gpus=["h100_sxm"], max_gpus=4, dtypes=["bf16"], input_len=2000, output_len=200, workers=1,
          calibration="none")


@pytest.fixture(scope="module")
def result():
    return search("llama-3.1-8b", top=5, disaggregated=True, objective="tok_s_per_gpu", slo_tpot_ms=6.0, **KW)


def test_the_winner_has_a_prefill_pool_of_its_own(result):
    best = result.table[0]
    assert best.mode == "disaggregated" and best.pools
    pre, dec = best.pools["prefill"], best.pools["decode"]
    assert dec["tp"] == 4 and pre["tp"] < dec["tp"]          # the SLO's decode layout, a smaller prefill one
    # the unit's GPUs are x·G_p + y·G_d: x prefill replicas of G_p GPUs, y decode replicas of G_d
    x, y = best.prefill_replicas, best.decode_replicas
    assert best.unit_gpus == x * pre["replica_gpus"] + y * dec["replica_gpus"]
    assert best.metrics["tok_s_per_gpu"] == pytest.approx(best.metrics["tok_s"] / best.unit_gpus)
    # it beats the same decode layout with both pools on it (the search's rows of one layout each)
    same = [r for r in result.table if r.pools["prefill"]["tp"] == r.pools["decode"]["tp"] == 4]
    assert same and best.objective_value > same[0].objective_value


def test_pairs_are_bounded_and_take_the_best_prefill_per_gpu():
    deps = [make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=t, calibration="none") for t in (1, 2, 4)]
    w = Workload(input_len=2000, output_len=200, disaggregated=True)
    rates = [prefill_rate_per_gpu(d, w) for d in deps]
    assert rates[0] > rates[1] > rates[2] > 0                 # all-reduces cost TP2 and TP4 per GPU
    pairs = pool_pairs(deps, w)
    # one extra pairing per layout other than the best prefill one: TP2 and TP4 decode with a TP1 prefill pool
    assert [(j, p.par.tp) for j, p in pairs] == [(1, 1), (2, 1)]


def test_a_pool_on_its_own_layout_is_the_one_layout_evaluation():
    dep = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=2, calibration="none")
    w = Workload(input_len=2000, output_len=200, disaggregated=True)
    a, b = evaluate_layout(dep, w), evaluate_layout(dep, w, dep)
    for f in ("step_s", "ttft_s", "tok_s", "watts", "gpus", "prefill_replicas", "decode_replicas"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


def test_gpus_and_watts_of_a_mixed_pair_by_hand():
    dec = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=4, calibration="none")
    pre = make_deployment(model="llama-3.1-8b", gpu="h100_sxm", tp=1, calibration="none")
    w = Workload(input_len=2000, output_len=200, disaggregated=True)
    lp = evaluate_layout(dec, w, pre)
    assert np.array_equal(lp.gpus, lp.prefill_replicas * 1 + lp.decode_replicas * 4)
    # a prefill replica draws at least its idle power: watts ≥ x·1·P_idle + the decode pool's
    assert np.all(lp.watts >= lp.prefill_replicas * pre.gpu.power.idle_w)


def test_an_aggregated_search_has_no_pools():
    r = search("llama-3.1-8b", top=3, **KW)
    assert all(not row.pools for row in r.table)


def test_the_winner_launches_as_two_layouts(result):
    text = emit_command("vllm", "meta-llama/Llama-3.1-8B", result.table[0])
    lines = [ln for ln in text.splitlines()]
    roles = {}
    for n, ln in enumerate(lines):
        if ln.startswith("# prefill instance") or ln.startswith("# decode instance"):
            block = []
            for nxt in lines[n + 1:]:
                if nxt.startswith("#"):
                    break
                block.append(nxt.rstrip("\\").strip())
            roles[ln.split()[1]] = parse_serve(" ".join(block))
    assert roles["prefill"].deployment["tp"] == result.table[0].pools["prefill"]["tp"]
    assert roles["decode"].deployment["tp"] == 4
