"""The API server's analysis, from /readyz, certificates, metrics and process state recorded on the healthy cluster,
and the same evidence edited the way each API server fault leaves it."""

from __future__ import annotations

from dataclasses import replace

from diagnose_evidence import (
    NO_ANSWER,
    RECORDED,
    TIMED_OUT,
    apiserver,
    edit_metric,
    http,
    process,
    text,
    titles,
)

from chaoskit.diagnosers.apiserver import ApiServerDiagnoser, ApiServerEvidence
from chaoskit.diagnosers.kit.base import status_of
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.seams.scrape import Metrics

DAY = 86400.0


def analyze(ev: ApiServerEvidence) -> list[str]:
    return titles(ApiServerDiagnoser().analyze(ev))


def test_healthy_api_server_has_no_findings_and_every_check_is_reported() -> None:
    report = ApiServerDiagnoser().report(apiserver(), "chaoskit-control-plane")
    assert report.status == "ok" and report.findings == ()
    assert [c.check for c in report.checks] == [
        "process",
        "readyz",
        "livez",
        "serving-certificate",
        "client-certificates",
        "watches",
        "request-errors",
        "request-latency",
        "priority-and-fairness",
        "client-view",
    ]
    watches = next(c for c in report.checks if c.check == "watches")
    assert 100 < float(watches.observed["open_watches"] or 0) < 500  # the recorded idle cluster: ~155


def test_etcd_failing_in_readyz_is_critical_and_names_etcd_and_the_drop_rules() -> None:
    body = text("apiserver/readyz.txt").replace("[+]etcd ok", "[-]etcd failed: reason withheld")
    body = body.replace("readyz check passed", "readyz check failed")
    rule = (
        "-A OUTPUT -d 127.0.0.1/32 -o lo -p tcp -m tcp --dport 2379 -m comment --comment chaoskit-etcd-timeout -j DROP"
    )
    findings = ApiServerDiagnoser().analyze(apiserver(readyz=http(body, 500), etcd_filter_rules=(rule,)))
    assert titles(findings) == ["critical: /readyz: [-]etcd failed (etcd connection)"]
    assert "2379" in findings[0].probable_cause and "DROP" in findings[0].probable_cause
    assert any("etcd" in step for step in findings[0].remediation)
    assert findings[0].evidence[0].observed["failing"] == "etcd"


def test_readyz_that_times_out_points_at_etcd() -> None:
    assert analyze(apiserver(readyz=TIMED_OUT)) == [
        "critical: /readyz timed out: the API server hangs (etcd connection)"
    ]


def test_api_server_down_with_its_manifest_moved_away_is_failed_on_node_local_evidence() -> None:
    parked = "/etc/kubernetes/chaoskit-parked/kube-apiserver.yaml"
    ev = apiserver(
        readyz=NO_ANSWER,
        livez=NO_ANSWER,
        served_not_after=None,
        metrics_before=Metrics.unavailable("refused"),
        metrics_after=Metrics.unavailable("curl: (7) Failed to connect"),
        process=process("kube-apiserver", "", manifests=(parked,), container="CONTAINER_EXITED"),
        client_view="GET /readyz: [Errno 111] Connection refused",
    )
    findings = ApiServerDiagnoser().analyze(ev)
    assert status_of(findings) == "failed"
    assert titles(findings) == [
        "critical: kube-apiserver is not running: its static-pod manifest is not in /etc/kubernetes/manifests",
        "critical: The API server does not answer on 127.0.0.1:6443",
    ]
    assert (
        f"mv {parked} /etc/kubernetes/manifests/kube-apiserver.yaml on chaoskit-control-plane"
        in findings[0].remediation
    )
    report = ApiServerDiagnoser().report(ev, "chaoskit-control-plane")
    unavailable = [c.check for c in report.checks if not c.available]
    assert unavailable == ["watches", "request-errors", "request-latency", "priority-and-fairness"]


