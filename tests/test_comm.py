"""Collective cost (comm.py) and placement of groups on the topology (topology.py).

Every expected time is the alpha-beta formula written out by hand with catalog numbers as literals:
    ring      2(n-1)a + 2(n-1)/n S/b        tree     2 ceil(log2 n) a + 2 S/b
    one-shot  a + (n-1) S/b                 two-shot 2a + 2(n-1)/n S/b        NVLS 2a + S/b
    all-gather / reduce-scatter / all-to-all (n-1)a + (n-1)/n S/b             p2p  a + S/b
with b = link bandwidth per direction x efficiency and a the latency per step.
"""
from __future__ import annotations

import numpy as np
import pytest

from inferbound.pricing import comm
from inferbound.deploy import topology
from inferbound.deploy.config import Parallelism
from inferbound.hardware import get_gpu
from inferbound.deploy.topology import Link, Placement

KB, MB = 1e3, 1e6
SIZES = [1 * KB, 1 * MB, 256 * MB]

# h100_sxm: NVLink 4 450 GB/s per direction (hardware.yaml scaleup_bw_gbps_unidir) x collective
# efficiency 0.65 (efficiency.yaml defaults.collective); 5 us per step (defaults.link_latency_s)
NV_BW, NV_EFF, NV_LAT = 450e9, 0.65, 5e-6   # b = 450e9 x 0.65 = 292.5e9 B/s
# a100_80gb_sxm: NVLink 3 300 GB/s per direction, same efficiency and latency defaults: b = 195e9 B/s
# gb200_nvl72: NVLink 5 900 GB/s per direction
GB200_BETA = 900e9 * 0.65
# network (links.yaml): 400 Gb/s NIC per GPU = 50e9 B/s, efficiency 0.85, 8 us per step
NET_BETA, NET_LAT = 50e9 * 0.85, 8e-6
# PCIe (links.yaml): efficiency 0.7, 10 us per step; l40s is PCIe Gen4 x16 = 32e9 B/s per direction
L40S_PCIE_BETA, PCIE_LAT = 32e9 * 0.7, 1e-5


@pytest.fixture(scope="module")
def h100():
    return get_gpu("h100_sxm")


@pytest.fixture(scope="module")
def a100():
    return get_gpu("a100_80gb_sxm")


@pytest.fixture(scope="module")
def l40s():
    return get_gpu("l40s")


def nvlink8() -> Placement:
    return Placement(8, 8, 1, Link("NVLink", NV_BW, NV_EFF, NV_LAT), None)


# ---------------------------------------------------------------- links from the catalog


def test_links_from_catalog(h100, l40s):
    nv = topology.scaleup_link(h100)
    assert (nv.bw, nv.efficiency, nv.latency) == (450e9, 0.65, 5e-6)
    assert nv.effective_bw == pytest.approx(292.5e9)  # 450e9 * 0.65
    net = topology.network_link(h100)
    assert net.name == "network"
    assert (net.bw, net.efficiency, net.latency) == (50e9, 0.85, 8e-6)  # 400 Gb/s / 8 bits
    pcie = topology.pcie_link(l40s)
    assert (pcie.name, pcie.bw, pcie.efficiency, pcie.latency) == ("PCIe", 32e9, 0.7, 1e-5)


def test_network_link_needs_a_nic(l40s):
    # l40s has scaleout_gbps_per_gpu: null -> a group cannot span machines
    with pytest.raises(ValueError, match="scaleout_bw"):
        topology.network_link(l40s)


# ---------------------------------------------------------------- flat all-reduce, each algorithm


@pytest.mark.parametrize("S", SIZES)
def test_all_reduce_each_algorithm_h100_8(h100, S):
    pl = nvlink8()
    a, b = 5e-6, 450e9 * 0.65
    # ring, n=8: 14 steps, 2*7/8 of S on the wire
    assert float(comm.all_reduce(S, pl, h100, "ring")[0]) == pytest.approx(14 * a + 1.75 * S / b, rel=1e-12)
    # tree, n=8: 2*log2(8) = 6 steps, 2 S
    assert float(comm.all_reduce(S, pl, h100, "tree")[0]) == pytest.approx(6 * a + 2 * S / b, rel=1e-12)
    # one-shot: 1 step, each rank reads 7 peers
    assert float(comm.all_reduce(S, pl, h100, "oneshot")[0]) == pytest.approx(a + 7 * S / b, rel=1e-12)
    # two-shot: 2 steps, 2*7/8 of S
    assert float(comm.all_reduce(S, pl, h100, "twoshot")[0]) == pytest.approx(2 * a + 1.75 * S / b, rel=1e-12)
    # NVLS: 2 steps, S once
    assert float(comm.all_reduce(S, pl, h100, "nvls")[0]) == pytest.approx(2 * a + S / b, rel=1e-12)


