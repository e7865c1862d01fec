"""The API server's admission webhooks: each one as its configuration declares it, how its calls went between two
scrapes of the API server's own /metrics, what the API server logged of its failures, and how long a chain of them
may hold a request.

What Kubernetes does with them (k8s.io/apiserver, admission/plugin/webhook and endpoints/handlers): mutating
webhooks are called one after another, validating webhooks side by side; each call is cut at its `timeoutSeconds`
(1 to 30, default 10); a call that fails or times out is refused under `failurePolicy: Fail` and let through,
unjudged, under `Ignore` (counted in `apiserver_admission_webhook_fail_open_count` and logged as "Failed calling
webhook, failing open"). A create, update or patch is cut at 34 s (`requestTimeoutUpperBound`, less when the client
asks for a shorter `timeout` or --request-timeout is lower), admission included: a chain whose timeouts add up past
that fails the request with a timeout even when every webhook in it is `Ignore`.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chaoskit.seams.scrape import Histogram, Labels, Metrics, counter_delta, windowed

DURATION = "apiserver_admission_webhook_admission_duration_seconds"  # by name, type, operation, rejected
FAIL_OPEN = "apiserver_admission_webhook_fail_open_count"  # by name, type
REJECTIONS = "apiserver_admission_webhook_rejection_count"  # by name, type, operation, error_type, rejection_code
REQUESTS = "apiserver_admission_webhook_request_total"  # by name, code, operation, rejected, type
METRICS = (DURATION, FAIL_OPEN, REJECTIONS, REQUESTS)
CALLING_ERROR = "calling_webhook_error"  # a rejection because the webhook could not be called (Fail policy)

DEADLINE_S = 34.0  # requestTimeoutUpperBound: the most a create, update or patch may take, admission included
DEFAULT_TIMEOUT_S = 10  # a webhook's timeoutSeconds when its configuration says none (admissionregistration/v1)
NAME_LABEL = "kubernetes.io/metadata.name"  # every namespace carries its own name as this label
KINDS = {"MutatingWebhookConfiguration": "mutatingwebhookconfiguration"}  # else validatingwebhookconfiguration


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration, as the API server calls it."""

    kind: str  # ValidatingWebhookConfiguration | MutatingWebhookConfiguration
    config: str
    name: str
    failure_policy: str
    timeout_s: int
    service: tuple[str, str] | None  # (namespace, name) it calls, or None for a URL
    target: str  # the service's address or the URL, as the API server calls it
    matches: str  # operations on resources, and where
    operations: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    namespace_selector: Mapping[str, Any] | None = None  # None or {}: every namespace

    @classmethod
    def of(cls, kind: str, config: Mapping[str, Any], hook: Mapping[str, Any]) -> Webhook:
        client = hook.get("clientConfig") or {}
        svc = client.get("service")
        service = (str(svc.get("namespace")), str(svc.get("name"))) if svc else None
        target = (
            f"service {service[0]}/{service[1]}:{svc.get('port', 443)}{svc.get('path') or ''}"
            if service and svc
            else str(client.get("url") or "?")
        )
        rules = hook.get("rules") or []
        ops = tuple(sorted({o for r in rules for o in r.get("operations") or []}))
        res = tuple(sorted({x for r in rules for x in r.get("resources") or []}))
        selector = hook.get("namespaceSelector") or {}
        labels = selector.get("matchLabels") or {}
        where = labels.get(NAME_LABEL) or (
            ", ".join(f"{k}={v}" for k, v in labels.items())
            or ("selected namespaces" if selector else "every namespace")
        )
        return cls(
            kind,
            str((config.get("metadata") or {}).get("name")),
            str(hook.get("name")),
            str(hook.get("failurePolicy") or "Fail"),
            int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT_S),
            service,
            target,
            f"{'/'.join(ops) or '?'} {', '.join(res) or '?'} in {where}",
            ops,
            res,
            selector or None,
        )

    @property
    def mutating(self) -> bool:
        return self.kind == "MutatingWebhookConfiguration"

    @property
    def entity(self) -> str:
        """Its configuration, as a finding names its cause."""
        return f"{KINDS.get(self.kind, 'validatingwebhookconfiguration')}/{self.config}"

    def handles(self, operation: str, resource: str) -> bool:
        return any(o in ("*", operation) for o in self.operations) and any(
            r in ("*", "*/*", resource) for r in self.resources
        )

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether its namespaceSelector selects a namespace with these labels (matchLabels and matchExpressions)."""
        return selects(self.namespace_selector or {}, labels)


def webhooks_of(kind: str, configs: Sequence[Mapping[str, Any]]) -> list[Webhook]:
    return [Webhook.of(kind, c, h) for c in configs for h in c.get("webhooks") or []]


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A label selector's verdict on a set of labels, as the API server's namespace matcher gives it."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), e.get("values") or []
        has = key in labels
        if (
            (op == "In" and (not has or labels[key] not in values))
            or (op == "NotIn" and has and labels[key] in values)
            or (op == "Exists" and not has)
            or (op == "DoesNotExist" and has)
        ):
            return False
    return True


def selected_namespaces(w: Webhook, namespaces: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The namespaces (of those listed) whose pods and objects the webhook judges."""
    out = []
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        labels = {NAME_LABEL: str(meta.get("name")), **(meta.get("labels") or {})}
        if w.selects(labels):
            out.append(str(meta.get("name")))
    return tuple(sorted(out))


