"""Faults shared by the static-pod components (API server, scheduler, controller manager).

On kind they are static pods: deleting the mirror pod through the API does not
stop the process; moving the manifest out of /etc/kubernetes/manifests does.
"""

from __future__ import annotations

from pydantic import BaseModel

from chaoskit.components.common import comm, manifest
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan, local_healthz, process_running, process_state, sh

PARKED = "/etc/kubernetes/chaoskit-parked"


class StaticPodDown(Fault):
    """Base for "<component> down": its static pod manifest is parked outside the manifests folder."""

    process: str  # the binary's name, also the manifest's
    health_port: int
    # a component that crashed in earlier outages (a scheduler or controller manager exits when it loses its lease)
    # comes back under the kubelet's crash-loop back-off, up to 300 s
    recovery_timeout = 300.0

    def plan(self, node: str, params: BaseModel) -> FaultPlan:
        running, parked = manifest(self.process), f"{PARKED}/{self.process}.yaml"
        return FaultPlan(
            self.name,
            node,
            apply=(sh("mkdir", "-p", PARKED), sh("mv", running, parked)),
            revert=(f"if [ -f {parked} ]; then mv {parked} {running}; fi",),
            summary=f"move {running} to {PARKED}/ so kubelet stops {self.process}",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return not process_running(env, plan.node, self.process)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return local_healthz(env, plan.node, self.health_port)


class ProcessFrozen(Fault):
    """Base for "<component> hung": SIGSTOP freezes the process (a deadlock as seen from outside); SIGCONT thaws it."""

    process: str

    def plan(self, node: str, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name,
            node,
            apply=(sh("pkill", "-STOP", "-x", comm(self.process)),),
            revert=(f"pkill -CONT -x {comm(self.process)} || true",),
            summary=f"SIGSTOP every {self.process} process on {node}",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return process_state(env, plan.node, self.process) == "T"

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return process_state(env, plan.node, self.process) not in ("T", "")
