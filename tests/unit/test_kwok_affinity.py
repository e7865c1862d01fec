"""chaoskit.cluster.kwok.daemonsets: the merge patch that keeps a DaemonSet's pods off simulated nodes, and which
DaemonSets get it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ruamel.yaml import YAML

from chaoskit.cluster.assets import deploy_dir, images_dir
from chaoskit.cluster.kwok.daemonsets import NOT_SIMULATED, affinity_patch, lands_on_simulated, to_patch, tolerates
from chaoskit.cluster.kwok.nodes import fake_node
from chaoskit.model.kwok import TAINT
from chaoskit.seams.kube import merge_patch

Obj = dict[str, Any]
EVERY_TAINT = [{"operator": "Exists"}]


def daemonset(name: str, namespace: str = "kube-system", tolerations: list[Obj] | None = None, **pod: Any) -> Obj:
    spec = {"tolerations": EVERY_TAINT if tolerations is None else tolerations, "containers": [{"name": "c"}], **pod}
    return {
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "41"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {}, "spec": spec}},
    }


def _terms(ds: Obj) -> list[Obj]:
    node = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    return list(node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"])


def _places_on(ds: Obj, labels: dict[str, str]) -> bool:
    """The scheduler's reading of required node affinity: any term whose every expression holds (In/NotIn only)."""

    def holds(e: Obj) -> bool:
        there = labels.get(e["key"]) in e["values"]
        return there if e["operator"] == "In" else not there

    return any(all(holds(e) for e in t.get("matchExpressions") or []) for t in _terms(ds))


def test_a_daemonset_without_affinity_gets_one_term_that_keeps_it_off() -> None:
    patch = affinity_patch(daemonset("kube-proxy"))
    assert patch == {
        "metadata": {"resourceVersion": "41"},
        "spec": {
            "template": {
                "spec": {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "type", "operator": "NotIn", "values": ["kwok"]}]}
                                ]
                            }
                        }
                    }
                }
            }
        },
    }


def test_every_existing_term_gets_the_expression_and_the_rest_of_the_affinity_stays() -> None:
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["edge-1"]}]},
        ]
    }
    preferred = [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}
    ]
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": required,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        },
        "podAntiAffinity": anti,
    }
    ds = daemonset("netd", affinity=copy.deepcopy(affinity))
    patched = merge_patch(ds, affinity_patch(ds))
    after = patched["spec"]["template"]["spec"]["affinity"]
    assert after["podAntiAffinity"] == anti
    assert after["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    assert _terms(patched) == [
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}, NOT_SIMULATED]},
        {
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["edge-1"]}],
            "matchExpressions": [NOT_SIMULATED],
        },
    ]
    assert ds["spec"]["template"]["spec"]["affinity"] == affinity  # the DaemonSet read is left as it was
    assert patched["spec"]["template"]["spec"]["tolerations"] == EVERY_TAINT


def test_the_patched_pods_go_to_every_real_node_and_no_simulated_one() -> None:
    ds = daemonset("kube-proxy")
    patched = merge_patch(ds, affinity_patch(ds))
    assert _places_on(patched, {"kubernetes.io/os": "linux"}) and _places_on(patched, {"type": "gpu"})
    assert not _places_on(patched, fake_node(0)["metadata"]["labels"])


def test_a_daemonset_kept_off_already_is_not_patched_again() -> None:
    ds = daemonset("kube-proxy")
    once = merge_patch(ds, affinity_patch(ds))
    assert affinity_patch(once) is None and not lands_on_simulated(once)


def test_only_the_terms_that_lack_it_get_the_expression() -> None:
    kept, open_ = (
        {"matchExpressions": [dict(NOT_SIMULATED)]},
        {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
    )
    ds = daemonset(
        "x",
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [kept, open_]}}
        },
    )
    assert _terms(merge_patch(ds, affinity_patch(ds))) == [
        kept,
        {"matchExpressions": [*open_["matchExpressions"], NOT_SIMULATED]},
    ]


@pytest.mark.parametrize(
    ("tolerations", "placed"),
    [
        ([{"operator": "Exists"}], True),  # every taint: kube-proxy, kindnet, netd, the agent
        ([{"key": "kwok.x-k8s.io/node", "operator": "Exists"}], True),
        ([{"key": "kwok.x-k8s.io/node", "operator": "Equal", "value": "fake", "effect": "NoSchedule"}], True),
        ([{"key": "kwok.x-k8s.io/node", "value": "fake"}], True),  # Equal is the default operator
        ([{"key": "kwok.x-k8s.io/node", "value": "real"}], False),
        ([{"operator": "Exists", "effect": "NoExecute"}], False),  # a NoSchedule taint stays untolerated
        ([{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}], False),
        ([], False),
    ],
)
def test_tolerating_the_simulated_nodes_taint_as_the_scheduler_judges_it(tolerations: list[Obj], placed: bool) -> None:
    assert tolerates(tolerations, TAINT) is placed


def test_the_cluster_and_chaoskit_daemonsets_are_patched_and_others_only_named() -> None:
    proxy, agent = daemonset("kube-proxy"), daemonset("chaoskit-agent", "chaoskit-system")
    exporter = daemonset("node-exporter", "monitoring")
    picky = daemonset("gpu-plugin", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    ours, elsewhere = to_patch([proxy, agent, exporter, picky])
    assert [d["metadata"]["name"] for d in ours] == ["kube-proxy", "chaoskit-agent"]
    assert [d["metadata"]["name"] for d in elsewhere] == ["node-exporter"]


def _shipped_daemonset(text: str) -> Obj:
    (ds,) = [d for d in YAML(typ="safe").load_all(text) if d and d["kind"] == "DaemonSet"]
    return dict(ds)


def test_chaoskits_agent_ships_kept_off_simulated_nodes() -> None:
    assert affinity_patch(_shipped_daemonset((deploy_dir() / "agent.yaml").read_text())) is None


def test_chaoskits_pod_network_as_kind_applies_it_needs_the_patch() -> None:
    # baked into the node image: patched in the running cluster rather than rebuilt
    netd = _shipped_daemonset((images_dir() / "node" / "kind" / "manifests" / "default-cni.yaml").read_text())
    assert lands_on_simulated(netd) and affinity_patch(netd) is not None
