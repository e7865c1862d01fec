"""The resource metrics pipeline: kubelets' resource metrics → metrics-server → the metrics.k8s.io API → the HPA.

When it breaks, nothing fails loudly: every HPA that scales on CPU or memory goes blind (ScalingActive=False,
FailedGetResourceMetric) and never scales, however busy its pods. So the diagnosis reads the pipeline from the API
server's side (the APIService, the metrics API itself, the Deployment behind it) and names the HPAs it leaves blind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from chaoskit.components import metrics_server
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import age, condition_of, items
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.figures import seconds
from chaoskit.model.params import FaultParams

HPAS = "/apis/autoscaling/v2/horizontalpodautoscalers"
PODS = "/api/v1/pods"
BLIND = ("FailedGetResourceMetric", "FailedComputeMetricsReplicas")  # an HPA that cannot read its metrics


class MetricsServerParams(FaultParams):
    stale_after: float = Field(default=120.0, description="Seconds a node's newest metrics sample may be old.")
    blind_after: float = Field(
        default=60.0,
        description="Seconds an HPA may go without metrics while the API answers: a new pod has none for its first "
        "two scrapes (metrics-server's resolution is 15 s).",
    )


@dataclass(frozen=True)
class MetricsServerEvidence:
    node: str
    collected_at: float
    apiservice: Fetched
    node_metrics: Fetched
    deployment: Fetched
    hpas: Fetched
    pods: Fetched = field(default_factory=lambda: Fetched({"items": []}))  # cluster-wide: where its pods run
    namespace: str = metrics_server.NAMESPACE  # where its Deployment and Service are, as the APIService names them
    name: str = metrics_server.DEPLOYMENT


def blind_hpas(hpas: Fetched, now: float, longer_than: float = 0.0) -> list[str]:
    """HPAs whose controller has said for longer than `longer_than` seconds that it cannot read their metrics:
    ns/name and the condition's own words."""
    out = []
    for h in items(hpas) if hpas.ok else []:
        active = condition_of(h, "ScalingActive")
        since = age(active.get("lastTransitionTime"), now)
        own_doing = "missing request for" in str(active.get("message"))  # its target sets no request: not ours
        if (
            active.get("status") == "False"
            and active.get("reason") in BLIND
            and not own_doing
            and (since or 0) >= longer_than
        ):
            meta = h.get("metadata", {})
            out.append(f"{meta.get('namespace')}/{meta.get('name')}: {active.get('reason')}: {active.get('message')}")
    return out


def _nodes_of(ev: MetricsServerEvidence) -> list[str]:
    """The nodes its Deployment's pods are bound to (by the Deployment's selector)."""
    spec = (ev.deployment.data or {}).get("spec", {}) if ev.deployment.ok else {}
    wanted = (spec.get("selector") or {}).get("matchLabels") or {}
    if not wanted:
        return []
    return sorted(
        {
            str(p["spec"]["nodeName"])
            for p in items(ev.pods)
            if p.get("metadata", {}).get("namespace") == ev.namespace
            and p.get("spec", {}).get("nodeName")
            and wanted.items() <= (p.get("metadata", {}).get("labels") or {}).items()
        }
    )


