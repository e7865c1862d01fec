"""The controllers inside kube-controller-manager: what each is called (by its /healthz, by --controllers, by the
field), its work queue, the flag that sets its workers, and whom it acts as, with the RBAC its bootstrap policy gives
that identity. One table, read by the faults that stop a controller or take its permission and by the diagnoser."""

from __future__ import annotations

import re
from dataclasses import dataclass

from chaoskit.components.rbac import SA

# the RBAC bootstrap policy names a controller's ClusterRole, and the ClusterRoleBinding of its service account to it,
# with this prefix and the account's name
ROLE_PREFIX = "system:controller:"


def role_name(account: str) -> str:
    """The ClusterRole, and its ClusterRoleBinding, the bootstrap policy gives service account kube-system/`account`."""
    return f"{ROLE_PREFIX}{account}"


def account_of(role: str) -> str | None:
    """The service account a controller's ClusterRole or ClusterRoleBinding is named after; None for any other."""
    return role.removeprefix(ROLE_PREFIX) if role.startswith(ROLE_PREFIX) else None


@dataclass(frozen=True)
class Controller:
    name: str  # its canonical name, also its check in /healthz?verbose
    alias: str  # its --controllers name
    queue: str  # its work queue's name label in /metrics ("" if it has none)
    label: str  # in the field's words
    # the service account it runs as (kubeadm sets --use-service-account-credentials): not always its name
    account: str
    concurrency: str = ""  # the flag giving its number of workers

    @property
    def role(self) -> str:
        """Its ClusterRole, and the ClusterRoleBinding of its service account to it."""
        return role_name(self.account)

    @property
    def user(self) -> str:
        """Who the API server's authorizer sees in its requests."""
        return f"{SA}{self.account}"


# The controllers on an HPA scale-up's path and those around it that kube-controller-manager v1.34 starts by default.
CONTROLLERS = (
    Controller(
        "replicaset-controller",
        "replicaset",
        "replicaset",
        "ReplicaSet controller",
        "replicaset-controller",
        "--concurrent-replicaset-syncs",
    ),
    Controller(
        "deployment-controller",
        "deployment",
        "deployment",
        "Deployment controller",
        "deployment-controller",
        "--concurrent-deployment-syncs",
    ),
    Controller(
        "horizontal-pod-autoscaler-controller",
        "horizontalpodautoscaling",
        "horizontalpodautoscaler",
        "HPA controller",
        "horizontal-pod-autoscaler",
        "--concurrent-horizontal-pod-autoscaler-syncs",
    ),
    Controller(
        "endpointslice-controller",
        "endpointslice",
        "endpoint_slice",
        "EndpointSlice controller",
        "endpointslice-controller",
        "--concurrent-service-endpoint-syncs",
    ),
    Controller(
        "endpoints-controller",
        "endpoint",
        "endpoint",
        "Endpoints controller",
        "endpoint-controller",
        "--concurrent-endpoint-syncs",
    ),
    Controller(
        "resourcequota-controller",
        "resourcequota",
        "resourcequota_primary",
        "resource quota controller",
        "resourcequota-controller",
        "--concurrent-resource-quota-syncs",
    ),
    Controller(
        "namespace-controller",
        "namespace",
        "namespace",
        "namespace controller",
        "namespace-controller",
        "--concurrent-namespace-syncs",
    ),
    Controller(
        "garbage-collector-controller",
        "garbagecollector",
        "garbage_collector_attempt_to_delete",
        "garbage collector",
        "generic-garbage-collector",
        "--concurrent-gc-syncs",
    ),
    Controller(
        "node-lifecycle-controller",
        "nodelifecycle",
        "node_lifecycle_controller",
        "node lifecycle controller",
        "node-controller",
    ),
    Controller(
        "daemonset-controller",
        "daemonset",
        "daemonset",
        "DaemonSet controller",
        "daemon-set-controller",
        "--concurrent-daemonset-syncs",
    ),
    Controller(
        "statefulset-controller",
        "statefulset",
        "statefulset",
        "StatefulSet controller",
        "statefulset-controller",
        "--concurrent-statefulset-syncs",
    ),
    Controller("job-controller", "job", "job", "Job controller", "job-controller", "--concurrent-job-syncs"),
    Controller(
        "serviceaccount-controller",
        "serviceaccount",
        "serviceaccount",
        "ServiceAccount controller",
        "service-account-controller",
    ),
)
BY_NAME = {c.name: c for c in CONTROLLERS}
BY_ALIAS = {c.alias: c for c in CONTROLLERS}
BY_QUEUE = {c.queue: c for c in CONTROLLERS}
_CHECK = re.compile(r"^\[[+-]\](\S+-controller)\b", re.M)


def missing_controllers(healthz_body: str) -> list[Controller]:
    """Default controllers absent from a /healthz?verbose that lists controllers (none listed: not leading yet); it
    lists one check per controller it started, so one left out by --controllers, or failed to start, is missing."""
    listed = set(_CHECK.findall(healthz_body))
    if not listed:
        return []
    return [c for c in CONTROLLERS if c.name not in listed]