def test_frozen_api_server_is_critical() -> None:
    findings = analyze(apiserver(process=process("kube-apiserver", "Tsl"), readyz=TIMED_OUT))
    assert findings[0] == "critical: kube-apiserver is stopped (process state Tsl)"


def test_expired_serving_certificate_is_critical() -> None:
    ev = apiserver(served_not_after=RECORDED - DAY)
    (finding,) = ApiServerDiagnoser().analyze(ev)
    assert finding.severity == "critical" and "serving certificate expired" in finding.title
    assert "certificate has expired" in finding.probable_cause


def test_serving_certificate_expiring_within_a_month_is_a_warning() -> None:
    assert analyze(apiserver(served_not_after=RECORDED + 3 * DAY)) == [
        "warning: The API server's serving certificate expires in 3.0 days (2026-12-03T03:54:00Z)"
    ]


def test_expired_etcd_client_certificate_is_critical() -> None:
    ev = apiserver()
    ev = replace(ev, file_not_after={**ev.file_not_after, "apiserver-etcd-client": RECORDED - 60})
    assert analyze(ev) == [
        "critical: The API server's client (apiserver-etcd-client) certificate expired at 2026-11-30T03:53:00Z"
    ]


def test_5xx_in_the_window_are_critical_above_five_percent() -> None:
    labels = (
        'code="504",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",'
        'subresource="",verb="LIST",version="v1"'
    )
    after = edit_metric(text("apiserver/metrics-2.prom"), "apiserver_request_total", labels, 30)
    findings = ApiServerDiagnoser().analyze(apiserver(metrics_after=Metrics.parse(after)))
    assert len(findings) == 1 and findings[0].severity == "critical"
    assert "failed with 5xx in the last 5s" in findings[0].title


def test_5xx_from_before_the_window_do_not_count() -> None:
    labels = (
        'code="504",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",'
        'subresource="",verb="LIST",version="v1"'
    )
    before = edit_metric(text("apiserver/metrics-1.prom"), "apiserver_request_total", labels, 30)
    after = edit_metric(text("apiserver/metrics-2.prom"), "apiserver_request_total", labels, 30)
    assert analyze(apiserver(metrics_before=Metrics.parse(before), metrics_after=Metrics.parse(after))) == []


def test_500s_of_readyz_are_not_failed_api_requests() -> None:
    # the kubelet's probes and chaoskit's own checks ask /readyz; an unready check is judged from /readyz itself
    labels = (
        'code="500",component="",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version=""'
    )
    after = edit_metric(text("apiserver/metrics-2.prom"), "apiserver_request_total", labels, 30)
    assert analyze(apiserver(metrics_after=Metrics.parse(after))) == []


LEASE_PUTS = (
    'component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",'
    'subresource="",verb="PUT",version="v1"'
)
BUCKETS = ("0.005", "0.025", "0.1", "0.5", "1", "2", "4", "5", "+Inf")


def lease_puts(cumulative: tuple[int, ...], seconds: float) -> ApiServerEvidence:
    """Evidence whose window saw lease PUTs only: `cumulative` counts per bucket of BUCKETS, `seconds` in all."""
    after, before = text("apiserver/metrics-2.prom"), text("apiserver/metrics-1.prom")
    for le, count in zip(BUCKETS, cumulative, strict=True):
        after = edit_metric(after, "apiserver_request_duration_seconds_bucket", f'{LEASE_PUTS},le="{le}"', count)
        before = edit_metric(before, "apiserver_request_duration_seconds_bucket", f'{LEASE_PUTS},le="{le}"', 0)
    after = edit_metric(after, "apiserver_request_duration_seconds_count", LEASE_PUTS, cumulative[-1])
    after = edit_metric(after, "apiserver_request_duration_seconds_sum", LEASE_PUTS, seconds)
    before = edit_metric(before, "apiserver_request_duration_seconds_count", LEASE_PUTS, 0)
    return apiserver(metrics_before=Metrics.parse(before), metrics_after=Metrics.parse(after))