def test_all_reduce_numbers_for_1mb(h100):
    """One size with every number evaluated: S = 1e6 B, b = 292.5e9 B/s, a = 5 us, n = 8."""
    pl = nvlink8()
    expect = {"ring": 14 * 5e-6 + 1.75e6 / 292.5e9,      # 70 us + 5.983 us
              "tree": 6 * 5e-6 + 2e6 / 292.5e9,          # 30 us + 6.838 us
              "oneshot": 5e-6 + 7e6 / 292.5e9,           # 5 us + 23.93 us
              "twoshot": 10e-6 + 1.75e6 / 292.5e9,       # 10 us + 5.983 us = 15.98 us
              "nvls": 10e-6 + 1e6 / 292.5e9}             # 10 us + 3.419 us = 13.42 us
    for algo, t in expect.items():
        assert float(comm.all_reduce(1e6, pl, h100, algo)[0]) == pytest.approx(t, rel=1e-12), algo
    assert expect["nvls"] == pytest.approx(13.4188e-6, rel=1e-4)
    t, name = comm.all_reduce(1e6, pl, h100, "auto")
    assert name == "nvls" and float(t) == pytest.approx(expect["nvls"], rel=1e-12)


# Every algorithm worked out for h100_sxm (a = 5 us, b = 292.5e9 B/s); "auto" must give the smallest.
# n = 2: ring = two-shot = NVLS = 2a + S/b, tree = 2a + 2S/b, one-shot = a + S/b (always the smallest)
# n = 4: ring 6a + 1.5 S/b, tree 4a + 2S/b, one-shot a + 3S/b, two-shot 2a + 1.5 S/b, NVLS 2a + S/b
# n = 8: ring 14a + 1.75 S/b, tree 6a + 2S/b, one-shot a + 7S/b, two-shot 2a + 1.75 S/b, NVLS 2a + S/b
AUTO_H100 = [
    # 1 KB: one-shot 5e-6 + 1e3/292.5e9 = 5.00342 us; next two-shot = NVLS = 10e-6 + 1e3/292.5e9 = 10.0034 us
    (2, 1 * KB, "oneshot", 5.003418803419e-06),
    # 1 MB: one-shot 5e-6 + 1e6/292.5e9 = 5 + 3.41880 = 8.41880 us; next 10e-6 + 1e6/292.5e9 = 13.4188 us
    (2, 1 * MB, "oneshot", 8.418803418803e-06),
    # 256 MB: one-shot 5e-6 + 256e6/292.5e9 = 5 + 875.2137 = 880.2137 us; next 10 + 875.2137 = 885.2137 us
    (2, 256 * MB, "oneshot", 8.802136752137e-04),
    # 1 KB: one-shot 5e-6 + 3e3/292.5e9 = 5.01026 us; NVLS 10e-6 + 1e3/292.5e9 = 10.0034 us;
    #       two-shot 10e-6 + 1.5e3/292.5e9 = 10.0051 us; tree 20.0068 us; ring 30.0051 us
    (4, 1 * KB, "oneshot", 5.010256410256e-06),
    # 1 MB: NVLS 10e-6 + 1e6/292.5e9 = 13.4188 us; two-shot 10e-6 + 1.5e6/292.5e9 = 15.1282 us;
    #       one-shot 5e-6 + 3e6/292.5e9 = 15.2564 us; tree 26.8376 us; ring 35.1282 us
    (4, 1 * MB, "nvls", 1.341880341880e-05),
    # 256 MB: NVLS 10e-6 + 256e6/292.5e9 = 885.2137 us; two-shot 10e-6 + 384e6/292.5e9 = 1322.8205 us;
    #         ring 30e-6 + 384e6/292.5e9 = 1342.8205 us; tree 1770.4274 us; one-shot 2630.6410 us
    (4, 256 * MB, "nvls", 8.852136752137e-04),
    # 1 KB: one-shot 5e-6 + 7e3/292.5e9 = 5.02393 us; NVLS 10.0034 us; two-shot 10.0060 us; tree 30.0068 us
    (8, 1 * KB, "oneshot", 5.023931623932e-06),
    # 1 MB: NVLS 10e-6 + 1e6/292.5e9 = 13.4188 us; two-shot 10e-6 + 1.75e6/292.5e9 = 15.9829 us;
    #       one-shot 5e-6 + 7e6/292.5e9 = 28.9316 us; tree 36.8376 us; ring 75.9829 us
    (8, 1 * MB, "nvls", 1.341880341880e-05),
    # 256 MB: NVLS 10e-6 + 256e6/292.5e9 = 885.2137 us; two-shot 10e-6 + 448e6/292.5e9 = 1541.6239 us;
    #         ring 70e-6 + 448e6/292.5e9 = 1601.6239 us; tree 1780.4274 us; one-shot 6131.4957 us
    (8, 256 * MB, "nvls", 8.852136752137e-04),
]


