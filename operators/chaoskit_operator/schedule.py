"""ChaosSchedule: a ChaosExperiment made on a cron schedule, as a CronJob makes Jobs. Pure: the spec read, whether
a run is due, the run's resource, which finished runs go, the status; the kopf side (scheduler.py) does the I/O.

A scheduled time is handled once: a run is started for it, or it is skipped and the skip recorded (its run still
active under Forbid, a conflicting lock held, or found past startingDeadlineSeconds). Times missed while the
operator was away, or the schedule suspended, run once, for the latest of them, as CronJob does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from chaoskit.cluster.experiments import FINAL
from chaoskit_operator.cron import Cron, CronError, parse
from chaoskit_operator.experiment import GROUP, VERSION, Invalid, plain, playbook_of

PLURAL, KIND = "chaosschedules", "ChaosSchedule"
SCHEDULE_LABEL = "chaoskit.dev/schedule"  # on each run: the schedule that made it, to list them by
SCHEDULED_AT = "chaoskit.dev/scheduled-at"  # on each run: the scheduled time it is for
Policy = Literal["Allow", "Forbid", "Replace"]
POLICIES: tuple[Policy, ...] = ("Allow", "Forbid", "Replace")
HISTORY_LIMIT = 3  # finished runs kept when the spec says nothing (CronJob's successfulJobsHistoryLimit)
SHOWN = 10  # runs and skips the status lists, newest first
MAX_RUN_NAME = 63  # a run is a playbook named after it: a DNS label
MISSED_COUNTED = 100  # how many missed times are counted before saying "at least"

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class ScheduleSpec:
    cron: Cron
    template: dict[str, Any]  # the runs' ChaosExperiment spec
    concurrency_policy: Policy = "Forbid"
    suspend: bool = False
    history_limit: int = HISTORY_LIMIT
    starting_deadline_seconds: int | None = None


def spec_of(body: Obj, now: datetime) -> ScheduleSpec | Invalid:
    """The schedule's spec, or every problem by its path (its template's as `chaoskit validate` finds them)."""
    meta, spec = body.get("metadata") or {}, dict(body.get("spec") or {})
    problems: list[str] = []
    cron: Cron | None = None
    try:
        cron = parse(str(spec.get("schedule", "")))
    except CronError as exc:
        problems.append(f"spec.schedule: {exc}")
    policy = spec.get("concurrencyPolicy", "Forbid")
    if policy not in POLICIES:
        problems.append(f"spec.concurrencyPolicy: {policy!r} is not one of {', '.join(POLICIES)}")
    limit = spec.get("historyLimit", HISTORY_LIMIT)
    if not _count(limit):
        problems.append(f"spec.historyLimit: {limit!r} is not a count (0 or more)")
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None and (not _count(deadline) or deadline < 1):
        problems.append(f"spec.startingDeadlineSeconds: {deadline!r} is not a number of seconds (1 or more)")
    suspend = spec.get("suspend", False)
    if not isinstance(suspend, bool):
        problems.append(f"spec.suspend: {suspend!r} is not true or false")
    template = spec.get("template")
    name = run_name(str(meta.get("name", "")), now)
    if not isinstance(template, Mapping):
        problems.append("spec.template: the runs' ChaosExperiment spec (steps, ...) is missing")
    elif len(name) > MAX_RUN_NAME:
        problems.append(
            f"metadata.name: at most {MAX_RUN_NAME - len(name) + len(meta.get('name', ''))} characters, as its "
            f"runs are named <name>-<unix minute> ({name}), a DNS label"
        )
    else:
        run = playbook_of({"metadata": {"name": name, "namespace": meta.get("namespace")}, "spec": template})
        if isinstance(run, Invalid):
            problems += [p.replace("spec.", "spec.template.", 1) if p.startswith("spec.") else p for p in run.problems]
    if problems or cron is None or not isinstance(template, Mapping):
        return Invalid(problems)
    starting_deadline = None if deadline is None else int(deadline)
    return ScheduleSpec(cron, plain(template), policy, suspend, int(limit), starting_deadline)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# What the timer does about the schedule now.
@dataclass(frozen=True)
class Wait:
    """Nothing due: `next` is the following scheduled time (None: suspended, or none within years)."""

    next: datetime | None
    suspended: bool = False


@dataclass(frozen=True)
class Start:
    """Start the run for `at`, once for the `missed` earlier times since the last one handled."""

    at: datetime
    missed: int = 0


@dataclass(frozen=True)
class Skip:
    """The run for `at` is not started, for `reason` (an event's reason: RunActive, Locked, MissedDeadline)."""

    at: datetime
    reason: str
    message: str


@dataclass(frozen=True)
class Replace:
    """Concurrency policy Replace: delete these active runs; the run for `at` starts once they are gone."""

    at: datetime
    active: tuple[str, ...]


Decision = Wait | Start | Skip | Replace


def decide(spec: ScheduleSpec, since: datetime, now: datetime, active: Sequence[str]) -> Decision:
    """What is due at `now`, the times up to `since` being handled already, `active` the runs not yet finished."""
    if spec.suspend:
        return Wait(None, suspended=True)  # the times it passes count as missed: the latest runs on resume
    due = spec.cron.previous(now)
    if due is None or due <= since:
        return Wait(spec.cron.following(now))
    late = (now - due).total_seconds()
    if spec.starting_deadline_seconds is not None and late > spec.starting_deadline_seconds:
        return Skip(
            due,
            "MissedDeadline",
            f"found {late:.0f}s after its scheduled time {stamp(due)}, past startingDeadlineSeconds "
            f"({spec.starting_deadline_seconds})",
        )
    if active and spec.concurrency_policy == "Forbid":
        return Skip(due, "RunActive", f"concurrencyPolicy Forbid: {', '.join(active)} still running")
    if active and spec.concurrency_policy == "Replace":
        return Replace(due, tuple(active))
    return Start(due, _missed(spec.cron, since, due))


def _missed(cron: Cron, since: datetime, due: datetime) -> int:
    """Scheduled times after `since` and before `due` (up to MISSED_COUNTED)."""
    count, t = 0, cron.previous(due - timedelta(minutes=1))
    while t is not None and t > since and count < MISSED_COUNTED:
        count, t = count + 1, cron.previous(t - timedelta(minutes=1))
    return count


def handled_until(body: Obj) -> datetime:
    """The latest scheduled time already handled (started or skipped); the schedule's creation before any."""
    status, meta = body.get("status") or {}, body.get("metadata") or {}
    times = [status.get("lastScheduleTime"), *(s.get("scheduleTime") for s in status.get("skips") or [])]
    found = [at for t in times if (at := parse_time(t)) is not None]
    return max(found) if found else parse_time(meta.get("creationTimestamp")) or datetime.now(UTC)


def run_name(schedule: str, at: datetime) -> str:
    """`<schedule>-<unix minute>`, as CronJob names its Jobs: one name per scheduled time, so a second try is 409."""
    return f"{schedule}-{int(at.timestamp()) // 60}"


def run_of(schedule: Obj, spec: ScheduleSpec, at: datetime) -> dict[str, Any]:
    """The ChaosExperiment for the scheduled time `at`, owned by the schedule (deleted with it)."""
    meta = schedule["metadata"]
    owner = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ChaosExperiment",
        "metadata": {
            "name": run_name(meta["name"], at),
            "namespace": meta["namespace"],
            "labels": {"app.kubernetes.io/part-of": "chaoskit", SCHEDULE_LABEL: meta["name"]},
            "annotations": {SCHEDULED_AT: stamp(at)},
            "ownerReferences": [owner],
        },
        "spec": spec.template,
    }


