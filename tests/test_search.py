"""inferbound.search: brute force over single evaluations, frontier properties, SLO misses, backends,
launch commands and the CLI.

Expected values come from max_throughput (one deployment at a time), scalar StepModel evaluations of
one configuration at a time, or arithmetic written out here; never from the search itself.
"""
from __future__ import annotations

import json
import math
import shlex

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from inferbound import make_deployment, max_throughput
from inferbound.cli import app
import inferbound.cli.search_cmd  # noqa: F401  (registers `search`)
from inferbound.deploy.memory import kv_bytes_per_gpu
from inferbound.search import emit_command, pareto_mask, search
from inferbound.search.result import Row
from inferbound.step.table import StepModel
from inferbound.deploy.topology import network_link
from inferbound.workloads.max_throughput import MAX_THROUGHPUT_GRID

M8 = "meta-llama/Llama-3.1-8B"
# the default engine (vLLM 0.33.0) with the token budget set, so the offline budget of max_throughput and
# the online one of search are the same (vLLM's LLM class defaults to 16384 on big GPUs, the server 8192)
OPTIONS = {"token_budget": 8192}
SMALL = dict(gpus=["h100_sxm", "l40s"], max_gpus=2, dtypes=["bf16", "fp8"], all_layouts=True, engine_options=OPTIONS)


def small_deployments():
    """The small space by hand: 2 GPU types x (1 GPU; 2 GPUs as TP2 or PP2) x bf16/fp8."""
    out = []
    for gpu in ("h100_sxm", "l40s"):
        for tp, pp in ((1, 1), (2, 1), (1, 2)):
            for w, a, kv in (("bf16", "bf16", "bf16"), ("fp8", "fp8", "fp8")):
                out.append(((gpu, tp, pp, w), make_deployment(model=M8, gpu=gpu, tp=tp, pp=pp, weight_dtype=w,
                                                              act_dtype=a, kv_dtype=kv, engine_options=OPTIONS)))
    return out


def key(row):
    return row.gpu, row.tp, row.pp, row.weight_dtype


def steady_by_hand(sm, d, i, o, budget):
    """(mean step per output token, decode-only step) at D = d, written out (steady_state.steps): λ = d/(o − 1)
    prompts arrive per step, each in n = ⌈i/(budget − d)⌉ chunks; a share f = min(1, max(λn, λi/(budget − d)))
    of the steps carry the chunks (λn/f per prefill step, each i/n tokens after (n − 1)/2 chunks)."""
    ctx, lam = i + (o - 2) / 2, d / (o - 1)
    room = max(budget - d, 1)
    n = math.ceil(i / room)
    f = min(1.0, max(lam * n, lam * i / room))
    t0 = float(sm.uniform(d, ctx, 0, 0)[0])
    t1 = float(sm.uniform(d, ctx, lam * n / f, i / n, (n - 1) / 2 * i / n)[0])
    return (1 - f) * t0 + f * t1, t0


