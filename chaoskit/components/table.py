"""The component table: every component chaoskit reports on, in report order, with what ranks it, where it answers
and what its failure reaches.

The diagnosers' report order (ORDER), causal rank (CAUSAL_RANK) and reach (PER_NODE, EVERYTHING), the leader checks,
which faults meet across nodes (CHURNS_ENDPOINTS, PROGRAMS_ENDPOINTS) and which components a measurement times on
every node (DATAPLANE) derive from it; the facts themselves (ports, leases) stay in each component's module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chaoskit.components import apiserver, controller_manager, etcd, kube_proxy, kubelet, scheduler


@dataclass(frozen=True)
class Component:
    name: str  # as diagnoses, faults' `named` and reports spell it
    causal_rank: int  # when several fail at once, the lower one is the likelier cause: the others depend on it
    lease: str = ""  # the API path of its leader Lease, if it is leader-elected
    ports: tuple[int, ...] = ()  # where it answers inside its node
    reach: Literal["", "node", "cluster"] = ""  # what its failure reaches: what runs on its node, or everything
    dataplane: bool = False  # a workload's pods start, or its endpoints are programmed, by its copy on every node
    # its part in a Service's endpoints: its failure moves them (pods leave its node), or it writes them into rules
    endpoints: Literal["", "churns", "programs"] = ""


# The document's troubleshooting order: API server, its store, then the components that depend on it; chaoskit's
# own reverts last (their findings still rank first).
COMPONENTS: tuple[Component, ...] = (
    Component("apiserver", 1, ports=(apiserver.PORT,), reach="cluster"),
    Component("etcd", 0, ports=(int(etcd.CLIENT_PORT), etcd.METRICS_PORT), reach="cluster"),
    Component("scheduler", 4, scheduler.LEASE, (scheduler.PORT,)),
    Component("controller-manager", 5, controller_manager.LEASE, (controller_manager.PORT,)),
    Component(
        "kubelet", 3, ports=(kubelet.PORT, kubelet.HEALTHZ_PORT), reach="node", dataplane=True, endpoints="churns"
    ),
    Component(
        "kube-proxy",
        6,
        ports=(kube_proxy.METRICS_PORT, kube_proxy.HEALTHZ_PORT),
        reach="node",
        dataplane=True,
        endpoints="programs",
    ),
    Component("containerd", 2, reach="node"),  # answers on its socket only
    Component("metrics-server", 8),  # an add-on: it reads the kubelets through the API server's network
    Component("dns", 7),  # CoreDNS: pods' lookups stand on it, and it on kube-proxy's ClusterIP and the API server
    Component("workloads", 9),  # the cluster's symptoms, whoever caused them: the last to blame
    Component("reverts", -1),  # chaoskit's own dead-man switches: a fault it could not revert comes before all
)

ORDER: tuple[str, ...] = tuple(c.name for c in COMPONENTS)
CAUSAL_RANK: dict[str, int] = {c.name: c.causal_rank for c in COMPONENTS}
LEADERS: tuple[Component, ...] = tuple(c for c in COMPONENTS if c.lease)
PER_NODE: frozenset[str] = frozenset(c.name for c in COMPONENTS if c.reach == "node")
EVERYTHING: frozenset[str] = frozenset(c.name for c in COMPONENTS if c.reach == "cluster")
DATAPLANE: frozenset[str] = frozenset(c.name for c in COMPONENTS if c.dataplane)
CHURNS_ENDPOINTS: frozenset[str] = frozenset(c.name for c in COMPONENTS if c.endpoints == "churns")
PROGRAMS_ENDPOINTS: frozenset[str] = frozenset(c.name for c in COMPONENTS if c.endpoints == "programs")
