"""The float branches of the per-step pricing calls against their numpy branches, over random inputs, to 1e-12.

- pricing/attention_scalar.mixed and .decode_only (attention_of's forms written out on floats, constants
  bound once) vs kernel_pricing.attention_of on numpy arrays (np), for MHA/GQA (Llama-3.1-70B, TP4 and
  TP8, fp8 KV), MLA (DeepSeek-V3) and a sliding-window model, on H100 and MI300X curves;
- pricing/energy.power_w on three floats (its float branch) and energy.scalar_power vs power_w on arrays;
- step/contract.sequence_sums (full attention summed without building c + 1) vs the sums worked out by hand
  from operators.attended_pairs' formula (full: pairs n·p + n(n+1)/2 per chunk, reads p + n; decodes c + 1).
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.pricing.attention_scalar import decode_only, mixed
from inferbound.pricing.energy import power_w, scalar_power
from inferbound.pricing.kernel_pricing import attention_of
from inferbound.step import contract
from inferbound.step.table import StepModel

REL = 1e-12

DEPLOYMENTS = [
    dict(model="llama-3.1-70b", gpu="h100_sxm", tp=4),
    dict(model="llama-3.1-70b", gpu="h100_sxm", tp=8, kv_dtype="fp8"),
    dict(model="llama-3.1-8b", gpu="mi300x"),
    dict(model="deepseek-v3", gpu="h200_sxm", tp=8),
    dict(model="google/gemma-2-9b", gpu="h100_sxm"),
]


def _ops(kw):
    """The (bound float pricer, consts, bound decode kernel) of every curve-priced attention op of a deployment."""
    dep = make_deployment(calibration="none", **kw)
    sm = StepModel(dep, 256)
    sm.step(np.array([10.0]), [])  # builds the scalar tables
    ops = [(priced, consts, dec) for *_, priced, consts, dec in sm._att[0] if consts is not None]
    assert ops, kw  # these GPUs have attention curves: the curve path is what is compared
    return ops


def _loads(rng, n):
    """Random step sums: (decode pairs, prefill pairs, cached, tokens, sampled), some parts empty."""
    out = []
    for _ in range(n):
        sampled = float(rng.integers(1, 512))
        dec = float(rng.integers(0, int(sampled) + 1))
        q = float(rng.integers(0, 8192)) if rng.random() < 0.7 else 0.0
        ctx = float(rng.integers(1, 200_000))
        dp = dec * ctx if dec else 0.0
        pp = q * (q + 1) / 2 + q * float(rng.integers(0, 4096)) if q else 0.0
        cached = dp + q + float(rng.integers(0, 50_000))
        tokens = dec + q if dec + q > 0 else 1.0
        out.append((dp, pp, cached, tokens, min(sampled, tokens)))
    # edges: nothing, decodes only at one token, a prefill of one token, fractional (per attention group)
    out += [(0.0, 0.0, 0.0, 1.0, 1.0), (1.0, 0.0, 1.0, 1.0, 1.0), (0.0, 1.0, 1.0, 1.0, 1.0),
            (37.5, 1234.25, 2000.5, 33.25, 2.5)]
    return out


@pytest.mark.parametrize("kw", DEPLOYMENTS, ids=lambda kw: f"{kw['model']}-{kw['gpu']}-tp{kw.get('tp', 1)}")
def test_float_attention_equals_array_attention(kw):
    rng = np.random.default_rng(18)
    for priced, consts, dec in _ops(kw):
        for load in _loads(rng, 300):
            ref = attention_of(consts, *(np.array([x]) for x in load), np)
            want = (float(ref[2][0]), float(ref[3][0]), float(ref[4][0]))  # compute s, memory s, overhead s
            got = priced(*load)
            for a, b in zip(got, want):
                assert a == pytest.approx(b, rel=REL, abs=0.0), (kw, load)
            if load[1] <= 0:  # no prefill pairs: the decode kernel alone gives the same
                dp, _, _, tokens, sampled = load
                for a, b in zip(dec(dp, tokens, sampled), want):
                    assert a == pytest.approx(b, rel=REL, abs=0.0), (kw, load)


def test_the_float_pricers_are_the_bound_ones():
    """mixed and decode_only rebuilt from the same consts give the same floats as the step model's."""
    (priced, consts, dec), *_ = _ops(DEPLOYMENTS[0])
    load = (150_000.0, 245_350.0, 160_700.0, 800.0, 100.0)
    assert mixed(consts)(*load) == priced(*load)
    assert decode_only(consts)(150_000.0, 100.0, 100.0) == dec(150_000.0, 100.0, 100.0)