def test_slow_mutating_requests_in_the_window_are_a_warning() -> None:
    (finding,) = ApiServerDiagnoser().analyze(lease_puts((0, 0, 0, 0, 0, 0, 0, 20, 20), 90))
    assert finding.severity == "warning" and finding.title.startswith("API requests are slow: mutating p99 4.")


def test_leaked_watches_are_a_warning_naming_the_resource() -> None:
    labels = (
        'component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",'
        'version="v1"'
    )
    after = edit_metric(text("apiserver/metrics-2.prom"), "apiserver_longrunning_requests", labels, 501)
    (finding,) = ApiServerDiagnoser().analyze(apiserver(metrics_after=Metrics.parse(after)))
    assert finding.severity == "warning"
    assert "open watch connections; most on configmaps (namespace): 501" in finding.title
    assert "leak" in finding.probable_cause


def test_ready_on_its_node_but_unreachable_through_the_kubeconfig_is_a_warning() -> None:
    assert analyze(apiserver(client_view="GET /readyz: [Errno 111] Connection refused")) == [
        "warning: The API server is ready on its node but unreachable through the kubeconfig"
    ]


def test_failing_livez_is_critical() -> None:
    body = text("apiserver/livez.txt").replace("[+]etcd ok", "[-]etcd failed: reason withheld")
    assert "critical: /livez fails: etcd" in analyze(apiserver(livez=http(body, 500)))


def test_restarts_alone_are_information() -> None:
    findings = ApiServerDiagnoser().analyze(apiserver(process=process("kube-apiserver", restarts=2)))
    assert titles(findings) == ["info: kube-apiserver restarted 2 time(s)"] and status_of(findings) == "ok"


def test_one_slow_request_in_a_quiet_window_is_not_a_slow_api_server() -> None:
    # p99 is 1.9 s, but only one of six took over a second
    assert ApiServerDiagnoser().analyze(lease_puts((5, 5, 5, 5, 5, 6, 6, 6, 6), 2.5)) == []


def test_a_flow_schema_rejected_in_the_window_is_named_by_apf() -> None:
    from chaoskit.components.flowcontrol import pressure
    from chaoskit.seams.scrape import Metrics

    labels = 'flow_schema="surge",priority_level="workload-low",reason="queue-full"'
    line = f"apiserver_flowcontrol_rejected_requests_total{{{labels}}}"
    before, after = Metrics.parse(f"{line} 3\n"), Metrics.parse(f"{line} 40\n")
    (x,) = pressure(before, after)
    assert (x.flow_schema, x.rejected, x.reasons) == ("surge", 37.0, ("queue-full",))
    assert pressure(after, after) == []


def test_a_flooded_priority_level_names_its_flow_schema_and_the_clients_it_matches() -> None:
    from chaoskit.seams.scrape import Metrics

    labels = 'flow_schema="surge",priority_level="surge-level",reason="concurrency-limit"'
    line = f"apiserver_flowcontrol_rejected_requests_total{{{labels}}}"
    schema = {
        "metadata": {"name": "surge"},
        "spec": {
            "rules": [
                {
                    "subjects": [
                        {"kind": "ServiceAccount", "serviceAccount": {"namespace": "shop", "name": "flooder"}},
                        {"kind": "Group", "group": {"name": "system:authenticated"}},
                    ]
                }
            ]
        },
    }
    ev = replace(
        apiserver(),
        metrics_before=Metrics.parse(f"{line} 3\n"),
        metrics_after=Metrics.parse(f"{line} 40\n"),
        flowschemas=Fetched({"items": [schema]}),
    )
    (f,) = [f for f in ApiServerDiagnoser().analyze(ev) if "Priority and Fairness" in f.title]
    assert f.title.endswith(
        "FlowSchema surge (priority level surge-level), which matches "
        "serviceaccount/shop/flooder, group/system:authenticated"
    )
    assert f.entity == "flowschema/surge" and f.co_causes == ("serviceaccount/shop/flooder",)