def ttft_by_hand(sm, d, i, o, budget, t, t0):
    """TTFT = W + S: S the prompt's chunk steps beside d decodes; W the decode step's mean rest for arrivals
    meeting no prefill, plus the M/G/1 prefill queue (Pollaczek-Khinchine) at the completion rate d/(o − 1)/t,
    k = max(1, ⌊(budget − d)/i⌋) prompts per prefill step: W = (1 − u)·t0/2 + rate·S²/(2k)/(1 − u), u = rate·S/k."""
    ctx = i + (o - 2) / 2
    s_pre, rest, past = 0.0, i, 0
    while rest > 0:
        c = min(budget - d, rest)
        s_pre += float(sm.uniform(d, ctx, 1, c, past)[0])
        rest, past = rest - c, past + c
    rate = d / (o - 1) / t
    k = max(1, (budget - d) // i)
    u = rate * s_pre / k
    return (1 - u) * t0 / 2 + rate * s_pre ** 2 / (2 * k) / (1 - u) + s_pre


# --------------------------------------------------------------------------- brute force

def test_best_equals_brute_force_over_max_throughput():
    i, o = 512, 128
    brute = {k: max_throughput(d, input_len=i, output_len=o) for k, d in small_deployments()}
    best_key = max(brute, key=lambda k: brute[k].output_tok_s_per_gpu)
    res = search(M8, input_len=i, output_len=o, **SMALL)
    top = res.table[0]
    assert key(top) == best_key
    assert top.concurrency == brute[best_key].decode_batch
    assert top.metrics["tok_s_per_gpu"] == pytest.approx(brute[best_key].output_tok_s_per_gpu, rel=1e-9)
    # every layout's own best matches its max_throughput operating point, and the ranking follows it
    for row in res.table:
        mt = brute[key(row)]
        assert row.concurrency == mt.decode_batch and row.limit == (mt.limited_by if mt.limited_by != "throughput peak"
                                                                    else "objective peak")
    ranked = sorted(brute, key=lambda k: -brute[k].output_tok_s_per_gpu)[:len(res.table)]
    assert [key(r) for r in res.table] == ranked
    # configurations evaluated = sum over layouts of the concurrency range 1..D_max (max_throughput's caps)
    # ... and the engine's running-sequence cap: D (1 + 1/(O-1)) <= max_num_seqs (vLLM: 1024 on H100, 256 on L40S)
    d_max = {k: min(int(mt.kv_limit_concurrency / (1 + 1 / (o - 1))), int(mt.token_budget // (1 + i / (o - 1))),
                    int(mt.max_num_seqs / (1 + 1 / (o - 1))))
             for k, mt in brute.items()}
    assert res.evaluated == sum(d_max.values())


@pytest.mark.parametrize("tpot_ms, ttft_ms", [(12.0, 60.0), (30.0, 35.0)])  # TPOT binds; TTFT binds
def test_slo_best_equals_brute_force_over_single_configurations(tpot_ms, ttft_ms):
    i, o, budget = 512, 128, 2048
    ctx, per_prompt = i + (o - 2) / 2, i / (o - 1)
    best = (-1.0, None, None)
    for k, dep in small_deployments():
        dep = make_deployment(model=dep.model, gpu=dep.gpu.id, tp=dep.par.tp, pp=dep.par.pp, weight_dtype=dep.dtypes.weight,
                              act_dtype=dep.dtypes.act, kv_dtype=dep.dtypes.kv, engine_options={"token_budget": budget})
        mt = max_throughput(dep, input_len=i, output_len=o)
        d_max = min(int(mt.kv_limit_concurrency / (1 + 1 / (o - 1))), int(budget // (1 + per_prompt)))
        sm = StepModel(dep, budget + 1, grid_points=MAX_THROUGHPUT_GRID)
        for d in range(1, d_max + 1):
            t, t0 = steady_by_hand(sm, d, i, o, budget)
            assert budget - d >= i  # the prompt enters in one chunk beside the d decodes
            ttft = ttft_by_hand(sm, d, i, o, budget, t, t0)
            value = d * (1 + 1 / (o - 1)) / t / dep.num_gpus  # decodes and first tokens per second
            if t * 1e3 <= tpot_ms and ttft * 1e3 <= ttft_ms and value > best[0]:
                best = (float(value), k, d)
    res = search(M8, input_len=i, output_len=o, slo_tpot_ms=tpot_ms, slo_ttft_ms=ttft_ms,
                 **(SMALL | {"engine_options": {"token_budget": budget}}))
    top = res.table[0]
    assert (key(top), top.concurrency) == (best[1], best[2])
    assert top.metrics["tok_s_per_gpu"] == pytest.approx(best[0], rel=1e-9)
    assert top.metrics["tpot_ms"] <= tpot_ms and top.metrics["ttft_ms"] <= ttft_ms


def test_fewest_gpus_for_a_rate_by_hand():
    i, o, rate = 512, 128, 40.0
    brute = {k: math.ceil(rate / max_throughput(d, input_len=i, output_len=o).requests_per_s) * d.num_gpus
             for k, d in small_deployments()}
    res = search(M8, input_len=i, output_len=o, objective="gpus_for_rate", target_rate=rate, **SMALL)
    assert res.table[0].objective_value == min(brute.values())
    assert brute[key(res.table[0])] == min(brute.values())
    assert res.table[0].replicas * res.table[0].unit_gpus == min(brute.values())


def test_ttft_with_chunked_prompt_by_hand():
    """A 1000-token prompt with a 1024-token budget: beside D > 24 decodes it enters in two chunks."""
    i, o, budget = 1000, 2000, 1024
    dep = make_deployment(model=M8, gpu="h100_sxm", tp=1, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
    res = search(M8, gpus=["h100_sxm"], max_gpus=1, dtypes=["fp8"], input_len=i, output_len=o, token_budget=budget)
    p = res.points
    sm = StepModel(dep, budget + 1, grid_points=MAX_THROUGHPUT_GRID)
    ctx = i + (o - 2) / 2
    assert p.concurrency.max() > 200  # so the two-chunk case is reached
    for d in (1, 24, 25, 200, int(p.concurrency.max())):
        t, t0 = steady_by_hand(sm, d, i, o, budget)
        ttft = ttft_by_hand(sm, d, i, o, budget, t, t0)  # chunks of what the budget leaves beside the d decodes
        k = int(np.flatnonzero(p.concurrency == d)[0])
        assert p.step_s[k] == pytest.approx(t, rel=1e-12)
        assert p.ttft_s[k] == pytest.approx(ttft, rel=1e-12)


def test_disaggregated_point_by_hand():
    i, o, budget = 1024, 256, 8192
    dep = make_deployment(model=M8, gpu="h100_sxm", tp=1, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
    res = search(M8, gpus=["h100_sxm"], max_gpus=1, dtypes=["fp8"], disaggregated=True, input_len=i, output_len=o)
    row = res.table[0]
    sm = StepModel(dep, budget + 1, grid_points=MAX_THROUGHPUT_GRID)
    d = row.concurrency
    t_d, _ = sm.uniform(d, i + (o - 2) / 2, 0, 0)
    k = row.prefill_batch  # prompts per prefill step: swept 1, 2, 4, 8 = budget // i
    assert k in (1, 2, 4, 8)
    t_p, _ = sm.uniform(0, 0, k, i)
    r_d, r_p = d / ((o - 1) * t_d), k / t_p
    ratios = [(math.ceil(y * r_d / r_p - 1e-9) + y) / y for y in range(1, 5)]
    y = 1 + int(np.argmin(ratios))
    x = math.ceil(y * r_d / r_p - 1e-9)
    link = network_link(dep.gpu)  # H100 SXM has a NIC
    transfer = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, i)) / link.effective_bw + link.latency
    assert (row.prefill_replicas, row.decode_replicas) == (x, y)
    assert row.metrics["tpot_ms"] == pytest.approx(t_d * 1e3, rel=1e-12)
    assert row.metrics["ttft_ms"] == pytest.approx((2 * t_p + transfer) * 1e3, rel=1e-12)
    assert row.metrics["tok_s_per_gpu"] == pytest.approx(y * d / t_d / (x + y), rel=1e-12)
    # every concurrency is evaluated at every prefill batch; the pool sizes: y = 1..4 decode replicas,
    # fewest GPUs per decode replica, for that batch's prefill rate
    p = res.points
    assert sorted(set(p.prefill_batch.tolist())) == [1, 2, 4, 8]
    t_all, _ = sm.uniform(p.concurrency.astype(float), i + (o - 2) / 2, 0, 0)
    for j in range(0, len(p), 37):
        kj = int(p.prefill_batch[j])
        tp_j, _ = sm.uniform(0, 0, kj, i)
        rp = kj / tp_j
        rd = p.concurrency[j] / ((o - 1) * t_all[j])
        options = [((math.ceil(y * rd / rp - 1e-9) + y) / y, y, math.ceil(y * rd / rp - 1e-9)) for y in range(1, 5)]
        _, y, x = min(options)
        assert (p.prefill_replicas[j], p.decode_replicas[j]) == (x, y)
        assert p.ttft_s[j] == pytest.approx(2 * tp_j + transfer, rel=1e-12)


def test_disaggregated_ttft_slo_uses_a_small_prefill_batch():
    """The issue's case: a full token-budget prefill batch at concurrency 1 misjudges a TTFT SLO. With
    the batch swept, the one-prompt prefill step (t_p(1) < t_p(8)) meets an SLO the full batch misses."""
    i, o = 1024, 256
    dep = make_deployment(model=M8, gpu="h100_sxm", tp=1, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
    sm = StepModel(dep, 8193, grid_points=MAX_THROUGHPUT_GRID)
    t1, _ = sm.uniform(0, 0, 1, i)
    t8, _ = sm.uniform(0, 0, 8, i)
    link = network_link(dep.gpu)
    transfer = float(kv_bytes_per_gpu(dep.model, dep.dtypes, dep.par, 1, i)) / link.effective_bw + link.latency
    slo = (2 * t1 + transfer + 2 * t8 + transfer) / 2 * 1e3  # between the one-prompt and full-batch TTFTs
    res = search(M8, gpus=["h100_sxm"], max_gpus=1, dtypes=["fp8"], disaggregated=True, input_len=i, output_len=o,
                 slo_ttft_ms=slo)
    assert res.table[0].metrics["ttft_ms"] <= slo
    assert res.table[0].prefill_batch < 8


def test_plain_dp_replicas_match_one_replica_per_gpu():
    """Why the space sweeps replica layouts: tp·pp·dp has the per-GPU throughput of tp·pp."""
    one = max_throughput(make_deployment(model=M8, gpu="h100_sxm", tp=2))
    four = max_throughput(make_deployment(model=M8, gpu="h100_sxm", tp=2, dp=4))
    assert four.output_tok_s_per_gpu == pytest.approx(one.output_tok_s_per_gpu, rel=1e-12)


# --------------------------------------------------------------------------- frontier

def brute_dominated(x, y, mx, my):
    sx, sy = (1 if mx else -1), (1 if my else -1)
    out = []
    for a, b in zip(x, y):
        out.append(any(sx * c >= sx * a and sy * e >= sy * b and (sx * c > sx * a or sy * e > sy * b)
                       for c, e in zip(x, y)))
    return np.array(out, dtype=bool)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=1, max_size=60), st.booleans(),
       st.booleans())
def test_frontier_is_exactly_the_non_dominated_set(pts, mx, my):
    x = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float)
    mask = pareto_mask(x, y, mx, my)
    dominated = brute_dominated(x, y, mx, my)
    assert not np.any(mask & dominated)  # every frontier point is non-dominated
    assert np.all(mask | dominated)  # every point off the frontier is dominated


def test_search_frontier_non_dominated_among_feasible():
    res = search(M8, gpus=["h100_sxm", "l40s"], max_gpus=2, dtypes=["fp8"], output_len=64, slo_tpot_ms=30)
    for x, y in (("tok_s_per_gpu", "tok_s_per_user"), ("tokens_per_joule", "ttft_ms")):
        feas = np.flatnonzero(res.feasible)
        fx, fy = res.points.metric(x, feas), res.points.metric(y, feas)
        sx, sy = (1 if x != "ttft_ms" else -1), (1 if y != "ttft_ms" else -1)
        front = res.frontier(x, y)
        assert front and all(p["tpot_ms"] <= 30 for p in front)
        for p in front:
            better = (sx * fx >= sx * p[x]) & (sy * fy >= sy * p[y]) & ((sx * fx > sx * p[x]) | (sy * fy > sy * p[y]))
            assert not np.any(better)
        # and the feasible points the frontier leaves out are each dominated by one of its points
        on = {(p[x], p[y]) for p in front}
        px, py = np.array([p[x] for p in front]), np.array([p[y] for p in front])
        for a, b in zip(fx[::97], fy[::97]):
            if (a, b) not in on:
                assert np.any((sx * px >= sx * a) & (sy * py >= sy * b))


# --------------------------------------------------------------------------- SLO miss, errors

def test_unmet_slo_names_the_closest_miss():
    """TPOT is smallest at concurrency 1; the closest miss is the layout with the fastest single step."""
    i, o = 512, 128
    fastest = None
    for k, dep in small_deployments():
        sm = StepModel(dep, 8193, grid_points=MAX_THROUGHPUT_GRID)
        t, _ = steady_by_hand(sm, 1, i, o, 8192)
        if fastest is None or t < fastest[0]:
            fastest = (float(t), dep.label())
    with pytest.raises(ValueError) as e:
        search(M8, input_len=i, output_len=o, slo_tpot_ms=0.5, **SMALL)
    msg = str(e.value)
    assert msg.startswith("no configuration meets tpot_ms<=0.5: closest is ")
    assert fastest[1] in msg and "at concurrency 1 " in msg and f"tpot_ms {fastest[0] * 1e3:,.3g}" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("kwargs, text", [
    (dict(gpus=["nope"]), "gpu='nope' is not in the catalog"),
    (dict(objective="fast"), "objective='fast' unknown; allowed: tok_s_per_gpu"),
    (dict(objective="gpus_for_rate"), "needs target_rate"),
    (dict(input_len=0), "input_len=0 must be"),
    (dict(output_len=1), "output_len=1 must be"),
    (dict(max_gpus=0), "max_gpus=0 must be"),
    (dict(dtypes=["fp16"]), "dtypes='fp16' unknown; allowed: bf16, fp8, int4, fp4"),
    (dict(backend="spark"), "backend='spark' unknown; allowed: local, ray"),
    (dict(slo_ttft_ms=-1), "slo_ttft_ms=-1 must be a positive number"),
    (dict(target_rate=0), "target_rate=0 must be"),
    (dict(workers=0), "workers=0 must be an integer >= 1"),
])
def test_bad_input_is_one_line_naming_the_field(kwargs, text):
    args = dict(gpus=["h100_sxm"], max_gpus=1) | kwargs
    with pytest.raises(ValueError) as e:
        search(M8, **args)
    assert text in str(e.value) and "\n" not in str(e.value)


def test_nothing_fits_lists_skips_by_reason():
    """70B on one 24 GB L4: bf16, fp8 and int4 weights (141, 71, 37 GB) do not fit; L4 has no fp4."""
    with pytest.raises(ValueError, match=r"no layout of meta-llama/Llama-3.1-70B fits within max_gpus=1: "
                                         r"weights do not fit: 3 .*fp4 not native on the GPU: 1"):
        search("meta-llama/Llama-3.1-70B", gpus=["l4"], max_gpus=1)


def test_every_candidate_is_kept_or_counted():
    """l4, 2 GPUs, all layouts: (TP1), (TP2), (TP1 PP2) x 4 dtype combinations = 12 candidates."""
    res = search("meta-llama/Llama-3.1-70B", gpus=["l4"], max_gpus=2, all_layouts=True)
    assert res.layouts + sum(res.skipped.values()) == 12
    assert res.skipped["fp4 not native on the GPU"] == 3
    assert res.skipped["weights do not fit"] >= 1


def test_ray_missing_is_a_clear_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ValueError, match=r"--backend ray needs ray: pip install 'inferbound\[ray\]'"):
        search(M8, gpus=["h100_sxm"], max_gpus=1, backend="ray")


@pytest.mark.slow   # starting Ray's local cluster takes 15 to 20 s on 2 cores; CI runs it
def test_ray_backend_gives_the_local_table():
    ray = pytest.importorskip("ray", reason="ray is an optional extra (pip install 'inferbound[ray]')")
    kwargs = dict(gpus=["h100_sxm", "l40s"], max_gpus=4, output_len=128)
    local = search(M8, **kwargs)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        remote = search(M8, backend="ray", **kwargs)
    finally:
        ray.shutdown()
    assert [r.to_dict() for r in remote.table] == [r.to_dict() for r in local.table]
    assert remote.frontier() == local.frontier()
    assert remote.evaluated == local.evaluated


def test_forked_workers_give_the_one_process_result(monkeypatch):
    """The local backend over 2 forked workers returns every layout's figures bit for bit as one process
    does (each layout is a pure function of its deployment), in layout order, with progress to the end."""
    from inferbound.search import backends
    kwargs = dict(gpus=["h100_sxm", "l40s", "a100_80gb_sxm"], max_gpus=4, output_len=128)
    one = search(M8, workers=1, **kwargs)
    monkeypatch.setitem(backends.search_defaults()["local"], "min_layouts_per_worker", 1)
    forks, seen = [], []
    real = backends._forked
    monkeypatch.setattr(backends, "_forked", lambda *a: forks.append(a[-1]) or real(*a))
    two = search(M8, workers=2, progress=lambda done, total: seen.append((done, total)), **kwargs)
    assert forks == [2] and seen[-1] == (two.layouts, two.layouts) and len(seen) > 1
    for name in ("layout", "concurrency", "step_s", "ttft_s", "tok_s", "unit_watts", "unit_gpus"):
        assert np.array_equal(getattr(one.points, name), getattr(two.points, name)), name
    assert [r.to_dict() for r in two.table] == [r.to_dict() for r in one.table]


def test_local_workers_rule(monkeypatch):
    """Workers: as asked, no more than the layouts fill at min_layouts_per_worker each, one off Linux."""
    from inferbound.search import backends
    per = backends.search_defaults()["local"]["min_layouts_per_worker"]
    assert backends.local_workers(10 * per, 4) == (4 if backends.sys.platform.startswith("linux") else 1)
    assert backends.local_workers(2 * per, 8) in (1, 2)
    assert backends.local_workers(per - 1, 8) == 1
    import multiprocessing
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True, raising=False)
    assert backends.local_workers(100 * per, 8) == 1  # a daemonic process may not start workers
    monkeypatch.undo()
    monkeypatch.setattr(backends.sys, "platform", "darwin")
    assert backends.local_workers(100 * per, 8) == 1
    with pytest.raises(ValueError, match=r"workers=1.5 must be an integer >= 1"):
        backends.local_workers(100, 1.5)