@pytest.mark.parametrize("n, S, best, expect", AUTO_H100)
def test_auto_is_minimum_of_allowed_h100(h100, n, S, best, expect):
    pl = Placement(n, n, 1, Link("NVLink", NV_BW, NV_EFF, NV_LAT), None)
    t, name = comm.all_reduce(S, pl, h100, "auto")
    assert name == best
    assert float(t) == pytest.approx(expect, rel=1e-9)


def test_auto_choices_by_size_h100(h100):
    """Small messages: one-shot (1 latency); mid and large: NVLS (half the bytes of ring)."""
    pl = nvlink8()
    # 1 KB: oneshot 5e-6 + 7e3/292.5e9 = 5.024 us < nvls 10e-6 + ... (two latencies)
    assert comm.all_reduce(1e3, pl, h100)[1] == "oneshot"
    assert comm.all_reduce(1e6, pl, h100)[1] == "nvls"
    assert comm.all_reduce(256e6, pl, h100)[1] == "nvls"


# a100_80gb_sxm, 8 GPUs (a = 5 us, b = 300e9 x 0.65 = 195e9 B/s, no NVLS):
# ring 14a + 1.75 S/b, tree 6a + 2S/b, one-shot a + 7S/b, two-shot 2a + 1.75 S/b
AUTO_A100 = [
    # 1 KB: one-shot 5e-6 + 7e3/195e9 = 5.03590 us; two-shot 10e-6 + 1.75e3/195e9 = 10.0090 us; tree 30.0103 us
    (1 * KB, "oneshot", 5.035897435897e-06),
    # 1 MB: two-shot 10e-6 + 1.75e6/195e9 = 18.9744 us; tree 30e-6 + 2e6/195e9 = 40.2564 us;
    #       one-shot 5e-6 + 7e6/195e9 = 40.8974 us; ring 70e-6 + 1.75e6/195e9 = 78.9744 us
    (1 * MB, "twoshot", 1.897435897436e-05),
    # 256 MB: two-shot 10e-6 + 448e6/195e9 = 2307.4359 us; ring 70e-6 + 448e6/195e9 = 2367.4359 us;
    #         tree 30e-6 + 512e6/195e9 = 2655.6410 us; one-shot 5e-6 + 1792e6/195e9 = 9194.7436 us
    (256 * MB, "twoshot", 2.307435897436e-03),
]


@pytest.mark.parametrize("S, best, expect", AUTO_A100)
def test_auto_is_minimum_without_nvls_a100(a100, S, best, expect):
    pl = Placement(8, 8, 1, Link("NVLink", 300e9, 0.65, 5e-6), None)  # a100_80gb_sxm NVLink 3
    t, name = comm.all_reduce(S, pl, a100, "auto")
    assert name == best and name != "nvls"
    assert float(t) == pytest.approx(expect, rel=1e-9)


