"""Options several commands share."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from ruamel.yaml import YAML

from chaoskit.cli import Globals
from chaoskit.cluster.kube import Kube
from chaoskit.cluster.nodeexec import DockerNodeExec, NodeExec
from chaoskit.cluster.shell import Runner, SubprocessRunner
from chaoskit.env import Env

F = TypeVar("F", bound=Callable[..., Any])


def output_option(f: F) -> F:
    return click.option(
        "-o",
        "--output",
        type=click.Choice(["table", "json", "yaml"]),
        default="table",
        show_default=True,
        help="Output format on stdout.",
    )(f)


def cluster_name_option(f: F) -> F:
    return click.option("--name", default="chaoskit", show_default=True, help="kind cluster name.")(f)


def emit(data: object, fmt: str) -> None:
    """Write structured data to stdout as JSON or YAML."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        y = YAML()
        y.default_flow_style = False
        y.width = 4096  # a command line in a plan must stay on one line to be pasteable
        y.dump(json.loads(json.dumps(data, default=str)), sys.stdout)


def cluster_env(g: Globals, cluster: str) -> Env:
    """The seams for a kind cluster, from the global --kubeconfig/--context (default context kind-<cluster>)."""
    kube = Kube.connect(g.kubeconfig, g.context or f"kind-{cluster}")
    return Env.for_kind(kube, cluster)


def node_exec(cluster: str, runner: Runner | None = None) -> NodeExec:
    """How the CLI reaches the nodes of `cluster`: the one place a node provider is chosen."""
    return DockerNodeExec(runner or SubprocessRunner(), cluster)
