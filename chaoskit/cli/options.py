"""Options several commands share."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from chaoskit.cli import Globals
from chaoskit.env import Env, Via, connect
from chaoskit.errors import UsageError
from chaoskit.seams.kube import Kube
from chaoskit.seams.kubeconfig import read_contexts
from chaoskit.seams.nodeexec import NodeExec
from chaoskit.seams.shell import Runner

F = TypeVar("F", bound=Callable[..., Any])


def file_option(flag: str, dest: str, help: str) -> Callable[[F], F]:
    """An option naming a file chaoskit writes (a report, a record, the events)."""
    return click.option(flag, dest, type=click.Path(dir_okay=False, path_type=Path), help=help)


class Aliased(click.Option):
    """An option that also answers to older names, kept so existing scripts work but left out of --help."""

    def __init__(self, *args: Any, aliases: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases = tuple(aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = self.opts
        self.opts = [o for o in shown if o not in self.aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = shown


def aliased(*decls: str, aliases: Sequence[str], **kwargs: Any) -> Callable[[F], F]:
    """`click.option(*decls, ...)` that also accepts `aliases` (each a long flag) without showing them."""
    return click.option(*decls, *aliases, cls=Aliased, aliases=aliases, **kwargs)


STRUCTURED = ("table", "json", "yaml")


def output_option(
    choices: Sequence[str] = STRUCTURED,
    kind: click.ParamType[str, Any] | None = None,
    help: str = "Output format on stdout.",
    dest: str = "output",
    aliases: Sequence[str] = (),
) -> Callable[[F], F]:
    """-o/--output FORMAT, the same flag on every command that prints: one of `choices` (table first, the default),
    or whatever `kind` accepts (a listing's jsonpath=TEMPLATE)."""
    return aliased(
        "-o",
        "--output",
        dest,
        aliases=aliases,
        type=kind or click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help=help,
    )


DEFAULT_CLUSTER = "chaoskit"


def cluster_name_option(f: F) -> F:
    """The kind cluster a command creates or deletes: chaoskit's unless named."""
    return aliased(
        "--cluster", aliases=("--name",), default=DEFAULT_CLUSTER, show_default=True, help="kind cluster name."
    )(f)


def cluster_option(help: str = "kind cluster name.") -> Callable[[F], F]:
    """The cluster a command acts on, resolved once as kubectl does: the one named (its context kind-<name>), else
    the one --context names, else the kubeconfig's current context; its kind cluster when the context is kind's.
    --name, the older flag of the cluster, measure and metrics commands, still names it."""
    return aliased(
        "--cluster",
        aliases=("--name",),
        default=None,
        callback=_acted_on,
        help=f"{help} Default: the kind cluster of --context or of the current context ({DEFAULT_CLUSTER} when "
        "it is no kind cluster's).",
    )


def _acted_on(ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
    g = ctx.find_object(Globals)
    if value is not None or g is None:
        return value or DEFAULT_CLUSTER
    context = g.context or read_contexts(g.kubeconfig).current
    if not g.context:
        g.current = context  # the context this command then uses, whatever cluster it names
    return context.removeprefix("kind-") if context.startswith("kind-") else DEFAULT_CLUSTER


def emit(data: object, fmt: str) -> None:
    """Write structured data to stdout as JSON or YAML."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        from ruamel.yaml import YAML  # on use: only -o yaml needs it

        y = YAML()
        y.default_flow_style = False
        y.width = 4096  # a command line in a plan must stay on one line to be pasteable
        y.dump(json.loads(json.dumps(data, default=str)), sys.stdout)


def stdout_console(min_width: int = 0) -> Console:
    """Tables on stdout: a terminal's own width (at least `min_width`); in a pipe (CI logs) wide enough that no
    identifier is ever cut."""
    if sys.stdout.isatty():
        return Console(highlight=False, width=max(min_width, Console().width))
    return Console(highlight=False, width=250)


def context_of(g: Globals, cluster: str) -> str:
    """The context for `cluster`: --context, else the current one where no flag named the cluster, else kind's."""
    return g.context or g.current or f"kind-{cluster}"


def cluster_env(
    g: Globals, cluster: str, runner: Runner | None = None, *, lazy: bool = False, kube: Kube | None = None
) -> Env:
    """The seams for `cluster`, from the global --kubeconfig/--context and --via (see `connect`); `lazy` connects on
    the first API request (see Kube.connect)."""
    context = context_of(g, cluster)
    via, named = via_of(g), bool(g.context)
    return connect(cluster, context, kubeconfig=g.kubeconfig, via=via, named=named, kube=kube, runner=runner, lazy=lazy)


def node_exec(g: Globals, cluster: str, runner: Runner | None = None, kube: Kube | None = None) -> NodeExec:
    """How the CLI reaches the nodes of `cluster` (--via), the API not asked unless the agents' pair must be read."""
    return cluster_env(g, cluster, runner, lazy=True, kube=kube).nodes


def via_of(g: Globals) -> Via:
    return "docker" if g.via == "docker" else "agent" if g.via == "agent" else "auto"


def playbook_files(paths: tuple[Path, ...] | list[Path], unique: bool = True) -> list[Path]:
    """The playbook files `paths` name: a folder stands for every *.yaml and *.yml in it (run and validate alike);
    `unique`: each once (a suite runs a playbook once; validate answers for each path given)."""
    files: list[Path] = []
    for p in paths:
        found = sorted([*p.glob("*.yaml"), *p.glob("*.yml")]) if p.is_dir() else [p]
        if not found:
            raise UsageError(f"no playbook (*.yaml, *.yml) in {p}")
        files += found
    return list(dict.fromkeys(files)) if unique else files
