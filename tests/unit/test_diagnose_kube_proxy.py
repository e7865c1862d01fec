"""kube-proxy's analysis, per node: recorded metrics, /healthz, /configz and the node's iptables and nftables rules
against the recorded Services and EndpointSlices, edited into a frozen, slow, lagging or flushed kube-proxy."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from diagnose_evidence import DOWN, TIMED_OUT, edit_metric, kube_proxy, obj, process, text, titles

import chaoskit.diagnosers.kube_proxy as kube_proxy_module
from chaoskit.diagnosers.kit.base import UNCOLLECTED
from chaoskit.diagnosers.kit.refused import Grants
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.diagnosers.kube_proxy import SERVICES, SLICES, KubeProxyDiagnoser, KubeProxyEvidence
from chaoskit.diagnosers.kube_proxy.evidence import KubeProxyParams
from chaoskit.diagnosers.kube_proxy.rules import in_flight
from chaoskit.env import Env
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec
from chaoskit.seams.scrape import Metrics
from chaoskit.seams.shell import Completed, FakeRunner

NO_ROLES = Fetched({"items": []})


def analyze(ev: KubeProxyEvidence) -> list[str]:
    return titles(KubeProxyDiagnoser().analyze(ev))


def rules_check(ev: KubeProxyEvidence) -> dict[str, object]:
    report = KubeProxyDiagnoser().report(ev, "chaoskit-worker")
    return dict(next(c for c in report.checks if c.check == "rules").observed)


def test_healthy_kube_proxy_in_iptables_mode_has_every_rule() -> None:
    ev = kube_proxy()
    assert ev.mode == "iptables" and analyze(ev) == []
    assert rules_check(ev) == {
        "mode": "iptables",
        "service_ports_expected": 5,
        "service_ports_programmed": 5,
        "endpoints_expected": 8,
        "endpoints_programmed": 8,
        "stale_endpoints": 0,
    }


def test_healthy_kube_proxy_in_nftables_mode_has_every_rule() -> None:
    ev = kube_proxy(mode="nftables", rules=text("kube-proxy/rules-nft.txt"))
    assert analyze(ev) == []
    assert rules_check(ev)["service_ports_programmed"] == 5 and rules_check(ev)["endpoints_programmed"] == 8


def test_flushed_iptables_service_rules_are_critical() -> None:
    assert analyze(kube_proxy(rules=_flushed_iptables())) == ["critical: No Service rule(s) on chaoskit-worker at all"]


def test_an_empty_nftables_service_map_is_critical() -> None:
    table = text("kube-proxy/rules-nft.txt")
    start, end = table.index("\t\telements = {"), table.index("}\n\t}")
    emptied = table[:start] + table[end + 2 :]  # as seen on a worker after its map was flushed
    assert analyze(kube_proxy(mode="nftables", rules=emptied)) == [
        "critical: No Service rule(s) on chaoskit-worker at all"
    ]


def slices_with(change: str) -> Fetched:
    slices = copy.deepcopy(obj("kube-proxy/endpointslices.json"))
    dns = next(s for s in slices["items"] if s["metadata"]["name"].startswith("kube-dns"))
    if change == "new pod":
        dns["endpoints"].append({"addresses": ["10.244.1.9"], "conditions": {"ready": True}})
    else:
        dns["endpoints"] = [e for e in dns["endpoints"] if e["addresses"] != ["10.244.0.3"]]
    return Fetched(slices)


def test_a_new_ready_endpoint_missing_from_the_rules_is_a_warning() -> None:
    (title,) = analyze(kube_proxy(slices=slices_with("new pod")))
    assert title == "warning: rules on chaoskit-worker lag the EndpointSlices: 3 endpoint(s) missing, 0 stale"


def test_rules_still_sending_to_a_removed_endpoint_is_a_warning() -> None:
    findings = KubeProxyDiagnoser().analyze(kube_proxy(slices=slices_with("pod gone")))
    assert titles(findings) == [
        "warning: rules on chaoskit-worker lag the EndpointSlices: 0 endpoint(s) missing, 3 stale"
    ]
    assert "rules still send traffic to 10.244.0.3:53/udp, no longer an endpoint" in findings[0].evidence[0].conditions


def lagging(queued_ago: float, synced_ago: float, slices: Fetched | None = None) -> KubeProxyEvidence:
    ev = kube_proxy()
    assert ev.node_time is not None
    m = text("kube-proxy/metrics.prom")
    m = edit_metric(
        m, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", 'ip_family="IPv4"', ev.node_time - queued_ago
    )
    m = edit_metric(
        m, "kubeproxy_sync_proxy_rules_last_timestamp_seconds", 'ip_family="IPv4"', ev.node_time - synced_ago
    )
    return kube_proxy(metrics=Metrics.parse(m), **({"slices": slices} if slices else {}))


def test_a_change_queued_long_after_the_last_sync_is_critical() -> None:
    assert analyze(lagging(90, 200)) == [
        "critical: kube-proxy on chaoskit-worker has not synced a change queued 90s ago"
    ]


def test_a_change_waiting_twenty_seconds_is_a_warning() -> None:
    assert analyze(lagging(20, 60)) == ["warning: kube-proxy on chaoskit-worker has not synced a change queued 20s ago"]


def test_rules_read_while_a_queued_change_waits_its_sync_are_in_flight_not_late() -> None:
    # as seen in a catalog run: read 0.3 s after kube-proxy queued the removal, before its sync (minSyncPeriod 1 s)
    assert analyze(lagging(0.3, 0.4, slices_with("pod gone"))) == [
        "info: rules on chaoskit-worker catch up with the EndpointSlices: 0 endpoint(s) missing, 3 stale, in a change"
        " kube-proxy queued 0.3s ago"
    ]
    # the same rules with the change synced, or queued longer than a change may wait, lag
    assert [t.split(":")[0] for t in analyze(lagging(5, 0.5, slices_with("pod gone")))] == ["warning"]
    assert analyze(lagging(20, 60, slices_with("pod gone")))[-1].startswith("warning: rules on chaoskit-worker lag")


@pytest.mark.parametrize(("waiting", "late"), [(2.9, False), (3.1, True), (9.0, True), (9.9, True)])
def test_a_change_is_in_flight_for_the_min_sync_period_and_one_sync_then_late_however_short_of_lag_warning(
    waiting: float, late: bool
) -> None:
    # kind's 1 s minSyncPeriod: a change may wait 3 s; a kube-proxy 9 s behind on every change is seen, though it
    # never reaches lag_warning (10 s), where the sync check's own finding begins
    found = analyze(lagging(waiting, waiting + 1, slices_with("pod gone")))
    assert found[-1].startswith("warning: rules on chaoskit-worker lag" if late else "info: rules on"), found
    slow = kube_proxy(min_sync_period=30.0)
    assert in_flight(KubeProxyParams(), slow) == 10.0, "a 30 s period: in flight up to lag_warning, no further"


def test_a_sync_after_the_last_queued_change_is_no_lag() -> None:
    assert analyze(lagging(200, 190)) == []


def test_a_slow_min_sync_period_is_a_warning() -> None:
    (title,) = analyze(kube_proxy(min_sync_period=30.0))
    assert title == "warning: kube-proxy on chaoskit-worker syncs at most every 30s (minSyncPeriod)"


def test_a_frozen_kube_proxy_is_failed() -> None:
    frozen = process("kube-proxy", "Tsl")
    ev = kube_proxy(process=frozen, healthz=TIMED_OUT, metrics=Metrics.unavailable("curl: (28) timed out"), mode="")
    assert [t.split(" (")[0] for t in analyze(ev)] == [
        "critical: kube-proxy is stopped",
        "critical: kube-proxy on chaoskit-worker is unhealthy: /healthz no answer",
    ]


def test_api_unavailable_skips_only_the_rule_comparison() -> None:
    report = KubeProxyDiagnoser().report(kube_proxy(services=DOWN, slices=DOWN), "chaoskit-worker")
    assert report.status == "ok" and [f.title for f in report.findings] == ["API-side evidence unavailable (rules)"]


def _flushed_iptables() -> str:
    return "\n".join(
        line for line in text("kube-proxy/rules-iptables.txt").splitlines() if not line.startswith("-A KUBE-SERVICES")
    )


@pytest.mark.parametrize(
    ("rules", "synced", "expected"),
    [
        ("flushed", True, "critical: No Service rule(s) on chaoskit-worker at all"),
        ("flushed", False, "info: API-side evidence unavailable (rules)"),  # no sync yet: nothing written so far
        ("full", True, "info: API-side evidence unavailable (rules)"),
    ],
)
def test_no_service_rule_at_all_after_a_sync_is_critical_while_the_api_does_not_answer(
    rules: str, synced: bool, expected: str
) -> None:
    """Under a loaded wave the API server may not answer within the diagnosis's budget; a table with not even
    default/kubernetes in it needs no API to judge, and a slow API server must not hide it."""
    healthy = kube_proxy()
    ev = kube_proxy(
        services=DOWN,
        slices=DOWN,
        rules=_flushed_iptables() if rules == "flushed" else healthy.rules,
        metrics=healthy.metrics if synced else Metrics.parse(""),
    )
    assert [f"{f.severity}: {f.title}" for f in KubeProxyDiagnoser().report(ev, "chaoskit-worker").findings] == [
        expected
    ]


def test_rules_whose_read_was_cut_off_give_no_verdict() -> None:
    """A node script cut off by a loaded node printed no rule: that is no flushed table."""
    ev = kube_proxy(rules="", rules_unread="cut off after 12s")
    assert analyze(ev) == [f"warning: {UNCOLLECTED}"]
    assert rules_check(ev) == {"mode": "iptables", "error": "cut off after 12s"}


def test_collect_looks_again_when_the_rules_lag_the_api_in_its_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first look reads the API beside the rules; the look again reads it first, so the rules may only be
    newer than what they are compared with."""
    monkeypatch.setattr(kube_proxy_module, "RECHECK_AFTER", 0.0)
    full = text("kube-proxy/rules-iptables.txt")
    reads: list[str] = []
    order: list[str] = []

    def respond(argv: tuple[str, ...]) -> Completed:
        rules = full if reads else ""  # the first read races a sync: no rules yet
        reads.append(argv[0])
        order.append("rules")
        sections = {"mode": "iptables", "now": text("kube-proxy/node-time.txt"), "iptables": rules}
        out = "".join(f"@@chaoskit-section {k}\n{v}\n@@chaoskit-rc 0\n" for k, v in sections.items())
        return Completed(argv, 0, out)

    class Ordered(FakeKube):
        def request(self, method: str, path: str, body: Any = None, query: Any = None) -> Any:
            order.append(path)
            return super().request(method, path, body, query)

    kube = Ordered({SERVICES: obj("kube-proxy/services.json"), SLICES: obj("kube-proxy/endpointslices.json")})
    src = Sources.of(Env(kube, FakeNodeExec(FakeRunner(responder=respond)), "chaoskit"), "cp", ("cp", "w"))
    ev = KubeProxyDiagnoser().collect(src, "w")
    assert reads == ["w", "w"] and ev.rules.strip() == full.strip()
    assert kube.calls.count(("GET", SLICES)) == 2
    assert order[-3:] == [SERVICES, SLICES, "rules"], order  # the look again: the API first


