"""What the controller manager diagnosis reads, and its thresholds: the evidence collected once per look."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from chaoskit.components import controller_manager
from chaoskit.components.controller_manager import workqueues
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
)
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.kit.staticpod import ProcessState
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics

HEALTHZ = f"{controller_manager.HEALTHZ}?verbose"
LEASE = controller_manager.LEASE
DEPLOYMENTS = "/apis/apps/v1/deployments"
HPAS = "/apis/autoscaling/v2/horizontalpodautoscalers"
REPLICASETS = "/apis/apps/v1/replicasets"
SERVICES = "/api/v1/services"
SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
NAMESPACES = "/api/v1/namespaces"
NODES = "/api/v1/nodes"  # simulated ones too: the node lifecycle controller judges their leases as any kubelet's
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
SERVICEACCOUNTS = "/api/v1/serviceaccounts"  # read with fieldSelector metadata.name=default
METRICS_URL = controller_manager.METRICS_URL
METRICS = workqueues.METRICS
EMPTY = Fetched({"items": []})  # evidence made without these reads (older recordings): nothing there to judge


class ControllerManagerParams(FaultParams):
    lease_grace: float = Field(default=10.0, description="Seconds past the lease duration before it counts as stale.")
    max_queue_depth: float = Field(default=100, description="Items waiting in one work queue: more is a backlog.")
    max_unfinished_work: float = Field(default=300, description="Seconds of work in progress in one queue: stuck.")
    converge_after: float = Field(default=120, description="Seconds a Deployment or HPA may take to converge.")
    window: float = Field(default=1.0, ge=1, le=60, description="Seconds between the two work queue scrapes.")
    startup_grace: float = Field(default=20, description="Seconds after taking the lease a queue alone is not stuck.")
    lag_after: float = Field(default=10, description="Seconds a ReplicaSet or Service may wait for its controller.")
    hpa_lag_after: float = Field(default=25, description="Seconds an HPA may wait for its first sync (after 15 s).")
    refusals_within: float = Field(default=600, description="Seconds a quota's refusal (FailedCreate) stays news.")


@dataclass(frozen=True)
class ControllerManagerEvidence:
    node: str
    collected_at: float
    healthz: HttpAnswer
    metrics: Metrics
    process: ProcessState
    lease: Fetched
    deployments: Fetched
    hpas: Fetched
    metrics_after: Metrics = field(default_factory=lambda: Metrics.unavailable("one scrape only"))
    window_s: float = 0.0  # at least this long between `metrics` and `metrics_after`
    cmdline: str = ""  # the running kube-controller-manager's command line
    replicasets: Fetched = EMPTY
    services: Fetched = EMPTY
    slices: Fetched = EMPTY
    clusterroles: Fetched = EMPTY  # the controllers' ClusterRoles and their bindings
    clusterrolebindings: Fetched = EMPTY
    namespaces: Fetched = EMPTY
    default_accounts: Fetched = EMPTY  # every namespace's `default` ServiceAccount
    nodes: Fetched = EMPTY
    node_leases: Fetched = EMPTY  # the kubelets' heartbeats
