"""The component table: every component chaoskit reports on, in report order, with what ranks it and where it answers.

The diagnosers' report order (ORDER) and causal rank (CAUSAL_RANK) and the leader checks derive from it; the facts
themselves (ports, leases) stay in each component's module.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaoskit.components import apiserver, controller_manager, etcd, kube_proxy, kubelet, scheduler


@dataclass(frozen=True)
class Component:
    name: str  # as diagnoses, faults' `named` and reports spell it
    causal_rank: int  # when several fail at once, the lower one is the likelier cause: the others depend on it
    lease: str = ""  # the API path of its leader Lease, if it is leader-elected
    ports: tuple[int, ...] = ()  # where it answers inside its node


# The document's troubleshooting order: API server, its store, then the components that depend on it; chaoskit's
# own reverts last (their findings still rank first).
COMPONENTS: tuple[Component, ...] = (
    Component("apiserver", 1, ports=(apiserver.PORT,)),
    Component("etcd", 0, ports=(int(etcd.CLIENT_PORT), etcd.METRICS_PORT)),
    Component("scheduler", 4, scheduler.LEASE, (scheduler.PORT,)),
    Component("controller-manager", 5, controller_manager.LEASE, (controller_manager.PORT,)),
    Component("kubelet", 3, ports=(kubelet.PORT, kubelet.HEALTHZ_PORT)),
    Component("kube-proxy", 6, ports=(kube_proxy.METRICS_PORT, kube_proxy.HEALTHZ_PORT)),
    Component("containerd", 2),  # answers on its socket only
    Component("metrics-server", 8),  # an add-on: it reads the kubelets through the API server's network
    Component("dns", 7),  # CoreDNS: pods' lookups stand on it, and it on kube-proxy's ClusterIP and the API server
    Component("workloads", 9),  # the cluster's symptoms, whoever caused them: the last to blame
    Component("reverts", -1),  # chaoskit's own dead-man switches: a fault it could not revert comes before all
)

ORDER: tuple[str, ...] = tuple(c.name for c in COMPONENTS)
CAUSAL_RANK: dict[str, int] = {c.name: c.causal_rank for c in COMPONENTS}
LEADERS: tuple[Component, ...] = tuple(c for c in COMPONENTS if c.lease)