def test_nvls_only_where_the_switch_has_it(h100, a100):
    pl = nvlink8()
    assert h100.nvls and not a100.nvls
    assert "nvls" in comm.allowed_algorithms(h100, pl)
    assert comm.allowed_algorithms(a100, pl) == ["ring", "tree", "oneshot", "twoshot"]
    with pytest.raises(ValueError, match="nvls"):
        comm.all_reduce(1e6, pl, a100, "nvls")


@pytest.mark.parametrize("algo", ["oneshot", "twoshot", "nvls"])
def test_switch_algorithms_not_on_pcie(l40s, algo):
    par = Parallelism(tp=2)
    pl = topology.place(l40s, par, 2)
    assert comm.allowed_algorithms(l40s, pl) == ["ring", "tree"]
    with pytest.raises(ValueError, match="collective_algo"):
        comm.all_reduce(1e6, pl, l40s, algo)


@pytest.mark.parametrize("S", SIZES)
def test_pcie_all_reduce_l40s(l40s, S):
    pl = topology.place(l40s, Parallelism(tp=2), 2)
    b, a = 32e9 * 0.7, 1e-5   # PCIe Gen4 x16 x links.yaml pcie efficiency; 10 us per step
    ring = 2 * 1 * a + 2 * (1 / 2) * S / b   # = 2a + S/b
    tree = 2 * 1 * a + 2 * S / b
    assert float(comm.all_reduce(S, pl, l40s, "ring")[0]) == pytest.approx(ring, rel=1e-12)
    assert float(comm.all_reduce(S, pl, l40s, "tree")[0]) == pytest.approx(tree, rel=1e-12)
    t, name = comm.all_reduce(S, pl, l40s)
    assert name == "ring" and float(t) == pytest.approx(ring, rel=1e-12)


def test_single_rank_costs_nothing(h100):
    pl = Placement(1, 1, 1, topology.scaleup_link(h100), None)
    assert float(comm.all_reduce(1e6, pl, h100)[0]) == 0.0
    assert float(comm.all_gather(1e6, pl, h100)[0]) == 0.0
    assert float(comm.all_to_all(1e6, pl, h100)[0]) == 0.0


# ---------------------------------------------------------------- all-gather, reduce-scatter, all-to-all, p2p


@pytest.mark.parametrize("S", SIZES)
def test_all_gather_reduce_scatter_all_to_all_flat(h100, S):
    pl = nvlink8()
    hand = 7 * 5e-6 + 7 / 8 * S / (450e9 * 0.65)
    assert float(comm.all_gather(S, pl, h100)[0]) == pytest.approx(hand, rel=1e-12)
    assert float(comm.collective_time("reduce_scatter", S, pl, h100)[0]) == pytest.approx(hand, rel=1e-12)
    t, name = comm.all_to_all(S, pl, h100)
    assert name == "pairwise" and float(t) == pytest.approx(hand, rel=1e-12)


@pytest.mark.parametrize("S", SIZES)
def test_p2p(h100, S):
    nv = topology.scaleup_link(h100)
    assert float(comm.p2p(S, nv)[0]) == pytest.approx(5e-6 + S / (450e9 * 0.65), rel=1e-12)
    net = topology.network_link(h100)
    assert float(comm.p2p(S, net)[0]) == pytest.approx(8e-6 + S / (50e9 * 0.85), rel=1e-12)
    # collective_time("p2p") takes the outer link of a placement that has one
    pl = Placement(2, 1, 2, nv, net)
    assert float(comm.collective_time("p2p", S, pl, h100)[0]) == pytest.approx(8e-6 + S / (50e9 * 0.85), rel=1e-12)


def test_unknown_collective_kind(h100):
    with pytest.raises(ValueError, match="kind"):
        comm.collective_time("broadcast", 1e6, nvlink8(), h100)


# ---------------------------------------------------------------- hierarchical (spanning nodes)


