"""Admission latency, judged from the API server's own /metrics (recorded text, two scrapes a window apart) and its
log: a slow webhook, one failing open, one refusing, and a chain of webhooks whose timeouts add up past the API
server's deadline, each named by its configuration with the namespaces it selects; and the plan and checks of
apiserver.admission-webhook-slow."""

from __future__ import annotations

import calendar
import re
import time
from typing import Any

import pytest

from chaoskit.components import admission
from chaoskit.components.admission import Webhook, calls, chain, klog_time, logged_failures, selects
from chaoskit.diagnosers.apiserver.admission import CONFIGS, AdmissionEvidence, assess_admission
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.env import Env
from chaoskit.faults.apiserver import AdmissionWebhookSlow, SlowWebhookParams
from chaoskit.faults.apiserver import slow_webhook as slow
from chaoskit.seams.nodeexec import Node
from chaoskit.seams.scrape import Metrics

NOW = float(calendar.timegm((2026, 12, 6, 7, 58, 20, 0, 0, 0)))
VALIDATING, MUTATING = CONFIGS
HOOK = "slow.shop.io"
NO_SCRAPE = Metrics(())
BUCKETS = ("0.005", "0.025", "0.1", "0.5", "1", "2.5", "10", "25", "+Inf")


def scrape(name: str, slow: int = 0, fast: int = 0, fail_open: int = 0, refused: int = 0) -> Metrics:
    """The API server's admission metrics as it exposes them: `fast` calls of 20 ms, `slow` ones of 10 s (timed
    out, HTTP 503 counted), `fail_open` of them let through, `refused` refused for want of an answer."""
    per = {"0.005": 0, "0.025": fast, "0.1": fast, "0.5": fast, "1": fast, "2.5": fast, "10": fast}
    labels = f'name="{name}",operation="CREATE",rejected="false",type="admit"'
    lines = [f"# TYPE {admission.DURATION} histogram"]
    for le in BUCKETS:
        lines.append(f'{admission.DURATION}_bucket{{{labels},le="{le}"}} {per.get(le, fast + slow)}')
    lines += [
        f"{admission.DURATION}_sum{{{labels}}} {fast * 0.02 + slow * 10.003}",
        f"{admission.DURATION}_count{{{labels}}} {fast + slow}",
        f"# TYPE {admission.FAIL_OPEN} counter",
        f'{admission.FAIL_OPEN}{{name="{name}",type="admit"}} {fail_open}',
        f"# TYPE {admission.REJECTIONS} counter",
        f'{admission.REJECTIONS}{{error_type="calling_webhook_error",name="{name}",operation="CREATE",'
        f'rejection_code="500",type="admit"}} {refused}',
        f"# TYPE {admission.REQUESTS} counter",
        f'{admission.REQUESTS}{{code="200",{labels}}} {fast}',
        f'{admission.REQUESTS}{{code="503",{labels}}} {slow}',
    ]
    return Metrics.parse("\n".join(lines) + "\n")


def hook(
    name: str = HOOK, *, policy: str = "Ignore", timeout: int = 10, ns: str | None = "shop", ops: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"service": {"namespace": "shop", "name": "guard", "port": 443}},
        "rules": [{"operations": list(ops or ("CREATE",)), "resources": ["pods"]}],
        "failurePolicy": policy,
        "timeoutSeconds": timeout,
        **({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}} if ns else {}),
    }


def evidence(
    mutating: list[dict[str, Any]],
    validating: list[dict[str, Any]] = (),  # type: ignore[assignment]
    *,
    before: Metrics = NO_SCRAPE,
    after: Metrics = NO_SCRAPE,
    log: str = "",
) -> AdmissionEvidence:
    namespaces = [{"metadata": {"name": n, "labels": {"team": n}}} for n in ("shop", "kube-system", "default")]
    return AdmissionEvidence(
        {
            VALIDATING: Fetched({"items": [{"metadata": {"name": "guards"}, "webhooks": list(validating)}]}),
            MUTATING: Fetched({"items": [{"metadata": {"name": "slowpoke"}, "webhooks": mutating}]}),
        },
        {"shop": Fetched({"items": [{"metadata": {"name": "guard"}}]})},
        {("shop", "guard"): Fetched({"items": [{"endpoints": [{"addresses": ["10.244.1.9"]}]}]})},
        Fetched({"items": []}),
        Fetched({"items": namespaces}),
        before,
        after,
        1.0,
        log,
    )


