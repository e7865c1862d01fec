"""The playbook models used from Python: snake_case, frozen, defaults derived, rules enforced, durations parsed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chaoskit.model.duration import DurationError, format_duration, parse_duration
from chaoskit.model.playbook import ConcurrentStep, FaultStep, Metadata, Playbook, Spec, Target, Threshold


def _playbook(*steps: FaultStep | ConcurrentStep, **spec: object) -> Playbook:
    return Playbook(
        api_version="chaoskit.dev/v1alpha1",
        kind="Playbook",
        metadata=Metadata(name="demo"),
        spec=Spec(steps=list(steps), **spec),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("20s", 20.0),
        ("1m30s", 90.0),
        ("2h", 7200.0),
        ("1h2m3s4ms", 3723.004),
        ("1.5s", 1.5),
        (".5s", 0.5),
        ("20", 20.0),
        (20, 20.0),
        (2.5, 2.5),
        (0, 0.0),
    ],
)
def test_durations_accept_units_and_bare_seconds(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-5s", "must not be negative"),
        (-1, "must not be negative"),
        ("5 s", "invalid duration"),
        ("30s1m", "invalid duration"),
        ("1m30", "invalid duration"),
        ("5d", "invalid duration"),
        ("1e3", "invalid duration"),
        ("", "invalid duration"),
        (True, "got a boolean"),
        (None, "got null"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
    ],
)
def test_durations_refuse_negatives_and_garbage_with_a_clear_message(value: object, message: str) -> None:
    with pytest.raises(DurationError, match=message):
        parse_duration(value)


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (0.5, "500ms"), (20, "20s"), (90, "1m30s"), (7200, "2h")])
def test_format_duration_writes_the_shortest_spelling(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


def test_python_callers_use_snake_case_and_get_derived_defaults() -> None:
    playbook = _playbook(
        FaultStep(fault="scheduler.down", duration=20),
        ConcurrentStep(concurrent=[FaultStep(fault="kube-proxy.freeze", duration="10s", deadline="30s")]),
        steady_state=[],
    )
    assert [(s.name, s.deadline) for s in playbook.spec.fault_steps()] == [
        ("1-scheduler.down", 80.0),
        ("2.1-kube-proxy.freeze", 30.0),
    ]
    assert playbook.spec.namespace == "chaoskit-demo"
    assert playbook.model_dump()["spec"]["steadyState"] == []  # YAML's spelling when dumped


def test_models_are_frozen() -> None:
    step = FaultStep(fault="scheduler.down", duration=20)
    with pytest.raises(ValidationError, match="frozen"):
        step.duration = 5  # type: ignore[misc]


def test_building_a_playbook_does_not_change_the_steps_given() -> None:
    step = FaultStep(fault="scheduler.down", duration=20)
    _playbook(step)
    assert step.name == ""


def test_cross_field_rules_hold_for_python_callers_too() -> None:
    with pytest.raises(ValidationError, match=r"deadline: must exceed duration \(20s\)"):
        FaultStep(fault="scheduler.down", duration=20, deadline=20)
    with pytest.raises(ValidationError, match="a threshold needs max, min or both"):
        Threshold(measurement="up", stat="p99")
    with pytest.raises(ValidationError, match="step name 'a' is already used by steps\\[0\\]"):
        _playbook(
            FaultStep(name="a", fault="scheduler.down", duration=1),
            FaultStep(name="a", fault="kubelet.stop", duration=1),
        )


def test_target_role_tells_roles_from_node_names() -> None:
    assert Target(node="worker").role == "worker"
    assert Target(node="any").role == "any"
    assert Target(node="chaoskit-worker2").role is None


def test_the_playbook_round_trips_through_its_yaml_spelling() -> None:
    playbook = _playbook(FaultStep(fault="scheduler.down", duration=20, target=Target(node="control-plane")))
    again = Playbook.model_validate(playbook.model_dump(), by_alias=True, by_name=False)
    assert again == playbook
