"""Steady-state checks, as a run asks them before its first fault and after its last: each polled until it passes or
its timeout, leaving out the nodes another run of the suite is breaking."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoskit.checks.base import Check
from chaoskit.env import Env
from chaoskit.model.record import CheckRecord
from chaoskit.registry import CHECKS, Registered, Registry
from chaoskit.seams.poll import poll


def steady_check(
    env: Env,
    name: str,
    params: dict[str, Any],
    timeout: float,
    excused: Callable[[], set[str]] = set,
    checks: Registry[Registered] = CHECKS,
) -> CheckRecord:
    """A steady-state check, polled until it passes or `timeout`; nodes `excused()` names (another run of the suite
    is breaking them) are left out of the judgement by checks that judge nodes."""
    check: Check = checks.get(name)()  # type: ignore[assignment]
    model_type = checks.params_model(name)
    judges_nodes = "except_nodes" in model_type.model_fields
    last = ["not run"]

    def passes() -> bool:
        given = dict(params)
        if judges_nodes and (others := excused()):
            given["exceptNodes"] = sorted({*given.get("exceptNodes", []), *others})
        outcome = check.run(env, model_type.model_validate(given))
        last[0] = outcome.detail
        return outcome.ok

    took = poll(passes, timeout, 1.0)
    return CheckRecord(name, took.done, last[0], took.seconds if took.done else timeout)
