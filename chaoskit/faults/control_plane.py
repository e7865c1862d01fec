"""Faults shared by the static-pod components (API server, scheduler, controller manager).

On kind they are static pods: deleting the mirror pod through the API does not
stop the process; moving the manifest out of /etc/kubernetes/manifests does.
"""

from __future__ import annotations

from pydantic import BaseModel

from chaoskit.faults.base import Env, Fault, FaultPlan, comm, local_healthz, process_running, process_state, sh

MANIFESTS = "/etc/kubernetes/manifests"
PARKED = "/etc/kubernetes/chaoskit-parked"


class StaticPodDown(Fault):
    """Base for "<component> down": its static pod manifest is parked outside the manifests folder."""

    process: str  # the binary's name, also the manifest's
    health_port: int

    def plan(self, node: str, params: BaseModel) -> FaultPlan:
        manifest, parked = f"{MANIFESTS}/{self.process}.yaml", f"{PARKED}/{self.process}.yaml"
        return FaultPlan(
            self.name,
            node,
            apply=(sh("mkdir", "-p", PARKED), sh("mv", manifest, parked)),
            revert=(f"if [ -f {parked} ]; then mv {parked} {manifest}; fi",),
            summary=f"move {manifest} to {PARKED}/ so kubelet stops {self.process}",
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
