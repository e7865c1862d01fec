"""kubelet faults: stopped (node NotReady after the grace period), container runtime unresponsive."""

from __future__ import annotations

from pydantic import BaseModel

from chaoskit.faults.base import Env, Fault, FaultPlan, register, sh
from chaoskit.faults.control_plane import ProcessFrozen


def node_ready(env: Env, node: str) -> bool | None:
    """True/False from the node's Ready condition; None when it is Unknown (heartbeats stopped)."""
    obj = env.kube.get(f"/api/v1/nodes/{node}")
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return {"True": True, "False": False}.get(c.get("status"))
    return None


@register
class KubeletStopped(Fault):
    """The kubelet unit stopped: heartbeats stop, the node controller marks the node NotReady (Unknown) after
    the 50 s grace period, taints it and, after the toleration period, evicts its pods."""

    name = "kubelet.stop"
    component = "kubelet"
    target_role = "worker"
    effect_timeout = 120.0

    def plan(self, node: str, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name,
            node,
            apply=(sh("systemctl", "stop", "kubelet"),),
            revert=(sh("systemctl", "start", "kubelet"),),
            summary=f"systemctl stop kubelet on {node}",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return node_ready(env, plan.node) is not True

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return node_ready(env, plan.node) is True


@register
class ContainerRuntimeUnresponsive(ProcessFrozen):
    """containerd frozen (SIGSTOP): kubelet's CRI calls hang, PLEG goes unhealthy, pods stop starting on the node."""

    name = "kubelet.runtime-unresponsive"
    component = "kubelet"
    target_role = "worker"
    process = "containerd"

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return not runtime_answers(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return runtime_answers(env, plan.node)


def runtime_answers(env: Env, node: str) -> bool:
    """The CRI answers as kubelet would ask it (crictl over containerd's socket)."""
    return env.nodes.run(node, ["crictl", "--timeout", "3s", "info"], check=False, timeout=10).returncode == 0
