"""`chaoskit validate` and `chaoskit playbook schema`: playbook files checked, a cluster asked only for its node names
(chaoskit.cli.validate_nodes says when)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import click

from chaoskit.cli import Globals
from chaoskit.cli.options import emit, output_option, playbook_files
from chaoskit.cli.validate_nodes import NodeCheck, cluster_nodes
from chaoskit.errors import EXIT_INVALID_PLAYBOOK, PlaybookError, Problem
from chaoskit.playbook import load_playbook, playbook_json_schema
from chaoskit.registry import CHECKS, FAULTS, MEASUREMENTS, Registered, Registry, load_catalog


@dataclass(frozen=True)
class Catalog:
    """The registries a playbook is checked against; tests pass their own as the Click context object."""

    faults: Registry[Registered]
    checks: Registry[Registered]
    measurements: Registry[Registered]


def _catalog(ctx: click.Context) -> Catalog:
    given = ctx.find_object(Catalog)
    if given is not None:
        return given
    load_catalog()
    return Catalog(FAULTS, CHECKS, MEASUREMENTS)


@click.command()
@click.argument("playbooks", nargs=-1, required=True, metavar="PLAYBOOK...")
@click.option(
    "--cluster",
    default=None,
    help="Check the nodes steps name against this kind cluster's. Default: the cluster each playbook names "
    "(spec.cluster), asked only when the kubeconfig has its context and it answers, else the node check is skipped "
    "and said; a cluster named here or by --context must answer.",
)
@click.option("--offline", is_flag=True, help="Ask no cluster: skip the node check (and say so).")
@output_option()
@click.pass_context
def validate(ctx: click.Context, playbooks: tuple[str, ...], cluster: str | None, offline: bool, output: str) -> None:
    """Check playbook files (a folder: every *.yaml and *.yml in it): print `ok: FILE` for each valid one and every
    problem of the others (exit 3). A step's node, where it names one, must be a node of the cluster the playbook
    runs on (see --cluster and --offline)."""
    catalog = _catalog(ctx)
    nodes = NodeCheck(ctx.find_object(Globals), cluster, offline, cluster_nodes)
    valid: list[str] = []
    problems: list[Problem] = []
    for file in map(str, playbook_files([Path(p) for p in playbooks], unique=False)):
        try:
            pb = load_playbook(file, faults=catalog.faults, checks=catalog.checks, measurements=catalog.measurements)
        except PlaybookError as exc:
            problems += exc.problems
            continue
        unknown = nodes.problems(file, pb)
        problems += unknown
        if not unknown:
            valid.append(file)
    if output == "table":
        for file in valid:
            click.echo(f"ok: {file}")
        for line in [*map(str, problems), *nodes.notes]:
            click.echo(line, err=True)
    else:
        found = {"ok": not problems, "valid": valid, "problems": [asdict(p) for p in problems], "notes": nodes.notes}
        emit(found, output)
    if problems:
        # not click's Exit: main() runs click with standalone_mode=False, which returns that code and drops it
        sys.exit(EXIT_INVALID_PLAYBOOK)


@click.group()
def playbook() -> None:
    """The playbook format."""


@playbook.command()
def schema() -> None:
    """Print the playbook JSON Schema (for editors: yaml-language-server, VS Code, IntelliJ)."""
    click.echo(json.dumps(playbook_json_schema(), indent=2))