# --------------------------------------------------------------------------- launch commands

def parse(text: str) -> list[str]:
    """The command's argv: comment lines and a here-document (``cat > f <<'EOF' ... EOF``) left out."""
    lines = text.splitlines()
    if "EOF" in lines:
        lines = lines[lines.index("EOF") + 1:]
    body = " ".join(line for line in lines if not line.startswith("#"))
    return shlex.split(body.replace("\\", " "))


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def known_row(**over) -> Row:
    base = dict(rank=1, gpu="h100_sxm", mode="aggregated", layout="8x h100_sxm TP4 PP2 EP4 fp8", replica_gpus=8,
                unit_gpus=8, tp=4, pp=2, ep=4, dp=1, attention_dp=False, nodes=1, dtype="fp8", weight_dtype="fp8",
                act_dtype="fp8", kv_dtype="fp8", concurrency=296, max_num_seqs=300, token_budget=8192,
                prefill_replicas=0, decode_replicas=1, replicas=1, objective="tok_s_per_gpu", objective_value=1.0,
                limit="kv-cache", memory_fraction=0.9, mem_fraction_static=0.85)
    return Row(**(base | over))


def test_emit_vllm_flags():
    argv = parse(emit_command("vllm", "org/model", known_row()))
    assert argv[:3] == ["vllm", "serve", "org/model"]
    assert (flag(argv, "--tensor-parallel-size"), flag(argv, "--pipeline-parallel-size")) == ("4", "2")
    assert "--enable-expert-parallel" in argv
    assert flag(argv, "--max-num-seqs") == "300" and flag(argv, "--max-num-batched-tokens") == "8192"
    assert flag(argv, "--kv-cache-dtype") == "fp8" and flag(argv, "--quantization") == "fp8"
    assert flag(argv, "--gpu-memory-utilization") == "0.9"