@register
class MetricsServerDiagnoser(Diagnoser[MetricsServerEvidence, MetricsServerParams]):
    """The metrics pipeline: the metrics.k8s.io APIService, the API's answer, metrics-server, the HPAs it serves."""

    component = "metrics-server"
    Params = MetricsServerParams

    def collect(self, src: Sources, node: str) -> MetricsServerEvidence:
        pods = src.api.soon(PODS)  # the workloads' read: one GET for both
        apiservice = src.api.fetch(metrics_server.APISERVICE)
        svc = (apiservice.data or {}).get("spec", {}).get("service") or {} if apiservice.ok else {}
        ns, name = svc.get("namespace") or metrics_server.NAMESPACE, svc.get("name") or metrics_server.DEPLOYMENT
        return MetricsServerEvidence(
            node=node,
            collected_at=src.clock(),
            apiservice=apiservice,
            node_metrics=src.api.fetch(metrics_server.NODE_METRICS),
            deployment=src.api.fetch(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"),
            hpas=src.api.fetch(HPAS),
            pods=pods(),
            namespace=ns,
            name=name,
        )

    def assess(self, ev: MetricsServerEvidence) -> list[Assessed]:
        return [self._pipeline(ev)]

    def _pipeline(self, ev: MetricsServerEvidence) -> Assessed:
        available = condition_of(ev.apiservice.data, "Available") if ev.apiservice.ok else {}
        samples = items(ev.node_metrics) if ev.node_metrics.ok else []
        ages = [a for a in (age(s.get("timestamp"), ev.collected_at) for s in samples) if a is not None]
        spec = (ev.deployment.data or {}) if ev.deployment.ok else {}
        ready = f"{spec.get('status', {}).get('readyReplicas') or 0}/{spec.get('spec', {}).get('replicas', '?')}"
        ready_any = not ev.deployment.ok or bool(spec.get("status", {}).get("readyReplicas"))
        blind = blind_hpas(ev.hpas, ev.collected_at)
        e = Evidence(
            "metrics-pipeline",
            f"GET the metrics.k8s.io APIService, {metrics_server.NODE_METRICS}, its Deployment, every HPA",
            {
                "apiservice": None
                if not ev.apiservice.ok
                else f"Available={available.get('status')} {available.get('reason', '')}".strip(),
                "metrics_api": f"{len(samples)} node(s)" if ev.node_metrics.ok else ev.node_metrics.error[:200],
                "newest_sample_age_s": round(min(ages), 1) if ages else None,
                "deployment_ready": ready if ev.deployment.ok else ev.deployment.error[:200],
                "blind_hpas": len(blind),
            },
            conditions=tuple(blind[:10]),
        )
        if not ev.apiservice.ok and "404" not in ev.apiservice.error and "not found" not in ev.apiservice.error:
            return Assessed(e)  # the API server did not answer: its own report says so
        broken = (
            "no metrics.k8s.io APIService is registered (metrics-server is not installed)"
            if not ev.apiservice.ok
            else f"APIService v1beta1.metrics.k8s.io is not Available ({available.get('reason')}: "
            f"{str(available.get('message', ''))[:160]})"
            if available.get("status") != "True"
            else f"the metrics API does not answer: {ev.node_metrics.error[:160]}"
            if not ev.node_metrics.ok
            else f"the newest node metrics are {seconds(min(ages))} old"
            if ages and min(ages) > self.p.stale_after
            else ""
        )
        whom = f"; {len(blind)} HPA(s) blind: {blind[0].split(':')[0]}" if blind else ""
        if broken:
            finding = Finding(
                "critical",
                "metrics-server",
                f"The resource metrics API is down: {broken}; metrics-server {ready} ready{whom}",
                "the pipeline kubelet → metrics-server → metrics API → HPA is cut: every HPA scaling on CPU or "
                "memory is blind (ScalingActive=False, FailedGetResourceMetric) and will not scale, however busy "
                "its pods",
                (e,),
                (
                    "kubectl -n kube-system get deploy metrics-server; its logs: kubectl logs deploy/metrics-server",
                    "kubectl get apiservice v1beta1.metrics.k8s.io -o yaml: the Available condition says why",
                    "kubectl top nodes: answers again once it is back",
                ),
                # its Deployment when that is what stands empty; its Service's missing endpoints are that too
                entity=f"deployment/{ev.namespace}/{ev.name}" if not ready_any else "",
                affects=(
                    "component/metrics-server",
                    f"deployment/{ev.namespace}/{ev.name}",
                    f"service/{ev.namespace}/{ev.name}",
                ),
                touches=tuple(f"node/{n}" for n in _nodes_of(ev)),  # a node gone under it is the cause
            )
            return Assessed(e, (finding,))
        if still := blind_hpas(ev.hpas, ev.collected_at, self.p.blind_after):  # the API answers, yet some HPAs
            finding = Finding(  # cannot read their pods: those pods' samples are missing
                "warning",
                "metrics-server",
                f"{len(still)} HPA(s) blind for over {seconds(self.p.blind_after)} though the metrics API answers: "
                f"{still[0][:200]}",
                "metrics-server has no samples for those pods: it cannot reach their nodes' kubelets, or the pods "
                "set no resource requests for the HPA's utilization target",
                (e,),
                ("kubectl top pods -n <namespace>; metrics-server's log: scrape errors per node",),
            )
            return Assessed(e, (finding,))
        return Assessed(e)