@pytest.mark.parametrize("gpu", ["h100_sxm", "mi300x", "b200_hgx"])
def test_power_float_branch_equals_array_branch(gpu):
    g = make_deployment(gpu=gpu).gpu
    rng = np.random.default_rng(7)
    peak, bw = g.peak_flops["bf16"], g.hbm_bw
    t = rng.uniform(1e-5, 0.5, 400)
    flops = rng.uniform(0.0, 1.3, 400) * peak * t  # utilizations up to 1.3: the clip at 1 is exercised
    moved = rng.uniform(0.0, 1.3, 400) * bw * t
    t[:3], flops[3], moved[4] = 0.0, -1.0, -1.0  # the 1e-30 floor and the clip at 0
    arrays = power_w(g, "bf16", flops, moved, t)
    fast = scalar_power(g, "bf16")
    for j in range(t.size):
        one = power_w(g, "bf16", float(flops[j]), float(moved[j]), float(t[j]))
        assert isinstance(one, np.floating)  # the float branch returns what the array branch's 0-d did
        assert float(one) == pytest.approx(float(arrays[j]), rel=REL, abs=0.0), j
        assert fast(float(flops[j]), float(moved[j]), float(t[j])) == pytest.approx(float(arrays[j]), rel=REL, abs=0.0)
    # by hand at u_c = 0.5, u_m = 0: P = idle + span·(1 − e^(−P_c·0.5/span))
    p = g.power
    span = p.tdp_w - p.idle_w
    assert float(power_w(g, "bf16", 0.5 * peak * 0.01, 0.0, 0.01)) == pytest.approx(
        p.idle_w + span * (1.0 - np.exp(-p.compute_w * 0.5 / span)), rel=1e-12)


KINDS_FULL = [("full", None)]


def test_sequence_sums_full_attention_by_hand():
    rng = np.random.default_rng(3)
    for _ in range(200):
        dec = rng.integers(0, 100_000, int(rng.integers(0, 300))).astype(float)
        n_chunks = int(rng.integers(0, 7))  # beyond SCALAR_CHUNKS (4) the numpy branch sums them
        past = [float(x) for x in rng.integers(0, 50_000, n_chunks)]
        new = [float(x) for x in rng.integers(1, 8192, n_chunks)]
        att, tokens = contract.sequence_sums(dec, past, new, KINDS_FULL)
        d = sum(c + 1.0 for c in dec.tolist())  # each decode reads its c cached tokens and its own
        pairs = sum(n * p + n * (n + 1) / 2 for p, n in zip(past, new))
        cached = sum(p + n for p, n in zip(past, new))
        got = att[("full", None)]
        assert got[0] == pytest.approx(d, rel=REL, abs=0.0)
        assert got[1] == pytest.approx(pairs, rel=REL, abs=0.0)
        assert got[2] == pytest.approx(d + cached, rel=REL, abs=0.0)
        assert tokens == dec.size + sum(new)


def test_sequence_sums_window_kinds_keep_their_reads():
    """A window kind beside full attention: decodes read min(c + 1, W) (worked out: W = 4096)."""
    kinds = [("full", None), ("sliding", 4096)]
    dec = np.array([10.0, 5000.0, 4095.0])
    att, _ = contract.sequence_sums(dec, [], [], kinds)
    assert att[("full", None)] == (10.0 + 5000.0 + 4095.0 + 3.0, 0.0, 10.0 + 5000.0 + 4095.0 + 3.0)
    assert att[("sliding", 4096)] == (11.0 + 4096.0 + 4096.0, 0.0, 11.0 + 4096.0 + 4096.0)