def test_emit_sglang_flags():
    argv = parse(emit_command("sglang", "org/model", known_row()))
    assert argv[:3] == ["python", "-m", "sglang.launch_server"] and flag(argv, "--model-path") == "org/model"
    assert (flag(argv, "--tp-size"), flag(argv, "--pp-size"), flag(argv, "--ep-size")) == ("4", "2", "4")
    assert flag(argv, "--max-running-requests") == "300" and flag(argv, "--chunked-prefill-size") == "8192"
    assert flag(argv, "--kv-cache-dtype") == "fp8_e4m3" and flag(argv, "--mem-fraction-static") == "0.85"


def test_emit_trtllm_flags_and_yaml():
    text = emit_command("trtllm", "org/model", known_row())
    argv = parse(text)
    assert argv[:2] == ["trtllm-serve", "org/model"]
    assert (flag(argv, "--tp_size"), flag(argv, "--pp_size"), flag(argv, "--ep_size")) == ("4", "2", "4")
    assert flag(argv, "--max_batch_size") == "300" and flag(argv, "--max_num_tokens") == "8192"
    assert flag(argv, "--kv_cache_free_gpu_memory_fraction") == "0.9"
    assert flag(argv, "--extra_llm_api_options") == "extra_llm_api_options.yaml"
    assert "kv_cache_config:\n  dtype: fp8\n" in text and "enable_chunked_prefill: true" in text


