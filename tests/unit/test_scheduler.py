"""One look of the ChaosSchedule timer at a schedule, against a fake API: the run due is created once, owned by the
schedule; a run whose lock another run holds is skipped and the skip recorded with a Warning; finished runs past
historyLimit are deleted; Replace deletes the active run once; an invalid schedule says why, once."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chaoskit.registry import load_catalog
from chaoskit.safety import LOCK_PREFIX
from chaoskit.seams.kube import FakeKube
from chaoskit_operator.schedule import SCHEDULE_LABEL, SCHEDULED_AT, run_name
from chaoskit_operator.scheduler import tick

load_catalog()

NOW = datetime(2026, 3, 4, 5, 6, 20, tzinfo=UTC)
DUE = datetime(2026, 3, 4, 5, 6, tzinfo=UTC)
EXPERIMENTS = "/apis/chaoskit.dev/v1alpha1/namespaces/team/chaosexperiments"
LOCK = "kube-proxy-chaoskit-worker"
FREEZE = {"steps": [{"fault": "kube-proxy.freeze", "target": {"node": "worker"}, "duration": "10s"}]}


def schedule(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosSchedule",
        "metadata": {"name": "nightly", "namespace": "team", "uid": "u-1", "creationTimestamp": "2026-03-04T05:05:30Z"},
        "spec": {"schedule": "* * * * *", "template": FREEZE, **spec},
        "status": status or {},
    }


def locks_of(run: dict[str, Any]) -> list[str]:
    return [LOCK]


def finished_run(minute: int, phase: str = "Passed") -> dict[str, Any]:
    due = DUE - timedelta(minutes=minute)
    return {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosExperiment",
        "metadata": {
            "name": run_name("nightly", due),
            "namespace": "team",
            "labels": {SCHEDULE_LABEL: "nightly"},
            "annotations": {SCHEDULED_AT: due.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "ownerReferences": [{"uid": "u-1"}],
        },
        "status": {"phase": phase, "verdict": phase.lower(), "score": 100.0 if phase == "Passed" else 0.0},
    }


def test_the_run_due_is_created_once_owned_by_the_schedule() -> None:
    kube = FakeKube()
    first = tick(kube, schedule(), NOW, locks_of)
    name = run_name("nightly", DUE)
    made = kube.objects[f"{EXPERIMENTS}/{name}"]
    assert made["metadata"]["ownerReferences"][0]["uid"] == "u-1" and made["spec"] == FREEZE
    assert first.status["lastScheduleTime"] == "2026-03-04T05:06:00Z"
    assert first.status["active"] == [name]
    assert first.status["runs"] == [{"name": name, "scheduleTime": "2026-03-04T05:06:00Z", "phase": "Pending"}]
    assert first.status["nextScheduleTime"] == "2026-03-04T05:07:00Z"
    assert first.events == [("Normal", "RunCreated", f"{name} for 2026-03-04T05:06:00Z")]
    again = tick(kube, schedule(first.status), NOW + timedelta(seconds=10), locks_of)
    assert again.events == [] and "lastScheduleTime" not in again.status
    assert [p for m, p in kube.calls if m == "POST"] == [EXPERIMENTS]


def test_a_run_made_by_a_look_whose_status_did_not_land_is_taken_as_started() -> None:
    kube = FakeKube()
    tick(kube, schedule(), NOW, locks_of)
    retried = tick(kube, schedule(), NOW, locks_of)  # the status patch was lost: the same time is due again
    assert retried.status["lastScheduleTime"] == "2026-03-04T05:06:00Z"
    assert len(kube.get(EXPERIMENTS)["items"]) == 1


def test_a_run_is_skipped_while_another_run_holds_a_lock_it_needs() -> None:
    renewed = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {
        "metadata": {"name": f"{LOCK_PREFIX}{LOCK}"},
        "spec": {"holderIdentity": "laptop/run-1", "leaseDurationSeconds": 600, "renewTime": renewed},
    }
    kube = FakeKube({f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{LOCK_PREFIX}{LOCK}": lease})
    done = tick(kube, schedule(), NOW, locks_of)
    assert kube.get(EXPERIMENTS)["items"] == []
    (skip,) = done.status["skips"]
    assert skip["scheduleTime"] == "2026-03-04T05:06:00Z" and skip["reason"] == "Locked"
    assert "kube-proxy-chaoskit-worker is being broken by another run (laptop/run-1)" in skip["message"]
    ((kind, reason, message),) = done.events
    assert (kind, reason) == ("Warning", "Locked") and message.startswith("skipped the run for 2026-03-04T05:06:00Z")
    # the skipped time is handled: the next look waits for the next minute
    assert tick(kube, schedule(done.status), NOW + timedelta(seconds=10), locks_of).events == []


def test_an_active_run_under_forbid_is_a_recorded_skip() -> None:
    running = finished_run(1, "Running")
    kube = FakeKube({f"{EXPERIMENTS}/{running['metadata']['name']}": running})
    done = tick(kube, schedule({"lastScheduleTime": "2026-03-04T05:05:00Z"}), NOW, locks_of)
    assert done.status["skips"][0]["reason"] == "RunActive"
    assert done.status["active"] == [running["metadata"]["name"]]
    assert len(kube.get(EXPERIMENTS)["items"]) == 1


def test_finished_runs_past_the_history_limit_are_deleted_and_listed_still() -> None:
    old, newer = finished_run(2), finished_run(1, "Deviated")
    kube = FakeKube({f"{EXPERIMENTS}/{r['metadata']['name']}": r for r in (old, newer)})
    status = {"lastScheduleTime": "2026-03-04T05:05:00Z"}
    done = tick(kube, schedule(status, historyLimit=1), NOW, locks_of)
    kept = {r["metadata"]["name"] for r in kube.get(EXPERIMENTS)["items"]}
    assert old["metadata"]["name"] not in kept and newer["metadata"]["name"] in kept
    assert run_name("nightly", DUE) in kept  # and the run due now was started
    assert ("Normal", "RunDeleted", f"{old['metadata']['name']}: finished, past historyLimit 1") in done.events
    verdicts = {r["name"]: r.get("verdict") for r in done.status["runs"]}
    assert verdicts[old["metadata"]["name"]] == "passed" and verdicts[newer["metadata"]["name"]] == "deviated"


def test_replace_deletes_the_active_run_once_and_starts_when_it_is_gone() -> None:
    running = finished_run(1, "Running")
    path = f"{EXPERIMENTS}/{running['metadata']['name']}"
    kube = FakeKube({path: running})
    body = schedule({"lastScheduleTime": "2026-03-04T05:05:00Z"}, concurrencyPolicy="Replace")
    first = tick(kube, body, NOW, locks_of)
    assert path not in kube.objects and first.events[0][1] == "RunReplaced"
    assert "lastScheduleTime" not in first.status  # not started yet: the deleted run's faults are being reverted
    kube.objects[path] = {**running, "metadata": {**running["metadata"], "deletionTimestamp": "2026-03-04T05:06:21Z"}}
    assert tick(kube, body, NOW, locks_of).events == []  # being deleted: not deleted again
    del kube.objects[path]
    started = tick(kube, body, NOW + timedelta(seconds=10), locks_of)
    assert started.status["lastScheduleTime"] == "2026-03-04T05:06:00Z"


def test_an_invalid_schedule_starts_nothing_and_says_why_once() -> None:
    kube = FakeKube()
    first = tick(kube, schedule(schedule="every minute"), NOW, locks_of)
    assert first.status["problems"][0].startswith("spec.schedule:")
    assert first.events[0][:2] == ("Warning", "Invalid")
    again = tick(kube, schedule(first.status, schedule="every minute"), NOW, locks_of)
    assert again.events == [] and kube.calls == []


def test_a_suspended_schedule_starts_nothing_and_says_so() -> None:
    kube = FakeKube()
    done = tick(kube, schedule(suspend=True), NOW, locks_of)
    assert kube.get(EXPERIMENTS)["items"] == [] and done.events == []
    assert done.status["message"].startswith("suspended") and done.status["nextScheduleTime"] is None


def test_kopfs_line_for_every_look_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    kopf_objects = logging.getLogger("kopf.objects")
    with caplog.at_level(logging.INFO, logger="kopf.objects"):
        kopf_objects.info("Timer 'schedule' succeeded.")
        kopf_objects.info("Daemon 'experiment' succeeded.")
    assert [r.getMessage() for r in caplog.records] == ["Daemon 'experiment' succeeded."]
