"""`chaoskit-operator`: the ChaosExperiment operator, run beside the kind cluster.

It runs on the host, as `chaoskit run` does, because it reaches the nodes with `docker exec` into the kind node
containers. It installs its CRD, serves chaoskit's Prometheus metrics for the runs it makes, and hands the rest to
kopf.
"""

from __future__ import annotations

import threading
from pathlib import Path

import click
import kopf

from chaoskit.cluster.kube import Kube, KubeError, condition
from chaoskit.cluster.shell import SubprocessRunner
from chaoskit.exporters.prometheus import Exporter, JournalDir, serve
from chaoskit.journal import state_home
from chaoskit.registry import load_catalog
from chaoskit_operator.experiment import crd
from chaoskit_operator.handlers import Config, registry

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def install_crd(kube: Kube) -> None:
    """Apply the ChaosExperiment CRD and wait until the API server serves it."""
    definition = crd()
    kube.apply(definition)
    path = f"{CRD_PATH}/{definition['metadata']['name']}"
    kube.wait("the ChaosExperiment CRD to be established", lambda: condition(kube.get(path), "Established"), 60)


@click.command()
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Kubeconfig file (default: $KUBECONFIG).")
@click.option("--context", default="kind-chaoskit", show_default=True, help="Kubeconfig context.")
@click.option("-n", "--namespace", "namespaces", multiple=True, help="Watch only these namespaces (default: all).")
@click.option("--journal-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where run journals go (default ~/.local/state/chaoskit/operator).")  # fmt: skip
@click.option("--metrics-port", type=int, default=9464, show_default=True, help="Prometheus metrics; 0: off.")
@click.option("--allow-any-cluster", is_flag=True, help="Run experiments on clusters chaoskit did not build.")
@click.option("-v", "--verbose", is_flag=True, help="kopf's own log lines too.")
def main(kubeconfig: str | None, context: str, namespaces: tuple[str, ...], journal_dir: Path | None,
         metrics_port: int, allow_any_cluster: bool, verbose: bool) -> None:  # fmt: skip
    """Run ChaosExperiment resources with chaoskit's engine until interrupted."""
    kopf.configure(verbose=verbose)  # the log format of `kopf run`; INFO and up unless --verbose
    load_catalog()
    journals = journal_dir or state_home() / "operator"
    journals.mkdir(parents=True, exist_ok=True)
    try:
        kube = Kube.connect(kubeconfig, context)
        install_crd(kube)
    except KubeError as exc:
        raise click.ClickException(str(exc)) from exc
    stop = threading.Event()
    if metrics_port:
        exporter = Exporter()
        server, _ = serve(exporter, metrics_port)
        watcher = JournalDir(exporter, journals, say=click.echo)
        threading.Thread(target=watcher.watch, args=(stop, 2.0), name="journals", daemon=True).start()
        click.echo(f"metrics on :{metrics_port}/metrics", err=True)
    try:
        kopf.run(registry=registry, standalone=True, clusterwide=not namespaces, namespaces=namespaces,
                 memo=kopf.Memo(config=Config(kube, SubprocessRunner(), journals, allow_any_cluster)))  # fmt: skip
    finally:
        stop.set()
        if metrics_port:
            server.shutdown()


if __name__ == "__main__":
    main()
