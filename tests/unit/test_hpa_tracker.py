"""The HPA-to-Ready tracker, fed by hand with what the watches, the metrics poll and the probes would see."""

from __future__ import annotations

from typing import Any

import pytest

from chaoskit.measurements.hpa_scale_up import HpaTracker, cpu_cores
from chaoskit.measurements.probe import AnswerSeen, RulesSeen, parse_line, probe_script
from chaoskit.model.timeline import HPA_STAGES, RUN_SUBJECT

T0 = 1_000_000_000.0  # 2001-09-09T01:46:40Z
NODES = ["cp", "w1"]


def hpa(min_replicas: int = 1, desired: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": "web"},
        "spec": {"minReplicas": min_replicas, "metrics": [{"resource": {"target": {"averageUtilization": 50}}}]},
        "status": {"desiredReplicas": desired},
    }


def deployment(replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": "web"}, "spec": {"replicas": replicas}}


def rs(replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": "web-1"}, "spec": {"replicas": replicas}}


def pod(name: str, *, node: str = "", running: bool = False, ready: bool = False, ip: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": "2001-09-09T01:46:40Z"},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "podIP": ip,
            "containerStatuses": [{"state": {"running": {}} if running else {"waiting": {}}}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def slice_with(name: str, ready: bool) -> dict[str, Any]:
    return {"endpoints": [{"targetRef": {"kind": "Pod", "name": name}, "conditions": {"ready": ready}}]}


def scaled_once(t: HpaTracker, at: float = T0) -> None:
    """One scale-up 1 → 2 of pod p1, every stage 1 s after the previous one."""
    t.hpa("LISTED", hpa(), at - 100)
    t.deployment("LISTED", deployment(1), at - 100)
    t.replicaset("LISTED", rs(1), at - 100)
    t.metric(at, 80.0)
    t.deployment("MODIFIED", deployment(2), at + 1)
    t.replicaset("MODIFIED", rs(2), at + 2)
    t.pod("ADDED", pod("p1"), at + 3)
    t.pod("MODIFIED", pod("p1", node="w1"), at + 4)
    t.pod("MODIFIED", pod("p1", node="w1", running=True, ip="10.0.0.9"), at + 5)
    t.pod("MODIFIED", pod("p1", node="w1", running=True, ready=True, ip="10.0.0.9"), at + 6)
    t.endpoint_slice("MODIFIED", slice_with("p1", True), at + 7)
    t.seen(RulesSeen("cp", at - 50, frozenset({"10.0.0.1"})))
    t.seen(RulesSeen("cp", at + 8, frozenset({"10.0.0.1", "10.0.0.9"})))
    t.seen(RulesSeen("w1", at + 8.5, frozenset({"10.0.0.9"})))
    t.seen(AnswerSeen("cp", at + 9, "p1"))
    t.seen(AnswerSeen("w1", at + 9.5, "p1"))
    t.seen(AnswerSeen("w1", at + 20, "p1"))  # only the first answer counts


def test_every_stage_of_a_scale_up_is_timed_from_the_end_of_the_previous_one() -> None:
    t = HpaTracker(started_at=T0 - 10)
    scaled_once(t)
    samples = {(s.stage, s.subject): s for s in t.samples(NODES)}
    assert {stage for stage, _ in samples} == {s.name for s in HPA_STAGES}
    for stage in ("hpa_decision", "replicaset_scaled"):
        assert samples[(stage, RUN_SUBJECT)].seconds == pytest.approx(1.0)
    for stage in ("pod_created", "scheduled", "containers_started", "ready", "endpoint_ready"):
        assert samples[(stage, "p1")].seconds == pytest.approx(1.0)
    assert samples[("rules_programmed", "p1@cp")].seconds == pytest.approx(1.0)
    assert samples[("rules_programmed", "p1@w1")].seconds == pytest.approx(1.5)
    assert samples[("first_request", "p1@w1")].seconds == pytest.approx(1.0)
    assert samples[("hpa_decision", RUN_SUBJECT)].precision == 1.0  # the metric sample's own timestamp
    assert samples[("scheduled", "p1")].precision == 0.001
    assert samples[("rules_programmed", "p1@cp")].precision == 0.1
    assert t.in_flight(NODES) == 0 and t.incomplete() == []


def test_a_raised_min_replicas_triggers_the_decision_even_when_the_metric_is_below_target() -> None:
    t = HpaTracker(started_at=T0 - 10)
    t.hpa("LISTED", hpa(), T0 - 100)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.hpa("MODIFIED", hpa(min_replicas=3), T0)
    t.metric(T0 + 0.5, 10.0)  # below target: must not erase the forced trigger
    t.deployment("MODIFIED", deployment(3), T0 + 0.2)
    [decision] = [s for s in t.samples(NODES) if s.stage == "hpa_decision"]
    assert decision.seconds == pytest.approx(0.2) and decision.precision == 0.001


def test_a_replicaset_event_overtaking_the_deployments_is_kept() -> None:
    t = HpaTracker(started_at=T0 - 10)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.replicaset("LISTED", rs(1), T0 - 100)
    t.replicaset("MODIFIED", rs(2), T0 + 0.010)
    t.deployment("MODIFIED", deployment(2), T0 + 0.012)
    assert t.scale_ups[0].rs_scaled is not None
    [rs_stage] = [s for s in t.samples(NODES) if s.stage == "replicaset_scaled"]
    assert rs_stage.seconds == 0.0  # never negative


def test_pods_there_before_the_measurement_and_pods_not_from_a_scale_up_are_left_out() -> None:
    t = HpaTracker(started_at=T0 + 60)
    t.deployment("LISTED", deployment(1), T0 + 60)
    t.pod("LISTED", pod("old", node="w1", running=True, ready=True), T0 + 60)  # created a minute before
    t.pod("ADDED", pod("replacement"), T0 + 61)  # a deleted pod replaced: no scale-up behind it
    assert "old" in t.known_pods
    assert t.pods["replacement"].run == 0
    assert t.samples(NODES) == []


def test_a_pod_that_never_got_ready_is_reported_not_timed() -> None:
    t = HpaTracker(started_at=T0 - 10)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.deployment("MODIFIED", deployment(2), T0)
    t.pod("ADDED", pod("stuck"), T0 + 1)
    assert [s.stage for s in t.samples(NODES) if s.subject == "stuck"] == ["pod_created"]
    assert t.in_flight(NODES) == 1
    assert any("stuck" in line and "Ready" in line for line in t.incomplete())


def test_after_a_watch_gap_the_objects_own_timestamps_are_used_at_1s_precision() -> None:
    t = HpaTracker(started_at=T0 - 10)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.deployment("MODIFIED", deployment(2), T0)
    listed = pod("p1", node="w1")
    listed["metadata"]["creationTimestamp"] = "2001-09-09T01:46:41Z"  # T0 + 1
    listed["status"]["conditions"].append({"type": "PodScheduled", "status": "True",
                                           "lastTransitionTime": "2001-09-09T01:46:42Z"})  # fmt: skip
    t.pod("LISTED", listed, T0 + 30)  # re-listed once the API server came back
    p = t.pods["p1"]
    assert p.created.at == T0 + 1 and p.created.precision == 1.0
    assert p.scheduled is not None and p.scheduled.at == T0 + 2 and p.scheduled.precision == 1.0


def test_cpu_quantities() -> None:
    assert cpu_cores("250m") == 0.25 and cpu_cores("1") == 1.0
    assert cpu_cores("1500000n") == pytest.approx(0.0015) and cpu_cores("10u") == pytest.approx(0.00001)


def test_probe_lines_are_parsed_and_garbage_is_ignored() -> None:
    assert parse_line("w1", "R 12.5 10.0.0.1 10.0.0.2\n") == RulesSeen("w1", 12.5, frozenset({"10.0.0.1", "10.0.0.2"}))
    assert parse_line("w1", "R 12.5 \n") == RulesSeen("w1", 12.5, frozenset())
    assert parse_line("w1", "A 13.0 web-abc\n") == AnswerSeen("w1", 13.0, "web-abc")
    for junk in ("", "A 13.0", "X 1 y", "R notatime 1.2.3.4"):
        assert parse_line("w1", junk) is None


def test_the_probe_reads_both_modes_and_asks_the_service() -> None:
    script = probe_script("ns", "web", "10.96.0.7", 80)
    assert "iptables-save -t nat" in script and "nft list table ip kube-proxy" in script
    assert "http://10.96.0.7:80/" in script and "ns/web" in script