@dataclass(frozen=True)
class Calls:
    """One webhook's calls between two scrapes of the API server's /metrics."""

    name: str
    durations: Histogram | None  # the window's; None when it saw no call
    fail_open: float  # calls that failed and were let through unjudged (failurePolicy Ignore)
    refused: float  # requests refused because it could not be called (failurePolicy Fail)
    rejected: float  # requests it answered "no" to: its verdict, not a fault
    errors: float  # calls that did not end in HTTP 200 (refused, timed out, bad answer)

    @property
    def count(self) -> float:
        return self.durations.count if self.durations else 0.0

    @property
    def p99(self) -> float | None:
        return self.durations.quantile(0.99) if self.durations else None

    def slow(self, limit_s: float) -> bool:
        """p99 over `limit_s`, by at least one call slower than it."""
        return self.durations is not None and self.durations.slow(limit_s, 1)

    def timed_out(self, timeout_s: int) -> float:
        """Failed calls that took about its whole timeoutSeconds: the API server gave up waiting."""
        if self.durations is None or not self.errors:
            return 0.0
        return min(self.errors, self.durations.over(max(timeout_s - 1, 0.5)))


def _named(name: str) -> Any:
    return lambda labels: labels.get("name") == name


def calls(now: Metrics, before: Metrics, name: str) -> Calls:
    """The webhook's calls in the window between `before` and `now` (a counter reset counts from zero)."""
    mine = _named(name)
    hist, basis = windowed(now.histogram(DURATION, mine), before.histogram(DURATION, mine))

    def delta(metric: str, where: Any = None) -> float:
        keep = (lambda labels: mine(labels) and where(labels)) if where else mine
        return counter_delta(now.total(metric, keep), before.total(metric, keep)) or 0.0

    return Calls(
        name,
        hist if basis == "window" else None,
        delta(f"{FAIL_OPEN}_total") + delta(FAIL_OPEN),
        delta(f"{REJECTIONS}_total", _calling) + delta(REJECTIONS, _calling),
        delta(f"{REJECTIONS}_total", _answered) + delta(REJECTIONS, _answered),
        delta(REQUESTS, lambda labels: labels.get("code") != "200"),
    )


def _calling(labels: Labels) -> bool:
    return labels.get("error_type") == CALLING_ERROR


def _answered(labels: Labels) -> bool:
    return labels.get("error_type") == "no_error"


def called(metrics: Metrics) -> tuple[str, ...]:
    """Every webhook the API server has called since it started, by name."""
    return tuple(sorted({s.labels.get("name", "") for s in metrics.select(REQUESTS)} - {""}))


# klog's header: severity, month, day, time (kube-apiserver's container runs in UTC)
_KLOG = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?\s")


def klog_time(line: str, now: float) -> float | None:
    """When a klog line was written, as seconds since the epoch: its header has no year, so the year that puts it
    at or before `now`."""
    m = _KLOG.match(line)
    if m is None:
        return None
    month, day, hour, minute, second = (int(g) for g in m.groups())
    year = time.gmtime(now).tm_year
    for y in (year, year - 1):
        try:
            at = float(calendar.timegm((y, month, day, hour, minute, second, 0, 0, 0)))
        except (OverflowError, ValueError):
            return None
        if at <= now + 60:
            return at
    return None


def logged_failures(log: str, name: str, now: float, recent_s: float) -> tuple[str, ...]:
    """The API server's own lines, of the last `recent_s` seconds, saying a call to the webhook failed and what it
    did then ("failing open": let through; "failing closed": refused)."""
    marks = (f"failing open {name}:", f"failing closed {name}:")
    out = []
    for line in log.splitlines():
        if any(m in line for m in marks):
            at = klog_time(line, now)
            if at is not None and now - at <= recent_s:
                out.append(line.strip()[:400])
    return tuple(out[-5:])


@dataclass(frozen=True)
class Chain:
    """The webhooks one kind of request passes through, and the longest they may hold it."""

    operation: str
    resource: str
    mutating: tuple[Webhook, ...]  # called one after another: their timeouts add up
    validating: tuple[Webhook, ...]  # called side by side: the longest counts

    @property
    def worst_s(self) -> int:
        return sum(w.timeout_s for w in self.mutating) + max((w.timeout_s for w in self.validating), default=0)

    @property
    def configs(self) -> tuple[str, ...]:
        """Every configuration in the chain, as entities, in call order."""
        return tuple(dict.fromkeys(w.entity for w in (*self.mutating, *self.validating)))


def chain(hooks: Sequence[Webhook], operation: str = "CREATE", resource: str = "pods") -> Chain:
    mine = [w for w in hooks if w.handles(operation, resource)]
    return Chain(
        operation,
        resource,
        tuple(w for w in mine if w.mutating),
        tuple(w for w in mine if not w.mutating),
    )


def admitted_late(seconds: float, timeout_s: int) -> bool:
    """Whether a request took about a webhook's whole timeout: it waited for a call that never answered."""
    return seconds >= timeout_s - 1
