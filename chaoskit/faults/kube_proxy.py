"""kube-proxy faults: frozen (new endpoints are not programmed into the node's rules)."""

from __future__ import annotations

from chaoskit.faults.base import Env, FaultPlan, register
from chaoskit.faults.control_plane import ProcessFrozen

HEALTHZ = "http://127.0.0.1:10256/healthz"  # kube-proxy's own health endpoint on the node


def healthz_answers(env: Env, node: str) -> bool:
    done = env.nodes.run(node, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", HEALTHZ],
                         check=False)  # fmt: skip
    return done.stdout.strip() == "200"


@register
class KubeProxyFrozen(ProcessFrozen):
    """kube-proxy frozen (SIGSTOP) on one node: rules stay as they were, so endpoints added or removed meanwhile
    (an HPA scale-up) get no traffic from that node, or keep getting it, until it thaws and resyncs."""

    name = "kube-proxy.freeze"
    component = "kube-proxy"
    target_role = "worker"
    process = "kube-proxy"

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return super().took_effect(env, plan) and not healthz_answers(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return healthz_answers(env, plan.node)