def test_emit_bf16_has_no_quantization_and_disaggregated_has_two_roles():
    row = known_row(weight_dtype="bf16", act_dtype="bf16", kv_dtype="bf16", ep=1, pp=1, mode="disaggregated",
                    prefill_replicas=2, decode_replicas=3)
    text = emit_command("sglang", "org/model", row)
    assert "--quantization" not in text and "--kv-cache-dtype" not in text and "--ep-size" not in text
    assert text.count("--disaggregation-mode prefill") == 1 and text.count("--disaggregation-mode decode") == 1
    assert "2 prefill and 3 decode" in text


def test_emit_uses_the_searched_concurrency():
    i, o = 512, 128
    res = search(M8, gpus=["h100_sxm"], max_gpus=1, dtypes=["fp8"], input_len=i, output_len=o)
    row = res.table[0]
    argv = parse(emit_command("vllm", res.model, row))
    assert int(flag(argv, "--max-num-seqs")) == math.ceil(row.concurrency * o / (o - 1))
    with pytest.raises(ValueError, match="emit='tgi' unknown; allowed: vllm, sglang, trtllm"):
        emit_command("tgi", res.model, row)


# --------------------------------------------------------------------------- CLI

runner = CliRunner()
BASE = ["search", M8, "--gpus", "h100_sxm,l40s", "--max-gpus", "2", "--output", "128"]


