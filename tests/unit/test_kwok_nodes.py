"""chaoskit.model.kwok: which Nodes are simulated, as a predicate and as the label selectors the API applies."""

from __future__ import annotations

from typing import Any

from chaoskit.model.kwok import REAL_NODES_SELECTOR, SIMULATED_SELECTOR, is_simulated, named, real_nodes
from chaoskit.seams.kube import FakeKube, selection


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


NODES = [
    node("chaoskit-control-plane", **{"node-role.kubernetes.io/control-plane": ""}),
    node("chaoskit-worker"),
    node("kwok-node-0", type="kwok"),
    node("labelled-otherwise", type="gpu"),
    {"metadata": {"name": "no-labels-at-all"}},
]


def test_only_the_kwok_label_makes_a_node_simulated() -> None:
    assert [is_simulated(n) for n in NODES] == [False, False, True, False, False]
    assert is_simulated({}) is False


def test_real_nodes_keeps_every_other_node_in_order() -> None:
    assert [n["metadata"]["name"] for n in real_nodes(NODES)] == [
        "chaoskit-control-plane",
        "chaoskit-worker",
        "labelled-otherwise",
        "no-labels-at-all",
    ]


def test_the_selectors_keep_what_the_predicate_says_as_the_api_server_applies_them() -> None:
    real = selection({"labelSelector": REAL_NODES_SELECTOR})
    simulated = selection({"labelSelector": SIMULATED_SELECTOR})
    assert [real(n) for n in NODES] == [not is_simulated(n) for n in NODES]
    assert [simulated(n) for n in NODES] == [is_simulated(n) for n in NODES]


def test_a_node_list_with_the_real_nodes_selector_leaves_the_simulated_out() -> None:
    kube = FakeKube({f"/api/v1/nodes/{n['metadata']['name']}": n for n in NODES})
    listed = kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]
    assert "kwok-node-0" not in [n["metadata"]["name"] for n in listed] and len(listed) == 4


def test_a_simulated_node_says_so_by_name() -> None:
    assert named(NODES[2]) == "kwok-node-0 (simulated by kwok)"
    assert named(NODES[1]) == "chaoskit-worker"
