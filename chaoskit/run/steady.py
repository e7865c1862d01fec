"""Steady-state checks, as a run asks them before its first fault and after its last: each polled until it passes or
its timeout, leaving out the nodes another run of the suite is breaking."""

from __future__ import annotations

from collections.abc import Callable

from chaoskit.env import Env
from chaoskit.model.record import CheckRecord
from chaoskit.run.plan import PlannedCheck
from chaoskit.seams.poll import poll


def steady_check(env: Env, planned: PlannedCheck, excused: Callable[[], set[str]] = set) -> CheckRecord:
    """A steady-state check, polled until it passes or its timeout; nodes `excused()` names (another run of the
    suite is breaking them) are left out of the judgement by checks that judge nodes."""
    check, params, timeout = planned.check(), planned.params, planned.timeout
    last = ["not run"]

    def passes() -> bool:
        given = params
        if planned.judges_nodes and (others := excused()):
            given = params.model_copy(update={"except_nodes": sorted({*getattr(params, "except_nodes", []), *others})})
        outcome = check.run(env, given)
        last[0] = outcome.detail
        return outcome.ok

    took = poll(passes, timeout, 1.0)
    return CheckRecord(planned.name, took.done, last[0], took.seconds if took.done else timeout)
