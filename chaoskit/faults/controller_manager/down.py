"""controller-manager.down: kube-controller-manager stopped."""

from __future__ import annotations

from chaoskit.components import controller_manager
from chaoskit.faults.base import Named, NoOpControl, register
from chaoskit.faults.control_plane import StaticPodDown


@register
class ControllerManagerDown(StaticPodDown):
    """kube-controller-manager stopped: ReplicaSets, endpoints and node health stop being reconciled."""

    name = "controller-manager.down"
    component = "controller-manager"
    named = Named("controller-manager", r"not running")
    no_op = NoOpControl(wait=10.0)  # the process is gone within seconds
    process = controller_manager.PROCESS
    health_port = controller_manager.PORT
    lease = controller_manager.LEASE
