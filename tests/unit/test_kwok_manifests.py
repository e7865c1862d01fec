"""chaoskit.cluster.kwok: the Stages kwok plays, its controller's objects and the simulated Node objects."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from ruamel.yaml import YAML

from chaoskit.cluster import versions
from chaoskit.cluster.images import KWOK_IMAGE
from chaoskit.cluster.kwok import controller, nodes, stages
from chaoskit.model.kwok import is_simulated
from chaoskit.seams.kube import object_path

Obj = dict[str, Any]


def _stages() -> list[Obj]:
    return [d for d in YAML(typ="safe").load_all(stages.config_text()) if d]


def _by_kind(objs: list[Obj]) -> dict[str, Obj]:
    return {o["kind"]: o for o in objs}


# --- the Stages ---------------------------------------------------------------------------------------------------


def test_the_config_is_one_stage_a_document_nodes_first() -> None:
    docs = _stages()
    assert [d["metadata"]["name"] for d in docs] == [
        "node-initialize",
        "node-heartbeat",
        "pod-ready",
        "pod-complete",
        "pod-delete",
    ]
    assert {(d["apiVersion"], d["kind"]) for d in docs} == {("kwok.x-k8s.io/v1alpha1", "Stage")}
    assert [d["spec"]["resourceRef"]["kind"] for d in docs] == ["Node", "Node", "Pod", "Pod", "Pod"]
    assert {d["spec"]["resourceRef"]["apiGroup"] for d in docs} == {"v1"}


def test_every_selector_is_a_jq_expression_not_the_deprecated_bare_key() -> None:
    for doc in _stages():
        for expression in doc["spec"]["selector"]["matchExpressions"]:
            assert set(expression) == {"jq"}, doc["metadata"]["name"]
            assert expression["jq"]["operator"] in ("In", "NotIn", "Exists", "DoesNotExist")
            assert ("values" in expression["jq"]) is (expression["jq"]["operator"] in ("In", "NotIn"))


def _templates() -> dict[str, str]:
    return {d["metadata"]["name"]: d["spec"]["next"].get("statusTemplate", "") for d in _stages()}


def test_the_templates_open_and_close_every_action_and_block() -> None:
    for name, template in _templates().items():
        assert template.count("{{") == template.count("}}") - template.count("}}}}"), name
        opened = len(re.findall(r"{{-? *(?:if|range|with) ", template))
        assert opened == len(re.findall(r"{{-? *end *-?}}", template)), name


def test_a_node_is_ready_with_no_pressure_and_no_address_of_any_machine() -> None:
    template = _templates()["node-initialize"]
    for condition, status in (("Ready", "True"), ("MemoryPressure", "False"), ("DiskPressure", "False")):
        assert re.search(rf'- type: {condition}\n  status: "{status}"\n  reason: SimulatedByKwok', template)
    assert "phase: Running" in template
    assert "addresses" not in template and "NodeIP" not in "".join(_templates().values())
    assert "daemonEndpoints" not in template  # the API server's node proxy has nowhere to go


def test_the_heartbeat_stamps_the_conditions_every_five_to_six_minutes_and_changes_nothing_else() -> None:
    heartbeat = next(d for d in _stages() if d["metadata"]["name"] == "node-heartbeat")
    assert heartbeat["spec"]["delay"] == {"durationMilliseconds": 300_000, "jitterDurationMilliseconds": 360_000}
    template = heartbeat["spec"]["next"]["statusTemplate"]
    assert "status:" not in template and "reason" not in template and template.count("lastHeartbeatTime") == 5


def test_pods_start_ready_jobs_complete_and_deleted_pods_go() -> None:
    docs = {d["metadata"]["name"]: d for d in _stages()}
    ready = docs["pod-ready"]["spec"]
    assert {"key": ".status.phase", "operator": "In", "values": ["Pending"]} in [
        e["jq"] for e in ready["selector"]["matchExpressions"]
    ]
    assert (
        "phase: Running" in ready["next"]["statusTemplate"]
        and "PodIPsWith .spec.nodeName" in ready["next"]["statusTemplate"]
    )
    complete = docs["pod-complete"]["spec"]
    assert (
        complete["delay"] == {"durationMilliseconds": 1000} and "phase: Succeeded" in complete["next"]["statusTemplate"]
    )
    assert docs["pod-delete"]["spec"]["next"] == {"delete": True}  # finalizers stay their owners' to remove


# --- the controller -----------------------------------------------------------------------------------------------


def test_the_controller_is_applied_account_rights_config_then_pod() -> None:
    objs = controller.objects()
    assert [o["kind"] for o in objs] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
    ]
    assert [object_path(o) for o in objs][-1] == controller.DEPLOYMENT_PATH  # the Kube seam knows every kind


def test_the_controller_runs_once_on_the_control_plane_with_chaoskits_stages_and_flags() -> None:
    dep = _by_kind(controller.objects())["Deployment"]
    assert dep["metadata"]["namespace"] == "kube-system" and dep["spec"]["replicas"] == 1
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert pod["tolerations"] == [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert pod["hostNetwork"] is True and pod["serviceAccountName"] == "kwok-controller"
    (container,) = pod["containers"]
    assert (container["image"], container["imagePullPolicy"]) == (KWOK_IMAGE, "Never")
    assert container["args"] == [
        "--config=/etc/kwok/stages.yaml",
        "--manage-nodes-with-label-selector=type=kwok",
        "--node-lease-duration-seconds=40",
        "--server-address=0.0.0.0:10247",
    ]
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 10247}
    env = {e["name"]: e for e in container["env"]}
    assert env["KUBERNETES_SERVICE_HOST"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
    assert env["KUBERNETES_SERVICE_PORT"]["value"] == "6443"
    assert pod["volumes"] == [{"name": "stages", "configMap": {"name": "kwok-stages"}}]
    assert container["volumeMounts"][0]["mountPath"] == "/etc/kwok"
    config = _by_kind(controller.objects())["ConfigMap"]
    assert config["data"]["stages.yaml"] == stages.config_text()


def test_a_new_image_or_new_stages_roll_the_pod() -> None:
    annotations = controller.deployment(image_id="sha256:abc")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["chaoskit.dev/image-id"] == "sha256:abc"
    assert annotations["chaoskit.dev/stages"] == hashlib.sha256(stages.config_text().encode()).hexdigest()[:16]
    assert "chaoskit.dev/image-id" not in controller.deployment()["spec"]["template"]["metadata"]["annotations"]


def _allows(rules: list[Obj], group: str, resource: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


@pytest.mark.parametrize(
    ("resource", "verb"),
    [
        ("nodes", "watch"),
        ("nodes/status", "patch"),
        ("pods", "list"),
        ("pods", "delete"),
        ("pods/status", "patch"),
        ("events", "create"),
    ],
)
def test_the_cluster_role_allows_what_kwok_does_in_a_kubelets_place(resource: str, verb: str) -> None:
    assert _allows(controller.cluster_role()["rules"], "", resource, verb)


def test_the_cluster_role_writes_no_node_or_pod_spec() -> None:
    rules = controller.cluster_role()["rules"]
    assert not _allows(rules, "", "nodes", "patch") and not _allows(rules, "", "pods", "patch")
    assert not _allows(rules, "coordination.k8s.io", "leases", "create")  # leases: one namespace only, below


def test_the_leases_are_granted_in_kube_node_lease_only_and_every_binding_names_the_account() -> None:
    objs = _by_kind(controller.objects())
    role = objs["Role"]
    assert role["metadata"]["namespace"] == "kube-node-lease"
    assert all(_allows(role["rules"], "coordination.k8s.io", "leases", v) for v in ("create", "update", "watch"))
    for binding in (objs["ClusterRoleBinding"], objs["RoleBinding"]):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "kwok-controller", "namespace": "kube-system"}
        ]
    assert (
        objs["RoleBinding"]["roleRef"]["kind"] == "Role"
        and objs["ClusterRoleBinding"]["roleRef"]["kind"] == "ClusterRole"
    )


# --- the Node objects ---------------------------------------------------------------------------------------------


def test_a_simulated_node_is_labelled_annotated_tainted_and_sized() -> None:
    node = nodes.fake_node(7)
    meta = node["metadata"]
    assert meta["name"] == "kwok-node-7" and object_path(node) == "/api/v1/nodes/kwok-node-7"
    assert meta["labels"]["type"] == "kwok" and meta["labels"]["kubernetes.io/role"] == "agent"
    assert meta["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert node["spec"]["taints"] == [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    assert node["status"]["capacity"] == capacity == node["status"]["allocatable"]
    assert node["status"]["nodeInfo"]["kubeletVersion"] == f"kwok-{versions.KWOK}"
    assert "addresses" not in node["status"] and is_simulated(node)


def test_the_nodes_are_numbered_from_zero_and_their_index_read_back() -> None:
    assert [n["metadata"]["name"] for n in nodes.fake_nodes(3)] == ["kwok-node-0", "kwok-node-1", "kwok-node-2"]
    assert [nodes.index_of(n) for n in ("kwok-node-12", "kwok-node-", "chaoskit-worker", "kwok-node-1x")] == [
        12,
        None,
        None,
        None,
    ]


def test_each_node_is_its_own_object() -> None:
    a, b = nodes.fake_node(0), nodes.fake_node(1)
    a["spec"]["taints"].append({"key": "x"})
    assert b["spec"]["taints"] == [nodes.TAINT] and nodes.TAINT == {
        "key": "kwok.x-k8s.io/node",
        "value": "fake",
        "effect": "NoSchedule",
    }
