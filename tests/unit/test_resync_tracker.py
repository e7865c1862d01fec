"""The controller manager's catch-up, judged from its Lease and the Deployments' updates."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chaoskit.measurements.resync_tracker import ResyncTracker


def _t(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _lease(holder: str, renewed: float, acquired: float) -> dict[str, Any]:
    return {"spec": {"holderIdentity": holder, "renewTime": _t(renewed), "acquireTime": _t(acquired)}}


def _dep(name: str, observed: int, replicas: int, ready: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"observedGeneration": observed, "replicas": replicas, "readyReplicas": ready},
    }


BASE = 1_800_000_000.0


def _away_and_back() -> ResyncTracker:
    t = ResyncTracker(stale_after=6.0)
    t.lease(_lease("old", BASE + 0, BASE - 100), BASE + 1)
    assert not t.gone, "renewed a second ago"
    t.lease(_lease("old", BASE + 0, BASE - 100), BASE + 7)
    assert t.gone and t.gone_at == BASE + 7
    t.scaled({"a": 2, "b": 2}, 2, BASE + 8)
    t.deployment(_dep("a", 1, 1, 1), BASE + 9)  # the old generation: nobody reconciles while it is away
    t.lease(_lease("old", BASE + 0, BASE - 100), BASE + 10)
    assert t.leads_at is None, "the same old lease: no leader back"
    t.lease(_lease("new", BASE + 20, BASE + 20.5), BASE + 21)
    t.deployment(_dep("a", 2, 1, 1), BASE + 21.0)
    t.deployment(_dep("a", 2, 2, 1), BASE + 21.5)
    t.deployment(_dep("b", 2, 2, 2), BASE + 22.0)
    t.deployment(_dep("a", 2, 2, 2), BASE + 24.5)
    return t


def test_each_deployment_is_timed_from_the_new_leaders_own_stamp() -> None:
    t = _away_and_back()
    assert t.leads_at == BASE + 20.5
    assert t.stages() == {
        "a": {"deployment_synced": 0.5, "replicas_created": 1.0, "ready": 4.0},
        "b": {"deployment_synced": 1.5, "replicas_created": 1.5, "ready": 1.5},
    }
    s = t.summary()
    assert s["ready"] == 2 and s["last_ready_s"] == 4.0 and s["ready_per_s"] == 0.5 and s["before_leader"] == []
    assert t.waiting() == 0


def test_a_deployment_reconciled_before_any_leader_was_back_is_named() -> None:
    t = ResyncTracker(stale_after=6.0)
    t.lease(_lease("old", BASE, BASE - 100), BASE + 7)
    t.scaled({"a": 2}, 2, BASE + 8)
    t.deployment(_dep("a", 2, 2, 2), BASE + 9)  # someone reconciled it while the leader was away
    t.lease(_lease("new", BASE + 20, BASE + 20), BASE + 21)
    assert t.summary()["before_leader"] == ["a"] and t.stages() == {"a": {}}


def test_nothing_is_timed_while_the_leader_has_not_been_seen_back() -> None:
    t = ResyncTracker()
    t.lease(_lease("old", BASE, BASE - 100), BASE + 1)
    assert not t.gone and t.stages() == {} and t.waiting() == 0