def test_slow_calls_in_the_window_name_the_configuration_and_the_namespaces_it_selects() -> None:
    ev = evidence([hook()], before=scrape(HOOK, fast=5), after=scrape(HOOK, fast=5, slow=2, fail_open=2))
    (f,) = assess_admission(ev, NOW).findings
    assert f.severity == "warning" and f.entity == "mutatingwebhookconfiguration/slowpoke"
    assert f.affects == ("namespace/shop", "component/apiserver")  # the namespaces it selects, and the API server
    assert "2 call(s) ran to its 10s timeout" in f.title and "2 call(s) failed open" in f.title
    assert "calls are slow (p99 10" in f.title
    (e,) = f.evidence
    assert e.metrics["calls_in_window"] == 2 and e.metrics["fail_open"] == 2


def test_an_old_slow_call_does_not_count_once_the_window_sees_none() -> None:
    old = scrape(HOOK, fast=5, slow=2, fail_open=2)  # since the API server started: slow, failed open
    assert assess_admission(evidence([hook()], before=old, after=old), NOW).findings == ()
    again = calls(scrape(HOOK, fast=9, slow=2, fail_open=2), old, HOOK)  # only fast calls since
    assert again.count == 4 and not again.slow(1.0) and again.fail_open == 0 and again.timed_out(10) == 0


def test_fail_open_rising_alone_is_a_warning_and_refusals_under_fail_are_critical() -> None:
    ev = evidence([hook()], before=scrape(HOOK, fail_open=3), after=scrape(HOOK, fail_open=4))
    (f,) = assess_admission(ev, NOW).findings
    assert f.severity == "warning" and f.title.endswith("1 call(s) failed open")
    refusing = evidence(
        [hook(policy="Fail")], before=scrape(HOOK, slow=1, refused=1), after=scrape(HOOK, slow=3, refused=3)
    )
    (g,) = assess_admission(refusing, NOW).findings
    assert g.severity == "critical" and "2 request(s) refused" in g.title


def test_the_api_servers_recent_log_lines_count_and_old_ones_do_not() -> None:
    line = (
        f"W1206 07:55:07.442385       1 dispatcher.go:210] Failed calling webhook, failing open {HOOK}: failed "
        f'calling webhook "{HOOK}": failed to call webhook: Post "https://guard.shop.svc:443/?timeout=10s": '
        "context deadline exceeded"
    )
    assert klog_time(line, NOW) == NOW - 193.0
    (f,) = assess_admission(evidence([hook()], log=line), NOW).findings
    assert f.title.endswith("failing open (logged)") and f.evidence[0].log_lines == (line,)
    assert logged_failures(line, HOOK, NOW + 600, 300) == ()  # ten minutes on: what it did then is over
    assert logged_failures(line, "other.io", NOW, 300) == ()
    assert klog_time("I0101 00:00:01.000000 1 x.go:1] new year", NOW + 0) is not None  # a year back when ahead


