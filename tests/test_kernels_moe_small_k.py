"""Fused MoE at small per-GPU expert width (docs/kernels.md "MoE at small per-GPU width"): the tile form of
pricing/kernels/moe.py at a Qwen3-Next-80B-A3B TP8 decode shape, by hand, and the pieces of
benchmarks/moe_small_k_check.py that run without the measured tables (the fit extra is not needed).
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.pricing.kernels import moe

from _scripts import load_benchmark

#: the structure of the h200_sxm vLLM fp8 curve (tm_min 128, k_fill 654 K-elements per tile), with the
#: feed never limiting, e_c = 1, no fixed costs and an HBM so fast that memory time and the permutation
#: traffic vanish: the compute side alone, so the tile arithmetic can be written out
P = {"tm_min": 128.0, "tn_min": 32.0, "tile_r": 1.0, "e_c": 1.0, "k_fill": 654.0, "k_min": None, "q": 4.0,
     "e_m": 1.0, "mem_latency_s": 0.0, "overhead_s": 0.0, "o_moe": 0.0, "c_slot": 0.0,
     "a_bytes": 1.0, "w_bytes": 1.0, "out_bytes": 2.0, "quant_act": False}
SMS, PEAK, BW = 132, 1e15, 1e30


def test_qwen3_next_tp8_decode_tiles_by_hand():
    # T = 64 tokens, top-10 of E = 512, ep 1, balanced routing: min(512, 640) = 512 experts active with
    # 640/512 = 1.25 tokens each; H = 2048, I = 512 at tp 8 -> I_l = 64; per-SM rate 1e15/132.
    # gate+up (G 512, M 1.25, N 128, K 2048): tm = 128 (one row tile); tn 32/64/128 give 2048/1024/512 tiles
    #   = 16/8/4 waves of 2*128*tn*(2048 + 654): all 354,156,544 FLOP-equivalents per SM; tn 256 pads N to
    #   256 (512 tiles, 4 waves of 2*128*256*2702 = 708,313,088); tm 256 doubles. Min 354,156,544.
    # down (G 512, M 1.25, N 2048, K 64): tn 256: 4096 tiles, 32 waves x 2*128*256*718 = 1,505,755,136;
    #   tn 128: 8192 tiles, 63 waves x 23,527,424 = 1,482,227,712; tn 64: 16384, 125 x 11,763,712 =
    #   1,470,464,000; tn 32: 32768, 249 x 5,881,856 = 1,464,582,144 (the fastest).
    t = moe.moe_time(P, SMS, PEAK, BW, 64, 2048, 512, 10, 512, tp=8)
    assert t == pytest.approx((354_156_544 + 1_464_582_144) * SMS / PEAK, rel=1e-9)
    # without the fill the down projection is 249 x 2*128*32*64 = 130,547,712: the fill multiplies it by
    # (64 + 654)/64 = 11.22 (same tile, same waves), the gate+up by (2048 + 654)/2048 = 1.32 only
    t0 = moe.moe_time({**P, "k_fill": 0.0}, SMS, PEAK, BW, 64, 2048, 512, 10, 512, tp=8)
    assert t0 == pytest.approx((4 * 2 * 128 * 128 * 2048 + 130_547_712) * SMS / PEAK, rel=1e-9)


def test_fill_share_falls_with_the_expert_width():
    # the same layer at tp 1 (I_l = 512): down K = 512, fill factor (512 + 654)/512 = 2.28 against 11.22
    # at I_l = 64; the time per unit of expert weight falls as the width grows
    t8 = moe.moe_time(P, SMS, PEAK, BW, 64, 2048, 512, 10, 512, tp=8)
    t1 = moe.moe_time(P, SMS, PEAK, BW, 64, 2048, 512, 10, 512, tp=1)
    assert t1 / 8 < t8 < t1


# ---------------------------------------------------------------- benchmarks/moe_small_k_check.py pieces
CHECK = load_benchmark("moe_small_k_check")


def test_check_says_so_without_the_tables(tmp_path, capsys):
    assert CHECK.main(["--systems", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # the package's venv has no pyarrow (the fit extra lives in a venv of its own); with it, the empty dir
    assert "no measured tables read" in out
    assert ("pyarrow is not installed" in out) or (f"--systems {tmp_path} has no data/ directory" in out)


def test_band_stats_by_hand():
    il = np.array([16.0, 16.0, 64.0, 300.0])
    tokens = np.array([1.0, 512.0, 8.0, 8.0])
    r = np.array([0.5, 3.0, 1.2, 2.5])
    got = CHECK.band_stats(il, tokens, r)
    # row 1 has 512 tokens (> 256): left out; band 0-32 holds row 0 (r 0.5, not beyond 2x: 0.5 is not < 0.5)
    assert got[0] == (0, 32, 1, pytest.approx(0.5), 0.5, 0.5, 0.5, 0)
    assert got[1] == (33, 64, 1, pytest.approx(0.2), 1.2, 1.2, 1.2, 0)
    assert got[2][:3] == (257, 1e9, 1) and got[2][-1] == 1      # r 2.5 is beyond 2x
    assert len(got) == 3                                         # no rows in 65-128, 129-256


def test_near_shapes_exact_first_then_width_then_routing():
    shapes = [(256, 8, 2048, 512, 8), (512, 10, 4096, 1024, 16), (512, 10, 4096, 1024, 8), (128, 8, 4096, 1536, 8)]
    # Qwen3-Next TP8 (512, 10, 2048, 512, 8): I_l 64. Same H 2048 and I_l 64: (256, 8, 2048, 512, 8);
    # same E, k and I_l 64: (512, 10, 4096, 1024, 16); (512, 10, 4096, 1024, 8) has I_l 128: not near
    assert CHECK.near_shapes(shapes, (512, 10, 2048, 512, 8)) == [(256, 8, 2048, 512, 8), (512, 10, 4096, 1024, 16)]
    assert CHECK.near_shapes(shapes, (128, 8, 4096, 1536, 8)) == [(128, 8, 4096, 1536, 8)]


def test_weight_time_by_hand():
    # 512 experts x 3 x 2048 x 64 fp8 bytes = 201,326,592 B at 4.8e12 B/s = 4.1943e-5 s
    assert CHECK.weight_time(512, 2048, 64, 1.0, 4.8e12) == pytest.approx(201_326_592 / 4.8e12, rel=1e-12)
