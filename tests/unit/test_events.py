"""Typed events: their words are the progress lines users know, their JSON lines what tools follow."""

from __future__ import annotations

import io
import json

from chaoskit.events import (
    Armed,
    Diagnosed,
    EffectObserved,
    Event,
    Injected,
    JsonLines,
    Recovered,
    Reverted,
    Reverting,
    Said,
    SteadyState,
    Threshold,
    fan_out,
    line,
    speaking,
    stamped,
)


def test_each_event_says_what_the_progress_line_always_said() -> None:
    step = {"step": "1-scheduler.down"}
    assert Armed("chaoskit-heal-1", "cp", "docker exec", 150.0, **step).words() == (
        "armed dead-man switch chaoskit-heal-1 on cp through docker exec (fires in 150s)"
    )
    assert Injected("scheduler.down", "cp", "move it", **step).words() == "injected scheduler.down on cp: move it"
    assert EffectObserved("scheduler.down", 0.71, **step).words() == "effect observed after 0.71s"
    assert Reverting("scheduler.down", "cp", 20.04).words() == "reverting scheduler.down on cp after 20s held"
    assert Reverted("scheduler.down", "cp").words() == "reverted scheduler.down on cp"
    assert Recovered("scheduler", 1.23).words() == "scheduler healthy again 1.23s after the revert"
    assert SteadyState("before", "cluster-healthy", True, "/readyz: ok").words() == (
        "steady state before: cluster-healthy ok (/readyz: ok)"
    )
    assert (
        Threshold("scale-up", "max", "total", True, "25 s").words() == "threshold scale-up max total: BREACHED (25 s)"
    )
    assert Diagnosed("before", (), 5.94).words() == "diagnosis before: every component ok (5.94s)"
    assert Diagnosed("during x", ("scheduler@cp: failed",), 6.8, shared=True).words() == (
        "diagnosis during x: scheduler@cp: failed (6.8s), shared"
    )
    named = Diagnosed("during x", named=True, component="scheduler", cause="not running", named_after_s=7.61)
    assert named.words() == "diagnosis named scheduler (not running) after 7.61s"
    missed = Diagnosed("during x", named=False, component="kubelet", cause="heartbeat")
    assert missed.words() == "diagnosis did NOT name kubelet (heartbeat)"
    assert Diagnosed("after", error="KubeError: down").words() == "diagnosis after failed: KubeError: down"


def test_a_line_places_the_playbook_and_the_step_unless_told_not_to() -> None:
    event = EffectObserved("scheduler.down", 0.7, step="1-scheduler.down", playbook="scheduler-down")
    assert line(event) == "scheduler-down: [1-scheduler.down] effect observed after 0.7s"
    assert line(event, playbook=False) == "[1-scheduler.down] effect observed after 0.7s"
    assert line(event, playbook=False, step=False) == "effect observed after 0.7s"
    said: list[str] = []
    stamped(speaking(said.append), "pb")(Said("workload ready"))
    assert said == ["pb: workload ready"]


def test_json_lines_carry_the_type_where_and_when_and_every_field() -> None:
    out = io.StringIO()
    seen: list[Event] = []
    fan_out(JsonLines(out), seen.append)(Reverting("kubelet.stop", "w1", 5.0, step="s", playbook="p", at=12.5))
    (data,) = [json.loads(text) for text in out.getvalue().splitlines()]
    words = "reverting kubelet.stop on w1 after 5s held"
    where = {"step": "s", "playbook": "p", "at": 12.5}
    assert data == {"event": "Reverting", **where, "fault": "kubelet.stop", "node": "w1", "held_s": 5.0, "words": words}
    assert len(seen) == 1 and seen[0].reason == "Reverting"
