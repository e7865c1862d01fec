"""ChaosSchedule on the real cluster, with the operator beside it (as `chaoskit-operator --context`): four schedules
made at once, every minute, side by side in one operator so the whole takes about two scheduled minutes. One with a
short fault runs twice and keeps historyLimit 1 finished run; a suspended one starts nothing; a Forbid one whose run
holds longer than a minute skips the next time and says so; one whose lock another run holds skips and says so.
Deleting a schedule deletes its runs, a running one's fault reverted first."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.cluster.experiments import FINAL
from chaoskit.safety import LOCK_PREFIX
from chaoskit.seams.kube import Kube
from chaoskit_operator.experiment import resource_path
from chaoskit_operator.schedule import SCHEDULE_LABEL, SCHEDULED_AT, parse_time, run_name
from tests.e2e.conftest import process_state
from tests.e2e.radius import CP, W1, W2, WATCHES_INSTALL, namespace, on_node, touches
from tests.e2e.test_operator import Operator

# its schedules freeze kube-proxy on both workers (and hold cp's lock) across its tests, which follow one timeline
pytestmark = [
    touches(
        on_node("kube-proxy", W1),
        on_node("kube-proxy", W2),
        on_node("kube-proxy", CP),
        namespace("chaoskit-schedule-e2e"),
        WATCHES_INSTALL,
    ),
    pytest.mark.one_hold,
]

NS = "chaoskit-schedule-e2e"
SCHEDULES = f"/apis/chaoskit.dev/v1alpha1/namespaces/{NS}/chaosschedules"
EXPERIMENTS = f"/apis/chaoskit.dev/v1alpha1/namespaces/{NS}/chaosexperiments"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
HOLDER = "e2e/another-run"  # the holder of the lock the `locked` schedule needs
MINUTE = 60.0
CREATING_S = 15.0  # what making the four schedules may take on a loaded host, and then some


def _template(cluster: str, node: str, hold: str, deadline: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"fault": "kube-proxy.freeze", "target": {"node": node}, "duration": hold}
    if deadline:
        step["deadline"] = deadline
    return {"cluster": cluster, "diagnose": False, "steps": [step]}


def _schedule(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosSchedule",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedule": "* * * * *", "template": template, **spec},
    }


@dataclass(frozen=True)
class Made:
    """The schedules as made: when, and the first minute they were due."""

    operator: Operator
    created: datetime

    @property
    def first_due(self) -> datetime:
        return datetime.fromtimestamp((self.created.timestamp() // MINUTE + 1) * MINUTE, UTC)


def _lease(cluster: str) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": f"{LOCK_PREFIX}kube-proxy-{cluster}-control-plane", "namespace": "kube-system"},
        "spec": {"holderIdentity": HOLDER, "leaseDurationSeconds": 900, "acquireTime": now, "renewTime": now},
    }


@pytest.fixture(scope="module")
def made(cluster: str, kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    op = Operator(cluster, kube, tmp_path_factory.mktemp("operator"), namespace=NS)
    kube.apply(workloads.namespace(NS))
    lease = _lease(cluster)
    kube.delete(f"{LEASES}/{lease['metadata']['name']}")  # one an interrupted session left
    kube.create(LEASES, lease)  # another run holds kube-proxy on the control plane: `locked` must never start
    op.start()
    # all four are made within one minute: a minute boundary between two creations would put their first runs a
    # minute apart (CI: `every` made at 02:05:59 ran at 02:06, `forbid` and `locked` made after 02:06:00 at 02:07)
    left = MINUTE - time.time() % MINUTE
    if left < CREATING_S:
        time.sleep(left + 0.5)
    t0 = time.monotonic()
    created = datetime.now(UTC)
    for body in (
        _schedule("every", _template(cluster, f"{cluster}-worker", "10s"), historyLimit=1),
        _schedule("forbid", _template(cluster, f"{cluster}-worker2", "240s", "360s"), concurrencyPolicy="Forbid"),
        _schedule("locked", _template(cluster, f"{cluster}-control-plane", "10s")),
        _schedule("suspended", _template(cluster, f"{cluster}-worker", "10s"), suspend=True),
    ):
        kube.create(SCHEDULES, body)
    made = Made(op, created)
    for item in kube.get(SCHEDULES).get("items", []):
        made_at = parse_time(item["metadata"]["creationTimestamp"])
        assert made_at is not None and made_at < made.first_due, f"{item['metadata']['name']} made at {made_at}"
    yield made
    checked = time.monotonic() - t0
    for item in kube.get(SCHEDULES).get("items", []):  # no new runs; their experiments go with them (owned)
        kube.delete(f"{SCHEDULES}/{item['metadata']['name']}", propagation="Background")
    for item in kube.get(EXPERIMENTS).get("items", []):  # a running one is reverted by the operator first
        kube.delete(resource_path(NS, item["metadata"]["name"]), propagation="Background")
    kube.wait(
        "schedules and runs to be gone", lambda: not _items(kube, SCHEDULES) and not _items(kube, EXPERIMENTS), 180
    )
    print(f"\nschedules: {checked:.0f}s from creation to the last check, {time.monotonic() - t0:.0f}s to all gone")
    op.stop()
    kube.delete(f"{LEASES}/{lease['metadata']['name']}")
    kube.delete(f"/api/v1/namespaces/{NS}")
    print(op.log.read_text()[-3000:])


def _items(kube: Kube, path: str, **query: str) -> list[dict[str, Any]]:
    return list(kube.get(path, **query).get("items", []))


def _status(kube: Kube, name: str) -> dict[str, Any]:
    return dict((kube.find(f"{SCHEDULES}/{name}") or {}).get("status") or {})


def _runs(kube: Kube, name: str) -> list[dict[str, Any]]:
    return _items(kube, EXPERIMENTS, labelSelector=f"{SCHEDULE_LABEL}={name}")


def _events(kube: Kube, name: str) -> list[tuple[str, str, str]]:
    found = _items(kube, f"/api/v1/namespaces/{NS}/events", fieldSelector=f"involvedObject.name={name}")
    return [(e.get("type", ""), e.get("reason", ""), e.get("message", "")) for e in found]


def test_a_run_whose_lock_another_run_holds_is_skipped_and_the_skip_recorded(made: Made, kube: Kube) -> None:
    status = kube.wait(
        "the locked schedule to record a skip", lambda: (s := _status(kube, "locked")).get("skips") and s, 2 * MINUTE
    )
    skip = status["skips"][0]
    assert skip["reason"] == "Locked" and parse_time(skip["scheduleTime"]) == made.first_due, status
    assert HOLDER in skip["message"], skip
    assert "lastScheduleTime" not in status and _runs(kube, "locked") == []
    assert any(t == "Warning" and r == "Locked" and HOLDER in m for t, r, m in _events(kube, "locked"))


def test_forbid_skips_the_next_time_while_its_run_still_holds(made: Made, kube: Kube) -> None:
    def skipped() -> dict[str, Any] | None:
        status = _status(kube, "forbid")
        return status if any(s["reason"] == "RunActive" for s in status.get("skips") or []) else None

    status = kube.wait("the forbid schedule to skip a time", skipped, 3 * MINUTE)
    first = run_name("forbid", made.first_due)
    (run,) = _runs(kube, "forbid")  # the second time was not started
    assert run["metadata"]["name"] == first and (run.get("status") or {}).get("phase") == "Running"
    skip = next(s for s in status["skips"] if s["reason"] == "RunActive")
    assert parse_time(skip["scheduleTime"]) == datetime.fromtimestamp(made.first_due.timestamp() + MINUTE, UTC)
    assert f"concurrencyPolicy Forbid: {first} still running" in skip["message"]
    assert status["active"] == [first]
    assert any(t == "Warning" and r == "RunActive" for t, r, _ in _events(kube, "forbid"))


def test_a_suspended_schedule_starts_nothing(made: Made, kube: Kube) -> None:
    looked_after_due = made.first_due.timestamp() + 15  # the timer looks every 10 s
    time.sleep(max(0.0, looked_after_due - time.time()))
    status = _status(kube, "suspended")
    assert status.get("message", "").startswith("suspended"), status  # the operator looked at it, and waits
    assert _runs(kube, "suspended") == [] and "lastScheduleTime" not in status


def test_a_schedule_every_minute_runs_twice_and_keeps_history_limit_finished_runs(made: Made, kube: Kube) -> None:
    def two_judged_one_kept() -> dict[str, Any] | None:
        status = _status(kube, "every")
        judged = [r for r in status.get("runs") or [] if r.get("verdict")]
        kept = [r for r in _runs(kube, "every") if (r.get("status") or {}).get("phase") in FINAL]
        return status if len(judged) >= 2 and len(kept) == 1 else None

    status = kube.wait("two runs of `every` judged, one finished kept", two_judged_one_kept, 4 * MINUTE)
    judged = [r for r in status["runs"] if r.get("verdict")]
    first, second = judged[-1], judged[-2]  # newest first
    assert first["name"] == run_name("every", made.first_due), status
    assert parse_time(second["scheduleTime"]) == datetime.fromtimestamp(made.first_due.timestamp() + MINUTE, UTC)
    for run in (first, second):
        assert (run["verdict"], run["score"]) == ("passed", 100.0), run
    (kept,) = [r for r in _runs(kube, "every") if (r.get("status") or {}).get("phase") in FINAL]
    assert kept["metadata"]["name"] == second["name"]  # the older one was deleted past historyLimit 1
    assert kept["metadata"]["annotations"][SCHEDULED_AT] == second["scheduleTime"]
    schedule = kube.get(f"{SCHEDULES}/every")
    assert kept["metadata"]["ownerReferences"][0]["uid"] == schedule["metadata"]["uid"]
    reasons = [r for _, r, _ in _events(kube, "every")]
    assert reasons.count("RunCreated") >= 2 and "RunDeleted" in reasons


def test_deleting_a_schedule_deletes_its_runs_reverting_a_running_ones_fault(
    made: Made, kube: Kube, cluster: str
) -> None:
    node = f"{cluster}-worker2"
    (run,) = _runs(kube, "forbid")
    assert (run.get("status") or {}).get("phase") == "Running" and process_state(node, "kube-proxy") == "T"
    t0 = time.monotonic()
    kube.delete(f"{SCHEDULES}/forbid", propagation="Background")  # the garbage collector deletes what it owns
    kube.wait("the forbid schedule's run to be gone", lambda: not _runs(kube, "forbid"), 120)
    print(f"\nschedule deleted mid-fault: its run reverted and gone after {time.monotonic() - t0:.1f}s")
    assert process_state(node, "kube-proxy") not in ("T", "")
