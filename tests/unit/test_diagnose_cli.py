"""`chaoskit diagnose` as a command: its help states the exit codes, and it reads a run record from `chaoskit run
-o json` output or from a run's journal."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from chaoskit.cli import cli
from chaoskit.cli.diagnose import _record
from chaoskit.errors import UsageError
from chaoskit.model.record import RunRecord


def test_help_names_the_components_and_the_exit_codes() -> None:
    out = " ".join(CliRunner().invoke(cli, ["diagnose", "--help"]).output.split())
    assert "kube-proxy, containerd" in out and "1 when any is degraded or failed" in out
    assert '"unknown" and said, not failed' in out and "4 the diagnosis could not run, or judged nothing" in out
    assert "-o, --output [table|json|markdown|html|junit]" in out and "--output-file FILE" in out


def test_a_record_comes_from_run_json_or_from_the_journal(tmp_path: Path) -> None:
    record = {"playbook": "scheduler-down", "verdict": "passed", "measurements": []}
    as_json = tmp_path / "run.json"
    as_json.write_text(json.dumps(record))
    journal = tmp_path / "run.jsonl"
    entries = [
        {"kind": "run-started", "at": 1.0, "data": {"run_id": "x"}},
        {"kind": "run-finished", "at": 2.0, "data": {"verdict": "passed", "record": record}},
    ]
    journal.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert _record(as_json) == RunRecord.from_dict(record) == _record(journal)
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps(entries[0]) + "\n")
    with pytest.raises(UsageError, match="holds no run record"):
        _record(empty)


def test_html_and_junit_files_carry_the_same_diagnosis_as_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One diagnosis, every format: a CI job keeps one moment's picture, not three diagnoses seconds apart."""
    from chaoskit.cli import diagnose as cmd
    from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis
    from chaoskit.seams.nodeexec import Node

    calls: list[float] = []

    class Nodes:
        def list_nodes(self) -> list[Node]:
            return [Node("chaoskit-control-plane", "control-plane")]

    def fake_diagnosis(*_: object, **__: object) -> Diagnosis:
        calls.append(1.0)
        report = ComponentReport("scheduler", "chaoskit-control-plane", "ok", (), ())
        return Diagnosis("chaoskit", (report,), 1_700_000_000.0 + len(calls), 0.1)

    monkeypatch.setattr(cmd, "cluster_env", lambda *_, **__: SimpleNamespace(kube=None, nodes=Nodes()))
    monkeypatch.setattr(cmd, "run_diagnosis", fake_diagnosis)
    html, junit = tmp_path / "d.html", tmp_path / "d.xml"
    done = CliRunner().invoke(cli, ["diagnose", "-o", "json", "--html", str(html), "--junit", str(junit)])
    assert done.exit_code == 0, done.output
    assert len(calls) == 1
    doc = json.loads(done.stdout)["diagnosis"]
    assert [r["component"] for r in doc["reports"]] == ["scheduler"]
    assert "scheduler" in html.read_text() and "scheduler" in junit.read_text()
