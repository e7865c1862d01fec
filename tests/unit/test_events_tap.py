"""CHAOSKIT_EVENTS: every run and injection of a process appends its events to one file, once each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoskit import events
from chaoskit.events import Said, fan_out, ignore, speaking, stamped, tapped


def test_the_spoken_events_and_those_nobody_follows_go_to_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    monkeypatch.setenv(events.TAP, str(path))
    monkeypatch.setattr(events, "_taps", {})
    lines: list[str] = []
    stamped(speaking(lines.append), "shop")(Said("workload ready"))  # a CLI run: stamped, then spoken
    tapped(ignore)(Said("nobody follows this one"))  # an injection a test runs in its own process
    follower = fan_out(lambda e: None)
    assert tapped(follower) is not follower  # someone else follows it: tapped beside them
    written = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(e["playbook"], e["text"]) for e in written] == [
        ("shop", "workload ready"),
        ("", "nobody follows this one"),
    ]
    assert lines == ["shop: workload ready"]


def test_without_the_variable_nothing_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(events.TAP, raising=False)
    assert tapped(ignore) is ignore