def test_cli_json_csv_and_plots(tmp_path):
    csv_path, png, html = tmp_path / "t.csv", tmp_path / "f.png", tmp_path / "f.html"
    r = runner.invoke(app, BASE + ["--json", "--top", "3", "--csv", str(csv_path), "--plot", str(png),
                                   "--html", str(html), "--emit", "vllm", "--pareto", "tokens_per_joule,ttft_ms"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert len(out["table"]) == 3 and out["objective"] == "tok_s_per_gpu"
    assert [f["x"] + "," + f["y"] for f in out["frontiers"]] == ["tok_s_per_gpu,tok_s_per_user",
                                                                 "tokens_per_joule,ttft_ms"]
    last = [ln.strip() for ln in out["launch_command"]["text"].splitlines()[-2:]]
    assert last[0].startswith("--gpu-memory-utilization") and last[1] == "--max-model-len 1152"  # 1024 in + 128 out
    lines = csv_path.read_text().splitlines()
    assert len(lines) == 4 and lines[0].startswith("rank,gpu,mode,layout")
    assert lines[1].split(",")[3] == out["table"][0]["layout"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = html.read_text()
    assert "<script src=\"http" not in page and "Plotly.newPlot" in page and len(page) > 1_000_000


def test_cli_table_output():
    r = runner.invoke(app, BASE + ["--slo-tpot-ms", "40"])
    assert r.exit_code == 0, r.output
    assert "Why:" in r.output and "Pareto frontier" in r.output and "tpot_ms<=40" in r.output


@pytest.mark.parametrize("args, text", [
    (["--gpus", "h100_sxm,nope"], "gpu='nope' is not in the catalog"),
    (["--objective", "fast"], "objective='fast' unknown"),
    (["--emit", "tgi"], "emit='tgi' unknown"),
    (["--pareto", "tok_s_per_gpu"], "--pareto='tok_s_per_gpu' must name two figures"),
    (["--plot", "out.jpg"], "--plot='out.jpg' must end in .png"),
    (["--slo-tpot-ms", "0.1"], "no configuration meets tpot_ms<=0.1: closest is"),
])
def test_cli_errors_exit_2_with_one_line(args, text):
    r = runner.invoke(app, ["search", M8, "--gpus", "h100_sxm", "--max-gpus", "1"] + args)
    assert r.exit_code == 2
    assert text in " ".join(r.output.split())


def test_both_modes_rank_aggregated_and_disaggregated_together():
    """--both-modes sweeps every layout twice; its best is the better of the two single-mode searches."""
    kw = dict(gpus=["h100_sxm"], max_gpus=2, objective="tok_s_per_gpu", input_len=512, output_len=128,
              calibration="none")
    agg, dis, both = (search("llama-3.1-8b", disaggregated=m, **kw) for m in (False, True, "both"))
    assert both.layouts == agg.layouts + dis.layouts
    assert both.modes == ("aggregated", "disaggregated")
    best = max(agg.table[0].metrics["tok_s_per_gpu"], dis.table[0].metrics["tok_s_per_gpu"])
    assert both.table[0].metrics["tok_s_per_gpu"] == pytest.approx(best, rel=1e-12)
    with pytest.raises(ValueError, match="disaggregated"):
        search("llama-3.1-8b", disaggregated="sometimes", **kw)


def test_emitted_commands_name_the_modelled_features_with_the_engines_flags():
    row = known_row(features={"speculative": "eagle", "spec_tokens": 3, "acceptance": 0.8, "prefix_hit_rate": 0.5,
                              "kv_offload": "host"}, engine="vllm@0.15.1")
    text = emit_command("vllm", "org/model", row)
    # features are flags now (search/launch_features.py, tests/test_launch_commands.py); what a flag cannot
    # carry is a comment: no EAGLE head recorded for org/model, no host pool size on this row
    assert "# EAGLE priced, but data/checkpoints.yaml records no EAGLE head for org/model" in text
    assert "--enable-prefix-caching" in text
    assert "# host KV tier priced; no pool size was priced: add --kv-offloading-size GIB" in text
    assert "speculative" not in emit_command("vllm", "org/model", known_row())


def test_a_search_under_another_engine_in_the_same_process_gets_its_own_tables():
    """The step-model tables are memoized across searches (the web server runs many); the engine profile
    prices kernels and host work (kernel_pricing.py), so a TensorRT-LLM search after a vLLM one must equal
    a TensorRT-LLM search in a fresh cache, row for row."""
    from inferbound.search import evaluate
    kw = dict(gpus=["h100_sxm"], max_gpus=2, dtypes=["bf16"], top=5)
    evaluate.clear_cache()
    fresh = search("llama-3.1-8b", engine="trtllm", **kw).table
    evaluate.clear_cache()
    search("llama-3.1-8b", engine="vllm", **kw)
    after = search("llama-3.1-8b", engine="trtllm", **kw).table
    assert [(r.layout, r.concurrency) for r in after] == [(r.layout, r.concurrency) for r in fresh]
    for a, b in zip(after, fresh):
        assert a.metrics["tok_s_per_gpu"] == pytest.approx(b.metrics["tok_s_per_gpu"], rel=1e-12)


def test_a_gpu_override_is_not_served_from_another_searchs_tables():
    """The fine-grid GEMM tables are shared across step models (stepmodel._FINE_CACHE); a --gpu-set
    override of a peak keeps the GPU's id, so the key must carry the peaks themselves: a search with
    the fp8 peak set to 1 PFLOP/s after a plain one equals the same search in a fresh cache."""
    from inferbound.step import table as stepmodel
    from inferbound.search import evaluate
    kw = dict(gpus=["h100_sxm"], max_gpus=1, dtypes=["fp8"], top=3)
    slow = {"peak_flops.fp8": 1.0e15}
    evaluate.clear_cache()
    stepmodel._FINE_CACHE.clear()
    fresh = search("llama-3.1-8b", gpu_overrides=slow, **kw).table[0]
    evaluate.clear_cache()
    stepmodel._FINE_CACHE.clear()
    plain = search("llama-3.1-8b", **kw).table[0]
    evaluate.clear_cache()
    after = search("llama-3.1-8b", gpu_overrides=slow, **kw).table[0]
    assert after.metrics["tok_s_per_gpu"] == pytest.approx(fresh.metrics["tok_s_per_gpu"], rel=1e-12)
    assert plain.metrics["tok_s_per_gpu"] > 1.2 * fresh.metrics["tok_s_per_gpu"]  # the override matters


def test_emitted_limits_are_per_rank_under_data_parallel_attention():
    """vLLM's --max-num-seqs and --max-num-batched-tokens are per data-parallel rank (engines.yaml
    dp_max_seqs_scope: per_rank); SGLang's --max-running-requests and --chunked-prefill-size cover every
    attention-DP rank (scope: total). A DP2 row of 649 sequences and a per-rank budget of B tokens:
    vLLM ceil(649/2) = 325 sequences and B tokens, SGLang 649 and 2·B."""
    res = search("Qwen/Qwen3-30B-A3B", gpus=["h100_sxm"], max_gpus=4, dtypes=["bf16"])
    row = next(r for r in res.table if r.attention_dp and r.dp == 2)
    v = parse(emit_command("vllm", res.model, row))
    assert flag(v, "--data-parallel-size") == "2"
    assert int(flag(v, "--max-num-seqs")) == math.ceil(row.max_num_seqs / 2)
    assert int(flag(v, "--max-num-batched-tokens")) == row.token_budget
    s = parse(emit_command("sglang", res.model, row))
    assert flag(s, "--attn-dp-size") == "2" and flag(s, "--tp-size") == str(row.tp * 2)
    assert int(flag(s, "--max-running-requests")) == row.max_num_seqs
    assert int(flag(s, "--chunked-prefill-size")) == 2 * row.token_budget


# --------------------------------------------------------------------------- size caps and Ctrl-C

TINY = ["search", M8, "--gpus", "h100_sxm", "--max-gpus", "2", "--output", "128"]


def _one_line(r, code: int, *words, printed: bool = False):
    """Exit ``code``, nothing on stdout (unless ``printed``: what came before), one line on stderr naming
    ``words``, no traceback."""
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output and (printed or not r.stdout.strip()), r.output
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture
def web():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from inferbound.web import create_app
    return TestClient(create_app())


def test_max_gpus_cap_is_the_apis_on_the_cli_too(monkeypatch, web):
    """--max-gpus 100000 is refused by the CLI as by the API (one constant, options.MAX_SEARCH_GPUS), before
    any work; --no-cap lets it through to the search."""
    from inferbound.faces.options import MAX_SEARCH_GPUS
    from inferbound.web import schemas
    import inferbound.search
    assert schemas.MAX_SEARCH_GPUS == MAX_SEARCH_GPUS == 72  # one NVL72 rack
    asked = []

    def stub(model, **kw):  # the search itself: record what reached it, then stop
        asked.append(kw["max_gpus"])
        raise ValueError("stub search reached")
    monkeypatch.setattr(inferbound.search, "search", stub)
    _one_line(runner.invoke(app, [*TINY[:4], "--max-gpus", "100000"]), 2, "max_gpus=100000", "1..72", "--no-cap")
    _one_line(runner.invoke(app, [*TINY[:4], "--max-gpus", "73"]), 2, "max_gpus=73")
    assert asked == []
    r = web.post("/api/search", json={"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "max_gpus": 100000})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "max_gpus"
    for n in ("72", "100000"):
        flags = [] if n == "72" else ["--no-cap"]
        _one_line(runner.invoke(app, [*TINY[:4], "--max-gpus", n, *flags]), 2, "stub search reached")
    assert asked == [72, 100000]


def test_the_size_estimate_counts_every_configuration():
    """estimate_size counts the configurations the evaluation makes (each layout's D_max, times its prefill
    batches when disaggregated), in both modes, and prices them with data/search.yaml limits:
    layouts x bytes_per_layout + configurations x bytes_per_configuration."""
    from inferbound.search.space import search_limits
    lim = search_limits()
    for mode in (False, True, "both"):
        seen = []
        res = search(M8, gpus=["h100_sxm", "l40s"], max_gpus=2, output_len=128, disaggregated=mode, workers=1,
                     on_size=seen.append)
        (size,) = seen
        assert size.configurations == res.evaluated == len(res.points)
        # disaggregated: + the decode layouts also evaluated with a prefill pool of another layout (pool_pairs)
        assert size.modes * size.layouts + size.pool_pairs == res.layouts and size.modes == (2 if mode == "both" else 1)
        assert size.peak_bytes == size.layouts * lim["bytes_per_layout"] + \
            size.configurations * lim["bytes_per_configuration"]
        assert not size.over_budget


def test_a_search_over_the_memory_budget_is_refused_before_any_evaluation(monkeypatch, web):
    """With a budget below the tiny search's estimate: the CLI refuses in one line naming the estimate and
    --no-cap, evaluating nothing; --no-cap runs it and prints the estimate first; the API refuses with 422."""
    from inferbound.search import backends
    from inferbound.search.space import search_limits
    monkeypatch.setitem(search_limits(), "memory_budget_gb", 1e-6)  # 1 kB
    monkeypatch.setitem(search_limits(), "announce_above_gb", 1e-6)
    real = backends.evaluate_layout
    calls = []
    monkeypatch.setattr(backends, "evaluate_layout", lambda *a: calls.append(1) or real(*a))
    r = runner.invoke(app, TINY)
    _one_line(r, 2, "max_gpus=2", "configurations", "GB peak memory", "over the budget", "--no-cap")
    assert calls == []
    r = web.post("/api/search", json={"model": "llama-3.1-8b", "gpus": ["h100_sxm"], "max_gpus": 2,
                                      "output_len": 128})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "max_gpus"
    assert "over the budget" in r.json()["detail"][0]["msg"] and calls == []
    r = runner.invoke(app, [*TINY, "--no-cap"])
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith("search size (estimate): ") and "configurations" in r.stderr
    assert "Why:" in r.stdout and calls


@pytest.mark.parametrize("phase", ["space", "estimate", "evaluation", "forked evaluation", "ranking", "frontier"])
def test_ctrl_c_in_every_phase_exits_130_in_one_line(monkeypatch, phase):
    """A KeyboardInterrupt wherever the search is (building the space, estimating its size, evaluating in this
    process or in a forked worker, ranking, the frontier): exit code 130, one line, no traceback, no worker
    process left."""
    import multiprocessing
    import inferbound.search
    import inferbound.search.result
    from inferbound.search import backends

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt
    where = {"space": (inferbound.search, "build_space"), "estimate": (inferbound.search, "estimate_size"),
             "evaluation": (backends, "evaluate_layout"), "forked evaluation": (backends, "evaluate_layout"),
             "ranking": (inferbound.search, "best_per_layout"), "frontier": (inferbound.search.result, "pareto_mask")}
    monkeypatch.setattr(*where[phase], ctrl_c)
    args = TINY + ["--workers", "2" if phase == "forked evaluation" else "1"]
    if phase == "forked evaluation":
        monkeypatch.setitem(backends.search_defaults()["local"], "min_layouts_per_worker", 1)
        real = backends._forked
        forks = []
        monkeypatch.setattr(backends, "_forked", lambda *a: forks.append(a[-1]) or real(*a))
    r = runner.invoke(app, args)
    _one_line(r, 130, "interrupted", printed=phase == "frontier")  # the table comes before the frontiers
    assert multiprocessing.active_children() == []
    if phase == "forked evaluation":
        assert forks == [2]  # the workers did run, and each interrupted one came back to the parent


def test_a_real_ctrl_c_stops_the_search_and_its_workers(tmp_path):
    """SIGINT to the process group (what a terminal's Ctrl-C sends) while a search runs over forked workers:
    exit code 130 within seconds, one line on stderr, no process of the group left."""
    import os
    import signal
    import subprocess
    import sys
    import time
    if not sys.platform.startswith("linux"):
        pytest.skip("forked workers are Linux-only")
    code = ("import sys; from inferbound.cli import app; print('ready', flush=True); "
            "sys.argv = ['inferbound', 'search', 'llama-3.1-8b', '--max-gpus', '8', '--workers', '2', "
            "'--both-modes', '--json']; app()")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        assert p.stdout.readline().strip() == "ready"  # imports done: the search starts now
        time.sleep(3)  # into the sweep (about 20 s of work on 2 cores)
        os.killpg(p.pid, signal.SIGINT)
        t = time.monotonic()
        out, err = p.communicate(timeout=60)
        assert time.monotonic() - t < 15
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("search size")]
    assert lines == ["error: interrupted (Ctrl-C): the command stopped before it finished"], err
    assert not out.strip()
    deadline = time.monotonic() + 10  # the workers went with it (reaped within seconds, on a loaded machine too)
    while time.monotonic() < deadline:
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.killpg(p.pid, 0)
