"""`chaoskit run PLAYBOOK...`: one experiment, or several as one suite, with exit codes a CI gate can use."""

# Over 300 lines: the run command with its dry run, its suite and its outputs, as a user meets them.

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import click
from rich.console import Console

from chaoskit.cli import Globals
from chaoskit.cli import via_operator as via
from chaoskit.cli.options import (
    cluster_env,
    context_of,
    emit,
    file_option,
    output_option,
    playbook_files,
    stdout_console,
)
from chaoskit.cli.stages import print_stages
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.cluster.kwok.simulate import simulate
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.errors import PlaybookError, Problem, UsageError
from chaoskit.events import Emit, JsonLines, Said, fan_out, said, speaking, stamped
from chaoskit.figures import seconds
from chaoskit.journal import Journal, default_journal_dir, state_home
from chaoskit.model.moments import SUITE_SCHEMA, rfc3339, rfc3339_or_none, stamped_name
from chaoskit.model.playbook import Playbook
from chaoskit.model.record import RunRecord
from chaoskit.playbook import load_playbook
from chaoskit.progress import Progress
from chaoskit.registry import load_catalog
from chaoskit.reports.run_html import render_run_html
from chaoskit.reports.run_junit import render_run_junit
from chaoskit.reports.table import new_table
from chaoskit.run.dry_run import shown
from chaoskit.run.during import diagnose_cluster
from chaoskit.run.peers import Peers
from chaoskit.run.plan import RunPlan, plan
from chaoskit.runner import Runner
from chaoskit.safety import preflight, recognise
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import SubprocessRunner
from chaoskit.suite import Planned, SuiteRecord, order, run_suite


