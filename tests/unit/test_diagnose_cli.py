"""`chaoskit diagnose` as a command: its help states the exit codes, and it reads a run record from `chaoskit run
-o json` output or from a run's journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaoskit.cli import cli
from chaoskit.cli.diagnose import _record
from chaoskit.errors import UsageError


def test_help_names_the_components_and_the_exit_codes() -> None:
    out = CliRunner().invoke(cli, ["diagnose", "--help"]).output
    assert "kube-proxy, runtime" in out and "1 when any is degraded or failed" in out
    assert "-o, --format [table|json|markdown|html|junit]" in out and "--output FILE" in out


def test_a_record_comes_from_run_json_or_from_the_journal(tmp_path: Path) -> None:
    record = {"playbook": "scheduler-down", "verdict": "passed", "measurements": []}
    as_json = tmp_path / "run.json"
    as_json.write_text(json.dumps(record))
    journal = tmp_path / "run.jsonl"
    entries = [{"kind": "run-started", "at": 1.0, "data": {"run_id": "x"}},
               {"kind": "run-finished", "at": 2.0, "data": {"verdict": "passed", "record": record}}]  # fmt: skip
    journal.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert _record(as_json) == record == _record(journal)
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps(entries[0]) + "\n")
    with pytest.raises(UsageError, match="holds no run record"):
        _record(empty)
