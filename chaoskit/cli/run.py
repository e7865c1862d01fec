"""`chaoskit run PLAYBOOK`: the whole experiment, with exit codes a CI gate can use."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from chaoskit.cli import Globals
from chaoskit.cli.options import emit, output_option
from chaoskit.cluster.kind import node_containers
from chaoskit.cluster.kube import Kube
from chaoskit.cluster.nodeexec import DockerNodeExec
from chaoskit.cluster.shell import SubprocessRunner
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.errors import UsageError
from chaoskit.faults.base import Env
from chaoskit.journal import Journal, default_journal_dir
from chaoskit.playbook import load_playbook
from chaoskit.progress import Progress
from chaoskit.registry import load_catalog
from chaoskit.runner import Runner, RunRecord, plan_steps
from chaoskit.safety import recognise


@click.command()
@click.argument("playbook_path", metavar="PLAYBOOK", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(path_type=Path),
    help="Journal (JSON lines); default ~/.local/state/chaoskit/journals/<playbook>-<time>.jsonl.",
)
@click.option("--dry-run", is_flag=True, help="Print the exact targets and the reverse of every step; touch nothing.")
@click.option("--allow-any-cluster", is_flag=True, help="Run against a cluster chaoskit did not build.")
@output_option
@click.pass_obj
def run(g: Globals, playbook_path: Path, journal_path: Path | None, dry_run: bool, allow_any_cluster: bool,
        output: str) -> None:  # fmt: skip
    """Run a playbook: steady state, faults (always reverted), steady state again, verdict.

    Exit codes: 0 passed, 1 the system deviated, 2 usage, 3 invalid playbook, 4 chaoskit could not do its job
    (aborted before injecting, arm/inject/revert failed), 130 interrupted.
    """
    load_catalog()
    pb = load_playbook(playbook_path)  # PlaybookError (exit 3) before anything touches a cluster
    runner = SubprocessRunner()
    nodes = node_containers(runner, pb.spec.cluster)
    if dry_run:
        if not nodes:
            raise UsageError(f"no kind cluster named {pb.spec.cluster!r} to plan against")
        emit({"playbook": pb.name, "cluster": pb.spec.cluster, "namespace": pb.spec.namespace,
              "steadyState": [c.check for c in pb.spec.steady_state], "steps": plan_steps(pb, nodes)},
             "yaml" if output == "table" else output)  # fmt: skip
        return
    kube = Kube.connect(g.kubeconfig, g.context or f"kind-{pb.spec.cluster}")
    if not allow_any_cluster:
        recognise(runner, kube, pb.spec.cluster)
    progress = Progress()
    journal = Journal(journal_path or default_journal_dir() / f"{pb.name}-{int(time.time())}.jsonl")
    progress.info(f"running {pb.name} on {pb.spec.cluster}; journal {journal.path}")
    with sigterm_as_interrupt():
        record = Runner(Env(kube, DockerNodeExec(runner), pb.spec.cluster), nodes, journal, progress.info).run(pb)
    if output == "table":
        _table(record)
    else:
        emit(record.to_dict(), output)
    raise click.exceptions.Exit(record.exit_code)


def _table(rec: RunRecord) -> None:
    console = Console(highlight=False)
    table = Table("step", "fault", "node", "effect after", "held", "healthy after revert", "result")
    for s in rec.steps:
        table.add_row(
            s.step,
            s.fault,
            s.node,
            _s(s.effect_s),
            _s(s.held_s),
            _s(s.recovery_s),
            "ok" if s.ok else "; ".join(s.failures + s.errors),
        )
    console.print(table)
    for when, checks in (("before", rec.before), ("after", rec.after)):
        for c in checks:
            console.print(f"steady state {when}: {c.check}: {'ok' if c.ok else 'FAILED'} — {c.detail}")
    for e in rec.errors:
        console.print(f"[red]{e}[/red]")
    console.print(f"verdict: [bold]{rec.verdict}[/bold] (exit {rec.exit_code}); journal {rec.journal}")


def _s(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f}s"
