"""`chaoskit cluster up | down | status | kwok-nodes | proxy-mode`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from chaoskit.cli import Globals
from chaoskit.cli.listing import Column, Listing, listing_output_option, render
from chaoskit.cli.options import (
    F,
    aliased,
    cluster_env,
    cluster_name_option,
    cluster_option,
    context_of,
    emit,
    node_exec,
    output_option,
)
from chaoskit.cluster import up as ops
from chaoskit.cluster.assets import default_kind_config
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.cluster.kwok.converge import READY_TIMEOUT
from chaoskit.cluster.kwok.simulate import simulate
from chaoskit.components.kube_proxy import PROXY_MODES, configured_mode, proxied_nodes, running_mode, set_mode
from chaoskit.figures import seconds
from chaoskit.model.kwok import MAX_SIMULATED_NODES
from chaoskit.progress import Progress
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import SubprocessRunner


def kwok_nodes_option(f: F) -> F:
    return click.option(
        "--kwok-nodes",
        type=click.IntRange(0, MAX_SIMULATED_NODES),
        default=0,
        show_default=True,
        help="Simulated nodes (kwok) the cluster holds: Node objects with no machine behind them.",
    )(f)


@click.group()
def cluster() -> None:
    """Build (offline if need be), start, inspect and delete the kind cluster chaoskit works on."""


@cluster.command()
@aliased(
    "--cluster", aliases=("--name",), default=None, help="kind cluster name (default: the config's name, chaoskit)."
)
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
@kwok_nodes_option
@click.pass_obj
def up(g: Globals, cluster: str | None, config_path: Path, image: str, cache_dir: Path, kwok_nodes: int) -> None:
    """Create the cluster (or reuse it), with metrics-server and the workload image; with --kwok-nodes N, N
    simulated nodes too (a reused cluster keeps exactly N: 0 removes any and kwok's controller)."""
    result = ops.up(
        cluster,
        config_path,
        image,
        SubprocessRunner(),
        Cache(cache_dir),
        Progress(),
        kwok_nodes=kwok_nodes,
        connect=lambda context: Kube.connect(g.kubeconfig, g.context or context),
    )
    verb = "created" if result.created else "reused"
    simulated = f", {result.simulated_nodes} simulated nodes" if result.simulated_nodes else ""
    click.echo(
        f"cluster {result.name} {verb} in {seconds(result.seconds)}{simulated}; "
        f"kubectl context {result.kubeconfig_context}"
    )


@cluster.command()
@cluster_name_option
@click.option(
    "--cache", "cache_dir", type=click.Path(path_type=Path), default=default_root, show_default="~/.cache/chaoskit"
)
def down(cluster: str, cache_dir: Path) -> None:
    """Delete the cluster and its node containers (a missing cluster is not an error)."""
    if ops.down(cluster, SubprocessRunner(), Cache(cache_dir), Progress()):
        click.echo(f"cluster {cluster} deleted")
    else:
        click.echo(f"cluster {cluster} does not exist; nothing to delete")


NODE_COLUMNS = (
    Column("node", "name"),
    Column("role", "role"),
    Column("ready", "ready"),
    Column("kubelet", "kubelet_version"),
    Column("container", "container", wide=True),
)


@cluster.command()
@cluster_option()
@listing_output_option
@click.pass_obj
def status(g: Globals, cluster: str, output: str) -> None:
    """Docker engine, node containers, node readiness and API server health."""
    runner = SubprocessRunner()
    if g.context or g.kubeconfig:  # a context named must be this cluster's, as for every other command
        node_exec(g, cluster, runner)
    st = ops.status(cluster, runner)
    whole = st.to_dict()
    rows = [{**asdict(n), "ready": {True: "yes", False: "no", None: "?"}[n.ready]} for n in st.nodes]
    listing = Listing("node", NODE_COLUMNS, rows, whole=whole)
    if output != "table" and output != "wide":
        render(listing, output)
        return
    if not st.docker:
        click.echo("docker engine: not running")
        return
    if not st.exists:
        click.echo(f"cluster {cluster}: does not exist")
        return
    click.echo(f"cluster {cluster}: image {st.node_image}; API server readyz: {st.api_server}")
    render(listing, output)
    if st.simulated_nodes:
        click.echo(f"simulated nodes (kwok): {st.simulated_ready} of {st.simulated_nodes} Ready")


@cluster.command("kwok-nodes")
@click.argument("count", type=click.IntRange(0, MAX_SIMULATED_NODES))
@cluster_option()
@click.option(
    "--cache", "cache_dir", type=click.Path(path_type=Path), default=default_root, show_default="~/.cache/chaoskit"
)
@click.option(
    "--timeout", type=click.FloatRange(min=1), default=READY_TIMEOUT, show_default=True, help="Seconds to wait."
)
@output_option()
@click.pass_obj
def kwok_nodes(g: Globals, count: int, cluster: str, cache_dir: Path, timeout: float, output: str) -> None:
    """Make the cluster hold exactly COUNT simulated nodes: Node objects kwok keeps Ready, with no machine behind.

    Named kwok-node-0 to COUNT-1, labelled type=kwok and tainted kwok.x-k8s.io/node=fake:NoSchedule (only pods
    that tolerate it land there, and run nothing), with 32 CPUs, 256Gi and 110 pods each. The first use builds
    kwok's image and loads it into the control-plane node, runs its controller in kube-system, and gives kube-proxy,
    the pod network and chaoskit's agent an affinity that keeps them off simulated nodes (their pods restart once).
    0 removes every simulated node and the controller. chaoskit never runs node commands or probes there.
    """
    kube = Kube.connect(g.kubeconfig, context_of(g, cluster))
    done = simulate(cluster, count, kube, SubprocessRunner(), Cache(cache_dir), Progress(), timeout=timeout)
    if output != "table":
        emit(done.to_dict(), output)
        return
    click.echo(
        f"cluster {cluster}: {done.count} simulated node(s), {len(done.created)} created, {len(done.deleted)} deleted;"
        f" kwok's controller {done.controller}"
    )


@cluster.command("proxy-mode")
@click.argument("mode", required=False, type=click.Choice(PROXY_MODES))
@cluster_option()
@click.pass_obj
def proxy_mode(g: Globals, mode: str | None, cluster: str) -> None:
    """Show kube-proxy's mode on every node, or switch all of them to MODE (in place, no rebuild).

    IPVS is refused, with the reason, where the host kernel has no ip_vs module.
    """
    env = cluster_env(g, cluster)
    kube, nodes = env.kube, env.nodes
    if mode is not None:
        set_mode(kube, nodes, mode, say=Progress().info)
    click.echo(f"configured: {configured_mode(kube)}")
    for node in proxied_nodes(kube):
        click.echo(f"{node.name}: {running_mode(nodes, node) or 'not answering'}")
