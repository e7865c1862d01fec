"""The cluster's symptoms, whoever caused them: pods waiting, crashing or not Ready, Deployments that cannot make
their pods, Services with no ready endpoint, HPAs that cannot scale, nodes whose conditions are not well.

This diagnoser draws one verdict only, on a ResourceQuota used up that refuses pods (the namespace's limit, not a
component's failure); for the rest it hands its symptoms to the diagnosis, which gives each to the findings
that explain it (a stopped kubelet explains its node's pods) and reports the rest, so a look can never say "ok" while
the cluster shows something wrong. A symptom whose own words say why (a container's last error line, an image that
cannot be pulled, a selector that matches no pod) names its entity as the cause when nothing else explains it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pydantic import Field

from chaoskit.components.scheduler import latest_failed_scheduling
from chaoskit.components.workloads import (
    Scheduling,
    Seen,
    deployment_symptoms,
    describe,
    entity,
    hpa_symptoms,
    node_symptoms,
    pod_symptoms,
    service_symptoms,
)
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Symptom, register
from chaoskit.diagnosers.kit.budget import leashed
from chaoskit.diagnosers.kit.common import items
from chaoskit.diagnosers.kit.quotas import exhausted, quota_findings, quotas_evidence, recent_refusals
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.model.params import FaultParams

PODS = "/api/v1/pods"
DEPLOYMENTS = "/apis/apps/v1/deployments"
SERVICES = "/api/v1/services"
SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
HPAS = "/apis/autoscaling/v2/horizontalpodautoscalers"
NODES = "/api/v1/nodes"
EVENTS = "/api/v1/events"  # FailedScheduling (the scheduler's verdict) and FailedCreate (a quota's refusal)
QUOTAS = "/api/v1/resourcequotas"
LAST_WORDS = 5  # crash-looping pods whose previous log is read (one GET each, side by side)


class WorkloadsParams(FaultParams):
    pending_after: float = Field(default=30.0, description="Seconds a pod may wait unscheduled before it counts.")
    ready_after: float = Field(
        default=60.0, description="Seconds a scheduled pod may stay not Ready (starting, probing) before it counts."
    )
    unavailable_after: float = Field(default=60.0, description="Seconds a Deployment may be unavailable.")
    endpoints_after: float = Field(default=30.0, description="Seconds a new Service may have no endpoint yet.")
    blind_after: float = Field(default=60.0, description="Seconds an HPA may be unable to scale (a new pod's metrics).")
    failed_after: float = Field(
        default=10.0, description="Seconds a pod the scheduler tried and could not place may wait before it counts."
    )
    refusals_within: float = Field(default=600, description="Seconds a quota's refusal (FailedCreate) stays news.")


@dataclass(frozen=True)
class WorkloadsEvidence:
    collected_at: float
    pods: Fetched
    deployments: Fetched
    services: Fetched
    slices: Fetched
    hpas: Fetched
    nodes: Fetched
    last_words: dict[str, str]
    failed_scheduling: Fetched = Fetched({"items": []})
    quotas: Fetched = Fetched({"items": []})
    failed_creates: Fetched = Fetched({"items": []})  # FailedCreate events, cluster-wide


@register
class WorkloadsDiagnoser(Diagnoser[WorkloadsEvidence, WorkloadsParams]):
    """Cluster-wide symptoms for the diagnosis to own: pods, Deployments, Services, HPAs, node conditions."""

    component = "workloads"
    Params = WorkloadsParams

    def collect(self, src: Sources, node: str) -> WorkloadsEvidence:
        reads = {path: src.api.soon(path) for path in (PODS, DEPLOYMENTS, SERVICES, SLICES, HPAS, NODES, QUOTAS)}
        events = src.api.soon(EVENTS, fieldSelector="reason=FailedScheduling")  # the scheduler's read: one GET
        creates = src.api.soon(EVENTS, fieldSelector="reason=FailedCreate")
        got = {path: read() for path, read in reads.items()}
        return WorkloadsEvidence(
            src.clock(),
            got[PODS],
            got[DEPLOYMENTS],
            got[SERVICES],
            got[SLICES],
            got[HPAS],
            got[NODES],
            _last_words(src, got[PODS]),
            events(),
            got[QUOTAS],
            creates(),
        )

    def assess(self, ev: WorkloadsEvidence) -> list[Assessed]:
        p, now = self.p, ev.collected_at
        pods = items(ev.pods) if ev.pods.ok else []
        pod_seen = (
            pod_symptoms(
                pods,
                now,
                pending_after=p.pending_after,
                ready_after=p.ready_after,
                last_words=ev.last_words,
                scheduling=Scheduling(
                    latest_failed_scheduling(items(ev.failed_scheduling)) if ev.failed_scheduling.ok else {},
                    items(ev.nodes) if ev.nodes.ok else [],
                    p.failed_after,
                ),
            )
            if ev.pods.ok
            else []
        )
        said = {s.entity for s in pod_seen}  # a Deployment whose pods say why is not said again
        looks: tuple[tuple[str, str, Fetched, Callable[[], list[Seen]]], ...] = (
            ("pods", PODS, ev.pods, lambda: pod_seen),
            (
                "deployments",
                DEPLOYMENTS,
                ev.deployments,
                lambda: deployment_symptoms(
                    items(ev.deployments), now, unavailable_after=p.unavailable_after, pods_said=said
                ),
            ),
            (
                "services",
                f"{SERVICES}, {SLICES}",
                ev.services if not ev.services.ok else ev.slices,
                lambda: (
                    service_symptoms(
                        items(ev.services),
                        items(ev.slices),
                        pods,
                        now,
                        endpoints_after=p.endpoints_after,
                        deployments=items(ev.deployments) if ev.deployments.ok else [],
                    )
                    if ev.pods.ok
                    else []
                ),
            ),
            ("hpas", HPAS, ev.hpas, lambda: hpa_symptoms(items(ev.hpas), now, blind_after=p.blind_after)),
            ("node-conditions", NODES, ev.nodes, lambda: node_symptoms(items(ev.nodes))),
        )
        out = []
        for check, source, fetched, read in looks:
            if not fetched.ok:  # no answer is no verdict: the API server's own report says why
                out.append(Assessed(Evidence(check, f"GET {source}", {"error": fetched.error[:200]}, available=False)))
                continue
            seen = read()
            e = Evidence(
                check,
                f"GET {source}",
                {"objects": len(items(fetched)), "symptoms": len(seen)},
                conditions=tuple(s.text[:300] for s in seen[:10]),
            )
            symptoms = tuple(
                Symptom(
                    s.kind,
                    s.entity,
                    s.text,
                    s.touches,
                    e,
                    s.cause,
                    co_causes=s.co_causes,
                    remediation=s.remediation or (describe(s.entity),),
                )
                for s in seen
            )
            out.append(Assessed(e, (), symptoms))
        return [*out, self._quotas(ev)]

    def _quotas(self, ev: WorkloadsEvidence) -> Assessed:
        """A quota used up that refused pods lately: not a component's failure, the namespace's quota is the cause."""
        source = f"GET {QUOTAS}, {EVENTS}?fieldSelector=reason=FailedCreate"
        if not ev.quotas.ok or not ev.failed_creates.ok:
            error = (ev.quotas.error or ev.failed_creates.error)[:200]
            return Assessed(Evidence("quotas", source, {"error": error}, available=False))
        refused = recent_refusals(items(ev.failed_creates), ev.collected_at, self.p.refusals_within)
        found = exhausted(items(ev.quotas), refused)
        e = quotas_evidence(source, len(items(ev.quotas)), found)
        return Assessed(e, tuple(quota_findings(found, e)))


def _last_words(src: Sources, pods: Fetched) -> dict[str, str]:
    """The last non-empty line of each crash-looping container's previous log (a few pods, read side by side)."""
    crashing = [
        (p, c.get("name", ""))
        for p in (items(pods) if pods.ok else [])
        for c in (p.get("status") or {}).get("containerStatuses") or []
        if ((c.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
    ][:LAST_WORDS]
    if not crashing:
        return {}

    def read(pod: dict[str, object], container: str) -> str:
        meta = pod.get("metadata") or {}
        assert isinstance(meta, dict)
        path = f"/api/v1/namespaces/{meta.get('namespace')}/pods/{meta.get('name')}/log"
        got = src.api.raw(f"{path}?container={container}&previous=true&tailLines=20")
        lines = [line for line in (got.data or "").splitlines() if line.strip()] if got.ok else []
        return lines[-1].strip() if lines else ""

    outcomes = leashed([partial(read, p, c) for p, c in crashing], src.budget.cap(3), name="chaoskit-last-words")
    return {entity("Pod", p): o.value for (p, _), o in zip(crashing, outcomes, strict=True) if o.value}
