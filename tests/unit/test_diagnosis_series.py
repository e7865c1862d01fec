"""chaoskit.exporters.diagnosis: one look as Prometheus series, with a finding's key stable while its numbers move."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client import CollectorRegistry, generate_latest

from chaoskit.diagnosers.kit.base import UNCOLLECTED, ComponentReport, Diagnosis, Evidence, Finding, Severity, status_of
from chaoskit.exporters.diagnosis import SERIES, Latest, families, finding_key

CP, WORKER = "chaoskit-control-plane", "chaoskit-worker"
T0 = 1_700_000_000.0


def finding(component: str, title: str, severity: Severity = "warning", entity: str = "") -> Finding:
    return Finding(severity, component, title, "because", (Evidence("check", "source"),), entity=entity)


def report(component: str, node: str, *found: Finding) -> ComponentReport:
    return ComponentReport(component, node, status_of(found), found, ())


def look(*reports: ComponentReport) -> Diagnosis:
    return Diagnosis("chaoskit", reports, T0, 2.5)


def exposition(d: Diagnosis) -> str:
    latest = Latest(30.0)
    latest.set(d)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(latest)
    return generate_latest(registry).decode()


def samples(d: Diagnosis) -> dict[str, list[tuple[dict[str, str], float]]]:
    return {m.name: [(s.labels, s.value) for s in m.samples] for m in families(d, 30.0)}


def test_the_key_is_the_same_while_the_numbers_and_quoted_values_in_a_title_change() -> None:
    a = finding("kubelet", f"PLEG on {WORKER} last active 12s ago: relist took 3.5s")
    b = finding("kubelet", f"PLEG on {WORKER} last active 97s ago: relist took 40s")
    assert finding_key(a) == finding_key(b) == "pleg-on-chaoskit-worker-last-active-s-ago"
    quoted = finding("dns", "lookup of 'kubernetes.default' fails from 2 node(s)")
    assert finding_key(quoted) == "lookup-of-fails-from-node-s"
    assert finding_key(finding("etcd", "4242")) == "finding"
    assert len(finding_key(finding("etcd", "x" * 200))) == 64


def test_one_status_series_per_report_and_one_finding_series_per_standing_verdict() -> None:
    lease = finding("kubelet", f"node lease of {WORKER} not renewed for 48s", "critical", f"node/{WORKER}")
    d = look(
        report("etcd", CP),
        report("kubelet", WORKER, lease, finding("kubelet", "an info note", "info")),
        report("containerd", WORKER, finding("containerd", UNCOLLECTED)),
    )
    got = samples(d)
    assert got["chaoskit_component_status"] == [
        ({"component": "etcd", "node": CP, "status": "ok"}, 1),
        ({"component": "kubelet", "node": WORKER, "status": "failed"}, 1),
        ({"component": "containerd", "node": WORKER, "status": "unknown"}, 1),
    ]
    key = "node-lease-of-chaoskit-worker-not-renewed-for-s"
    labels = {"component": "kubelet", "node": WORKER, "severity": "critical", "entity": f"node/{WORKER}"}
    assert got["chaoskit_finding"] == [({**labels, "finding": key, "caused_by": ""}, 1)]  # no info, no uncollected
    assert got["chaoskit_diagnosis_duration_seconds"] == [({}, 2.5)]
    assert got["chaoskit_diagnosis_last_look_timestamp_seconds"] == [({}, T0)]
    assert got["chaoskit_diagnosis_interval_seconds"] == [({}, 30.0)]
    assert tuple(got) == SERIES


def test_a_consequence_names_its_root_cause() -> None:
    cause = finding("etcd", "etcd has no leader", "critical", "component/etcd")
    after = replace(finding("apiserver", "readyz fails", "critical"), caused_by="component/etcd")
    found = samples(look(report("etcd", CP, cause), report("apiserver", CP, after)))["chaoskit_finding"]
    assert [labels["caused_by"] for labels, _ in found] == ["", "component/etcd"]


def test_two_findings_of_one_shape_on_one_entity_make_one_series() -> None:
    d = look(report("dns", CP, finding("dns", "lookup failed 3 times"), finding("dns", "lookup failed 5 times")))
    assert len(samples(d)["chaoskit_finding"]) == 1


def test_the_exposition_before_and_after_the_first_look() -> None:
    empty = CollectorRegistry(auto_describe=False)
    empty.register(Latest(30.0))
    assert generate_latest(empty) == b""
    text = exposition(look(report("scheduler", CP, finding("scheduler", "leader lease held by nobody for 30s"))))
    status = 'chaoskit_component_status{component="scheduler",node="chaoskit-control-plane",status="degraded"} 1.0'
    assert status in text
    assert (
        'chaoskit_finding{caused_by="",component="scheduler",entity="",finding="leader-lease-held-by-nobody-for-s",'
        'node="chaoskit-control-plane",severity="warning"} 1.0' in text
    )
    assert "chaoskit_diagnosis_last_look_timestamp_seconds 1.7e+09" in text
