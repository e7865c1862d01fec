"""`chaoskit-operator`: the ChaosExperiment and ChaosSchedule operator, in the cluster (`chaoskit install`) or
beside a kind cluster.

In the cluster (--in-cluster) it reaches the nodes through chaoskit's node agents with the client pair of
--agent-tls-dir, and its CRD is the install's; beside a kind cluster it reaches them with `docker exec`, as
`chaoskit run` does, and installs its CRD itself. Either way it serves chaoskit's Prometheus metrics for the runs
it makes, with --diagnose-every the diagnosis of the whole cluster as series (what `chaoskit diagnose --serve` serves),
and hands the rest to kopf.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIServer

import click
import kopf

from chaoskit.exporters import diagnosis
from chaoskit.exporters.prometheus import Exporter, JournalDir, serve
from chaoskit.journal import state_home
from chaoskit.registry import load_catalog
from chaoskit.seams.kube import Kube, KubeError, condition
from chaoskit.seams.shell import SubprocessRunner
from chaoskit_operator.experiment import PEERING, crd, peering, schedule_crd
from chaoskit_operator.handlers import Config, registry
from chaoskit_operator.scheduler import schedule  # noqa: F401  (registers the ChaosSchedule timer)

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def install_crd(kube: Kube, namespaces: tuple[str, ...] = ()) -> None:
    """Apply the ChaosExperiment and ChaosSchedule CRDs and kopf's peering (its CRDs, then the peering objects: the
    cluster's, or one per namespace watched) and wait until the API server serves them."""
    apply_crds(kube, (crd(), schedule_crd(), *peering(namespaces)))


def apply_crds(kube: Kube, objs: tuple[dict[str, Any], ...] | None = None) -> None:
    """Apply `objs` (default: chaoskit's own CRDs alone, no peering object an install would own) and wait until the
    API server serves each CRD among them."""
    for obj in objs if objs is not None else (crd(), schedule_crd()):
        kube.apply(obj)
        if obj["kind"] == "CustomResourceDefinition":
            _established(kube, obj)


def _established(kube: Kube, definition: dict[str, Any]) -> None:
    path = f"{CRD_PATH}/{definition['metadata']['name']}"
    what = f"the {definition['spec']['names']['kind']} CRD to be established"
    kube.wait(what, lambda: condition(kube.get(path), "Established"), 60)


# who acts when several operators watch one cluster: the installed one; one beside it on a host stands by (kopf
# pauses the lower priority); two on hosts get different ones, so one of them acts
IN_CLUSTER_PRIORITY = 100


@click.command()
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Kubeconfig file (default: $KUBECONFIG).")
@click.option("--context", default="kind-chaoskit", show_default=True, help="Kubeconfig context.")
@click.option("-n", "--namespace", "namespaces", multiple=True, help="Watch only these namespaces (default: all).")
@click.option(
    "--journal-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where run journals go (default ~/.local/state/chaoskit/operator).",
)
@click.option("--metrics-port", type=int, default=9464, show_default=True, help="Prometheus metrics; 0: off.")
@click.option(
    "--diagnose-every",
    "diagnose_every",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds from the end of one diagnosis of the whole cluster to the next, served as Prometheus series on "
    "--diagnosis-port (chaoskit_component_status, chaoskit_finding, ...); 0: no diagnosis.",
)
@click.option(
    "--diagnosis-port", type=int, default=diagnosis.PORT, show_default=True, help="Where --diagnose-every serves."
)
@click.option(
    "--cluster",
    help="The cluster's name in the diagnosis (default: the kind cluster of --context; in the cluster: chaoskit).",
)
@click.option("--allow-any-cluster", is_flag=True, help="Run experiments on clusters chaoskit did not build.")
@click.option("--in-cluster", is_flag=True, help="Run in a pod: its service account, and the agents for the nodes.")
@click.option(
    "--agent-tls-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The clients' pair (ca.crt, tls.crt, tls.key) for the node agents; needs --in-cluster.",
)
@click.option("-v", "--verbose", is_flag=True, help="kopf's own log lines too.")
def main(
    kubeconfig: str | None,
    context: str,
    namespaces: tuple[str, ...],
    journal_dir: Path | None,
    metrics_port: int,
    diagnose_every: float,
    diagnosis_port: int,
    cluster: str | None,
    allow_any_cluster: bool,
    in_cluster: bool,
    agent_tls_dir: Path | None,
    verbose: bool,
) -> None:
    """Run ChaosExperiment resources with chaoskit's engine, and ChaosSchedule ones on their schedules, until
    interrupted."""
    kopf.configure(verbose=verbose)  # the log format of `kopf run`; INFO and up unless --verbose
    load_catalog()
    journals = journal_dir or state_home() / "operator"
    journals.mkdir(parents=True, exist_ok=True)
    if (agent_tls_dir is not None) != in_cluster:
        raise click.UsageError(
            "--in-cluster and --agent-tls-dir go together: in the cluster, nodes are reached through the agents"
        )
    try:
        kube = Kube.in_cluster() if in_cluster else Kube.connect(kubeconfig, context)
        if not in_cluster:
            install_crd(kube, namespaces)  # in the cluster the install applied it: the operator may not change CRDs
    except KubeError as exc:
        raise click.ClickException(str(exc)) from exc
    stop = threading.Event()
    if metrics_port:
        exporter = Exporter()
        server, _ = serve(exporter, metrics_port)
        watcher = JournalDir(exporter, journals, say=click.echo)
        threading.Thread(target=watcher.watch, args=(stop, 2.0), name="journals", daemon=True).start()
        click.echo(f"metrics on :{metrics_port}/metrics", err=True)
    memo = Config(
        kube,
        SubprocessRunner(),
        journals,
        allow_any_cluster,
        agent_tls_dir if in_cluster else None,
        namespaced=bool(namespaces),
    )
    looking = None
    if diagnose_every:
        name = cluster or ("chaoskit" if in_cluster else context.removeprefix("kind-"))
        looking = _diagnose_every(memo, name, diagnose_every, diagnosis_port, stop)
    try:
        kopf.run(
            registry=registry,
            peering_name=PEERING,
            priority=IN_CLUSTER_PRIORITY if in_cluster else random.randint(1, IN_CLUSTER_PRIORITY - 1),
            clusterwide=not namespaces,
            namespaces=namespaces,
            memo=kopf.Memo(config=memo),
        )
    finally:
        stop.set()
        if metrics_port:
            server.shutdown()
        if looking is not None:
            looking.shutdown()


def _diagnose_every(config: Config, cluster: str, every: float, port: int, stop: threading.Event) -> WSGIServer:
    """The diagnosis as a Prometheus target beside the runs' metrics: a look at every component, `every` seconds
    after the last one ended, in a thread of its own (a look never holds up kopf, and never overlaps the last)."""
    latest = diagnosis.Latest(every)
    server, _ = diagnosis.serve(latest, port)
    look = diagnosis.looker(config.env(cluster))

    def say(line: str) -> None:
        click.echo(f"diagnosis: {line}", err=True)

    threading.Thread(
        target=diagnosis.keep_looking, args=(look, latest.set, every, stop, say), name="diagnosis", daemon=True
    ).start()
    click.echo(f"diagnosis on :{port}/metrics, a look every {every:g}s", err=True)
    return server


if __name__ == "__main__":
    main()
