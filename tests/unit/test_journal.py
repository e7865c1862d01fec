"""The journal round-trips, tolerates a torn last line, and knows what is still to revert."""

from __future__ import annotations

from pathlib import Path

from chaoskit.journal import Injection, Journal


def _inj(i: str) -> Injection:
    return Injection(i, "kubelet.stop", "chaoskit-worker", ("systemctl start kubelet",), 1000.0, {"grace": 5})


def test_injection_round_trips_through_the_file(tmp_path: Path) -> None:
    j = Journal(tmp_path / "run.jsonl")
    j.append("run-started", playbook="p.yaml")
    j.injection(_inj("a"))
    again = Journal(tmp_path / "run.jsonl")
    kinds = [e.kind for e in again.entries()]
    assert kinds == ["run-started", "injection"]
    assert again.pending() == [_inj("a")]


def test_reverted_injections_are_no_longer_pending(tmp_path: Path) -> None:
    j = Journal(tmp_path / "run.jsonl")
    j.injection(_inj("a"))
    j.injection(_inj("b"))
    j.append("reverted", id="a")
    j.append("revert-failed", id="b", error="boom")
    assert [i.id for i in j.pending()] == ["b"]


def test_a_line_torn_by_a_kill_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    j = Journal(path)
    j.injection(_inj("a"))
    with path.open("a") as f:
        f.write('{"kind": "reverted", "data": {"id": "a"')  # killed mid-write
    assert [i.id for i in Journal(path).pending()] == ["a"]


def test_a_missing_journal_has_nothing_pending(tmp_path: Path) -> None:
    assert Journal(tmp_path / "none.jsonl").pending() == []
