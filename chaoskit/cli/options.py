"""Options several commands share."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from chaoskit.cli import Globals
from chaoskit.components import apiserver
from chaoskit.env import Env
from chaoskit.errors import UsageError
from chaoskit.seams.kube import Kube, KubeError
from chaoskit.seams.kubeconfig import read_contexts, same_server
from chaoskit.seams.nodecontainers import NodeContainer, node_containers
from chaoskit.seams.nodeexec import DockerNodeExec, Node, NodeExec
from chaoskit.seams.shell import Runner, SubprocessRunner

F = TypeVar("F", bound=Callable[..., Any])


def file_option(flag: str, dest: str, help: str) -> Callable[[F], F]:
    """An option naming a file chaoskit writes (a report, a record, the events)."""
    return click.option(flag, dest, type=click.Path(dir_okay=False, path_type=Path), help=help)


def output_option(f: F) -> F:
    return click.option(
        "-o",
        "--output",
        type=click.Choice(["table", "json", "yaml"]),
        default="table",
        show_default=True,
        help="Output format on stdout.",
    )(f)


DEFAULT_CLUSTER = "chaoskit"


def cluster_name_option(f: F) -> F:
    """The kind cluster a command creates or deletes: chaoskit's unless named."""
    return click.option("--name", default=DEFAULT_CLUSTER, show_default=True, help="kind cluster name.")(f)


def cluster_option(flag: str = "--cluster", help: str = "kind cluster name.") -> Callable[[F], F]:
    """The cluster a command acts on, resolved once as kubectl does: the one named (its context kind-<name>), else
    the one --context names, else the kubeconfig's current context; its kind cluster when the context is kind's."""
    return click.option(
        flag,
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


def cluster_env(g: Globals, cluster: str, runner: Runner | None = None, *, lazy: bool = False) -> Env:
    """The seams for `cluster`, from the global --kubeconfig/--context (default context kind-<cluster>) and --via;
    `lazy` connects on the first API request (see Kube.connect). A --context the kubeconfig does not have is refused
    at once, as kubectl refuses it (node_exec)."""
    nodes = node_exec(g, cluster, runner)
    return Env(Kube.connect(g.kubeconfig, context_of(g, cluster), lazy=lazy), nodes, cluster)


def known_context(g: Globals) -> None:
    """Refuses a --context the kubeconfig does not have, before anything is read (kubectl's way)."""
    if g.context and (contexts := read_contexts(g.kubeconfig)).server(g.context) is None:
        known = ", ".join(sorted(contexts.servers)) or "none"
        raise UsageError(f"no context {g.context!r} in the kubeconfig (it has: {known}); nothing was read")


def same_cluster(g: Globals, cluster: str, containers: list[NodeContainer]) -> None:
    """Refuses a context whose API server is not the kind cluster whose node containers chaoskit would `docker exec`
    into: API calls and node commands would reach two clusters."""
    context = context_of(g, cluster)
    server = read_contexts(g.kubeconfig).server(context)
    published = next((c.api for c in containers if c.api), "")
    if not server or not published or same_server(server, published):
        return  # no such context (the API side says so when asked), or nothing published to compare with
    raise UsageError(
        f"context {context!r} points at {server}, but kind cluster {cluster!r} (whose nodes chaoskit would reach "
        f"with docker exec) serves its API at {published}: name the context of that cluster (--context "
        f"kind-{cluster}) or the cluster of that context (--cluster); nothing was read"
    )


def node_exec(g: Globals, cluster: str, runner: Runner | None = None, kube: Kube | None = None) -> NodeExec:
    """How the CLI reaches the nodes of `cluster`: the one place a node provider is chosen (--via).

    auto: `docker exec` where the cluster's kind node containers are on this host, else the node agents of a
    `chaoskit install` (their credentials and node list read from the API once, then kept locally).
    """
    known_context(g)
    docker = DockerNodeExec(runner or SubprocessRunner(), cluster)
    if g.via == "docker":
        same_cluster(g, cluster, node_containers(docker.runner, cluster, apiserver.PORT))
        return docker
    if g.via == "auto" and (found := node_containers(docker.runner, cluster, apiserver.PORT)):
        same_cluster(g, cluster, found)
        return replace(docker, known=tuple(Node(c.name, c.role) for c in found))  # listed once per command
    from chaoskit.cluster.install import LocalInstall  # on use: kind on this host needs no agent credentials

    local = LocalInstall.for_context(context_of(g, cluster))
    if not local.present:
        try:
            local.save(kube or Kube.connect(g.kubeconfig, context_of(g, cluster)))
        except KubeError as exc:
            if g.via == "agent":
                raise UsageError(
                    f"chaoskit's agents are not reachable for context {context_of(g, cluster)!r}: "
                    f"{exc}; `chaoskit install` puts them there"
                ) from exc
            return docker  # neither: callers say there is no such cluster
    return local.node_exec()
