"""Your subject as the API server and its controllers judge it: the Deployment's or StatefulSet's conditions, its
HPA's conditions and what its events say, its Service's endpoints, its PodDisruptionBudgets.

Every component can be ok while your system is not: a workload not Available, an HPA that cannot read its metrics
or is pinned at its bounds, two HPAs fighting over one target, a Service with no ready endpoint, a budget that
forbids every eviction. This report says so, with the objects' own words, after the components' reports (a
component's failure is the likelier cause of a subject's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaoskit.diagnosers.kit.base import Assessed, ComponentReport, Evidence, Finding
from chaoskit.diagnosers.kit.common import condition_of, items
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.subject import PLURAL, Subject

COMPONENT = "subject"  # the report's component: your system, not one of Kubernetes's
HPA_REASONS = ("FailedGetResourceMetric", "FailedComputeMetricsReplicas", "AmbiguousSelector", "FailedRescale")


@dataclass(frozen=True)
class SubjectEvidence:
    subject: Subject
    workload: Fetched
    hpa: Fetched | None
    hpa_events: Fetched | None
    slices: Fetched | None
    budgets: Fetched


def collect(src: Sources, s: Subject) -> SubjectEvidence:
    ns = f"/namespaces/{s.namespace}"
    return SubjectEvidence(
        s,
        src.api.fetch(f"/apis/apps/v1{ns}/{PLURAL[s.kind]}/{s.name}", fresh=True),
        src.api.fetch(f"/apis/autoscaling/v2{ns}/horizontalpodautoscalers/{s.hpa}", fresh=True) if s.hpa else None,
        src.api.fetch(
            f"/api/v1{ns}/events",
            fresh=True,
            fieldSelector=f"involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={s.hpa}",
        )
        if s.hpa
        else None,
        src.api.fetch(
            f"/apis/discovery.k8s.io/v1{ns}/endpointslices",
            fresh=True,
            labelSelector=f"kubernetes.io/service-name={s.service}",
        )
        if s.service
        else None,
        src.api.fetch(f"/apis/policy/v1{ns}/poddisruptionbudgets", fresh=True),
    )


def _said(c: dict[str, Any]) -> str:
    return f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}".strip()[:300]


def workload(ev: SubjectEvidence) -> Assessed:
    s, what = ev.subject, f"{ev.subject.kind} {ev.subject.namespace}/{ev.subject.name}"
    if not ev.workload.ok:
        return Assessed(Evidence("workload", f"GET {what}", {"error": ev.workload.error[:200]}, available=False))
    obj = ev.workload.data
    spec, status = obj.get("spec", {}), obj.get("status", {})
    wanted = int(spec.get("replicas", 1))
    ready = int(status.get("availableReplicas" if s.kind == "Deployment" else "readyReplicas") or 0)
    conditions = tuple(_said(c) for c in status.get("conditions") or [])
    e = Evidence("workload", f"GET {what}", {"replicas": wanted, "available": ready}, conditions=conditions)
    available, progressing = condition_of(obj, "Available"), condition_of(obj, "Progressing")
    failure = condition_of(obj, "ReplicaFailure")
    if (s.kind == "Deployment" and available.get("status") == "False") or (wanted and not ready):
        cause = (
            f"its pods cannot be created: {failure.get('message')}"
            if failure.get("status") == "True"
            else f"it stopped progressing: {progressing.get('message')}"
            if progressing.get("reason") == "ProgressDeadlineExceeded"
            else f"fewer pods are available than it needs: {available.get('message') or 'none ready'}"
        )
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    COMPONENT,
                    f"{what} is not Available ({ready}/{wanted} available)",
                    cause,
                    (e,),
                    (f"kubectl -n {s.namespace} describe {s.kind.lower()} {s.name}: its conditions and events",),
                ),
            ),
        )
    if failure.get("status") == "True" or ready < wanted:
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    COMPONENT,
                    f"{what} has {ready}/{wanted} pods available",
                    f"{failure.get('message') or 'some of its pods are not ready yet'}",
                    (e,),
                    (f"kubectl -n {s.namespace} get pods -l {','.join(f'{k}={v}' for k, v in s.labels.items())}",),
                ),
            ),
        )
    return Assessed(e)


def hpa(ev: SubjectEvidence) -> Assessed:
    s = ev.subject
    if ev.hpa is None:
        return Assessed(Evidence("hpa", "no HPA", {"hpa": None}))
    if not ev.hpa.ok:
        return Assessed(Evidence("hpa", f"GET HPA {s.hpa}", {"error": ev.hpa.error[:200]}, available=False))
    said = [
        f"{e.get('reason')} ({e.get('count') or 1}x): {str(e.get('message'))[:200]}"
        for e in (items(ev.hpa_events) if ev.hpa_events is not None and ev.hpa_events.ok else [])
        if e.get("reason") in HPA_REASONS
    ]
    conditions = {k: condition_of(ev.hpa.data, k) for k in ("AbleToScale", "ScalingActive", "ScalingLimited")}
    e = Evidence(
        "hpa",
        f"GET HPA {s.namespace}/{s.hpa} and its events",
        {k: c.get("status") for k, c in conditions.items()},
        conditions=tuple(_said(c) for c in conditions.values() if c),
        events=tuple(said[-5:]),
    )
    who = f"HPA {s.namespace}/{s.hpa}"
    findings = []
    for kind in ("AbleToScale", "ScalingActive"):
        c = conditions[kind]
        if c.get("status") == "False":
            findings.append(
                Finding(
                    "critical",
                    COMPONENT,
                    f"{who} cannot scale: {_said(c)}",
                    "the HPA controller "
                    + ("cannot read its metrics" if kind == "ScalingActive" else "cannot change its target's scale")
                    + ": the workload keeps its replicas however busy it is",
                    (e,),
                    (f"kubectl -n {s.namespace} describe hpa {s.hpa}", "chaoskit diagnose metrics-server"),
                )
            )
    if any(x.startswith("AmbiguousSelector") for x in said):
        findings.append(
            Finding(
                "critical",
                COMPONENT,
                f"{who} shares its target with another HPA (AmbiguousSelector)",
                "two HPAs select the same pods: the controller refuses to act on either",
                (e,),
                (f"kubectl -n {s.namespace} get hpa: keep one per workload",),
            )
        )
    limited = conditions["ScalingLimited"]
    if limited.get("status") == "True" and limited.get("reason") == "TooManyReplicas":
        findings.append(
            Finding(
                "warning",
                COMPONENT,
                f"{who} is pinned at its maxReplicas: {limited.get('message')}",
                "it would scale further if it could: the load outgrew the bound",
                (e,),
                (f"raise maxReplicas of {who}, or find what made the load grow",),
            )
        )
    return Assessed(e, tuple(findings))


def service(ev: SubjectEvidence) -> Assessed:
    s = ev.subject
    if ev.slices is None:
        return Assessed(Evidence("service", "no Service", {"service": None}))
    if not ev.slices.ok:
        return Assessed(Evidence("service", f"Service {s.service}", {"error": ev.slices.error[:200]}, available=False))
    ready = [
        a
        for sl in items(ev.slices)
        for ep in sl.get("endpoints") or []
        if (ep.get("conditions") or {}).get("ready") is not False
        for a in ep.get("addresses") or []
    ]
    e = Evidence("service", f"EndpointSlices of Service {s.namespace}/{s.service}", {"ready_endpoints": len(ready)})
    if ready:
        return Assessed(e)
    return Assessed(
        e,
        (
            Finding(
                "critical",
                COMPONENT,
                f"Service {s.namespace}/{s.service} has no ready endpoint",
                "no pod behind it is Ready: every request to it is refused or times out",
                (e,),
                (f"kubectl -n {s.namespace} get endpointslices -l kubernetes.io/service-name={s.service}",),
            ),
        ),
    )


def budgets(ev: SubjectEvidence) -> Assessed:
    s = ev.subject
    mine = [
        b
        for b in (items(ev.budgets) if ev.budgets.ok else [])
        if (b.get("spec", {}).get("selector") or {}).get("matchLabels")
        and all(s.labels.get(k) == v for k, v in b["spec"]["selector"]["matchLabels"].items())
    ]
    blocked = [b for b in mine if int(b.get("status", {}).get("disruptionsAllowed") or 0) == 0]
    e = Evidence(
        "disruption-budgets",
        f"PodDisruptionBudgets in {s.namespace} selecting its pods",
        {"budgets": len(mine), "blocking": ", ".join(b["metadata"]["name"] for b in blocked) or None},
    )
    if not blocked:
        return Assessed(e)
    b = blocked[0]
    st = b.get("status", {})
    return Assessed(
        e,
        (
            Finding(
                "warning",
                COMPONENT,
                f"PodDisruptionBudget {s.namespace}/{b['metadata']['name']} allows no eviction "
                f"({st.get('currentHealthy')}/{st.get('desiredHealthy')} healthy)",
                "a node drain or an eviction of its pods waits until more of them are healthy",
                (e,),
                (f"kubectl -n {s.namespace} get pdb {b['metadata']['name']} -o yaml",),
            ),
        ),
    )


def report(ev: SubjectEvidence) -> ComponentReport:
    s = ev.subject
    return ComponentReport.of(
        COMPONENT, f"{s.kind} {s.namespace}/{s.name}", [workload(ev), hpa(ev), service(ev), budgets(ev)]
    )
