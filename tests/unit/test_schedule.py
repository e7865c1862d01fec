"""ChaosSchedule's decisions, pure: a scheduled time is started once or skipped with its reason (an active run under
Forbid, past startingDeadlineSeconds), missed times run once, a suspended schedule waits; runs are named per minute
and owned by their schedule; finished runs past historyLimit go, the status keeps their last word."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from chaoskit.registry import load_catalog
from chaoskit_operator.cron import parse
from chaoskit_operator.experiment import Invalid
from chaoskit_operator.schedule import (
    SCHEDULE_LABEL,
    SCHEDULED_AT,
    Replace,
    ScheduleSpec,
    Skip,
    Start,
    Wait,
    active,
    changes,
    decide,
    handled_until,
    owned,
    pruned,
    run_name,
    run_of,
    runs_status,
    skips_status,
    spec_of,
)

load_catalog()

NOW = datetime(2026, 3, 4, 5, 6, 20, tzinfo=UTC)
FREEZE = {"steps": [{"fault": "kube-proxy.freeze", "target": {"node": "worker"}, "duration": "10s"}]}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def schedule(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosSchedule",
        "metadata": {"name": "nightly", "namespace": "team", "uid": "u-1", "creationTimestamp": "2026-03-04T05:00:30Z"},
        "spec": {"schedule": "* * * * *", "template": FREEZE, **spec},
    }


def every_minute(**kw: Any) -> ScheduleSpec:
    return ScheduleSpec(parse("* * * * *"), FREEZE, **kw)


def test_a_valid_schedule_is_read_with_cronjobs_defaults() -> None:
    spec = spec_of(schedule(), NOW)
    assert isinstance(spec, ScheduleSpec)
    assert (spec.concurrency_policy, spec.suspend, spec.history_limit, spec.starting_deadline_seconds) == (
        "Forbid",
        False,
        3,
        None,
    )
    assert spec.template == FREEZE


def test_every_problem_is_named_by_its_path_the_templates_as_chaoskit_validate_finds_them() -> None:
    bad = schedule(
        schedule="61 * * * *",
        concurrencyPolicy="Sometimes",
        historyLimit=-1,
        startingDeadlineSeconds=0,
        template={"steps": [{"fault": "kube-proxy.freez", "duration": "soon"}]},
    )
    found = spec_of(bad, NOW)
    assert isinstance(found, Invalid)
    said = "\n".join(found.problems)
    assert "spec.schedule: minute: '61' is outside 0-59" in said
    assert "spec.concurrencyPolicy: 'Sometimes' is not one of Allow, Forbid, Replace" in said
    assert "spec.historyLimit: -1" in said and "spec.startingDeadlineSeconds: 0" in said
    assert any(p.startswith("spec.template.steps[0].duration:") for p in found.problems), found.problems
    assert isinstance(spec_of({**schedule(), "spec": {"schedule": "@daily"}}, NOW), Invalid)  # no template


def test_a_name_too_long_for_its_runs_names_is_refused() -> None:
    body = schedule()
    body["metadata"]["name"] = "n" * 60
    found = spec_of(body, NOW)
    assert isinstance(found, Invalid)
    assert found.problems[0].startswith("metadata.name: at most 54 characters"), found.problems


def test_the_time_due_starts_once() -> None:
    assert decide(every_minute(), at("2026-03-04T05:05"), NOW, []) == Start(at("2026-03-04T05:06"))
    assert decide(every_minute(), at("2026-03-04T05:06"), NOW, []) == Wait(at("2026-03-04T05:07"))  # handled


def test_missed_times_run_once_for_the_latest() -> None:
    assert decide(every_minute(), at("2026-03-04T05:01"), NOW, []) == Start(at("2026-03-04T05:06"), missed=4)


def test_a_time_found_past_its_starting_deadline_is_skipped() -> None:
    late = decide(every_minute(starting_deadline_seconds=15), at("2026-03-04T05:05"), NOW, [])
    assert isinstance(late, Skip) and late.at == at("2026-03-04T05:06") and late.reason == "MissedDeadline"
    assert "20s after its scheduled time 2026-03-04T05:06:00Z, past startingDeadlineSeconds (15)" in late.message
    on_time = decide(every_minute(starting_deadline_seconds=30), at("2026-03-04T05:05"), NOW, [])
    assert on_time == Start(at("2026-03-04T05:06"))


def test_an_active_run_is_skipped_over_allowed_beside_or_replaced_as_the_policy_says() -> None:
    since, running = at("2026-03-04T05:05"), ["nightly-29543345"]
    forbid = decide(every_minute(), since, NOW, running)
    assert forbid == Skip(
        at("2026-03-04T05:06"), "RunActive", "concurrencyPolicy Forbid: nightly-29543345 still running"
    )
    assert decide(every_minute(concurrency_policy="Allow"), since, NOW, running) == Start(at("2026-03-04T05:06"))
    replace = decide(every_minute(concurrency_policy="Replace"), since, NOW, running)
    assert replace == Replace(at("2026-03-04T05:06"), ("nightly-29543345",))


def test_a_suspended_schedule_waits_and_its_missed_time_runs_once_on_resume() -> None:
    since = at("2026-03-04T05:01")
    assert decide(every_minute(suspend=True), since, NOW, []) == Wait(None, suspended=True)
    assert decide(every_minute(), since, NOW, []) == Start(at("2026-03-04T05:06"), missed=4)


def test_handled_until_is_the_latest_started_or_skipped_time_else_the_creation() -> None:
    body = schedule()
    assert handled_until(body) == at("2026-03-04T05:00:30")
    body["status"] = {"lastScheduleTime": "2026-03-04T05:03:00Z", "skips": [{"scheduleTime": "2026-03-04T05:04:00Z"}]}
    assert handled_until(body) == at("2026-03-04T05:04")


def test_a_run_is_named_by_its_unix_minute_and_owned_by_its_schedule() -> None:
    due = at("2026-03-04T05:06")
    assert run_name("nightly", due) == f"nightly-{int(due.timestamp()) // 60}" == "nightly-29543346"
    spec = spec_of(schedule(), NOW)
    assert isinstance(spec, ScheduleSpec)
    run = run_of(schedule(), spec, due)
    meta = run["metadata"]
    assert (run["kind"], meta["name"], meta["namespace"]) == ("ChaosExperiment", "nightly-29543346", "team")
    assert meta["labels"][SCHEDULE_LABEL] == "nightly" and meta["annotations"][SCHEDULED_AT] == "2026-03-04T05:06:00Z"
    (owner,) = meta["ownerReferences"]
    assert owner == {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosSchedule",
        "name": "nightly",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert run["spec"] == FREEZE


def experiment(minute: int, phase: str | None, owner: str = "u-1", **status: Any) -> dict[str, Any]:
    due = at("2026-03-04T05:00") + timedelta(minutes=minute)
    return {
        "metadata": {
            "name": run_name("nightly", due),
            "annotations": {SCHEDULED_AT: due.strftime("%Y-%m-%dT%H:%M:%SZ")},
            "ownerReferences": [{"uid": owner}],
        },
        "status": {"phase": phase, **status} if phase else {},
    }


def test_finished_runs_past_the_history_limit_go_oldest_first_and_active_ones_never() -> None:
    runs = [experiment(1, "Passed"), experiment(2, "Deviated"), experiment(3, "Running"), experiment(4, "Passed")]
    assert pruned(runs, 1) == ["nightly-29543342", "nightly-29543341"]
    assert pruned(runs, 0) == ["nightly-29543344", "nightly-29543342", "nightly-29543341"]
    assert pruned(runs, 3) == []
    assert active(runs) == ["nightly-29543343"]


def test_only_the_schedules_own_runs_count() -> None:
    mine, copied = experiment(1, "Passed"), experiment(2, "Running", owner="someone-else")
    assert owned([mine, copied], "u-1") == [mine]


def test_the_status_lists_the_runs_newest_first_with_verdict_and_score_and_keeps_a_pruned_ones() -> None:
    listed = [{"name": "nightly-29543341", "scheduleTime": "2026-03-04T05:01:00Z", "phase": "Passed", "score": 100.0}]
    now = [
        experiment(2, "Deviated", verdict="deviated", score=50.0, finishedAt="2026-03-04T05:02:40Z"),
        experiment(3, None),
    ]
    runs = runs_status(listed, now)
    assert [r["name"] for r in runs] == ["nightly-29543343", "nightly-29543342", "nightly-29543341"]
    assert runs[0] == {"name": "nightly-29543343", "scheduleTime": "2026-03-04T05:03:00Z", "phase": "Pending"}
    assert runs[1]["verdict"] == "deviated" and runs[1]["score"] == 50.0
    assert runs[2] == listed[0]  # deleted past historyLimit: its last word stays
    many = [experiment(m, "Passed") for m in range(30)]
    assert len(runs_status([], many)) == 10


def test_skips_are_listed_newest_first() -> None:
    first = skips_status([], Skip(at("2026-03-04T05:01"), "Locked", "held"))
    both = skips_status(first, Skip(at("2026-03-04T05:02"), "RunActive", "concurrencyPolicy Forbid"))
    assert [s["scheduleTime"] for s in both] == ["2026-03-04T05:02:00Z", "2026-03-04T05:01:00Z"]
    assert both[0]["reason"] == "RunActive"


def test_the_crd_defaults_and_allows_what_the_operator_reads() -> None:
    from chaoskit_operator.experiment import schedule_crd
    from chaoskit_operator.schedule import HISTORY_LIMIT, KIND, PLURAL, POLICIES

    crd = schedule_crd()
    assert (crd["spec"]["names"]["kind"], crd["spec"]["names"]["plural"], crd["spec"]["scope"]) == (
        KIND,
        PLURAL,
        "Namespaced",
    )
    (version,) = crd["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    fields = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert (
        set(fields["concurrencyPolicy"]["enum"]) == set(POLICIES) and fields["concurrencyPolicy"]["default"] == "Forbid"
    )
    assert fields["historyLimit"]["default"] == HISTORY_LIMIT and fields["suspend"]["default"] is False
    assert fields["template"]["x-kubernetes-preserve-unknown-fields"] is True


def test_the_docs_example_is_a_valid_schedule() -> None:
    from ruamel.yaml import YAML

    from chaoskit.cluster.assets import deploy_dir

    docs = (deploy_dir().parent.parent / "docs" / "operator.md").read_text()
    section = docs[docs.index("## Game days on a schedule") :]
    example = YAML(typ="safe").load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    example["metadata"]["uid"] = "u-1"
    spec = spec_of(example, NOW)
    assert isinstance(spec, ScheduleSpec), spec
    assert spec.cron.following(NOW) == at("2026-03-05T03:00")  # a Thursday at 03:00 UTC


def test_a_look_that_changes_nothing_writes_nothing() -> None:
    status = {"lastScheduleTime": "2026-03-04T05:06:00Z", "active": []}
    wanted = {"lastScheduleTime": "2026-03-04T05:06:00Z", "active": ["nightly-1"], "problems": None}
    assert changes(status, wanted) == {"active": ["nightly-1"]}
