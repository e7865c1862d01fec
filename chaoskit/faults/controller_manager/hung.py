"""controller-manager.hung: kube-controller-manager frozen; its leader lease stops renewing."""

from __future__ import annotations

import time

from chaoskit.components import controller_manager
from chaoskit.components.leases import LeaseState
from chaoskit.env import Env
from chaoskit.faults.base import FaultPlan, Named, NoOpControl, local_healthz, register
from chaoskit.faults.control_plane import ProcessFrozen


@register
class ControllerManagerHung(ProcessFrozen):
    """kube-controller-manager frozen (SIGSTOP): its lease stops renewing and nothing converges.

    This is how a deadlocked controller loop looks from outside: its leader lease stops renewing and an HPA-scaled
    Deployment does not converge. kubelet's liveness probe restarts it after about 80 s, as it would a real hang.
    Effect: its leader lease (kube-system/kube-controller-manager) not renewed for more than half its duration (it
    renews every 2 s); recovery: renewed within half its duration again, by whichever process leads, and /healthz
    ok. The revert continues the process and fails while it is still stopped."""

    name = "controller-manager.hung"
    component = "controller-manager"
    named = Named("controller-manager", r"stopped|frozen")
    no_op = NoOpControl(wait=20.0)  # a frozen leader's lease is past half its 11 s duration within 6 s
    process = controller_manager.PROCESS

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        lease = leader_lease(env)
        return lease is not None and (lease.age is None or lease.age > lease.duration / 2)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        lease = leader_lease(env)
        renewing = lease is not None and lease.age is not None and lease.age <= lease.duration / 2
        return renewing and local_healthz(env, plan.node, controller_manager.PORT)


def leader_lease(env: Env) -> LeaseState | None:
    """kube-controller-manager's leader lease as renewed, or None when nobody ever took it."""
    found = env.kube.find(controller_manager.LEASE)
    return None if found is None else LeaseState.of(found, time.time())
