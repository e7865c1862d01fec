"""Controller manager faults: down, and hung (frozen: its lease stops renewing, nothing converges)."""

from __future__ import annotations

from chaoskit.faults.base import register
from chaoskit.faults.control_plane import ProcessFrozen, StaticPodDown


@register
class ControllerManagerDown(StaticPodDown):
    """kube-controller-manager stopped: ReplicaSets, endpoints and node health stop being reconciled."""

    name = "controller-manager.down"
    component = "controller-manager"
    process = "kube-controller-manager"
    health_port = 10257


@register
class ControllerManagerHung(ProcessFrozen):
    """kube-controller-manager frozen (SIGSTOP): its lease stops renewing and nothing converges.

    This is how a deadlocked controller loop looks from outside: its leader
    lease stops renewing and an HPA-scaled Deployment does not converge. kubelet's liveness probe restarts it after
    about 80 s, as it would a real hang."""

    name = "controller-manager.hung"
    component = "controller-manager"
    process = "kube-controller-manager"
