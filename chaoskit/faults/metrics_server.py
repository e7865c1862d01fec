"""metrics-server.down: the resource metrics pipeline cut in its middle, so every HPA scaling on CPU or memory goes
blind (ScalingActive=False, FailedGetResourceMetric) and never scales, however busy its pods."""

from __future__ import annotations

from pydantic import BaseModel, Field

from chaoskit.components import metrics_server
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.base import Fault, FaultPlan, Named, NoOpControl, failing, kubectl, register
from chaoskit.model.base import DNS_LABEL, DNS_SUBDOMAIN
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.kube import KubeError
from chaoskit.seams.nodeexec import Node

SAVED = "/var/lib/chaoskit/metrics-server.replicas"  # its replicas before the fault, for the revert


class MetricsServerParams(FaultParams):
    namespace: str = Field(default=metrics_server.NAMESPACE, max_length=63, pattern=DNS_LABEL)
    deployment: str = Field(
        default=metrics_server.DEPLOYMENT,
        max_length=253,
        pattern=DNS_SUBDOMAIN,
        description="The Deployment behind the metrics.k8s.io APIService.",
    )


def metrics_answer(env: Env) -> bool:
    """Whether the metrics API answers with a sample for every node (what each HPA's read goes through)."""
    try:
        samples = env.kube.get(metrics_server.NODE_METRICS).get("items", [])
        # metrics-server scrapes no simulated node (its --node-selector): they have no kubelet to answer
        nodes = env.kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR).get("items", [])
    except ToolError:
        return False
    return bool(samples) and len(samples) >= len(nodes)


def metrics_unavailable(env: Env) -> bool:
    """Whether the API server answers the metrics API with 503, as it does with no metrics-server behind it; any other
    error (the API server away) is no answer either way."""
    try:
        env.kube.get(metrics_server.NODE_METRICS)
    except KubeError as exc:
        if exc.status == 503:
            return True
        raise
    return False


@register
class MetricsServerDown(Fault):
    """metrics-server scaled to zero: the metrics API answers 503 and every HPA on CPU or memory stops scaling.

    The HPA reads its pods' CPU and memory from the metrics.k8s.io API, which the API server aggregates from
    metrics-server, which scrapes each kubelet's resource metrics. With metrics-server gone (scaled to zero, as an
    upgrade gone wrong or a cleanup would leave it) the APIService goes Available=False (MissingEndpoints), the
    API answers 503, and each HPA says ScalingActive=False FailedGetResourceMetric and keeps its replicas, however
    busy its pods. No control-plane component is broken. Effect: the metrics API does not answer. The revert scales
    the Deployment back to what it had (kept on the control-plane node) and fails while it still asks for none.
    Recovery: the metrics API answers with a sample for every node again (metrics-server's first scrape: up to its
    metric resolution, 15 s). Runs kubectl on the control-plane node.
    """

    name = "metrics-server.down"
    component = "metrics-server"
    named = Named("metrics-server", r"metrics API is down")
    no_op = NoOpControl(wait=15.0)  # the aggregator sees the endpoints go within a second or two
    scope = "cluster"  # every HPA in the cluster reads through it
    Params = MetricsServerParams
    effect_timeout = 60.0
    recovery_timeout = 120.0  # the pod starts, then its first scrape of every kubelet

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, MetricsServerParams)
        deploy = ("-n", p.namespace, "deployment", p.deployment)
        replicas = kubectl("get", *deploy, "-o", "jsonpath={.spec.replicas}")
        return FaultPlan(
            self.name,
            node,
            apply=(
                f"mkdir -p {SAVED.rsplit('/', 1)[0]} && [ -s {SAVED} ] || {replicas} > {SAVED}",
                kubectl("scale", *deploy, "--replicas=0"),
            ),
            # none kept: one, as installed; the count kept goes once kubectl scaled
            undo=(
                f'n=$(cat {SAVED} 2>/dev/null); [ "${{n:-0}}" -gt 0 ] 2>/dev/null || n=1; '
                f"{kubectl('scale', *deploy)} --replicas=$n && rm -f {SAVED}",
            ),
            # kubectl failing leaves n empty, and the test fails: no answer is no proof
            verify=(
                failing(
                    f'n=$({replicas}) && [ "$n" -gt 0 ] 2>/dev/null',
                    f"{p.deployment} still asks for no replicas, or kubectl could not say",
                ),
            ),
            summary=f"scale {p.namespace}/{p.deployment} to 0: the metrics API goes away and every HPA goes blind",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return metrics_unavailable(env)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return metrics_answer(env)
