"""The API server's admission chain: each webhook it calls, whether anything answers behind it, how long its calls
take, and what it refused or let through unjudged.

A webhook with `failurePolicy: Fail` whose backend is gone makes the API server refuse every request it matches, so
pods stop being created while every component is healthy; one with `Ignore` whose backend hangs lets each request
through only after its whole timeout, so pods are created late and nothing is refused. Either is named here with its
configuration (the finding's entity), its target, its policy and timeout, the namespaces it selects (what it
affects), and what the API server counted of its calls between two scrapes of /metrics or logged of their failures
in the last minutes, whoever made it. A chain of webhooks whose timeouts add up past the API server's deadline for a
pod creation is named with every configuration in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chaoskit.components.admission import (
    DEADLINE_S,
    Calls,
    Chain,
    Webhook,
    calls,
    chain,
    logged_failures,
    selected_namespaces,
)
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding, Severity
from chaoskit.diagnosers.kit.common import items, rounded
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.figures import seconds
from chaoskit.model.timeline import api_time
from chaoskit.seams.scrape import Metrics

CONFIGS = {
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
}
REFUSED = "failed calling webhook"
RECENT_S = 600.0  # refusals seen this long ago still say what the webhook did
LOGGED_S = 300.0  # the API server's log lines of failed calls this recent still say what the webhook does
SLOW_S = 1.0  # a webhook call's p99 over this, in the window: slow (the mutating-call SLO it eats into)
APISERVER = "component/apiserver"  # a webhook's trouble is the API server's: every request it matches waits


@dataclass(frozen=True)
class AdmissionEvidence:
    configs: Mapping[str, Fetched]  # by kind
    services: Mapping[str, Fetched]  # by namespace: its Services
    slices: Mapping[tuple[str, str], Fetched]  # by (namespace, name): the Service's EndpointSlices
    refusals: Fetched  # FailedCreate events
    namespaces: Fetched = Fetched(error="not read")  # every namespace with its labels: whom each webhook judges
    metrics_before: Metrics = Metrics(())  # the API server's admission metrics, at the window's start and end
    metrics_after: Metrics = Metrics(())
    window_s: float = 0.0
    log: str = ""  # kube-apiserver's last log lines: its failed webhook calls, with their time


def webhooks(configs: Mapping[str, Fetched]) -> list[Webhook]:
    return [
        Webhook.of(kind, c, h)
        for kind, fetched in configs.items()
        for c in (items(fetched) if fetched.ok else [])
        for h in c.get("webhooks") or []
    ]


def collect(src: Sources, before: Metrics, after: Metrics, window_s: float, log: str) -> AdmissionEvidence:
    configs = {kind: src.api.fetch(path) for kind, path in CONFIGS.items()}
    hooks = webhooks(configs)
    called = {w.service for w in hooks if w.service}
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
        src.api.fetch("/api/v1/namespaces") if hooks else Fetched({"items": []}),
        before,
        after,
        window_s,
        log,
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


@dataclass(frozen=True)
class Trouble:
    """What one look saw wrong with a webhook's calls: from the window's metrics, or the API server's recent log."""

    slow: str = ""  # "p99 12.3s over 1s (3 calls)"
    timed_out: float = 0.0  # calls that ran to its timeout in the window
    fail_open: float = 0.0  # calls let through unjudged in the window
    refused: float = 0.0  # requests refused because it could not be called, in the window
    logged: tuple[str, ...] = ()  # the API server's lines of failed calls, of the last LOGGED_S

    @property
    def failing_open(self) -> bool:
        return bool(self.fail_open) or any("failing open" in line for line in self.logged)

    @property
    def failing_closed(self) -> bool:
        return bool(self.refused) or any("failing closed" in line for line in self.logged)

    def __bool__(self) -> bool:
        return bool(self.slow or self.timed_out or self.failing_open or self.failing_closed)

    def said(self, w: Webhook) -> str:
        """In the field's words, worst first."""
        parts = []
        if self.timed_out:
            parts.append(f"{self.timed_out:g} call(s) ran to its {w.timeout_s}s timeout")
        if self.slow:
            parts.append(f"calls are slow ({self.slow})")
        if self.failing_closed:
            parts.append(f"{self.refused:g} request(s) refused" if self.refused else "failing closed (logged)")
        if self.failing_open:
            parts.append(f"{self.fail_open:g} call(s) failed open" if self.fail_open else "failing open (logged)")
        return "; ".join(parts)


def trouble(w: Webhook, c: Calls, log: str, now: float, slow_s: float) -> Trouble:
    # no call outlasts its timeout: a quantile past it is only the bucket's interpolation (10 s calls in le=25)
    p99 = min(c.p99, float(w.timeout_s)) if c.p99 is not None else None
    return Trouble(
        f"p99 {seconds(p99)} over {seconds(slow_s)}, {c.count:g} call(s)" if p99 is not None and c.slow(slow_s) else "",
        c.timed_out(w.timeout_s),
        c.fail_open,
        c.refused,
        logged_failures(log, w.name, now, LOGGED_S),
    )


