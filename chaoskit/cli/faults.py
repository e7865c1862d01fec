"""`chaoskit faults list | describe`, `chaoskit inject` (one fault, no playbook) and `chaoskit revert JOURNAL`."""

from __future__ import annotations

import inspect
import time
from pathlib import Path

import click
from pydantic import BaseModel, ValidationError

from chaoskit.cli import Globals
from chaoskit.cli.complete import complete_fault, complete_node
from chaoskit.cli.listing import Column, Listing, listing_output_option, plain, render
from chaoskit.cli.options import cluster_env, cluster_option, context_of, emit, node_exec, output_option
from chaoskit.cli.schema_words import parameter_rows
from chaoskit.engine import revert_journal, run_fault, sigterm_as_interrupt
from chaoskit.errors import EXIT_BREACHED, EXIT_TOOL, UsageError
from chaoskit.events import speaking
from chaoskit.faults.base import Fault
from chaoskit.journal import Journal, default_journal_dir
from chaoskit.model.moments import stamped_name
from chaoskit.progress import Progress
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.safety import preflight, recognise
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import Node, pick
from chaoskit.seams.shell import SubprocessRunner
from chaoskit.step import ResolvedStep, resolve


def _fault_class(name: str) -> type[Fault]:
    load_catalog()
    cls: type[Fault] = FAULTS.get(name)  # type: ignore[assignment]
    return cls


@click.group()
def faults() -> None:
    """The fault catalog."""


FAULT_COLUMNS = (
    Column("fault", "name"),
    Column("component", "component"),
    Column("default target", "target"),
    Column("what it does", "summary"),
    Column("parameters", "parameters", wide=True),
)


@faults.command("list")
@listing_output_option
@click.option(
    "--cluster",
    help="Also say, per fault, whether chaoskit can inject it on this cluster: where its agents reach no "
    "control-plane node (a managed cluster, `chaoskit install --nodes workers`), the control plane's cannot be.",
)
@click.pass_obj
def list_faults(g: Globals, output: str, cluster: str | None) -> None:
    """Every fault chaoskit can inject, by component."""
    load_catalog()
    nodes = node_exec(g, cluster).list_nodes() if cluster else None
    if cluster and not nodes:
        raise UsageError(f"no kind cluster named {cluster!r} and no chaoskit agents there")
    rows = []
    for name in FAULTS.names():
        cls = _fault_class(name)
        doc = inspect.getdoc(cls) or ""
        rows.append(
            {
                "name": name,
                "component": getattr(cls, "component", ""),
                "target": getattr(cls, "target_role", ""),
                "summary": " ".join(doc.split("\n\n")[0].split()),
                "parameters": sorted(cls.Params.model_json_schema().get("properties", {})),
                **({"here": _reach(nodes, cls.target_role)} if nodes is not None else {}),
            }
        )
    columns = FAULT_COLUMNS if nodes is None else (*FAULT_COLUMNS[:3], Column("here", "here"), *FAULT_COLUMNS[3:])
    render(Listing("fault", columns, rows), output)


def _reach(nodes: list[Node], role: str) -> str:
    """ "yes", or why the fault cannot be injected where chaoskit's agents are: as a run resolves its target."""
    try:
        pick(nodes, None, role)
    except UsageError:
        return f"no: no chaoskit agent on a {role} node"
    return "yes"


PARAM_COLUMNS = (
    Column("parameter", "name"),
    Column("type", "type"),
    Column("default", "default"),
    Column("what it sets", "description"),
)


@faults.command()
@click.argument("name", shell_complete=complete_fault)
@listing_output_option
def describe(name: str, output: str) -> None:
    """A fault's documentation and its parameters (a table; -o json|yaml the JSON Schema)."""
    cls = _fault_class(name)
    schema = cls.Params.model_json_schema()
    if output in ("json", "yaml"):
        emit({"name": name, "component": cls.component, "target": cls.target_role, "parameters": schema}, output)
        return
    click.echo(f"{name}  (component {cls.component}, default target: {cls.target_role} node)\n")
    click.echo(inspect.getdoc(cls) or "")
    rows = parameter_rows(schema)
    click.echo("\nparameters:" if rows else "\nparameters: none")
    if rows:
        render(Listing("parameter", PARAM_COLUMNS, rows), output)


def _params(fault: str, cls: type[Fault], given: tuple[str, ...]) -> BaseModel:
    """The fault's parameters from KEY=VALUE words; what is wrong said in chaoskit's words, with the parameter table
    (the same rows `faults describe` shows), before any cluster is reached."""
    schema = cls.Params.model_json_schema()
    rows = parameter_rows(schema)
    problems = [f"{kv!r}: not KEY=VALUE" for kv in given if "=" not in kv]
    if not problems:
        try:
            return cls.Params(**dict(kv.split("=", 1) for kv in given))
        except ValidationError as exc:
            kinds = {r["name"]: r["type"] for r in rows}
            for e in exc.errors():
                key = ".".join(str(part) for part in e["loc"])
                if e["type"] == "extra_forbidden":
                    problems.append(f"{key}: no such parameter")
                elif e["type"] == "missing":
                    problems.append(f"{key}: required")
                else:
                    problems.append(f"{key}={e['input']}: not {kinds.get(key.split('.')[0], 'valid')}")
    table = plain(PARAM_COLUMNS, rows) if rows else "(none)"
    raise UsageError(f"bad --param for {fault}:\n  " + "\n  ".join(problems) + f"\n\nits parameters:\n{table}")


