"""Controller manager faults: down, hung (frozen: its lease stops renewing, nothing converges), one controller stuck
inside a kube-controller-manager that otherwise looks healthy, one controller's permissions revoked, and its quota
management capping a scale-out."""

from chaoskit.faults.controller_manager.down import ControllerManagerDown
from chaoskit.faults.controller_manager.hung import ControllerManagerHung, leader_lease
from chaoskit.faults.controller_manager.permission import PermissionParams, PermissionRevoked
from chaoskit.faults.controller_manager.quota import QuotaExhausted, QuotaParams
from chaoskit.faults.controller_manager.stuck import ControllerStuck, ControllerStuckParams, StuckName

__all__ = [
    "ControllerManagerDown",
    "ControllerManagerHung",
    "ControllerStuck",
    "ControllerStuckParams",
    "PermissionParams",
    "PermissionRevoked",
    "QuotaExhausted",
    "QuotaParams",
    "StuckName",
    "leader_lease",
]
