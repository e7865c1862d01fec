"""A scheduling backlog's figures from when each pod was created and bound."""

from __future__ import annotations

from chaoskit.measurements.backlog_tracker import BacklogTracker


def _pod(name: str, node: str = "") -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def test_the_drain_is_the_burst_after_the_scheduler_s_pause() -> None:
    t = BacklogTracker()
    t.pod(_pod("early"), 0.0)
    t.pod(_pod("early", "n1"), 0.1)  # bound before the outage
    for i in range(5):  # created while the scheduler is away
        t.pod(_pod(f"p{i}"), 10.0 + i)
    for i in range(5):  # bound in one burst once it is back
        t.pod(_pod(f"p{i}", "n1"), 30.0 + 0.25 * i)
    d = t.drain()
    assert d["peak_waiting"] == 5 and d["bound"] == 6 and d["unbound"] == 0
    assert d["drained"] == 5 and d["drain_s"] == 1.0 and d["rate"] == 4.0
    assert d["last_wait"] == 30.0 + 1.0 - 14.0, "the pod bound last, from its creation"
    assert d["longest_wait"] == 30.0 - 10.0 + 0.0 or d["longest_wait"] == max(
        30.0 + 0.25 * i - (10.0 + i) for i in range(5)
    )


def test_a_pod_seen_bound_first_keeps_its_first_sighting_and_nothing_bound_tells_no_rate() -> None:
    t = BacklogTracker()
    t.pod(_pod("a"), 1.0)
    assert t.drain()["rate"] is None and t.drain()["peak_waiting"] == 1
    t.pod(_pod("a", "n1"), 2.0)
    t.pod(_pod("a", "n2"), 3.0)  # a later event does not move its bind
    assert t.waits() == {"a": (1.0, 2.0)}