def test_a_pod_creation_chain_past_the_deadline_names_every_configuration_in_it() -> None:
    mutating = [hook("a.io", timeout=10), hook("b.io", timeout=15, ns=None)]
    validating = [hook("c.io", timeout=10, ns=None, policy="Fail"), hook("d.io", timeout=5)]
    findings = assess_admission(evidence(mutating, validating), NOW).findings
    (f,) = [f for f in findings if "deadline" in f.title]
    assert "may hold a request 35s, past the API server's 34s deadline" in f.title  # 10 + 15, then max(10, 5)
    assert f.entities == ("mutatingwebhookconfiguration/slowpoke", "validatingwebhookconfiguration/guards")
    assert "namespace/kube-system" in f.affects and "component/apiserver" in f.affects  # b.io and c.io: everywhere
    assert assess_admission(evidence(mutating[:1], validating), NOW).findings == ()  # 10 + 10: within it
    updates = chain([Webhook.of(MUTATING, {"metadata": {"name": "x"}}, hook(ops=("UPDATE",)))])
    assert updates.worst_s == 0  # not on pod creation


def test_namespace_selectors_are_judged_as_the_api_server_does() -> None:
    sel = {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["kube-system"]}]}
    assert selects(sel, {"team": "shop"}) and not selects(sel, {"team": "kube-system"})
    assert selects({}, {}) and not selects({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, {})


def test_the_fault_is_a_mutating_ignore_webhook_on_one_namespace_and_its_revert_verifies_last() -> None:
    p = SlowWebhookParams(namespace="shop", timeout_seconds=12)
    (h,) = slow.webhook_configuration(p)["webhooks"]
    assert h["failurePolicy"] == "Ignore" and h["timeoutSeconds"] == 12 and h["sideEffects"] == "None"
    assert h["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "shop"}}
    service, endpoints = slow.backend(p)
    assert "selector" not in service["spec"] and endpoints["endpoints"][0]["addresses"] == [slow.NODE_IP]
    plan = AdmissionWebhookSlow().plan(Node("chaoskit-control-plane", "control-plane"), p)
    assert "socat" in plan.apply[0] and 'sed "s/__NODE_IP__/$ip/"' in plan.apply[2]
    (verify,) = plan.verify
    assert "if out=$(kubectl" in verify and "could not list" in verify  # kubectl failing fails it too
    assert "systemctl is-active --quiet chaoskit-silent-backend; case $? in 3)" in verify
    assert any("systemctl stop chaoskit-silent-backend" in line for line in plan.undo)
    assert AdmissionWebhookSlow().radius(Node("chaoskit-control-plane", "control-plane"), p).where == "shop"


def test_the_diagnosis_of_the_faults_webhook_matches_what_the_fault_must_be_named_by() -> None:
    p = SlowWebhookParams(namespace="shop")
    ev = evidence(slow.webhook_configuration(p)["webhooks"], before=scrape(slow.WEBHOOK), after=scrape(slow.WEBHOOK, 1))
    (f,) = assess_admission(ev, NOW).findings
    assert re.search(AdmissionWebhookSlow.named.cause, f"{f.title} {f.probable_cause}")


class TimedKube:
    """Answers a dry run after `took` seconds of a fake clock; knows whether the configuration stands."""

    def __init__(self, took: float, config: bool, clock: list[float]) -> None:
        self.took, self.config, self.clock = took, config, clock

    def request(self, method: str, path: str, body: Any = None, query: Any = None) -> Any:
        self.clock[0] += self.took
        return {}

    def find(self, path: str) -> Any | None:
        return {"metadata": {"name": slow.CONFIG}} if self.config else None


@pytest.mark.parametrize(
    ("took", "config", "effect", "recovered"),
    [(0.05, False, False, True), (10.02, True, True, False), (9.2, True, True, False), (0.05, True, False, False)],
)
def test_the_checks_time_a_dry_run_against_the_timeout(
    monkeypatch: pytest.MonkeyPatch, took: float, config: bool, effect: bool, recovered: bool
) -> None:
    clock = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    env = Env(TimedKube(took, config, clock), None, "kind")  # type: ignore[arg-type]
    plan = AdmissionWebhookSlow().plan(
        Node("chaoskit-control-plane", "control-plane"), SlowWebhookParams(namespace="shop")
    )
    assert AdmissionWebhookSlow().took_effect(env, plan) is effect
    assert AdmissionWebhookSlow().recovered(env, plan) is recovered