@pytest.mark.parametrize("S", SIZES)
def test_hierarchical_all_reduce_two_nodes_of_8(h100, S):
    """16 ranks on 2 HGX nodes: RS inside (8 over NVLink) + AR across (2 over the NIC, S/8) + AG inside."""
    pl = topology.place(h100, Parallelism(tp=16, nodes=2), 16)
    assert (pl.local, pl.spans, pl.inner.name, pl.outer.name) == (8, 2, "NVLink", "network")
    rs = 7 * 5e-6 + 7 / 8 * S / (450e9 * 0.65)          # reduce-scatter inside
    ag = rs                                              # all-gather inside, same cost
    b_net = 50e9 * 0.85                                  # 400 Gb/s NIC x links.yaml network efficiency
    ring_across = 2 * 1 * 8e-6 + 2 * (1 / 2) * (S / 8) / b_net
    tree_across = 2 * 1 * 8e-6 + 2 * (S / 8) / b_net     # never better than ring for 2 spans
    t, name = comm.all_reduce(S, pl, h100, "auto")
    assert float(t) == pytest.approx(rs + min(ring_across, tree_across) + ag, rel=1e-12)
    assert name == "hierarchical-ring"
    t_tree, _ = comm.all_reduce(S, pl, h100, "tree")
    assert float(t_tree) == pytest.approx(rs + tree_across + ag, rel=1e-12)
    # switch-fabric algorithms are not offered across nodes
    assert comm.allowed_algorithms(h100, pl) == ["ring", "tree"]
    with pytest.raises(ValueError):
        comm.all_reduce(S, pl, h100, "nvls")


def test_hierarchical_all_reduce_8_gpus_over_2_nodes(h100):
    """8 GPUs, nodes=2: 2 spans of 4 (NVLink inside), the NIC between."""
    S = 1e6
    pl = topology.place(h100, Parallelism(tp=8, nodes=2), 8)
    inner = 2 * (3 * 5e-6 + 3 / 4 * S / (450e9 * 0.65))
    across = 2 * 8e-6 + (S / 4) / (50e9 * 0.85)
    assert float(comm.all_reduce(S, pl, h100)[0]) == pytest.approx(inner + across, rel=1e-12)
    # and it is slower than the same 8 GPUs in one NVLink island (NVLS, 2a + S/b)
    one_node = topology.place(h100, Parallelism(tp=8), 8)
    assert float(comm.all_reduce(S, one_node, h100)[0]) == pytest.approx(10e-6 + S / (450e9 * 0.65), rel=1e-12)
    assert float(comm.all_reduce(S, pl, h100)[0]) > float(comm.all_reduce(S, one_node, h100)[0])


@pytest.mark.parametrize("S", SIZES)
def test_hierarchical_all_gather_and_all_to_all(h100, S):
    pl = topology.place(h100, Parallelism(tp=16, nodes=2), 16)
    b_nv, b_net = 450e9 * 0.65, 50e9 * 0.85
    # all-gather: across the 2 nodes on S/8, then inside the node on S
    ag = (7 * 5e-6 + 7 / 8 * S / b_nv) + (1 * 8e-6 + 1 / 2 * (S / 8) / b_net)
    assert float(comm.all_gather(S, pl, h100)[0]) == pytest.approx(ag, rel=1e-12)
    # all-to-all: 7/16 of S to local peers over NVLink, 8/16 to the other node over the NIC; slower wins
    local = 7 / 16 * S / b_nv + 7 * 5e-6
    remote = 8 / 16 * S / b_net + 1 * 8e-6
    t, name = comm.all_to_all(S, pl, h100)
    assert name == "hierarchical-pairwise"
    assert float(t) == pytest.approx(max(local, remote), rel=1e-12)


# ---------------------------------------------------------------- placement


def test_placement_8_gpus_2_nodes_h100(h100):
    pl = topology.place(h100, Parallelism(tp=8, nodes=2), 8)
    assert (pl.size, pl.local, pl.spans) == (8, 4, 2)
    assert pl.inner.name == "NVLink" and pl.inner.bw == 450e9
    assert pl.outer is not None and pl.outer.name == "network" and pl.outer.bw == 50e9


def test_placement_8_gpus_1_node_h100(h100):
    pl = topology.place(h100, Parallelism(tp=8), 8)
    assert (pl.local, pl.spans, pl.inner.name, pl.outer) == (8, 1, "NVLink", None)


@pytest.mark.parametrize("gpu_id", ["l40s", "rtx_4090"])
def test_placement_pcie_only_cards(gpu_id):
    g = get_gpu(gpu_id)
    assert not g.nvlink
    pl = topology.place(g, Parallelism(tp=2), 2)
    assert (pl.local, pl.spans, pl.outer) == (2, 1, None)
    assert pl.inner.name == "PCIe"
    assert pl.inner.bw == 32e9 and pl.inner.efficiency == 0.7   # PCIe Gen4 x16; links.yaml pcie efficiency


