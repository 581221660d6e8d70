"""The simulator's fast paths price exactly what the general paths price (to 1e-12), and its decode batch
keeps its columns straight.

- StepModel.step (the scalar path: tables as Python lists, attention_of on floats) vs StepModel.price on
  the same of_sequences load, time and watts, for a dense GQA model, a sliding-window model and a GPU
  without kernel curves (the attention Roof);
- kernel_pricing.attention_of on floats (loadattention.SCALAR) vs on numpy arrays (np);
- step.sequence_sums by hand;
- sim.batch.DecodeBatch: keep/remove move every field of a column together, and ``due`` bounds
  min(target − generated) from below.
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound import make_deployment, step
from inferbound.energy import power_w
from inferbound.kernel_pricing import attention_of
from inferbound.kernels.loadattention import SCALAR
from inferbound.sim.batch import DecodeBatch
from inferbound.stepmodel import StepModel

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
    consts = sm._att[0][0][-1]
    assert consts is not None  # H100 has attention curves: the curve path is what is compared
    for load in [(150_000.0, 0.0, 150_000.0, 100.0, 100.0), (0.0, 245_350.0, 700.0, 700.0, 1.0),
                 (4_000.0, 300_000.0, 5_400.0, 960.0, 5.0)]:
        scalar = attention_of(consts, *load, SCALAR)
        arrays = attention_of(consts, *(np.array([x]) for x in load), np)
        for a, b in zip(scalar, arrays):
            assert a == pytest.approx(float(b[0]), rel=1e-12, abs=0.0), load


def test_sequence_sums_by_hand():
    dep = make_deployment(model="google/gemma-2-9b", gpu="h100_sxm")
    kinds = step.attention_kinds(dep.model)
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
