"""`chaoskit cluster up | down | status | proxy-mode`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from chaoskit.cli import Globals
from chaoskit.cli.options import cluster_env, cluster_name_option, emit, output_option, stdout_console
from chaoskit.cluster import up as ops
from chaoskit.cluster.assets import default_kind_config
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.components.kube_proxy import PROXY_MODES, configured_mode, node_names, running_mode, set_mode
from chaoskit.progress import Progress
from chaoskit.seams.shell import SubprocessRunner


@click.group()
def cluster() -> None:
    """Build (offline if need be), start, inspect and delete the kind cluster chaoskit works on."""


@cluster.command()
@click.option("--name", default=None, help="Cluster name (default: the config's name, chaoskit).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=default_kind_config,
    show_default="kind-config.yaml",
    help="kind cluster config.",
)
@click.option(
    "--image",
    default="auto",
    show_default=True,
    help="Node image: 'auto' (stock kindest/node when a registry answers, else build), 'build', or an image ref.",
)
@click.option(
    "--cache", "cache_dir", type=click.Path(path_type=Path), default=default_root, show_default="~/.cache/chaoskit"
)
def up(name: str | None, config_path: Path, image: str, cache_dir: Path) -> None:
    """Create the cluster (or reuse it), with metrics-server and the workload image."""
    result = ops.up(name, config_path, image, SubprocessRunner(), Cache(cache_dir), Progress())
    verb = "created" if result.created else "reused"
    click.echo(f"cluster {result.name} {verb} in {result.seconds:.0f}s; kubectl context {result.kubeconfig_context}")


@cluster.command()
@cluster_name_option
@click.option(
    "--cache", "cache_dir", type=click.Path(path_type=Path), default=default_root, show_default="~/.cache/chaoskit"
)
def down(name: str, cache_dir: Path) -> None:
    """Delete the cluster and its node containers (a missing cluster is not an error)."""
    if ops.down(name, SubprocessRunner(), Cache(cache_dir), Progress()):
        click.echo(f"cluster {name} deleted")
    else:
        click.echo(f"cluster {name} does not exist; nothing to delete")


@cluster.command()
@cluster_name_option
@output_option
def status(name: str, output: str) -> None:
    """Docker engine, node containers, node readiness and API server health."""
    st = ops.status(name, SubprocessRunner())
    if output != "table":
        emit(st.to_dict(), output)
        return
    console = stdout_console()
    if not st.docker:
        console.print("docker engine: not running")
        return
    if not st.exists:
        console.print(f"cluster {name}: does not exist")
        return
    console.print(f"cluster {name}: image {st.node_image}; API server readyz: {st.api_server}")
    table = Table("node", "role", "container", "ready", "kubelet")
    for n in st.nodes:
        table.add_row(n.name, n.role, n.container, {True: "yes", False: "no", None: "?"}[n.ready], n.kubelet_version)
    console.print(table)


@cluster.command("proxy-mode")
@click.argument("mode", required=False, type=click.Choice(PROXY_MODES))
@cluster_name_option
@click.pass_obj
def proxy_mode(g: Globals, mode: str | None, name: str) -> None:
    """Show kube-proxy's mode on every node, or switch all of them to MODE (in place, no rebuild).

    IPVS is refused, with the reason, where the host kernel has no ip_vs module.
    """
    env = cluster_env(g, name)
    kube, nodes = env.kube, env.nodes
    if mode is not None:
        set_mode(kube, nodes, mode, say=Progress().info)
    click.echo(f"configured: {configured_mode(kube)}")
    for node in node_names(kube):
        click.echo(f"{node}: {running_mode(nodes, node) or 'not answering'}")
