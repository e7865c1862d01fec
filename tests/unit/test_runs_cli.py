"""`chaoskit runs` lists the journaled runs newest first; `runs open` prints a run's report (on a terminal opens it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from chaoskit.cli import cli, runs
from chaoskit.errors import UsageError
from chaoskit.journal import Journal, default_journal_dir, state_home


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.delenv("BROWSER", raising=False)
    return tmp_path


def _run(name: str, run_id: str, at: float, verdict: str | None, code: int = 0) -> Path:
    """A journal as a run leaves it: run-started, then (unless it died) run-finished 30 s later with its record."""
    path = default_journal_dir() / f"{name}-{int(at)}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"kind": "run-started", "at": at, "data": {"playbook": name, "run_id": run_id, "cluster": "chaos"}}]
    if verdict is not None:
        record = {"playbook": name, "run_id": run_id, "verdict": verdict, "exit_code": code, "journal": str(path)}
        lines.append({"kind": "run-finished", "at": at + 30, "data": {"verdict": verdict, "record": record}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _report(journal: Path, run_id: str, name: str) -> Path:
    """An HTML report `chaoskit run` wrote of the run, its path journaled as run does."""
    path = state_home() / "reports" / f"{name}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("<html></html>")
    Journal(journal).append("report-written", run_id=run_id, path=str(path))
    return path


def test_runs_are_listed_newest_first_with_verdict_exit_code_and_journal() -> None:
    old = _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    new = _run("etcd-slow", "bbbb2222", 2_000_000.0, "deviated", 1)
    items = json.loads(CliRunner().invoke(cli, ["runs", "-o", "json"]).output)["items"]
    assert [(i["playbook"], i["verdict"], i["exit_code"], i["journal"]) for i in items] == [
        ("etcd-slow", "deviated", 1, str(new)),
        ("scheduler-down", "passed", 0, str(old)),
    ]


def test_a_run_without_run_finished_is_unfinished_and_an_inject_journal_is_no_run() -> None:
    _run("kubelet-stop", "cccc3333", 1_000_000.0, None)
    Journal(default_journal_dir() / "inject-kubelet.stop-5.jsonl").append("injection", id="x", fault="kubelet.stop")
    items = json.loads(CliRunner().invoke(cli, ["runs", "-o", "json"]).output)["items"]
    assert [(i["playbook"], i["verdict"], i["exit_code"]) for i in items] == [("kubelet-stop", "unfinished", None)]


def test_the_table_in_a_pipe_has_a_row_a_run() -> None:
    _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    lines = CliRunner().invoke(cli, ["runs"]).output.splitlines()
    assert lines[0].split() == ["WHEN", "PLAYBOOK", "VERDICT", "EXIT", "JOURNAL"]
    assert lines[1].split()[2:5] == ["scheduler-down", "passed", "0"]


def test_no_runs_is_an_empty_list() -> None:
    assert json.loads(CliRunner().invoke(cli, ["runs", "-o", "json"]).output)["items"] == []


def test_open_last_prints_the_newest_runs_report_when_its_suite_wrote_one() -> None:
    old = _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    _report(old, "aaaa1111", "scheduler-down-1000000")
    new = _run("etcd-slow", "bbbb2222", 2_000_000.0, "passed")
    mine = _report(new, "bbbb2222", "ledger-2000000")
    result = CliRunner().invoke(cli, ["runs", "open", "LAST"])
    assert result.exit_code == 0, result.output
    assert result.output == f"{mine}\n"


def test_open_prints_the_journal_when_no_report_was_written_of_the_run() -> None:
    journal = _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    _report(journal, "another", "another-run")  # another run's report in the same journal: not this one's
    assert CliRunner().invoke(cli, ["runs", "open"]).output == f"{journal}\n"


def test_open_finds_a_run_by_its_id_or_its_journals_name() -> None:
    first = _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    _run("etcd-slow", "bbbb2222", 2_000_000.0, "passed")
    assert CliRunner().invoke(cli, ["runs", "open", "aaaa"]).output == f"{first}\n"
    assert CliRunner().invoke(cli, ["runs", "open", first.stem]).output == f"{first}\n"


def test_open_of_an_unknown_run_or_with_no_runs_is_a_usage_error() -> None:
    none = CliRunner().invoke(cli, ["runs", "open"]).exception
    assert isinstance(none, UsageError) and "no runs journaled" in str(none)
    _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    unknown = CliRunner().invoke(cli, ["runs", "open", "zzzz"]).exception
    assert isinstance(unknown, UsageError) and "no run matching 'zzzz'" in str(unknown)


def test_in_a_pipe_open_only_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    monkeypatch.setenv("BROWSER", "firefox")
    opened: list[list[str]] = []
    monkeypatch.setattr(runs, "spawn", lambda cmd, log, **_: opened.append(cmd))
    CliRunner().invoke(cli, ["runs", "open"])
    assert opened == []


def test_on_a_terminal_open_opens_with_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    journal = _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    monkeypatch.setenv("BROWSER", "firefox --new-tab")
    monkeypatch.setattr(runs, "on_terminal", lambda: True)
    opened: list[list[str]] = []
    monkeypatch.setattr(runs, "spawn", lambda cmd, log, **_: opened.append(cmd))
    CliRunner().invoke(cli, ["runs", "open"])
    assert opened == [["firefox", "--new-tab", str(journal)]]


def test_the_opener_is_browser_with_its_placeholder_else_xdg_open(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSER", "w3m %s:lynx")
    assert runs.opener(Path("/r.html")) == ["w3m", "/r.html"]
    monkeypatch.delenv("BROWSER")
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert runs.opener(Path("/r.html")) == ["/usr/bin/xdg-open", "/r.html"]
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert runs.opener(Path("/r.html")) is None


def test_a_suite_journals_where_it_wrote_each_runs_report(tmp_path: Path) -> None:
    from chaoskit.cli.run import _publish
    from chaoskit.model.record import RunRecord
    from chaoskit.progress import Progress
    from chaoskit.suite import SuiteEntry, SuiteRecord

    journal = _run("scheduler-down", "aaaa1111", 1_000_000.0, "passed")
    rec = RunRecord("scheduler-down", "chaos", "ns", str(journal), "aaaa1111", 1_000_000.0)
    suite = SuiteRecord("scheduler-down", "chaos", 1_000_000.0, 1, runs=[SuiteEntry("p.yaml", "scheduler", 0, 30, rec)])
    html = tmp_path / "report.html"
    _publish(suite, False, None, html, "json", Progress())
    assert CliRunner().invoke(cli, ["runs", "open", "aaaa1111"]).output == f"{html}\n"
