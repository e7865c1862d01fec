"""kwok's controller as chaoskit runs it: one pod in kube-system on the control-plane node, its RBAC, its Stages.

It manages the Nodes labelled type=kwok (--manage-nodes-with-label-selector): the API server filters its list and
watch by label, where an annotation selector would send it every Node to filter itself, and the same label is what
every node list of chaoskit leaves out (chaoskit.model.kwok), so kwok manages exactly the nodes chaoskit skips.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from chaoskit.cluster.images import KWOK_IMAGE
from chaoskit.cluster.kwok.stages import config_text
from chaoskit.components import apiserver
from chaoskit.model.kwok import SIMULATED_SELECTOR
from chaoskit.seams.nodeexec import CONTROL_PLANE_LABEL

Obj = dict[str, Any]

NAME: Final = "kwok-controller"
NAMESPACE: Final = "kube-system"
NODE_LEASES: Final = "kube-node-lease"
CONFIG_MAP: Final = "kwok-stages"
CONFIG_DIR: Final = "/etc/kwok"
CONFIG_FILE: Final = "stages.yaml"
PORT: Final = 10247  # /healthz and /metrics; on the node's network: no port of the node uses it
LEASE_DURATION_S: Final = 40  # a kubelet's stock; kwok renews each node's Lease every quarter of it
IMAGE_ID: Final = "chaoskit.dev/image-id"  # on the pod template: a rebuilt image of the same tag rolls the pod
STAGES_DIGEST: Final = "chaoskit.dev/stages"  # on the pod template too: kwok reads its Stages only when it starts
LABELS: Final = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "chaoskit"}
DEPLOYMENT_PATH: Final = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}"

ARGS: Final = (
    f"--config={CONFIG_DIR}/{CONFIG_FILE}",
    f"--manage-nodes-with-label-selector={SIMULATED_SELECTOR}",
    f"--node-lease-duration-seconds={LEASE_DURATION_S}",
    f"--server-address=0.0.0.0:{PORT}",
)


def _meta(name: str, namespace: str | None = NAMESPACE) -> Obj:
    meta: Obj = {"name": name, "labels": dict(LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _rule(group: str, resources: list[str], verbs: list[str]) -> Obj:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


def service_account() -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME)}


def cluster_role() -> Obj:
    """What kwok does in a kubelet's place: watch its nodes and their pods, write their status, delete pods that
    are going, and record events."""
    rules = [
        _rule("", ["nodes"], ["get", "list", "watch"]),
        _rule("", ["nodes/status"], ["patch", "update"]),
        _rule("", ["pods"], ["get", "list", "watch", "delete"]),
        _rule("", ["pods/status"], ["patch", "update"]),
        _rule("", ["events"], ["create", "patch", "update"]),
    ]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(NAME, None),
        "rules": rules,
    }


def _subjects() -> list[Obj]:
    return [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]


def _binding(kind: str, role_kind: str, namespace: str | None) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(NAME, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": NAME},
        "subjects": _subjects(),
    }


def cluster_role_binding() -> Obj:
    return _binding("ClusterRoleBinding", "ClusterRole", None)


def lease_role() -> Obj:
    """The nodes' heartbeats: kwok makes and renews one Lease per node, as each kubelet does, in kube-node-lease."""
    rules = [_rule("coordination.k8s.io", ["leases"], ["get", "list", "watch", "create", "update", "patch"])]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(NAME, NODE_LEASES),
        "rules": rules,
    }


def lease_role_binding() -> Obj:
    return _binding("RoleBinding", "Role", NODE_LEASES)


def config_map() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(CONFIG_MAP),
        "data": {CONFIG_FILE: config_text()},
    }


def _field(path: str) -> Obj:
    return {"valueFrom": {"fieldRef": {"fieldPath": path}}}


def deployment(image: str = KWOK_IMAGE, image_id: str = "") -> Obj:
    health = {"httpGet": {"path": "/healthz", "port": PORT}}
    container = {
        "name": "kwok",
        "image": image,
        "imagePullPolicy": "Never",  # loaded into the nodes with kind load: no registry holds it
        "args": list(ARGS),
        "env": [
            # the API server at the node's own address, as the in-cluster client's Service address would be
            # reached through kube-proxy: no data-plane fault then silences every simulated node
            {"name": "KUBERNETES_SERVICE_HOST", **_field("status.hostIP")},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(apiserver.PORT)},
            # kwok lets its server fail to bind (and goes on managing nodes) when it shares the node's network
            {"name": "POD_IP", **_field("status.podIP")},
            {"name": "HOST_IP", **_field("status.hostIP")},
        ],
        "ports": [{"name": "http", "containerPort": PORT}],
        "readinessProbe": {**health, "periodSeconds": 5},
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "20m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}},
        "volumeMounts": [{"name": "stages", "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    annotations = {STAGES_DIGEST: hashlib.sha256(config_text().encode()).hexdigest()[:16]}
    if image_id:
        annotations[IMAGE_ID] = image_id
    template: Obj = {
        "metadata": {"labels": dict(LABELS), "annotations": annotations},
        "spec": {
            "serviceAccountName": NAME,
            # the node's network: the API server is reached without kube-proxy or the pod network in the way
            "hostNetwork": True,
            "priorityClassName": "system-cluster-critical",
            "nodeSelector": {CONTROL_PLANE_LABEL: ""},
            "tolerations": [{"key": CONTROL_PLANE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [container],
            "volumes": [{"name": "stages", "configMap": {"name": CONFIG_MAP}}],
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(NAME),
        "spec": {
            "replicas": 1,
            # the old pod holds the host port until it is gone: a rolling update could never start the new one
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "template": template,
        },
    }


def objects(image: str = KWOK_IMAGE, image_id: str = "") -> list[Obj]:
    """Every object of the controller, in the order applied (the pod's account, rights and config before it)."""
    return [
        service_account(),
        cluster_role(),
        cluster_role_binding(),
        lease_role(),
        lease_role_binding(),
        config_map(),
        deployment(image, image_id),
    ]