def assess_admission(
    ev: AdmissionEvidence, now: float, *, slow_s: float = SLOW_S, deadline_s: float = DEADLINE_S
) -> Assessed:
    hooks = webhooks(ev.configs)
    unread = [f"{kind}: {f.error}" for kind, f in ev.configs.items() if not f.ok]
    namespaces = items(ev.namespaces)
    found = [_judged(w, ev, now, slow_s, namespaces) for w in hooks]
    findings = [f for f in found if f is not None]
    pods = chain(hooks)
    e = Evidence(
        "admission-webhooks",
        "GET validating/mutating webhook configurations; their Services' EndpointSlices; FailedCreate events; "
        f"apiserver_admission_webhook_* from /metrics, two scrapes {seconds(ev.window_s)} apart; kube-apiserver's log",
        {
            "webhooks": len(hooks),
            "unread": "; ".join(unread) or None,
            "metrics": "read" if ev.metrics_after else ev.metrics_after.error or "no samples",
            "pod_create_chain_s": pods.worst_s,
            "deadline_s": deadline_s,
        },
    )
    if pods.worst_s >= deadline_s:
        findings.append(_chain_finding(pods, deadline_s, e, namespaces))
    return Assessed(e, tuple(findings))


def _affects(w: Webhook, namespaces: list[dict[str, Any]]) -> tuple[str, ...]:
    return (*(f"namespace/{ns}" for ns in selected_namespaces(w, namespaces)), APISERVER)


def _judged(
    w: Webhook, ev: AdmissionEvidence, now: float, slow_s: float, namespaces: list[dict[str, Any]]
) -> Finding | None:
    problem, refused = backend_problem(w, ev), refusals_by(w, ev, now)
    c = calls(ev.metrics_after, ev.metrics_before, w.name)
    t = trouble(w, c, ev.log, now, slow_s)
    if not problem and not refused and not t:
        return None
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
        log_lines=(*refused, *t.logged),
        metrics=rounded(
            [
                ("calls_in_window", c.count),
                ("p99_s", min(c.p99, float(w.timeout_s)) if c.p99 is not None else None),
                ("fail_open", c.fail_open),
                ("refused", c.refused),
                ("errors", c.errors),
                ("rejected", c.rejected),
            ]
        ),
    )
    severity: Severity = "critical" if fails_closed and (problem or refused or t.failing_closed) else "warning"
    if problem or refused:
        title = (
            f"Admission webhook {w.name} ({w.kind} {w.config}) "
            + (f"refuses {w.matches}" if fails_closed else f"cannot judge {w.matches}")
            + f": {problem or 'calling it fails'}"
        )
    else:
        title = f"Admission webhook {w.name} ({w.kind} {w.config}) on {w.matches}: {t.said(w)}"
    cause = (
        "failurePolicy Fail: the API server refuses every request it cannot have the webhook judge, so "
        "a ReplicaSet's pods are not created (FailedCreate) while every component is healthy"
        if fails_closed
        else f"failurePolicy Ignore: requests pass unjudged, each after waiting up to {w.timeout_s}s"
    )
    if t and not fails_closed:
        cause += (
            f"; its backend ({w.target}) does not answer in time, so every request it matches is admitted up to "
            f"{w.timeout_s}s late (a ReplicaSet's pods are created that much later, one batch after another)"
        )
    return Finding(
        severity,
        "apiserver",
        title,
        cause,
        (we,),
        (
            f"bring its backend back ({w.target}), or delete the configuration: "
            f"kubectl delete {w.kind.lower()} {w.config}",
            f"kubectl get {w.kind.lower()} {w.config} -o yaml: its failurePolicy, namespaceSelector and timeoutSeconds",
        ),
        entity=w.entity,
        affects=_affects(w, namespaces),
    )


def _chain_finding(pods: Chain, deadline_s: float, e: Evidence, namespaces: list[dict[str, Any]]) -> Finding:
    order = [f"{w.name} ({w.timeout_s}s, {w.entity})" for w in (*pods.mutating, *pods.validating)]
    reached = {a for w in (*pods.mutating, *pods.validating) for a in _affects(w, namespaces)}
    return Finding(
        "warning",
        "apiserver",
        f"Admission webhooks on {pods.operation} {pods.resource} may hold a request {pods.worst_s}s, past the API "
        f"server's {seconds(deadline_s)} deadline",
        "mutating webhooks are called one after another (their timeouts add up) and validating ones side by side "
        f"(the longest counts): when their backends hang, a {pods.operation} of {pods.resource} times out even "
        f"where every webhook is failurePolicy Ignore; the chain: {', '.join(order)}",
        (e,),
        (
            "lower the webhooks' timeoutSeconds so the chain stays well under the deadline (a few seconds each)",
            "scope each webhook to the namespaces it is for (namespaceSelector), or remove the ones no longer used",
        ),
        entity=pods.configs[0],
        co_causes=pods.configs[1:],
        affects=tuple(sorted(reached)),
    )
