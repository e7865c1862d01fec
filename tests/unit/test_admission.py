"""apiserver.admission-webhook-failing's plan, and the API server diagnosis of the webhooks it calls: a webhook with
nothing behind it, or one whose calls fail, is named with what it calls, its policy and what it refused, whoever
made it; a healthy one is not."""

from __future__ import annotations

from typing import Any

from chaoskit.diagnosers.apiserver.admission import CONFIGS, AdmissionEvidence, assess_admission
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.faults.apiserver import AdmissionWebhookFailing, WebhookParams
from chaoskit.faults.apiserver.admission import WEBHOOK, webhook_configuration
from chaoskit.seams.nodeexec import Node

NOW = 1_000_000.0
VALIDATING, MUTATING = CONFIGS


def hook(name: str, *, service: tuple[str, str] | None = ("shop", "guard"), policy: str = "Fail") -> dict[str, Any]:
    client = (
        {"service": {"namespace": service[0], "name": service[1], "port": 443}} if service else {"url": "https://x"}
    )
    rules = [{"operations": ["CREATE"], "resources": ["pods"]}]
    return {"name": name, "clientConfig": client, "rules": rules, "failurePolicy": policy, "timeoutSeconds": 5}


def evidence(
    hooks: list[dict[str, Any]],
    *,
    services: tuple[str, ...] = ("guard",),
    ready: bool = True,
    events: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> AdmissionEvidence:
    config = {"metadata": {"name": "guards"}, "webhooks": hooks}
    endpoints = [{"addresses": ["10.244.1.9"], "conditions": {"ready": ready}}]
    return AdmissionEvidence(
        {VALIDATING: Fetched({"items": [config]}), MUTATING: Fetched({"items": []})},
        {"shop": Fetched({"items": [{"metadata": {"name": s}} for s in services]})},
        {("shop", "guard"): Fetched({"items": [{"endpoints": endpoints}]})},
        Fetched({"items": list(events)}),
    )


def refusal(webhook: str) -> dict[str, Any]:
    return {
        "reason": "FailedCreate",
        "count": 4,
        "lastTimestamp": "1970-01-12T13:46:30Z",  # NOW - 10 s
        "involvedObject": {"kind": "ReplicaSet", "namespace": "shop", "name": "web-1"},
        "message": f'Error creating: Internal error occurred: failed calling webhook "{webhook}": context deadline',
    }


def titles(ev: AdmissionEvidence) -> list[str]:
    return [f"{f.severity}: {f.title}" for f in assess_admission(ev, NOW).findings]


def test_the_fault_scopes_a_fail_closed_webhook_to_its_namespace_and_its_revert_fails_while_it_stands() -> None:
    p = WebhookParams(namespace="shop")
    config = webhook_configuration(p)
    (h,) = config["webhooks"]
    assert h["failurePolicy"] == "Fail" and h["sideEffects"] == "None"  # a dry run calls it: the checks ask with one
    assert h["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "shop"}}
    plan = AdmissionWebhookFailing().plan(Node("chaoskit-control-plane", "control-plane"), p)
    assert "is still there" in plan.verify[0] and plan.setup and "create namespace" in plan.setup[0]
    assert AdmissionWebhookFailing().radius(Node("chaoskit-control-plane", "control-plane"), p).where == "shop"


def test_a_healthy_webhook_is_no_finding() -> None:
    assert titles(evidence([hook("guard.shop.io")])) == []


def test_a_webhook_with_nothing_behind_it_is_named_with_its_target_policy_and_refusals() -> None:
    ev = evidence([hook(WEBHOOK)], ready=False, events=[refusal(WEBHOOK), refusal("other.io")])
    (finding,) = assess_admission(ev, NOW).findings
    assert finding.severity == "critical" and WEBHOOK in finding.title
    assert "ValidatingWebhookConfiguration guards" in finding.title and "refuses CREATE pods" in finding.title
    assert "shop/guard has no ready endpoints" in finding.title
    (e,) = finding.evidence
    assert e.observed["failure_policy"] == "Fail" and e.observed["calls"] == "service shop/guard:443"
    assert [line.split(":")[0] for line in e.log_lines] == ["ReplicaSet shop/web-1"]  # its refusals, not another's


def test_a_missing_service_an_ignoring_webhook_and_a_failing_url_are_each_told_apart() -> None:
    assert titles(evidence([hook("guard.shop.io")], services=())) == [
        "critical: Admission webhook guard.shop.io (ValidatingWebhookConfiguration guards) refuses CREATE pods in "
        "every namespace: its Service shop/guard does not exist"
    ]
    (ignored,) = titles(evidence([hook("guard.shop.io", policy="Ignore")], ready=False))
    assert ignored.startswith("warning:") and "cannot judge" in ignored
    (url,) = titles(evidence([hook("url.shop.io", service=None)], events=[refusal("url.shop.io")]))
    assert url.startswith("critical:") and url.endswith("calling it fails")
