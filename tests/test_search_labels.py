"""Search rows are labelled like compare's rows: the layout names attention-DP and the node count where the
configuration uses them (search/result.make_row, unit_label; deploy Deployment.label; faces/compare.labels)."""
from __future__ import annotations

import pytest

from inferbound.deploy.deployment import make_deployment
from inferbound.faces.compare import labels as compare_labels
from inferbound.search import search
from inferbound.search.result import unit_label


@pytest.fixture(scope="module")
def rows():
    # a MoE model on H100 (8 per node, data/hardware.yaml): up to 16 GPUs is up to 2 nodes
    return search("qwen3-30b-a3b", gpus=["h100_sxm"], max_gpus=16, all_layouts=True, dtypes=["bf16"],
                  top=500).table


def _by_hand(r) -> str:
    """The label as docs/design.md states it: '<n>x <gpu> TP<t>[ PP<p>][ EP<e>][ attention-DP<d> | DP<d>]
    [ over <k> nodes] <dtype>'."""
    parts = [f"{r.replica_gpus}x {r.gpu}", f"TP{r.tp}"]
    parts += [f"PP{r.pp}"] if r.pp > 1 else []
    parts += [f"EP{r.ep}"] if r.ep > 1 else []
    parts += [f"+{r.redundant_experts} redundant experts"] if r.redundant_experts else []
    parts += [("attention-DP" if r.attention_dp else "DP") + str(r.dp)] if r.dp > 1 else []
    parts += [f"over {r.nodes} nodes"] if r.nodes > 1 else []
    return " ".join(parts + [r.dtype])


def test_search_labels_name_attention_dp_and_nodes_where_used(rows):
    att = [r for r in rows if r.attention_dp and r.dp > 1]
    multi = [r for r in rows if r.nodes > 1]
    plain = [r for r in rows if not r.attention_dp and r.nodes == 1]
    assert att and multi and plain  # the sweep has each kind
    for r in rows:
        assert r.layout == _by_hand(r), r.layout
        assert ("attention-DP" in r.layout) == (r.attention_dp and r.dp > 1)
        assert ("nodes" in r.layout) == (r.nodes > 1)
        assert unit_label(r) in r.explanation  # the step's explanation names the same unit
    both = [r for r in att if r.nodes > 1]
    assert both and f"attention-DP{both[0].dp} over {both[0].nodes} nodes" in both[0].layout


def test_search_layout_is_compares_label_for_the_same_deployment(rows):
    for r in [next(r for r in rows if r.attention_dp and r.nodes > 1), next(r for r in rows if not r.attention_dp)]:
        dep = make_deployment("qwen3-30b-a3b", "h100_sxm", num_gpus=r.replica_gpus, tp=r.tp, pp=r.pp, ep=r.ep,
                              dp=r.dp, nodes=r.nodes, attention_dp=r.attention_dp, weight_dtype=r.weight_dtype)
        # one compare row: no aspect differs, so its label is the layout alone; search adds the dtype
        assert f"{compare_labels([dep], [{}])[0]} {r.dtype}" == r.layout