@click.command()
@click.argument("paths", metavar="PLAYBOOK...", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(path_type=Path),
    help="Journal (JSON lines) of a single playbook; default "
    "~/.local/state/chaoskit/journals/<playbook>-<UTC date>.jsonl "
    "(always, for each playbook of a suite).",
)
@click.option(
    "--parallel",
    default=3,
    show_default=True,
    type=click.IntRange(1, 16),
    help="How many playbooks of a suite may run at once (only those whose faults cannot meet).",
)
@file_option(
    "--junit",
    "junit_path",
    "Write JUnit XML: a testsuite per playbook, a testcase per steady-state check, step and threshold.",
)
@file_option(
    "--html",
    "html_path",
    "Where to write the self-contained HTML report of every playbook (always written; default "
    "~/.local/state/chaoskit/reports/<suite>-<UTC date>.html, e.g. scheduler-down-2026-12-06T201530Z.html; its path "
    "printed last).",
)
@file_option(
    "--events",
    "events_path",
    "Also write every event of the run (Armed, Injected, EffectObserved, Reverting, Reverted, Recovered, "
    "Diagnosed, SteadyState, Threshold, Said) to this file as JSON lines, as they happen.",
)
@click.option("--dry-run", is_flag=True, help="Print the exact targets and the reverse of every step; touch nothing.")
@click.option(
    "--cluster",
    "cluster_name",
    help="kind cluster to run on, whatever the playbooks name (default: the one their spec.cluster names).",
)
@click.option("--allow-any-cluster", is_flag=True, help="Run against a cluster chaoskit did not build.")
@click.option(
    "--via-operator",
    is_flag=True,
    help="Submit each playbook as a ChaosExperiment to the operator "
    "`chaoskit install` runs (namespace: -n, default 'default') and follow it to its verdict.",
)
@output_option()
@click.pass_obj
def run(
    g: Globals,
    paths: tuple[Path, ...],
    journal_path: Path | None,
    parallel: int,
    junit_path: Path | None,
    html_path: Path | None,
    events_path: Path | None,
    dry_run: bool,
    cluster_name: str | None,
    allow_any_cluster: bool,
    via_operator: bool,
    output: str,
) -> None:
    """Run playbooks: steady state, faults (always reverted), steady state again, verdict.

    PLAYBOOK is a file or a folder of them (*.yaml, *.yml). Several run as one suite: one summary, one record
    (`-o json`: the runs under "runs"), one JUnit file, one HTML report, and the worst exit code. Playbooks whose
    faults cannot meet overlap (up to --parallel): a fault on one node's kubelet, runtime or kube-proxy meets only
    faults on that node (and a kubelet fault every kube-proxy fault), a quota only its namespace, and a playbook
    measuring every node's dataplane (hpa_scale_up, rule_sync, node_loss) meets every such node fault; a playbook
    breaking the API server, etcd, the scheduler or the controller manager (every workload stands on them), or
    kube-proxy on every node (slow-sync, a mode switch), runs alone, after the others (the API server's last).

    Exit codes: 0 passed, 1 the system deviated, 2 usage, 3 invalid playbook, 4 chaoskit could not do its job
    (aborted before injecting, arm/inject/revert failed), 130 interrupted.
    """
    files, playbooks, cluster = _suite_of(paths, journal_path, cluster_name)
    if via_operator and cluster_name is not None and any(pb.spec.cluster != cluster_name for pb in playbooks):
        raise UsageError("--cluster cannot move a playbook --via-operator: the operator runs the cluster it names")
    runner = SubprocessRunner()
    if via_operator and not dry_run:
        _via_operator(g, cluster, files, output)
    env = cluster_env(g, cluster, runner)
    kube, nodes = env.kube, env.nodes.list_nodes()
    if dry_run and not nodes:
        raise UsageError(f"no kind cluster named {cluster!r} to plan against")
    if dry_run:  # the run's own checks first: a dry run that exits 0 promises the run will start
        runs = [plan(pb, nodes) for pb in playbooks]
        preflight(runner, kube, cluster, [lock for r in runs for lock in r.locks], allow_any_cluster=allow_any_cluster)
        _dry_run(files, runs, parallel, output)
        return
    if not allow_any_cluster:
        recognise(runner, kube, cluster)
    runs = [plan(pb, nodes) for pb in playbooks]
    progress = Progress()
    suite = _suite_name(paths)
    with ExitStack() as stack:
        on_event = _subscribers(progress, len(files) > 1, events_path, stack)

        def make_runner(p: Planned, peers: Peers) -> Runner:
            path = journal_path or default_journal_dir() / stamped_name(p.plan.name, time.time(), ".jsonl")
            run_emit = stamped(on_event, p.plan.name)
            run_emit(Said(f"running {p.plan.name} on {cluster}; journal {path}"))
            # a playbook's simulated nodes: kwok's image built (cached) and loaded into this kind cluster first
            runner = Runner(
                env,
                nodes,
                Journal(path),
                run_emit,
                peers,
                simulate=lambda n: simulate(cluster, n, kube, SubprocessRunner(), Cache(default_root()), progress),
            )
            runner.diagnose_around = len(files) == 1
            return runner

        def diagnosis(when: str) -> dict[str, object] | None:
            found = diagnose_cluster(env, nodes, f"of the suite {when}", on_event)
            return None if found is None else {"when": when, "report": found.to_dict()}

        planned = [Planned.of(f, r) for f, r in zip(files, runs, strict=True)]
        with sigterm_as_interrupt():
            record = run_suite(
                suite,
                cluster,
                planned,
                make_runner,
                parallel=parallel,
                say=said(on_event),
                diagnose=diagnosis if len(files) > 1 else None,
            )
    _publish(record, len(files) > 1, junit_path, html_path or _default_html(suite, record), output, progress)
    raise click.exceptions.Exit(record.exit_code)


