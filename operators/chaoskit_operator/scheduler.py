"""kopf's side of ChaosSchedule: a timer looks at each schedule every INTERVAL_S, starts the run that is due as a
ChaosExperiment it owns (which the experiment daemon then runs), deletes finished runs past historyLimit, and
writes what it did into the schedule's status and events.

Why a timer and not a sleep until the next time: the timer re-reads the schedule (edited, suspended) and its runs
each time, so a missed wake-up (the operator restarted, another took over in the peering) costs one interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import kopf

from chaoskit.errors import ChaoskitError
from chaoskit.run.plan import plan
from chaoskit.safety import Locked, check_free, holder_id
from chaoskit.seams.kube import Conflict, Kube, KubeError
from chaoskit_operator.experiment import GROUP, PLURAL, VERSION, Invalid, plain, playbook_of, resource_path
from chaoskit_operator.handlers import Config, registry
from chaoskit_operator.schedule import (
    PLURAL as SCHEDULES,
)
from chaoskit_operator.schedule import (
    SCHEDULE_LABEL,
    Obj,
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
    parse_time,
    pruned,
    run_of,
    runs_status,
    scheduled_at,
    skips_status,
    spec_of,
    stamp,
)

INTERVAL_S = 10.0  # a run starts at most this long after its scheduled minute

Locks = Callable[[dict[str, Any]], list[str]]  # a run's resource -> the component locks its steps take


@dataclass
class Tick:
    """What one look at a schedule did: the status to merge, and the events to post as (type, reason, message)."""

    status: dict[str, Any]
    events: list[tuple[str, str, str]] = field(default_factory=list)


def tick(kube: Kube, body: dict[str, Any], now: datetime, locks_of: Locks) -> Tick:
    """Look at the schedule once: prune its history, then start, skip or replace what is due."""
    meta, status = body["metadata"], dict(body.get("status") or {})
    spec = spec_of(body, now)
    if isinstance(spec, Invalid):
        events = [] if status.get("problems") == spec.problems else [("Warning", "Invalid", spec.message[:1000])]
        return Tick({"problems": spec.problems, "message": f"no run is started: {spec.message}"[:1000]}, events)
    out = Tick({"problems": None, "message": None})
    experiments = f"/apis/{GROUP}/{VERSION}/namespaces/{meta['namespace']}/{PLURAL}"
    listed = kube.get(experiments, labelSelector=f"{SCHEDULE_LABEL}={meta['name']}").get("items", [])
    seen = owned(listed, meta["uid"])  # the status lists these, the pruned ones' last word too
    gone = pruned(seen, spec.history_limit)
    for name in gone:
        kube.delete(resource_path(meta["namespace"], name), propagation="Background")
        out.events.append(("Normal", "RunDeleted", f"{name}: finished, past historyLimit {spec.history_limit}"))
    runs = [r for r in seen if r["metadata"]["name"] not in gone]
    since = handled_until(body)
    newest = max((t for r in seen if (t := parse_time(scheduled_at(r))) is not None), default=None)
    if newest is not None and newest > since:  # started by a look whose status did not land
        since = newest
        out.status["lastScheduleTime"] = stamp(newest)
    decision = decide(spec, since, now, active(runs))
    if isinstance(decision, Wait) and decision.suspended:
        out.status["message"] = "suspended: no run is started until spec.suspend is false"
    if isinstance(decision, Start):
        held = _held(kube, body, locks_of(run_of(body, spec, decision.at)))
        if held:
            decision = Skip(decision.at, "Locked", f"another run holds a lock this one needs: {held}")
        else:
            seen.append(_start(kube, experiments, body, spec, decision, out))
            runs = [*runs, seen[-1]]
    if isinstance(decision, Skip):
        out.status["skips"] = skips_status(status.get("skips") or [], decision)
        out.events.append(("Warning", decision.reason, f"skipped the run for {stamp(decision.at)}: {decision.message}"))
    elif isinstance(decision, Replace):
        for name in _replace(kube, meta["namespace"], runs, decision):
            out.events.append(("Normal", "RunReplaced", f"{name}: deleted (its faults reverted) for the run due now"))
    out.status["active"] = active(runs)
    out.status["runs"] = runs_status(status.get("runs") or [], seen)
    following = spec.cron.following(now)
    out.status["nextScheduleTime"] = stamp(following) if following and not spec.suspend else None
    return out


def _start(
    kube: Kube, experiments: str, body: dict[str, Any], spec: ScheduleSpec, start: Start, out: Tick
) -> dict[str, Any]:
    run = run_of(body, spec, start.at)
    name = run["metadata"]["name"]
    try:
        made = dict(kube.create(experiments, run))
    except Conflict:  # made by an earlier look whose status did not land
        made = dict(kube.get(f"{experiments}/{name}"))
    out.status["lastScheduleTime"] = stamp(start.at)
    missed = f"; {start.missed} earlier scheduled time(s) missed, run once" if start.missed else ""
    out.events.append(("Normal", "RunCreated", f"{name} for {stamp(start.at)}{missed}"))
    return made


def _held(kube: Kube, body: dict[str, Any], locks: list[str]) -> str:
    """Why the run cannot start now: another run holds one of its component locks; "" when none does."""
    meta = body["metadata"]
    try:
        check_free(kube, sorted(set(locks)), holder_id(f"schedule/{meta['namespace']}/{meta['name']}"))
    except Locked as exc:
        return str(exc)
    return ""


def _replace(kube: Kube, namespace: str, runs: Sequence[Obj], decision: Replace) -> list[str]:
    """Delete the active runs not yet being deleted (the experiment daemon reverts their faults first)."""
    going = {r["metadata"]["name"] for r in runs if r["metadata"].get("deletionTimestamp")}
    deleted = [name for name in decision.active if name not in going]
    for name in deleted:
        kube.delete(resource_path(namespace, name), propagation="Background")
    return deleted


def locks(cfg: Config) -> Locks:
    """The component locks of a run, its steps resolved against the cluster's nodes as the run will resolve them."""

    def of(run: dict[str, Any]) -> list[str]:
        pb = playbook_of(run)
        if isinstance(pb, Invalid):
            return []  # the run says so itself
        try:
            env = cfg.env(pb.spec.cluster)
            return plan(pb, env.nodes.list_nodes()).locks
        except ChaoskitError as exc:  # no such node: the run starts and its experiment says why it cannot
            logging.getLogger(__name__).info(f"{run['metadata']['name']}: locks not known: {exc}")
            return []

    return of


class _QuietTimer(logging.Filter):
    """Drop kopf's "Timer 'schedule' succeeded." line: every schedule would log it every INTERVAL_S."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Timer 'schedule' succeeded."


logging.getLogger("kopf.objects").addFilter(_QuietTimer())


@kopf.timer(GROUP, VERSION, SCHEDULES, registry=registry, interval=INTERVAL_S, backoff=INTERVAL_S)
def schedule(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    cfg: Config = memo.config
    try:
        done = tick(cfg.kube, plain(body), datetime.now(UTC), locks(cfg))
    except KubeError as exc:  # the API server away (a fault may be breaking it): the next look tries again
        logger.warning(f"schedule not looked at: {exc}")
        return
    patch.status.update(changes(plain(body.get("status") or {}), done.status))
    for kind, reason, message in done.events:
        kopf.event(body, type=kind, reason=reason, message=message[:1000])
