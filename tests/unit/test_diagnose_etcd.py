"""etcd's analysis from its recorded /health, /readyz and metrics, and the API server's etcd request latency."""

from __future__ import annotations

import dataclasses
import re

import pytest
from diagnose_evidence import NO_ANSWER, etcd, http, process, slow_histogram, text, titles

from chaoskit.diagnosers.etcd import EtcdDiagnoser, EtcdEvidence, HostCpu
from chaoskit.seams.scrape import Metrics


def analyze(ev: EtcdEvidence) -> list[str]:
    return titles(EtcdDiagnoser().analyze(ev))


def test_healthy_etcd_has_no_findings() -> None:
    report = EtcdDiagnoser().report(etcd(), "chaoskit-control-plane")
    assert report.status == "ok", report.findings
    assert [c.check for c in report.checks] == ["process", "health", "leader", "disk-latency", "request-latency"]
    disk = next(c for c in report.checks if c.check == "disk-latency")
    assert disk.metrics["wal_fsync_count"] > 0  # the recorded window saw fsyncs


def test_unhealthy_etcd_is_critical() -> None:
    ev = etcd(health=http('{"health":"false","reason":"RAFT NO LEADER"}', 503))
    assert analyze(ev) == ['critical: etcd reports itself unhealthy: {"health":"false","reason":"RAFT NO LEADER"}']


def test_etcd_not_answering_and_not_running_is_critical_twice() -> None:
    ev = etcd(health=NO_ANSWER, readyz=NO_ANSWER, process=process("etcd", "", container="CONTAINER_EXITED"))
    assert analyze(ev) == ["critical: etcd is not running", "critical: etcd does not answer on :2381"]


def test_no_leader_is_critical() -> None:
    after = text("etcd/metrics-2.prom").replace("etcd_server_has_leader 1", "etcd_server_has_leader 0")
    assert analyze(etcd(metrics_after=Metrics.parse(after))) == ["critical: etcd has no leader"]


def test_slow_wal_fsync_in_the_window_is_a_warning() -> None:
    after = slow_histogram(text("etcd/metrics-2.prom"), "etcd_disk_wal_fsync_duration_seconds", 50, 1.024, 0.9)
    (title,) = analyze(etcd(metrics_after=Metrics.parse(after)))
    assert title.startswith("warning: etcd's disk is slow: wal_fsync p99 ")


def test_slow_fsyncs_before_the_window_do_not_count() -> None:
    before = slow_histogram(text("etcd/metrics-1.prom"), "etcd_disk_wal_fsync_duration_seconds", 50, 1.024, 0.9)
    after = slow_histogram(text("etcd/metrics-2.prom"), "etcd_disk_wal_fsync_duration_seconds", 50, 1.024, 0.9)
    assert analyze(etcd(metrics_before=Metrics.parse(before), metrics_after=Metrics.parse(after))) == []


def test_slow_etcd_requests_seen_by_the_api_server_are_a_warning() -> None:
    recorded = text("etcd/apiserver-2.prom")
    bounds = dict.fromkeys(re.findall(r'le="([^"]+)"', recorded))
    labels = 'group="coordination.k8s.io",operation="update",resource="chaoskit-slow"'  # new in the window
    lines = [
        f'etcd_request_duration_seconds_bucket{{{labels},le="{le}"}} {30 if float(le) >= 5 else 0}' for le in bounds
    ]
    lines += [
        f"etcd_request_duration_seconds_sum{{{labels}}} 140",
        f"etcd_request_duration_seconds_count{{{labels}}} 30",
    ]
    after = Metrics.parse(recorded + "\n".join(lines) + "\n")
    (title,) = analyze(etcd(api_after=after))
    assert title.startswith("warning: the API server's etcd requests are slow: p99 ") and "busy" not in title
    # the same requests while the host's CPU is saturated: said so, with the pressure as evidence
    busy = HostCpu.parse(
        "some avg10=47.60 avg60=45.45 avg300=40.04 total=2394216793\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n10.63 8.77 7.02 2/600 240867\n2\n"
    )
    assert (busy.pressure, busy.load1, busy.cpus, busy.busy) == (47.6, 10.63, 2, True)
    (finding,) = EtcdDiagnoser().analyze(dataclasses.replace(etcd(api_after=after), cpu=busy))
    assert finding.title.endswith("on a busy host CPU") and "48% of the last 10 s" in finding.probable_cause
    assert finding.evidence[1].observed["cpu_pressure_some_avg10_pct"] == 47.6
    idle = HostCpu.parse("some avg10=3.10 avg60=2.00 avg300=1.00 total=1\n0.50 0.40 0.30 1/500 100\n2\n")
    assert not idle.busy and HostCpu.parse("1.0 1.0 1.0 1/2 3\n2\n").pressure is None  # a kernel without PSI


def test_unreachable_metrics_leave_checks_unavailable_not_failed() -> None:
    gone = Metrics.unavailable("curl: (7) Failed to connect to 127.0.0.1 port 2381")
    report = EtcdDiagnoser().report(etcd(metrics_after=gone, api_after=gone), "chaoskit-control-plane")
    assert report.status == "ok"
    assert [c.check for c in report.checks if not c.available] == ["leader", "disk-latency", "request-latency"]


@pytest.mark.parametrize(("slow", "found"), [(2, False), (3, True)])
def test_a_disk_is_slow_only_when_more_than_a_write_or_two_in_the_window_were(slow: int, found: bool) -> None:
    after = slow_histogram(text("etcd/metrics-2.prom"), "etcd_disk_backend_commit_duration_seconds", slow, 0.512, 0.5)
    titles_ = analyze(etcd(metrics_after=Metrics.parse(after)))
    assert bool(titles_) == found, titles_  # p99 is over 250 ms either way: one bad second is not a slow disk


def test_an_alarm_etcd_raised_is_named_with_its_database_against_its_quota() -> None:
    ev = etcd(health=http('{"health":"false","reason":"ALARM NOSPACE"}', 503))
    (f,) = [f for f in EtcdDiagnoser().analyze(ev) if f.severity == "critical"]
    assert f.title == "etcd has raised alarm NOSPACE"
    assert "--quota-backend-bytes" in f.probable_cause and "MiB quota)" in f.probable_cause
    assert f.remediation[0].startswith("etcdctl alarm list")