def _suite_of(
    paths: tuple[Path, ...], journal_path: Path | None, cluster: str | None = None
) -> tuple[list[Path], list[Playbook], str]:
    """The playbook files, every one loaded (every problem of every file before anything touches a cluster, exit 3),
    and the one cluster they name, or `cluster` (--cluster) for every one of them."""
    load_catalog()
    files = playbook_files(paths)
    if journal_path is not None and len(files) > 1:
        raise UsageError("--journal names the journal of one playbook; a suite writes one per playbook")
    playbooks = _load_all(files)
    if cluster is not None:  # as kubectl's --context: the command line wins over what the files say
        playbooks = [
            pb.model_copy(update={"spec": pb.spec.model_copy(update={"cluster": cluster})}) for pb in playbooks
        ]
    clusters = sorted({pb.spec.cluster for pb in playbooks})
    if len(clusters) > 1:
        raise UsageError(f"a suite runs on one cluster; these playbooks name {', '.join(clusters)}")
    return files, playbooks, clusters[0]


def _subscribers(progress: Progress, several: bool, events_path: Path | None, stack: ExitStack) -> Emit:
    """Who follows the run's events: the terminal, and the --events file if asked for."""
    on_event = speaking(progress.info, playbook=several)
    if events_path is None:
        return on_event
    return fan_out(on_event, JsonLines(stack.enter_context(events_path.open("w", encoding="utf-8"))))


def _default_html(suite: str, record: SuiteRecord) -> Path:
    return state_home() / "reports" / stamped_name(suite, record.started_at, ".html")


def suite_json(record: SuiteRecord) -> dict[str, object]:
    """A suite's record as JSON: its schemaVersion first, its moments in RFC 3339 as each run's are."""
    data = record.to_dict()
    moments = {"started_at": rfc3339(record.started_at), "finished_at": rfc3339_or_none(record.finished_at)}
    return {"schemaVersion": SUITE_SCHEMA, **data, **moments}


def _publish(
    record: SuiteRecord, several: bool, junit_path: Path | None, html_path: Path, output: str, progress: Progress
) -> None:
    """The record as asked: JUnit and HTML files, and the table or the data on stdout (one run's, or the suite's);
    the report's path last, so `chaoskit run ... | tail -1` names it (in JSON or YAML its `report` field)."""
    one = record.runs[0].record if not several and record.runs else None
    data = one.to_dict() if one is not None else suite_json(record)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    for path, text in ((junit_path, render_run_junit), (html_path, render_run_html)):
        if path is not None:
            path.write_text(text(one or record))
            progress.info(f"wrote {path}")
    for run in record.runs:  # where `chaoskit runs open` finds it, from whatever directory it is asked in
        Journal(Path(run.record.journal)).append(
            "report-written", run_id=run.record.run_id, path=str(html_path.resolve())
        )
    if output == "table":
        _table(record)
        click.echo(str(html_path))
    else:
        emit({**data, "report": str(html_path)}, output)


