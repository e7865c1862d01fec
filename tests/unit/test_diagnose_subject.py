"""Your subject judged as the API server and its controllers judge it: a healthy one is ok; one that is not Available,
an HPA that cannot scale or shares its target, a Service with no ready endpoint and a budget that forbids evictions
are each named with the objects' own words."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.subject import SubjectEvidence, report
from chaoskit.subject import Subject

SHOP = Subject("shop", "Deployment", "web", {"app": "web"}, "web", "web")


def condition(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def deployment(available: int = 2, *conditions: dict[str, Any]) -> Fetched:
    status = {"availableReplicas": available, "conditions": list(conditions) or [condition("Available", "True")]}
    return Fetched({"spec": {"replicas": 2}, "status": status})


def healthy() -> SubjectEvidence:
    hpa = {"status": {"conditions": [condition("AbleToScale", "True"), condition("ScalingActive", "True")]}}
    endpoints = [{"addresses": ["10.244.1.4"], "conditions": {"ready": True}}]
    return SubjectEvidence(
        SHOP,
        deployment(),
        Fetched(hpa),
        Fetched({"items": []}),
        Fetched({"items": [{"endpoints": endpoints}]}),
        Fetched({"items": []}),
    )


def titles(ev: SubjectEvidence) -> list[str]:
    return [f"{f.severity}: {f.title}" for f in report(ev).findings]


def test_a_healthy_subject_is_ok() -> None:
    r = report(healthy())
    assert (r.component, r.subject, r.status) == ("subject", "Deployment shop/web", "ok")


def test_a_deployment_that_is_not_available_is_named_with_why() -> None:
    quota = condition("ReplicaFailure", "True", "FailedCreate", 'pods "web-x" is forbidden: exceeded quota: q')
    ev = replace(
        healthy(), workload=deployment(0, condition("Available", "False", "MinimumReplicasUnavailable"), quota)
    )
    (finding,) = report(ev).findings
    assert finding.title == "Deployment shop/web is not Available (0/2 available)"
    assert finding.probable_cause.startswith('its pods cannot be created: pods "web-x" is forbidden: exceeded quota')


def test_an_hpa_that_cannot_scale_or_shares_its_target_is_named() -> None:
    blind = {"status": {"conditions": [condition("ScalingActive", "False", "FailedGetResourceMetric", "no metrics")]}}
    twice = [
        {"reason": "AmbiguousSelector", "count": 3, "message": "pods by selector app=web are controlled by 2 HPAs"}
    ]
    ev = replace(healthy(), hpa=Fetched(blind), hpa_events=Fetched({"items": twice}))
    assert titles(ev) == [
        "critical: HPA shop/web cannot scale: ScalingActive=False FailedGetResourceMetric: no metrics",
        "critical: HPA shop/web shares its target with another HPA (AmbiguousSelector)",
    ]


def test_a_service_with_no_ready_endpoint_and_a_budget_that_forbids_evictions() -> None:
    pdb = {
        "metadata": {"name": "web-pdb"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 2},
    }
    ev = replace(healthy(), slices=Fetched({"items": []}), budgets=Fetched({"items": [pdb]}))
    assert titles(ev) == [
        "critical: Service shop/web has no ready endpoint",
        "warning: PodDisruptionBudget shop/web-pdb allows no eviction (1/2 healthy)",
    ]
