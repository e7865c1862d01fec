"""`chaoskit agent serve | exec | setup | teardown`: the node agent itself, one command through it (what error
messages paste), and what the agents need in their namespace when another tool installs them (the Helm chart's
hooks)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from chaoskit.cli import Globals
from chaoskit.cli.options import cluster_option, context_of, node_exec
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import named


@click.group()
def agent() -> None:
    """chaoskit's node agent (what `chaoskit install` runs on every node)."""


@agent.command()
@click.option("--node", required=True, help="This node's name (the DaemonSet passes spec.nodeName).")
@click.option(
    "--tls-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="ca.crt, tls.crt and tls.key: the agents' server pair and the install's CA.",
)
@click.option("--port", type=int, default=None, help="Host port (default 10370).")
def serve(node: str, tls_dir: Path, port: int | None) -> None:
    """Serve node commands over mutual TLS until killed."""
    from chaoskit.agent.server import PORT, TLSFiles
    from chaoskit.agent.server import serve as run

    run(TLSFiles(tls_dir), node, port or PORT)


@agent.command("exec", context_settings={"ignore_unknown_options": True})
@cluster_option()
@click.argument("node")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_obj
def exec_(g: Globals, cluster: str, node: str, argv: tuple[str, ...]) -> None:
    """Run ARGV on NODE in the node's namespaces, through its agent (--via agent is implied)."""
    nodes = node_exec(Globals(g.kubeconfig, g.context, g.namespace, "agent"), cluster)
    done = nodes.run(named(node, nodes.list_nodes()), argv, check=False)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.exit(done.returncode)


def _kube(g: Globals, in_cluster: bool) -> Kube:
    return Kube.in_cluster() if in_cluster else Kube.connect(g.kubeconfig, context_of(g, "chaoskit"))


in_cluster_option = click.option(
    "--in-cluster", is_flag=True, help="Run in a pod: its service account (the chart's hook Job)."
)
namespace_option = click.option("--namespace", "namespace", required=True, help="Where the agents run.")


@agent.command()
@namespace_option
@click.option("--name", default="helm", show_default=True, help="What the install's CA is named after.")
@in_cluster_option
@click.pass_obj
def setup(g: Globals, namespace: str, name: str, in_cluster: bool) -> None:
    """Label NAMESPACE to admit the privileged agents and issue the agents' and clients' TLS Secrets there when
    either is missing; never rotates (`chaoskit install --rotate` does). Idempotent."""
    from chaoskit.cluster.install import prepare

    issued = prepare(_kube(g, in_cluster), name, namespace)
    click.echo(f"{namespace}: " + ("issued a new CA and both pairs" if issued else "the TLS Secrets are in place"))


@agent.command()
@namespace_option
@in_cluster_option
@click.pass_obj
def teardown(g: Globals, namespace: str, in_cluster: bool) -> None:
    """Before the operator goes: refuse while a ChaosExperiment runs, let go of the finished ones (as `chaoskit
    uninstall` does), delete the TLS Secrets `setup` issued in NAMESPACE."""
    from chaoskit.cluster.install import release_experiments, remove_secrets

    kube = _kube(g, in_cluster)
    release_experiments(kube, click.echo)
    gone = remove_secrets(kube, namespace)
    click.echo(f"{namespace}: deleted {', '.join(gone) or 'nothing'}")
