"""Sanity limits: a hold over 30 minutes or more than 50 fault steps is refused at its line, naming the field that
raises the limit; raised there, the playbook loads."""

from __future__ import annotations

import pytest
from playbook_catalog import MINIMAL, load, problems
from pydantic import ValidationError

from chaoskit.model.limits import DEFAULT_MAX_HOLD, DEFAULT_MAX_STEPS
from chaoskit.model.playbook import FaultStep, Spec


def _steps(count: int, limits: str = "") -> str:
    steps = "".join(f"    - fault: scheduler.down\n      duration: 1s\n      name: s{i}\n" for i in range(count))
    return MINIMAL.split("  steps:\n")[0] + limits + "  steps:\n" + steps


def test_a_hold_over_30_minutes_is_refused_at_its_duration_naming_the_override() -> None:
    assert problems(MINIMAL.replace("20s", "30h")) == [
        "pb.yaml:8:17: spec.steps[0].duration: holds its fault 30h, over the 30m limit (a typo?); to hold it this "
        "long, raise the limit in the playbook: spec.limits.maxHold: 30h"
    ]


def test_exactly_the_limit_is_allowed() -> None:
    assert load(MINIMAL.replace("20s", "30m")).spec.fault_steps()[0].duration == DEFAULT_MAX_HOLD


def test_a_hold_in_a_concurrent_group_is_limited_too() -> None:
    text = MINIMAL.replace("    - fault: scheduler.down\n      duration: 20s\n", "")
    text += "    - concurrent:\n        - fault: scheduler.down\n          duration: 2h\n"
    (problem,) = problems(text)
    assert problem.startswith("pb.yaml:9:21: spec.steps[0].concurrent[0].duration: holds its fault 2h")


def test_spec_limits_max_hold_allows_a_longer_hold() -> None:
    text = MINIMAL.replace("20s", "2h").replace("spec:\n", "spec:\n  limits:\n    maxHold: 2h\n")
    assert load(text).spec.limits.max_hold == 7200.0


def test_more_than_50_fault_steps_are_refused_at_steps_naming_the_override() -> None:
    (problem,) = problems(_steps(DEFAULT_MAX_STEPS + 1))
    assert problem.startswith("pb.yaml:7:")
    assert "spec.steps: 51 fault steps, over the limit of 50; to run them all, raise the limit in the playbook: " in (
        problem
    )
    assert problem.endswith("spec.limits.maxSteps: 51")


def test_fifty_steps_load_and_spec_limits_max_steps_allows_more() -> None:
    assert len(load(_steps(DEFAULT_MAX_STEPS)).spec.steps) == DEFAULT_MAX_STEPS
    assert len(load(_steps(60, "  limits:\n    maxSteps: 60\n")).spec.steps) == 60


@pytest.mark.parametrize(("field", "value"), [("maxHold", "0s"), ("maxHold", "soon"), ("maxSteps", 0)])
def test_a_bad_limit_is_refused_at_its_line(field: str, value: object) -> None:
    text = MINIMAL.replace("spec:\n", f"spec:\n  limits:\n    {field}: {value}\n")
    (problem,) = problems(text)
    assert problem.startswith("pb.yaml:7:") and f"spec.limits.{field}" in problem


def test_the_model_keeps_the_limits_for_python_callers() -> None:
    step = FaultStep(fault="scheduler.down", duration=3600)
    with pytest.raises(ValidationError, match=r"spec.limits.maxHold: 1h"):
        Spec(steps=[step])
    assert Spec(steps=[step], limits={"max_hold": 3600}).limits.max_hold == 3600  # type: ignore[arg-type]
