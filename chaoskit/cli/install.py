"""`chaoskit install | uninstall`: the operator and the node agents into the current context's cluster."""

from __future__ import annotations

from typing import cast

import click

from chaoskit.cli import Globals
from chaoskit.cli.options import cluster_option, context_of
from chaoskit.cluster import install as ops
from chaoskit.cluster import selfimage
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.cluster.kind import Kind
from chaoskit.figures import seconds
from chaoskit.progress import Progress
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodecontainers import node_containers
from chaoskit.seams.shell import SubprocessRunner


@click.command()
@cluster_option(help="kind cluster name, where the image is loaded.")
@click.option(
    "--image",
    help="chaoskit's image in a registry the cluster pulls from (default: built here and "
    "loaded into the kind cluster).",
)
@click.option(
    "--nodes",
    type=click.Choice(ops.NODES),
    default="all",
    show_default=True,
    help="Which nodes run an agent: all (kind, kubeadm: the control plane is broken through its node) or workers "
    "(a managed cluster: no agent on control-plane nodes, the operator on a worker).",
)
@click.option(
    "--diagnose-every",
    type=click.FloatRange(min=0),
    default=0.0,
    help="Seconds between the operator's diagnoses of the whole cluster, served as Prometheus series on its port "
    "9465 (Service chaoskit-operator-metrics); 0 (default): none.",
)
@click.option("--rotate", is_flag=True, help="Issue a new CA and certificates (the agents restart with them).")
@click.option("--dry-run", is_flag=True, help="Print the manifests (without the Secrets) and change nothing.")
@click.pass_obj
def install(
    g: Globals, cluster: str, image: str | None, nodes: str, diagnose_every: float, rotate: bool, dry_run: bool
) -> None:
    """Install the ChaosExperiment operator and a node agent on every node; idempotent.

    The agents serve chaoskit's node commands on host port 10370 over mutual TLS with a CA made for this install;
    this CLI keeps the clients' certificate under ~/.local/state/chaoskit/installs/<context>/. Installing is the
    opt-in that lets chaoskit act on a cluster it did not build.
    """
    on = cast("ops.Nodes", nodes)
    if dry_run:
        click.echo(
            ops.dump(ops.manifests(image or selfimage.CHAOSKIT_IMAGE, nodes=on, diagnose_every=diagnose_every)),
            nl=False,
        )
        return
    progress, runner = Progress(), SubprocessRunner()
    kube = Kube.connect(g.kubeconfig, context_of(g, cluster))
    image_id = ""
    if image is None:
        if not node_containers(runner, cluster):
            raise click.UsageError(
                f"no kind cluster {cluster!r} on this host to load chaoskit's image into: push it "
                "to a registry your cluster pulls from and pass --image REF"
            )
        cache = Cache(default_root())
        with progress.step("building chaoskit's image (Debian python3, chaoskit and its dependencies)"):
            archive = selfimage.build(cache, runner)
        with progress.step(f"loading {selfimage.CHAOSKIT_IMAGE} into kind cluster {cluster}"):
            Kind(runner, cache.root / "bin" / "kind").load_archive(cluster, archive)
        image, image_id = selfimage.CHAOSKIT_IMAGE, archive.parent.name
    took = ops.install(
        kube,
        context_of(g, cluster),
        image,
        image_id,
        nodes=on,
        rotate=rotate,
        diagnose_every=diagnose_every,
        say=progress.info,
    )
    local = ops.LocalInstall.for_context(context_of(g, cluster))
    local.save(kube)
    click.echo(
        f"chaoskit installed in {seconds(took)}: the operator and {len(local.node_exec().nodes)} node agents "
        f"(namespace {ops.NAMESPACE}); credentials in {local.dir}"
    )


@click.command()
@cluster_option()
@click.pass_obj
def uninstall(g: Globals, cluster: str) -> None:
    """Remove the operator, the agents and their namespace; ChaosExperiments and their CRD stay."""
    kube = Kube.connect(g.kubeconfig, context_of(g, cluster))
    gone = ops.uninstall(kube, say=Progress().info)
    ops.LocalInstall.for_context(context_of(g, cluster)).remove()
    click.echo(f"uninstalled: {len(gone)} object(s) deleted" if gone else "nothing to uninstall")