def test_placement_nvl72_is_one_island_across_trays():
    g = get_gpu("gb200_nvl72")
    par = Parallelism(tp=16, nodes=4)   # 4 trays of 4 GPUs, one NVLink Switch domain of 72
    assert topology.island_size(g, par) == 72
    pl = topology.place(g, par, 16)
    assert (pl.local, pl.spans, pl.outer) == (16, 1, None)
    assert pl.inner.name == "NVLink" and pl.inner.bw == 900e9
    # so NVLS all-reduce of 16 over NVLink 5: 2a + S/b
    assert float(comm.all_reduce(1e6, pl, g, "nvls")[0]) == pytest.approx(10e-6 + 1e6 / GB200_BETA, rel=1e-12)


def test_placement_pipeline_neighbours_cross_nodes(h100):
    """tp=4 pp=2 over 2 nodes: the stage neighbours are 4 ranks apart, one per node -> NIC."""
    par = Parallelism(tp=4, pp=2, nodes=2)
    pl = topology.place(h100, par, 2, stride=4)
    assert pl.spans == 2 and pl.outer is not None and pl.outer.name == "network"
    same = topology.place(h100, Parallelism(tp=4, pp=2), 2, stride=4)
    assert same.outer is None and same.inner.name == "NVLink"


def test_check_nodes(h100):
    with pytest.raises(ValueError, match="nodes"):
        topology.check_nodes(h100, Parallelism(tp=8, nodes=3))
    with pytest.raises(ValueError, match="nodes"):
        topology.check_nodes(h100, Parallelism(tp=16, nodes=1))  # 16 GPUs in one HGX box
    topology.check_nodes(h100, Parallelism(tp=16, nodes=2))


# ---------------------------------------------------------------- numpy arrays of S


@pytest.mark.parametrize("algo", ["auto", "ring", "tree", "oneshot", "twoshot", "nvls"])
def test_vectorized_flat_equals_scalar(h100, algo):
    pl = nvlink8()
    S = np.array([1e3, 3e4, 1e6, 3e7, 256e6])
    vec, _ = comm.all_reduce(S, pl, h100, algo)
    scal = [float(comm.all_reduce(s, pl, h100, algo)[0]) for s in S]
    np.testing.assert_allclose(vec, scal, rtol=1e-12)
    for fn in (comm.all_gather, comm.all_to_all):
        np.testing.assert_allclose(fn(S, pl, h100)[0], [float(fn(s, pl, h100)[0]) for s in S], rtol=1e-12)


def test_vectorized_hierarchical_2_spans_equals_scalar(h100):
    pl = topology.place(h100, Parallelism(tp=16, nodes=2), 16)
    S = np.array(SIZES)
    np.testing.assert_allclose(comm.all_reduce(S, pl, h100)[0],
                               [float(comm.all_reduce(s, pl, h100)[0]) for s in S], rtol=1e-12)
    np.testing.assert_allclose(comm.all_to_all(S, pl, h100)[0],
                               [float(comm.all_to_all(s, pl, h100)[0]) for s in S], rtol=1e-12)


def test_vectorized_hierarchical_4_spans_equals_scalar(h100):
    """32 ranks as 4 nodes of 8: across 4 spans tree (4a + 2S/b) wins for small S, ring (6a + 1.5 S/b) for large."""
    pl = Placement(32, 8, 4, topology.scaleup_link(h100), topology.network_link(h100))
    S = np.array(SIZES)
    b_nv, b_net = 450e9 * 0.65, 50e9 * 0.85
    inner = 2 * (7 * 5e-6 + 7 / 8 * S / b_nv)
    ring = 6 * 8e-6 + 1.5 * (S / 8) / b_net
    tree = 4 * 8e-6 + 2 * (S / 8) / b_net
    hand = inner + np.minimum(ring, tree)
    scal = [float(comm.all_reduce(s, pl, h100)[0]) for s in S]
    np.testing.assert_allclose(scal, hand, rtol=1e-12)          # scalar calls pick the best per size
    np.testing.assert_allclose(comm.all_reduce(S, pl, h100)[0], hand, rtol=1e-12)  # the array call does not
