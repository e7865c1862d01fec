"""The API server's admission chain: each webhook it calls, whether anything answers behind it, and what it refused.

A webhook with `failurePolicy: Fail` whose backend is gone makes the API server refuse every request it matches, so
pods stop being created while every component is healthy; it is named here with its configuration, its target, its
policy and timeout, and the refusals it caused (FailedCreate events), whoever made it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import items
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.model.timeline import api_time

CONFIGS = {
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
}
REFUSED = "failed calling webhook"
RECENT_S = 600.0  # refusals seen this long ago still say what the webhook did


@dataclass(frozen=True)
class Webhook:
    kind: str  # ValidatingWebhookConfiguration | MutatingWebhookConfiguration
    config: str
    name: str
    failure_policy: str
    timeout_s: int
    service: tuple[str, str] | None  # (namespace, name) it calls, or None for a URL
    target: str  # the service's address or the URL, as the API server calls it
    matches: str  # operations on resources, and where

    @classmethod
    def of(cls, kind: str, config: dict[str, Any], hook: dict[str, Any]) -> Webhook:
        client = hook.get("clientConfig") or {}
        svc = client.get("service")
        service = (str(svc.get("namespace")), str(svc.get("name"))) if svc else None
        target = (
            f"service {service[0]}/{service[1]}:{svc.get('port', 443)}{svc.get('path') or ''}"
            if service and svc
            else str(client.get("url") or "?")
        )
        rules = hook.get("rules") or []
        ops = sorted({o for r in rules for o in r.get("operations") or []})
        res = sorted({x for r in rules for x in r.get("resources") or []})
        selector = (hook.get("namespaceSelector") or {}).get("matchLabels") or {}
        where = selector.get("kubernetes.io/metadata.name") or (
            ", ".join(f"{k}={v}" for k, v in selector.items()) or "every namespace"
        )
        return cls(
            kind,
            str(config.get("metadata", {}).get("name")),
            str(hook.get("name")),
            str(hook.get("failurePolicy") or "Fail"),
            int(hook.get("timeoutSeconds") or 10),
            service,
            target,
            f"{'/'.join(ops) or '?'} {', '.join(res) or '?'} in {where}",
        )


@dataclass(frozen=True)
class AdmissionEvidence:
    configs: Mapping[str, Fetched]  # by kind
    services: Mapping[str, Fetched]  # by namespace: its Services
    slices: Mapping[tuple[str, str], Fetched]  # by (namespace, name): the Service's EndpointSlices
    refusals: Fetched  # FailedCreate events


def webhooks(configs: Mapping[str, Fetched]) -> list[Webhook]:
    return [
        Webhook.of(kind, c, h)
        for kind, fetched in configs.items()
        for c in (items(fetched) if fetched.ok else [])
        for h in c.get("webhooks") or []
    ]


def collect(src: Sources) -> AdmissionEvidence:
    configs = {kind: src.api.fetch(path) for kind, path in CONFIGS.items()}
    called = {w.service for w in webhooks(configs) if w.service}
    return AdmissionEvidence(
        configs,
        {ns: src.api.fetch(f"/api/v1/namespaces/{ns}/services") for ns, _ in called},
        {
            (ns, name): src.api.fetch(
                f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                labelSelector=f"kubernetes.io/service-name={name}",
            )
            for ns, name in called
        },
        src.api.fetch("/api/v1/events", fieldSelector="reason=FailedCreate"),
    )


def backend_problem(w: Webhook, ev: AdmissionEvidence) -> str:
    """What is wrong behind a service-backed webhook ("" when something answers, or it cannot be told)."""
    if w.service is None:
        return ""
    ns, name = w.service
    services = ev.services.get(ns)
    if services is None or not services.ok:
        return ""
    if not any(s.get("metadata", {}).get("name") == name for s in items(services)):
        return f"its Service {ns}/{name} does not exist"
    slices = ev.slices.get((ns, name))
    if slices is None or not slices.ok:
        return ""
    ready = [
        a
        for s in items(slices)
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready") is not False
        for a in e.get("addresses") or []
    ]
    return "" if ready else f"its Service {ns}/{name} has no ready endpoints"


def refusals_by(w: Webhook, ev: AdmissionEvidence, now: float) -> tuple[str, ...]:
    """FailedCreate events of the last RECENT_S that name this webhook: who was refused, how often, and why."""
    if not ev.refusals.ok:
        return ()
    out = []
    for e in items(ev.refusals):
        message = str(e.get("message") or "")
        seen = api_time(e.get("lastTimestamp") or e.get("eventTime") or e.get("metadata", {}).get("creationTimestamp"))
        if f'{REFUSED} "{w.name}"' in message and (seen is None or now - seen <= RECENT_S):
            obj = e.get("involvedObject") or {}
            who = f"{obj.get('kind')} {obj.get('namespace')}/{obj.get('name')}"
            out.append(f"{who}: {e.get('count') or 1}x {message[:300]}")
    return tuple(out[-8:])


def assess_admission(ev: AdmissionEvidence, now: float) -> Assessed:
    hooks = webhooks(ev.configs)
    unread = [f"{kind}: {f.error}" for kind, f in ev.configs.items() if not f.ok]
    e = Evidence(
        "admission-webhooks",
        "GET validating/mutating webhook configurations; their Services' EndpointSlices; FailedCreate events",
        {"webhooks": len(hooks), "unread": "; ".join(unread) or None},
    )
    findings = []
    for w in hooks:
        problem, refused = backend_problem(w, ev), refusals_by(w, ev, now)
        if not problem and not refused:
            continue
        fails_closed = w.failure_policy == "Fail"
        we = Evidence(
            "admission-webhook",
            f"{w.kind} {w.config}",
            {
                "webhook": w.name,
                "calls": w.target,
                "failure_policy": w.failure_policy,
                "timeout_s": w.timeout_s,
                "matches": w.matches,
                "backend": problem or "answers, or cannot be told",
            },
            log_lines=refused,
        )
        findings.append(
            Finding(
                "critical" if fails_closed and (problem or refused) else "warning",
                "apiserver",
                f"Admission webhook {w.name} ({w.kind} {w.config}) "
                + (f"refuses {w.matches}" if fails_closed else f"cannot judge {w.matches}")
                + f": {problem or 'calling it fails'}",
                (
                    "failurePolicy Fail: the API server refuses every request it cannot have the webhook judge, so "
                    "a ReplicaSet's pods are not created (FailedCreate) while every component is healthy"
                    if fails_closed
                    else f"failurePolicy Ignore: requests pass unjudged, each after waiting up to {w.timeout_s}s"
                ),
                (we,),
                (
                    f"bring its backend back ({w.target}), or delete the configuration: "
                    f"kubectl delete {w.kind.lower()} {w.config}",
                    f"kubectl get {w.kind.lower()} {w.config} -o yaml: its failurePolicy, namespaceSelector and "
                    "timeoutSeconds",
                ),
            )
        )
    return Assessed(e, tuple(findings))