@pytest.mark.parametrize("synced_before_s", [10.0, None])
def test_rules_all_gone_after_kube_proxys_last_sync_are_not_looked_at_again(
    monkeypatch: pytest.MonkeyPatch, synced_before_s: float | None
) -> None:
    """A firewall flushing the rules every half second: a second read may land between kube-proxy's rewrite and the
    next flush, and said "ok" of a node whose Services do not answer. Before kube-proxy's first sync it still looks
    again (nothing written yet is not a flush)."""
    monkeypatch.setattr(kube_proxy_module, "RECHECK_AFTER", 0.0)
    full, now = text("kube-proxy/rules-iptables.txt"), text("kube-proxy/node-time.txt").strip()
    metrics = (
        ""
        if synced_before_s is None
        else (f'kubeproxy_sync_proxy_rules_last_timestamp_seconds{{ip_family="IPv4"}} {float(now) - synced_before_s}')
    )
    reads: list[str] = []

    def respond(argv: tuple[str, ...]) -> Completed:
        rules = full if reads else ""  # flushed at the first read, rewritten by kube-proxy at the second
        reads.append(argv[0])
        sections = {"mode": "iptables", "now": now, "iptables": rules, "metrics": metrics}
        out = "".join(f"@@chaoskit-section {k}\n{v}\n@@chaoskit-rc 0\n" for k, v in sections.items())
        return Completed(argv, 0, out)

    kube = FakeKube({SERVICES: obj("kube-proxy/services.json"), SLICES: obj("kube-proxy/endpointslices.json")})
    src = Sources.of(Env(kube, FakeNodeExec(FakeRunner(responder=respond)), "chaoskit"), "cp", ("cp", "w"))
    ev = KubeProxyDiagnoser().collect(src, "w")
    if synced_before_s is None:
        assert reads == ["w", "w"] and ev.rules.strip() == full.strip()
        return
    assert reads == ["w"]
    assert "critical: No Service rule(s) on w at all" in analyze(ev)