def _load_all(files: list[Path]) -> list[Playbook]:
    playbooks, problems = [], list[Problem]()
    for f in files:
        try:
            playbooks.append(load_playbook(f))
        except PlaybookError as exc:
            problems += exc.problems
    if problems:
        raise PlaybookError(problems)
    names = [pb.name for pb in playbooks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two playbooks are named {', '.join(twice)}; each run of a suite needs its own name")
    return playbooks


def _suite_name(paths: tuple[Path, ...]) -> str:
    return paths[0].stem if len(paths) == 1 else f"{len(paths)} paths"


def _dry_run(files: list[Path], runs: list[RunPlan], parallel: int, output: str) -> None:
    fmt = "yaml" if output == "table" else output
    plans = [shown(r) for r in runs]
    if len(files) == 1:
        emit(plans[0], fmt)
        return
    planned = order([Planned.of(f, r) for f, r in zip(files, runs, strict=True)])
    emit(
        {
            "parallel": parallel,
            "order": [
                {
                    "playbook": p.plan.name,
                    "radius": p.radius_words(),
                    "runs alone": p.alone,
                    # its measurements time these on every node: it meets any node's fault on them
                    "times on every node": sorted(p.every_node),
                }
                for p in planned
            ],
            "playbooks": plans,
        },
        fmt,
    )


def _table(suite: SuiteRecord) -> None:
    console = stdout_console()
    several = len(suite.runs) > 1
    table = new_table(
        *(["playbook"] if several else []),
        "step",
        "fault",
        "node",
        "effect after",
        "named after",
        "held",
        "healthy after revert",
        "fact check",
        "result",
    )
    for e in suite.runs:
        for s in e.record.steps:
            table.add_row(
                *([e.record.playbook] if several else []),
                s.step,
                s.fault,
                s.node,
                _s(s.effect_s),
                _s(s.named_s),
                s.held_words,
                _s(s.recovery_s),
                (s.fact_check or {}).get("verdict", "—"),
                "ok" if s.held else "; ".join(s.failures + s.errors),
            )
    console.print(table)
    _probe_table(console, suite, several)
    for e in suite.runs:
        for m in e.record.measurements:
            if m.type == "hpa_scale_up":
                console.print(f"{e.record.playbook + ': ' if several else ''}measurement {m.name}:")
                print_stages(m, console)
    for e in suite.runs:
        _run_lines(console, e.record, f"{e.record.playbook}: " if several else "")
    if several:
        runs = new_table("playbook", "verdict", "radius", "started", "took")
        for e in suite.runs:
            runs.add_row(e.record.playbook, e.record.verdict, e.radius, _s(e.started_s), _s(e.finished_s - e.started_s))
        console.print(runs)
        scored = suite.to_dict()["score"]
        console.print(
            f"suite verdict: [bold]{suite.verdict}[/bold] (exit {suite.exit_code}), resilience score "
            f"{'—' if scored is None else f'{scored:g}/100'}, in "
            f"{seconds(suite.finished_at - suite.started_at)}"
        )


def _probe_table(console: Console, suite: SuiteRecord, several: bool) -> None:
    """Each probe's judged phases, when the playbooks have probes."""
    probes = [(e.record.playbook, p) for e in suite.runs for p in e.record.probes]
    if not probes:
        return
    table = new_table(*(["playbook"] if several else []), "probe", "phase", "samples", "result")
    for playbook, p in probes:
        for ph in p.phases:
            verdict = ("ok: " if ph.ok else "FAILED: ") + ph.reason
            table.add_row(*([playbook] if several else []), p.name, ph.phase, str(ph.samples), verdict)
    console.print(table)


def _run_lines(console: Console, rec: RunRecord, prefix: str) -> None:
    for when, checks in (("before", rec.before), ("after", rec.after)):
        for c in checks:
            console.print(f"{prefix}steady state {when}: {c.check}: {'ok' if c.ok else 'FAILED'} — {c.detail}")
    for e in rec.errors:
        console.print(f"{prefix}[red]{e}[/red]")
    scored = rec.score
    console.print(
        f"{prefix}verdict: [bold]{rec.verdict}[/bold] (exit {rec.exit_code}); resilience score "
        f"{'—' if scored is None else f'{scored:g}/100'}; journal {rec.journal}"
    )


def _s(v: float | None) -> str:
    return "—" if v is None else f"{seconds(v)}"


def _via_operator(g: Globals, cluster: str, files: list[Path], output: str) -> None:
    """One experiment after another (they may not overlap in the cluster); the worst exit code."""
    kube, progress = Kube.connect(g.kubeconfig, context_of(g, cluster)), Progress()
    results = []
    for f in files:
        status = via.follow(kube, via.experiment(f, g.namespace or "default"), progress)
        results.append({"playbook": str(f), **status})
        progress.info(f"{f.name}: {status.get('phase')} ({status.get('message', '')})")
    if output == "table":
        for r in results:
            click.echo(f"{r['playbook']}: {r.get('phase')} (exit {via.exit_code(r)}) {r.get('message', '')}")
    else:
        emit(results[0] if len(results) == 1 else {"runs": results}, output)
    raise click.exceptions.Exit(max(via.exit_code(r) for r in results))
