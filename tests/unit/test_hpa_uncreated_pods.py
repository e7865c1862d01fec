"""HPA-to-Ready says where a scale-up stopped when its pods are never created (a quota refusing them)."""

from __future__ import annotations

from typing import Any

from chaoskit.measurements.hpa_tracker import HpaTracker
from chaoskit.measurements.probe import AnswerSeen

T0 = 1_000_000_000.0


def _obj(name: str, replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": "2001-09-09T01:46:40Z"}, "spec": {"replicas": replicas}}


def test_pods_a_scale_up_asked_for_and_never_got_are_named_in_the_notes() -> None:
    t = HpaTracker(T0, clock=lambda: T0)
    t.deployment("LISTED", _obj("web", 1), T0)
    t.replicaset("LISTED", _obj("web-1", 1), T0)
    t.deployment("MODIFIED", _obj("web", 4), T0 + 1)
    t.replicaset("MODIFIED", _obj("web-1", 4), T0 + 2)
    t.pod("ADDED", {"metadata": {"name": "p1", "creationTimestamp": "2001-09-09T01:46:43Z"}}, T0 + 3)
    assert t.incomplete()[0] == (
        "2 of the 3 pod(s) the scale-ups asked for never created (see the FailedCreate events of the ReplicaSet or "
        "StatefulSet, e.g. exceeded quota)"
    )
    for name in ("p2", "p3"):
        t.pod("ADDED", {"metadata": {"name": name}}, T0 + 60)
    assert not any("never created" in note for note in t.incomplete())


def test_a_pod_held_back_past_a_later_scale_up_counts_from_the_scale_up_that_asked_for_it() -> None:
    t = HpaTracker(T0, clock=lambda: T0)
    t.deployment("LISTED", _obj("web", 1), T0)
    t.replicaset("LISTED", _obj("web-1", 1), T0)
    t.deployment("MODIFIED", _obj("web", 3), T0 + 1)  # scale-up 1 asks for 2; the quota refuses them
    t.replicaset("MODIFIED", _obj("web-1", 3), T0 + 1.5)
    t.deployment("MODIFIED", _obj("web", 4), T0 + 20)  # scale-up 2 while they are still refused
    t.replicaset("MODIFIED", _obj("web-1", 4), T0 + 20.5)
    for name in ("p1", "p2", "p3"):  # the quota lifted: all three created at once
        t.pod("ADDED", {"metadata": {"name": name}}, T0 + 26)
    runs = sorted(p.run for p in t.pods.values())
    assert runs == [1, 1, 2]
    created = sorted(round(s.seconds, 1) for s in t.samples([]) if s.stage == "pod_created")
    assert created == [5.5, 24.5, 24.5]  # the held-back pods show the 24.5 s the quota cost scale-up 1


def test_a_statefulset_pod_deleted_by_a_scale_down_and_created_again_under_its_name_is_a_pod_of_its_own() -> None:
    t = HpaTracker(T0, clock=lambda: T0)
    t.deployment("LISTED", _obj("ledger", 1), T0)
    t.deployment("MODIFIED", _obj("ledger", 2), T0 + 1)  # scale-up 1
    t.pod("ADDED", {"metadata": {"name": "ledger-1", "uid": "u1"}}, T0 + 1.5)
    t.seen(AnswerSeen("w1", T0 + 5, "ledger-1"))
    t.deployment("MODIFIED", _obj("ledger", 1), T0 + 30)  # the HPA scales down: ledger-1 goes
    t.pod("DELETED", {"metadata": {"name": "ledger-1", "uid": "u1"}}, T0 + 31)
    t.deployment("MODIFIED", _obj("ledger", 2), T0 + 50)  # scale-up 2 makes ledger-1 again, a new pod
    t.pod("ADDED", {"metadata": {"name": "ledger-1", "uid": "u2"}}, T0 + 50.5)
    assert sorted(p.run for p in t.pods.values()) == [1, 2]
    assert not any("never created" in note for note in t.incomplete()), t.incomplete()
    assert t.in_flight(["w1"]) == 1  # the new ledger-1 has not answered yet: the first one's answer is not its own
    t.seen(AnswerSeen("w1", T0 + 56, "ledger-1"))
    assert t.in_flight(["w1"]) == 0