def test_a_kube_proxy_the_api_server_refuses_is_named_by_its_binding_not_as_down() -> None:
    from datetime import UTC, datetime

    ev = kube_proxy()
    assert ev.node_time is not None
    at = datetime.fromtimestamp(ev.node_time - 5, UTC).strftime("E%m%d %H:%M:%S.000000")
    line = (
        f'{at}       1 reflector.go:166] "Unhandled Error" err="failed to list *v1.Service: services is forbidden: '
        'User \\"system:serviceaccount:kube-system:kube-proxy\\" cannot list resource \\"services\\" in API group '
        '\\"\\" at the cluster scope"'
    )
    refused = dataclasses.replace(
        ev, process=process("kube-proxy", manifests=(), log=line), grants=Grants(Fetched({"items": []}), NO_ROLES)
    )
    (f,) = [f for f in KubeProxyDiagnoser().analyze(refused) if f.severity == "critical"]
    assert f.title.endswith("system:serviceaccount:kube-system:kube-proxy cannot list services (403)")
    assert f.entity == "clusterrolebinding/kubeadm:node-proxier" and "down or frozen" not in f.probable_cause


def with_new_service() -> tuple[Fetched, Fetched]:
    """The recorded Services and slices with one more Service (web, one Ready endpoint) no rule of the node has."""
    services, slices = (
        copy.deepcopy(obj("kube-proxy/services.json")),
        copy.deepcopy(obj("kube-proxy/endpointslices.json")),
    )
    meta = {"name": "web", "namespace": "shop"}
    port = {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}
    services["items"].append(
        {"metadata": meta, "spec": {"clusterIP": "10.96.1.95", "type": "ClusterIP", "ports": [port]}}
    )
    labels = {"kubernetes.io/service-name": "web"}
    slices["items"].append(
        {
            "metadata": {"name": "web-x", "namespace": "shop", "labels": labels},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.244.1.5"], "conditions": {"ready": True}}],
        }
    )
    return Fetched(services), Fetched(slices)


def test_a_service_rule_missing_while_a_queued_change_waits_its_sync_is_in_flight_then_late() -> None:
    """As seen in a catalog run: a Service's rule missing 0.3 s after kube-proxy queued a change (its endpoint not
    Ready a moment): in flight; with nothing queued, or queued longer than a change may wait, it is missing."""
    services, slices = with_new_service()
    ev = lagging(0.3, 0.7, slices)
    found = analyze(dataclasses.replace(ev, services=services))
    assert found[0] == (
        "info: rules on chaoskit-worker catch up with the Services: 1 missing (shop/web:http), in a change kube-proxy "
        "queued 0.3s ago"
    )
    assert all(f.startswith("info: ") for f in found), found  # its endpoint too
    assert analyze(kube_proxy(services=services, slices=slices))[0] == (
        "warning: 1 Service rule(s) on chaoskit-worker missing (shop/web:http)"
    )
    late = dataclasses.replace(lagging(5, 6, slices), services=services)
    assert analyze(late)[0].startswith("warning: 1 Service rule(s) on chaoskit-worker missing")