def owned(runs: Sequence[Obj], schedule_uid: str) -> list[Obj]:
    """The experiments the schedule made (the label alone could be copied onto another)."""
    return [r for r in runs if any(o.get("uid") == schedule_uid for o in r["metadata"].get("ownerReferences") or [])]


def finished(run: Obj) -> bool:
    return (run.get("status") or {}).get("phase") in FINAL


def scheduled_at(run: Obj) -> str:
    meta = run["metadata"]
    return str((meta.get("annotations") or {}).get(SCHEDULED_AT) or meta.get("creationTimestamp", ""))


def active(runs: Sequence[Obj]) -> list[str]:
    """The runs not yet finished, oldest first."""
    return [r["metadata"]["name"] for r in sorted(runs, key=scheduled_at) if not finished(r)]


def pruned(runs: Sequence[Obj], history_limit: int) -> list[str]:
    """The finished runs beyond the newest `history_limit`, to delete (the active ones are never pruned)."""
    done = sorted((r for r in runs if finished(r)), key=scheduled_at, reverse=True)
    return [r["metadata"]["name"] for r in done[history_limit:]]


def runs_status(listed: Sequence[Mapping[str, Any]], runs: Sequence[Obj]) -> list[dict[str, Any]]:
    """status.runs: what the status listed, updated from the experiments that still exist (a pruned run keeps its
    last word), the newest SHOWN, newest first."""
    by_name = {str(r.get("name")): dict(r) for r in listed if r.get("name")}
    for run in runs:
        meta, st = run["metadata"], run.get("status") or {}
        entry = {
            "name": meta["name"],
            "scheduleTime": scheduled_at(run),
            "phase": st.get("phase") or "Pending",
            "verdict": st.get("verdict"),
            "score": st.get("score"),
            "finishedAt": st.get("finishedAt"),
        }
        by_name[meta["name"]] = {k: v for k, v in entry.items() if v is not None}
    return sorted(by_name.values(), key=lambda r: str(r.get("scheduleTime", "")), reverse=True)[:SHOWN]


def skips_status(listed: Sequence[Mapping[str, Any]], skip: Skip) -> list[dict[str, Any]]:
    """status.skips with `skip` first, the newest SHOWN."""
    entry = {"scheduleTime": stamp(skip.at), "reason": skip.reason, "message": skip.message}
    return [entry, *(dict(s) for s in listed)][:SHOWN]


def changes(status: Obj, wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of `wanted` that differ from `status` (None: absent): a look that changes nothing writes nothing."""
    return {k: v for k, v in wanted.items() if status.get(k) != v}


def stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
