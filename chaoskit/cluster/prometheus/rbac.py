"""The ServiceAccount Prometheus scrapes as: a ClusterRole allowing exactly GET of metrics, and a token for it."""

from __future__ import annotations

from typing import Any

from chaoskit.seams.kube import Conflict, Kube

NAMESPACE = "chaoskit-monitoring"
SERVICE_ACCOUNT = "prometheus"
CLUSTER_ROLE = "chaoskit-prometheus"
TOKEN_SECONDS = 7 * 24 * 3600  # a token outliving a long soak; `up` asks for a fresh one each time


def monitoring_objects() -> list[dict[str, Any]]:
    """The ServiceAccount Prometheus scrapes as, and a ClusterRole allowing exactly GET of metrics."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": CLUSTER_ROLE},
            "rules": [
                # the API server, scheduler and controller-manager authorize /metrics as a non-resource URL
                {"nonResourceURLs": ["/metrics", "/metrics/*"], "verbs": ["get"]},
                # the kubelet maps /metrics and /metrics/cadvisor to the nodes/metrics subresource
                {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": CLUSTER_ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
        },
    ]


_RBAC = "/apis/rbac.authorization.k8s.io/v1"


def ensure_monitoring(kube: Kube) -> str:
    """Create (or update) the monitoring ServiceAccount and its role; return a fresh token for it."""
    for obj in monitoring_objects():
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            collection = f"{_RBAC}/{obj['kind'].lower()}s"
            try:
                kube.create(collection, obj)
            except Conflict:
                kube.patch(f"{collection}/{obj['metadata']['name']}", obj)  # merge patch: the rules list is replaced
        else:
            kube.apply(obj)
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS},
    }
    answer = kube.create(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token", request)
    return str(answer["status"]["token"])
