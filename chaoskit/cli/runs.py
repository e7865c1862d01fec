"""`chaoskit runs` (past runs, newest first, from the journals in the default journal dir) and `chaoskit runs open
LAST|RUN` (the run's HTML report, else its journal: its path printed, and opened on a terminal).

A run's journal holds its `run-started` and `run-finished` entries, and `report-written` with the path of the HTML
report `chaoskit run` wrote of it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from chaoskit.cli.listing import Column, Listing, listing_output_option, render
from chaoskit.errors import UsageError
from chaoskit.journal import Journal, default_journal_dir
from chaoskit.seams.shell import spawn

LAST = "LAST"


@dataclass(frozen=True)
class PastRun:
    run_id: str
    playbook: str
    started_at: float
    journal: Path
    verdict: str = "unfinished"  # a run-started with no run-finished: the run was killed, or still runs
    exit_code: int | None = None
    finished_at: float | None = None
    report: Path | None = None

    def row(self) -> dict[str, Any]:
        return {
            "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_at)),
            "run_id": self.run_id,
            "playbook": self.playbook,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "journal": str(self.journal),
            "report": str(self.report) if self.report else None,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


def past_runs(journal_dir: Path | None = None) -> list[PastRun]:
    """Every run journaled under `journal_dir` (default: the default journal dir), newest first."""
    runs: list[PastRun] = []
    for path in sorted((journal_dir or default_journal_dir()).glob("*.jsonl")):
        started: dict[str, PastRun] = {}
        entries = list(Journal(path).entries())
        reports = {
            str(e.data.get("run_id", "")): Path(str(e.data["path"])) for e in entries if e.kind == "report-written"
        }
        for e in entries:
            run_id = str(e.data.get("run_id", ""))
            if e.kind == "run-started":
                started[run_id] = PastRun(run_id, str(e.data.get("playbook", "")), e.at, path)
            record = e.data.get("record")
            if e.kind == "run-finished" and isinstance(record, dict):
                run_id = str(record.get("run_id", run_id))
                begun = started.get(run_id) or PastRun(run_id, str(record.get("playbook", "")), e.at, path)
                code = record.get("exit_code")
                started[run_id] = PastRun(
                    run_id,
                    begun.playbook,
                    begun.started_at,
                    path,
                    str(e.data.get("verdict", record.get("verdict", "error"))),
                    code if isinstance(code, int) else None,
                    e.at,
                    reports.get(run_id),
                )
        runs.extend(started.values())
    return sorted(runs, key=lambda r: r.started_at, reverse=True)


RUN_COLUMNS = (
    Column("when", "when"),
    Column("playbook", "playbook"),
    Column("verdict", "verdict"),
    Column("exit", "exit_code"),
    Column("journal", "journal"),
    Column("run", "run_id", wide=True),
    Column("report", "report", wide=True),
)


@click.group(invoke_without_command=True)
@listing_output_option
@click.pass_context
def runs(ctx: click.Context, output: str) -> None:
    """Past runs, newest first: when, playbook, verdict, exit code and journal (-o wide: run id and HTML report).

    Read from the journals in the default journal dir (~/.local/state/chaoskit/journals/); a run given --journal
    elsewhere is not among them.
    """
    if ctx.invoked_subcommand is None:
        render(Listing("run", RUN_COLUMNS, [r.row() for r in past_runs()], name_key="run_id"), output)


def find_run(which: str, found: list[PastRun]) -> PastRun:
    """LAST, or a run by its run id (or the start of it) or its journal's file name (with or without .jsonl)."""
    if not found:
        raise UsageError(f"no runs journaled in {default_journal_dir()}")
    if which == LAST:
        return found[0]
    matches = [r for r in found if r.run_id.startswith(which) or which in (r.journal.name, r.journal.stem)]
    if len(matches) != 1:
        said = "no run" if not matches else f"{len(matches)} runs"
        raise UsageError(f"{said} matching {which!r}: give LAST, a run id or a journal's name (chaoskit runs -o wide)")
    return matches[0]


def on_terminal() -> bool:
    return sys.stdout.isatty()


def opener(path: Path) -> list[str] | None:
    """The command that opens `path`: $BROWSER's first (its %s replaced, else the path appended), else xdg-open."""
    browser = os.environ.get("BROWSER", "").split(os.pathsep)[0].strip()
    if browser:
        words = shlex.split(browser)
        return [w.replace("%s", str(path)) for w in words] if "%s" in browser else [*words, str(path)]
    xdg = shutil.which("xdg-open")
    return [xdg, str(path)] if xdg else None


@runs.command("open")
@click.argument("which", metavar="LAST|RUN", default=LAST)
def open_run(which: str) -> None:
    """Print the path of a run's HTML report (else its journal); on a terminal, open it too.

    RUN is a run id (or its start) or a journal's file name; LAST (the default) the newest run.
    """
    run = find_run(which, past_runs())
    path = run.report or run.journal
    click.echo(str(path))
    command = opener(path) if on_terminal() else None  # in a pipe the path is the whole answer
    if command is not None:
        # detached and silent: the browser outlives this command, and its chatter is not chaoskit's output
        spawn(command, Path(os.devnull), detach=True)
