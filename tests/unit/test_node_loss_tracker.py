"""The node-loss tracker, fed what the watches and probes would see of a worker partitioned at t=100 (grace 30 s,
toleration 10 s, as the catalog's node-partitioned playbook runs it): each stage's time, subject and owner."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from chaoskit.measurements.node_loss_tracker import NodeLossTracker
from chaoskit.measurements.probe import RulesSeen
from chaoskit.model.timeline import NODE_LOSS_STAGES, MeasurementResult

LOST, OTHER, CP = "chaoskit-worker", "chaoskit-worker2", "chaoskit-control-plane"
WATCH = 0.004


def micro_time(t: float) -> str:
    """A Lease's renewTime: metav1.MicroTime, to the microsecond."""
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def node(name: str, ready: bool, *, tainted: bool = False) -> dict[str, Any]:
    taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}] if tainted else []
    status = "True" if ready else "Unknown"
    return {
        "metadata": {"name": name},
        "spec": {"taints": taints},
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    }


def lease(name: str, renewed: float) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"renewTime": micro_time(renewed)}}


def pod(
    name: str, on: str = "", *, deleted: bool = False, scheduled: bool = False, ready: bool = False, ip: str = ""
) -> dict[str, Any]:
    conditions = [{"type": "PodScheduled", "status": "True"}] * scheduled + [
        {"type": "Ready", "status": "True"}
    ] * ready
    meta: dict[str, Any] = {"name": name, **({"deletionTimestamp": "2026-12-05T00:00:00Z"} if deleted else {})}
    spec: dict[str, Any] = {
        "nodeName": on,
        "tolerations": [
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 10,
            }
        ],
    }
    return {"metadata": meta, "spec": spec, "status": {"conditions": conditions, "podIP": ip}}


def slice_with(target: str, ip: str) -> dict[str, Any]:
    return {"endpoints": [{"addresses": [ip], "conditions": {"ready": True}, "targetRef": {"name": target}}]}


def partitioned() -> NodeLossTracker:
    t = NodeLossTracker(WATCH)
    for n in (LOST, OTHER):
        t.node("LISTED", node(n, True), 90.0)
    t.pod("LISTED", pod("web-a", LOST, scheduled=True, ready=True, ip="10.244.1.5"), 90.0)
    t.pod("LISTED", pod("web-b", OTHER, scheduled=True, ready=True, ip="10.244.2.5"), 90.0)
    t.lease("MODIFIED", lease(LOST, 99.5), 99.51)  # the last renewal that got through
    t.node("MODIFIED", node(LOST, False), 130.6)  # the grace period (30 s) after it
    t.node("MODIFIED", node(LOST, False, tainted=True), 130.7)
    t.pod("MODIFIED", pod("web-a", LOST, deleted=True), 140.7)  # its 10 s toleration ran out
    t.pod("ADDED", pod("web-c"), 140.72)
    t.pod("MODIFIED", pod("web-c", OTHER, scheduled=True), 140.75)
    t.pod("MODIFIED", pod("web-c", OTHER, scheduled=True, ready=True, ip="10.244.2.9"), 141.5)
    t.endpoint_slice("MODIFIED", slice_with("web-c", "10.244.2.9"), 141.51)
    for n, until in ((OTHER, 141.9), (CP, 142.0)):
        t.seen(RulesSeen(n, until - 0.05, frozenset({"10.244.2.5"}), None, until - 0.02))
        t.seen(RulesSeen(n, until - 0.03, frozenset({"10.244.2.5", "10.244.2.9"}), until - 0.15, until))
    return t


def test_each_stage_from_the_last_heartbeat_to_every_other_nodes_rules_is_timed_and_owned() -> None:
    samples = {(s.stage, s.subject): s for s in partitioned().samples([CP, LOST, OTHER])}
    expected = {
        ("not_ready", f"node/{LOST}"): 31.1,  # from the lease's own renewTime (µs)
        ("tainted", f"node/{LOST}"): 0.1,
        ("evicted", "web-a"): 10.0,
        ("replacement_created", "web-a"): 0.02,
        ("scheduled", "web-a"): 0.03,
        ("ready", "web-a"): 0.75,
        ("endpoint_ready", "web-a"): 0.01,
        ("rules_programmed", f"web-a@{OTHER}"): 0.39,
        ("rules_programmed", f"web-a@{CP}"): 0.49,
    }
    assert set(samples) == set(expected)  # the lost node's own rules never hear of the replacement
    for key, seconds in expected.items():
        assert samples[key].seconds == pytest.approx(seconds, abs=1e-6), key
    owners = {s.name: s.component for s in NODE_LOSS_STAGES}
    assert all(s.component == owners[s.stage] for s in samples.values())
    assert samples[("rules_programmed", f"web-a@{OTHER}")].precision == pytest.approx(0.15)  # the reads' bracket
    assert samples[("evicted", "web-a")].precision == WATCH


def test_the_total_runs_from_the_heartbeat_to_the_last_nodes_rules() -> None:
    result = MeasurementResult("node-loss", "node_loss", 90.0, samples=partitioned().samples([CP, LOST, OTHER]))
    (total,) = result.totals()
    assert total.subject == "web-a" and total.seconds == pytest.approx(142.0 - 99.5)


def test_until_every_other_node_has_the_replacement_it_is_in_flight_and_a_healthy_node_is_no_loss() -> None:
    t = partitioned()
    assert t.in_flight([CP, LOST, OTHER]) == 0
    assert t.in_flight([CP, LOST, OTHER, "chaoskit-worker3"]) == 1  # a node whose rules never showed it
    quiet = NodeLossTracker(WATCH)
    quiet.node("LISTED", node(LOST, False), 1.0)  # NotReady before we looked: not a loss we saw begin
    quiet.node("MODIFIED", node(OTHER, True), 2.0)
    assert quiet.losses == [] and quiet.samples([LOST, OTHER]) == []


def test_pods_deleted_elsewhere_or_before_the_taint_are_no_evictions() -> None:
    t = NodeLossTracker(WATCH)
    t.node("LISTED", node(LOST, True), 1.0)
    t.pod("LISTED", pod("web-a", LOST), 1.0)
    t.pod("LISTED", pod("web-b", OTHER), 1.0)
    t.node("MODIFIED", node(LOST, False), 31.0)
    t.pod("MODIFIED", pod("web-a", LOST, deleted=True), 32.0)  # before the taint: someone scaled it down
    t.pod("MODIFIED", pod("web-b", OTHER, deleted=True), 33.0)
    assert t.evicted == []
    t.node("MODIFIED", node(LOST, True), 40.0)
    assert t.losses[0].back is not None and "Ready again 9s after" in t.notes()[0]