def _nodes(g: Globals, cluster: str) -> list[Node]:
    nodes = node_exec(g, cluster).list_nodes()
    if not nodes:
        raise UsageError(
            f"no cluster {cluster!r} to reach: no kind node containers on this host (chaoskit cluster up --cluster "
            f"{cluster}) and no chaoskit install (chaoskit install)"
        )
    return nodes


@click.command()
@click.argument("fault", shell_complete=complete_fault)
@cluster_option()
@click.option(
    "--node",
    shell_complete=complete_node,
    help="Node name or role (control-plane|worker); default: the fault's usual target.",
)
@click.option("--duration", default=20.0, show_default=True, help="Seconds the fault is held.")
@click.option(
    "--deadline",
    type=float,
    help="Seconds until the node heals itself (default: the longer of the hold and the fault's effect timeout, + 60).",
)
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Fault parameter (repeatable).")
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(path_type=Path),
    help="Journal (JSON lines); default ~/.local/state/chaoskit/journals/.",
)
@click.option("--dry-run", is_flag=True, help="Print the exact node, the steps and their reverse; touch nothing.")
@click.option("--allow-any-cluster", is_flag=True, help="Inject into a cluster chaoskit did not build or install.")
@output_option()
@click.pass_obj
def inject(
    g: Globals,
    fault: str,
    cluster: str,
    node: str | None,
    duration: float,
    deadline: float | None,
    params: tuple[str, ...],
    journal_path: Path | None,
    dry_run: bool,
    allow_any_cluster: bool,
    output: str,
) -> None:
    """Inject one fault, hold it, revert it, and report time to effect and time to heal."""
    cls = _fault_class(fault)
    p = _params(fault, cls, params)
    step: ResolvedStep = resolve(cls(), p, _nodes(g, cluster), target=node, duration=duration, deadline=deadline)
    if dry_run:  # the run's own checks first: a dry run that exits 0 promises the run will start
        kube = Kube.connect(g.kubeconfig, context_of(g, cluster))
        preflight(SubprocessRunner(), kube, cluster, [step.lock], allow_any_cluster=allow_any_cluster)
        shown = {
            "fault": fault,
            "node": step.node.name,
            "summary": step.plan.summary,
            **step.plan.steps(),
            "deadline_s": step.deadline,
        }
        emit(shown, "yaml" if output == "table" else output)
        return
    progress, env = Progress(), cluster_env(g, cluster)
    if not allow_any_cluster:
        recognise(SubprocessRunner(), env.kube, cluster)
    journal = Journal(journal_path or default_journal_dir() / stamped_name(f"inject-{fault}", time.time(), ".jsonl"))
    progress.info(f"journal: {journal.path}")
    with sigterm_as_interrupt():
        result = run_fault(env, step, journal=journal, emit=speaking(progress.info, step=False))
    data = {
        "fault": result.fault,
        "node": result.node,
        "injection": result.injection_id,
        "effect_s": result.effect_s,
        "held_s": round(result.held_s, 1),
        "recovery_s": result.recovery_s,
        "errors": result.errors,
        "failures": result.failures,
        "fact_check": result.fact_check.to_dict(),
    }
    emit(data, "yaml" if output == "table" else output)
    if result.failures:
        raise click.exceptions.Exit(EXIT_TOOL)  # chaoskit could not do its job
    if not result.held:
        raise click.exceptions.Exit(EXIT_BREACHED)  # the system deviated


@click.command()
@click.argument("journal_path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@cluster_option()
@click.pass_obj
def revert(g: Globals, journal_path: Path, cluster: str) -> None:
    """Undo whatever a dead run left: every injection in JOURNAL without a recorded revert, and every change it made
    to your own objects (an HPA's minReplicas) not put back yet; and ask every injection journaled reverted its
    verify lines again.

    Each is tried even when another fails; exit 4 if any is left (its dead-man switch keeps retrying on the node) or
    a reverted one still holds.
    """
    progress = Progress()
    journal = Journal(journal_path)
    outcome = revert_journal(cluster_env(g, cluster), journal, say=progress.info)
    if outcome.verified and not (outcome.reverted or outcome.left or outcome.held):
        click.echo(f"verified {len(outcome.verified)} reverted injection(s): none holds")
    if not (outcome.reverted or outcome.left or outcome.held or outcome.restored or outcome.unrestored):
        click.echo("nothing to revert")
        return
    click.echo(f"reverted {len(outcome.reverted)} injection(s)")
    for inj, error in outcome.left:
        click.echo(f"left: {inj.fault} on {inj.node} ({inj.id}): {error.splitlines()[0]}")
    for inj, error in outcome.held:
        click.echo(
            f"still holds, though journaled reverted: {inj.fault} on {inj.node} ({inj.id}): {error.splitlines()[0]}"
        )
    for what in outcome.restored:
        click.echo(f"put back: {what}")
    for error in outcome.unrestored:
        click.echo(f"not put back: {error.splitlines()[0]}")
    if outcome.left or outcome.held or outcome.unrestored:
        raise click.exceptions.Exit(EXIT_TOOL)
