"""The simulator's fast paths price exactly what the general paths price (to 1e-12), and its decode batch
keeps its columns straight.

- StepModel.step (the scalar path: tables as Python lists, attention_of on floats) vs StepModel.price on
  the same of_sequences load, time and watts, for a dense GQA model, a sliding-window model and a GPU
  without kernel curves (the attention Roof);
- kernel_pricing.attention_of on floats (loadattention.SCALAR) vs on numpy arrays (np);
- step.sequence_sums by hand;
- sim.batch.DecodeBatch: keep/remove move every field of a column together, and ``due`` bounds
  min(target − generated) from below;
- the per-chunk float path of step.sequence_sums (operators' attended_pairs / kind_reads on
  loadattention.SCALAR) vs the numpy path, for full, sliding-window and chunked attention;
- the scheduler's decode block need without drafts (a mask) vs max(⌈(C + 1)/bs⌉ − H, 0);
- DecodeBatch.last_all (the shared last-token time, the row written on demand) and
  Ledger.record_equal_gaps vs Ledger.record_gaps.
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound import make_deployment
from inferbound.step import contract as step
from inferbound.operators import attention_kinds
from inferbound.pricing.energy import power_w
from inferbound.pricing.kernel_pricing import attention_of
from inferbound.pricing.kernels.loadattention import SCALAR
from inferbound.sim.batch import DecodeBatch
from inferbound.step.table import StepModel

STEPS = [([100.0, 900.0, 3000.0], []),              # decodes only
         ([], [(0, 700)]),                           # one prompt chunk
         ([100.0, 900.0, 5000.0], [(0, 700), (512, 256)])]  # mixed, one decode past a 4096 window


@pytest.mark.parametrize("model,gpu", [("llama-3.1-8b", "h100_sxm"), ("google/gemma-2-9b", "h100_sxm"),
                                       ("llama-3.1-8b", "mi300x")])
def test_scalar_step_equals_tabulated_price(model, gpu):
    dep = make_deployment(model=model, gpu=gpu, calibration="none")
    sm = StepModel(dep, 4096)
    for dec, chunks in STEPS:
        load = step.of_sequences(dep.model, dec, [p for p, _ in chunks], [n for _, n in chunks])
        for mode in ("stream", "isolated"):
            t, w = sm.step(np.array(dec), chunks, mode)
            cost = sm.price(load, mode)
            ref_w = float(power_w(dep.gpu, dep.compute_dtype, cost.flops, cost.bytes, cost.time))
            assert t == pytest.approx(float(cost.time), rel=1e-12, abs=0.0), (dec, chunks)
            assert w == pytest.approx(ref_w, rel=1e-12, abs=0.0), (dec, chunks)


def test_scalar_attention_equals_array_attention():
    dep = make_deployment(model="llama-3.1-70b", gpu="h100_sxm", tp=4, calibration="none")
    sm = StepModel(dep, 4096)
    sm.step(np.array([10.0]), [])
    consts, dec_only = sm._att[0][0][-2:]
    assert consts is not None  # H100 has attention curves: the curve path is what is compared
    for load in [(150_000.0, 0.0, 150_000.0, 100.0, 100.0), (0.0, 245_350.0, 700.0, 700.0, 1.0),
                 (4_000.0, 300_000.0, 5_400.0, 960.0, 5.0)]:
        scalar = attention_of(consts, *load, SCALAR)
        arrays = attention_of(consts, *(np.array([x]) for x in load), np)
        for a, b in zip(scalar, arrays):
            assert a == pytest.approx(float(b[0]), rel=1e-12, abs=0.0), load
    # decode-only steps: the bound decode kernel gives attention_of's (compute, memory, overhead) exactly
    for dp, tokens, seqs in [(150_000.0, 100.0, 100.0), (1.0, 1.0, 1.0), (9.0e6, 512.0, 512.0), (0.0, 3.0, 3.0),
                             (2.5e5, 40.0, 37.0)]:
        _, _, c_s, m_s, o_s = attention_of(consts, dp, 0.0, dp, tokens, seqs, SCALAR)
        assert dec_only(dp, tokens, seqs) == (c_s, m_s, o_s), (dp, tokens, seqs)


def test_sequence_sums_by_hand():
    dep = make_deployment(model="google/gemma-2-9b", gpu="h100_sxm")
    kinds = attention_kinds(dep.model)
    att, tokens = step.sequence_sums(np.array([100.0, 5000.0]), [0], [700], kinds)
    assert tokens == 2 + 700
    full = att[("full", None)]
    # decodes read 101 + 5001 tokens; the chunk scores 1 + 2 + ... + 700 = 700·701/2 pairs and reads 700
    assert full == (5102.0, 245_350.0, 5102.0 + 700.0)
    window = [k for k in kinds if k[0] != "full"][0]
    w = window[1]  # 4096: the long decode reads only its window
    assert att[window] == (101.0 + w, 245_350.0, 101.0 + w + 700.0)


def test_decode_batch_columns_move_together():
    d = DecodeBatch(8)
    for j in range(5):  # column j: cached 10j, generated j, target j + 3, blocks j, rid 100 + j
        d.add(10.0 * j, float(j), j + 3.0, float(j), 100 + j, j, 0.5 * j, pid=j - 1, depth=2.0 * j)
    assert d.due == 3.0  # every column has 3 tokens to go
    d.keep(np.array([True, False, True, True, False]))
    assert d.n == 3
    assert d.rid[:3].tolist() == [100, 102, 103]
    assert d.cached[:3].tolist() == [0.0, 20.0, 30.0] and d.generated[:3].tolist() == [0.0, 2.0, 3.0]
    assert d.pid[:3].tolist() == [-1, 1, 2] and d.depth[:3].tolist() == [0.0, 4.0, 6.0]
    d.remove(0)  # the last column moves into the hole
    assert d.rid[:2].tolist() == [103, 102] and d.last_s[:2].tolist() == [1.5, 1.0]
    d.cg[:, :d.n] += 1.0  # cached and generated grow together
    assert d.cached[:2].tolist() == [31.0, 21.0] and d.generated[:2].tolist() == [4.0, 3.0]
    assert d.to_go() == 2.0


KINDS = [("full", None), ("window", 4096), ("chunked", 8192)]
CHUNK_LOADS = [(0.0, 700.0), (512.0, 256.0), (4000.0, 200.0), (5000.0, 3.0), (8100.0, 300.0), (16384.0, 1.0),
               (3.0, 9000.0), (0.0, 1.0)]


@pytest.mark.parametrize("kind", KINDS)
def test_scalar_attention_pairs_equal_array_pairs(kind):
    from inferbound.operators.attention import kind_reads, sequence_attention
    past = np.array([p for p, _ in CHUNK_LOADS])
    new = np.array([n for _, n in CHUNK_LOADS])
    pairs, reads = sequence_attention(kind, past, new)
    for j, (p, n) in enumerate(CHUNK_LOADS):
        a, c = sequence_attention(kind, p, n, SCALAR)
        assert (a, c) == (float(pairs[j]), float(reads[j])), (kind, p, n)
        assert kind_reads(kind, p + n, SCALAR) == float(kind_reads(kind, np.array([p + n]))[0])


def test_window_pairs_by_hand():
    from inferbound.operators.attention import attended_pairs
    # past 4000, 200 new under W = 4096: tokens 4001..4096 see t (96 of them), 4097..4200 see 4096
    by_hand = sum(range(4001, 4097)) + (4200 - 4096) * 4096
    assert attended_pairs(4000.0, 200.0, 4096, xp=SCALAR) == by_hand
    # chunked C = 8192: tokens 8101..8192 see 8101..8192, 8193..8400 see 1..208
    assert attended_pairs(8100.0, 300.0, 8192, True, SCALAR) == sum(range(8101, 8193)) + sum(range(1, 209))


@pytest.mark.parametrize("n_chunks", [1, 2, 3, 4])
def test_sequence_sums_float_chunks_equal_numpy(n_chunks):
    from inferbound.operators.attention import kind_reads, sequence_attention
    rng = np.random.default_rng(n_chunks)
    dec = rng.integers(1, 20_000, 37).astype(float)
    for _ in range(20):
        past = rng.integers(0, 20_000, n_chunks).astype(float).tolist()
        new = rng.integers(1, 9_000, n_chunks).astype(float).tolist()
        att, tokens = step.sequence_sums(dec, past, new, KINDS)
        assert tokens == dec.size + sum(new)
        for kind in KINDS:
            pairs, reads = sequence_attention(kind, np.array(past), np.array(new))  # the numpy path
            d = float(np.add.reduce(kind_reads(kind, dec + 1.0)))
            assert att[kind] == (d, float(pairs.sum()), d + float(reads.sum())), kind


def _need_by_formula(d, bs, k):
    n = d.n
    return np.maximum(np.ceil((d.cached[:n] + 1 + k) / bs) - d.blocks[:n] - d.depth[:n], 0.0)


def test_decode_need_mask_equals_formula():
    from types import SimpleNamespace
    from inferbound.sim.scheduler import Replica
    rng = np.random.default_rng(7)
    bs = 16
    for k, max_depth in ((0, 3), (0, 1), (3, 3)):  # max_depth 1: no prefix blocks (DecodeBatch.deep False)
        for _ in range(50):
            d = DecodeBatch(64)
            for j in range(int(rng.integers(1, 64))):
                c = float(rng.integers(1, 5000))
                depth = float(rng.integers(0, max_depth))
                held = -(-int(c + rng.integers(0, 2)) // bs)  # its blocks hold its cached tokens (H·bs >= C)
                d.add(c, 1.0, 10.0, max(held - depth, 0.0), j, j, 0.0, depth=depth if held >= depth else held)
            rep = SimpleNamespace(dec=d, spec_k=k, pool=SimpleNamespace(block_size=bs))
            need, total = Replica._decode_need(rep)
            ref = _need_by_formula(d, bs, k)
            assert np.array_equal(np.asarray(need, dtype=float), ref) and total == int(ref.sum())
            if k == 0:
                assert need.dtype == bool
            assert d.deep == bool(d.depth[:d.n].any())


def test_decode_batch_shared_last_time():
    d = DecodeBatch(8)
    for j in range(3):
        d.add(10.0, 1.0, 5.0, 1.0, j, j, 2.0)
    assert d.last_all == 2.0
    d.set_last(3.5)  # a decode step: every column's last token at its end
    assert d.last_all == 3.5 and d.last_of(1) == 3.5
    d.add(10.0, 1.0, 5.0, 1.0, 7, 7, 1.25)  # another time joins: the shared one is written out first
    assert d.last_all != d.last_all  # NaN
    assert d.lasts().tolist() == [3.5, 3.5, 3.5, 1.25] and d.last_of(3) == 1.25
    d.remove(0)
    assert d.lasts().tolist() == [1.25, 3.5, 3.5]


def test_equal_gaps_record_what_record_gaps_records():
    from inferbound.sim.ledger import Ledger
    a, b = Ledger([]), Ledger([])
    last = np.full(5, 2.0)
    a.record_gaps(2.75, last, 2.0)
    b.record_equal_gaps(2.75 - 2.0, 5)
    assert a.gap_values().tolist() == b.gap_values().tolist() == [0.75] * 5
    assert a.gap_stats([50, 99]) == b.gap_stats([50, 99])
